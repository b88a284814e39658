//! Errors of loading a vocabulary, as data.

use std::path::PathBuf;

/// Why a vocabulary could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VocabError {
    /// The file could not be read.
    #[error("cannot read `{path}`: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid JSON of the expected shape.
    #[error("`{path}` is not a valid {format}: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What kind of file it should be (`tokenizer.json`, `GGUF`, `vocab.json`).
        format: &'static str,
        /// What is wrong, and where.
        message: String,
    },
    /// The file's format is not one Grail reads.
    #[error("`{path}`: {message}")]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What is not supported, and what to do instead.
        message: String,
    },
}
