//! `grail fmt`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use grail_syntax::{FormatError, format_verified, source_from_bytes};

use crate::input::read_source;
use crate::render::{render_human, render_invalid_utf8, stderr_wants_color};

/// Arguments of `grail fmt`.
#[derive(Debug, Args)]
pub struct FmtArgs {
    /// Grammar files, or `-` for standard input.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Report files that are not formatted (exit 1) instead of printing them.
    #[arg(long)]
    pub check: bool,
    /// Rewrite the files in place.
    #[arg(long, conflicts_with = "check")]
    pub write: bool,
}

/// Runs `grail fmt`.
pub fn run(args: &FmtArgs) -> anyhow::Result<ExitCode> {
    if args.write && args.files.iter().any(|file| file.as_os_str() == "-") {
        bail!("--write cannot rewrite standard input");
    }
    let mut failed = false;
    for file in &args.files {
        let input = read_source(file)?;
        let source = match source_from_bytes(&input.bytes) {
            Ok(source) => source,
            Err(error) => {
                eprint!("{}", render_invalid_utf8(&input.name, &input.bytes, &error));
                failed = true;
                continue;
            }
        };
        let formatted = match format_verified(source) {
            Ok(formatted) => formatted,
            Err(FormatError::Syntax(errors)) => {
                let diagnostics: Vec<_> =
                    errors.iter().map(|error| error.to_diagnostic()).collect();
                eprint!(
                    "{}",
                    render_human(&input.name, source, &diagnostics, stderr_wants_color())
                );
                eprintln!("{}: not formatted: the grammar does not parse", input.name);
                failed = true;
                continue;
            }
            Err(error) => bail!(
                "internal error formatting `{}`: {error}; the file was left as it is (please report this grammar)",
                input.name
            ),
        };
        if args.check {
            if formatted != source {
                eprintln!("{}: not formatted", input.name);
                failed = true;
            }
        } else if args.write {
            if formatted != source {
                std::fs::write(file, &formatted)?;
                eprintln!("{}: formatted", input.name);
            }
        } else {
            print!("{formatted}");
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
