//! Reading grammar sources from files or standard input.

use std::io::Read;
use std::path::Path;

use anyhow::Context;

/// A grammar source: its display name and text (or the UTF-8 error in it).
pub struct Source {
    /// The path as given, or `<stdin>`.
    pub name: String,
    /// The raw bytes.
    pub bytes: Vec<u8>,
}

/// Reads `path`, or standard input when it is `-`.
pub fn read_source(path: &Path) -> anyhow::Result<Source> {
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("cannot read standard input")?;
        return Ok(Source {
            name: "<stdin>".to_string(),
            bytes,
        });
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read `{}`", path.display()))?;
    Ok(Source {
        name: path.display().to_string(),
        bytes,
    })
}
