//! Token vocabularies for Grail: the exact bytes of every token, which tokens are special,
//! and which end generation.
//!
//! [`load`] reads a Hugging Face `tokenizer.json`, a GGUF file's tokenizer metadata, or
//! the engine-neutral `vocab.json` (`tokens_hex`), deciding by content.
//!
//! ```
//! use grail_vocab::{TokenKind, Vocabulary};
//! let vocabulary = Vocabulary::new(
//!     "tiny",
//!     vec![b"<|eot|>".to_vec(), b"a".to_vec(), b" b".to_vec()],
//!     vec![TokenKind::Special, TokenKind::Text, TokenKind::Text],
//!     vec![0],
//!     None,
//! );
//! assert_eq!(vocabulary.text(2), Some(&b" b"[..]));
//! assert_eq!(vocabulary.text(0), None);
//! assert!(vocabulary.is_end_of_generation(0));
//! ```
#![warn(missing_docs)]

mod bitmask;
mod byte_level;
mod error;
mod gguf;
mod hf;
mod index;
mod json_units;
mod loop_slice;
mod memo;
mod neutral;
mod trie;
mod vocabulary;

use std::path::Path;

pub use bitmask::{TokenBitmask, clear_from, ids_of, or_words, set_ids};
pub use byte_level::{ByteLevelDecoder, byte_to_char};
pub use error::VocabError;
pub use gguf::{chat_template_of_gguf, from_gguf};
pub use hf::from_tokenizer_json;
pub use index::VocabularyIndex;
pub use json_units::{JsonUnits, MAX_JSON_UNITS};
pub use loop_slice::{ExitNode, JSON_STRING_BODY_CLASS, LoopSlice, MAX_LOOP_SLICES};
pub use trie::{TokenTrie, TrieNode, byte_bit};
pub use vocabulary::{END_OF_GENERATION_TEXTS, TokenKind, Vocabulary};

/// Loads a vocabulary from a `tokenizer.json`, a `.gguf` file or a `vocab.json`.
pub fn load(path: &Path) -> Result<Vocabulary, VocabError> {
    let io = |source| VocabError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut magic = [0u8; 4];
    {
        use std::io::Read;
        let mut file = std::fs::File::open(path).map_err(io)?;
        let read = file.read(&mut magic).map_err(io)?;
        if read == 4 && &magic == b"GGUF" {
            return from_gguf(path);
        }
    }
    let text = std::fs::read_to_string(path).map_err(io)?;
    // Which JSON vocabulary this is, from its top-level keys alone (nothing is built).
    #[derive(serde::Deserialize)]
    struct TopLevelKeys {
        model: Option<serde::de::IgnoredAny>,
        tokens_hex: Option<serde::de::IgnoredAny>,
    }
    let keys: TopLevelKeys =
        serde_json::from_str(&text).map_err(|error| VocabError::Malformed {
            path: path.to_path_buf(),
            format: "JSON vocabulary",
            message: error.to_string(),
        })?;
    if keys.tokens_hex.is_some() {
        neutral::from_neutral_json(path, &text)
    } else if keys.model.is_some() {
        hf::from_tokenizer_json(path, &text)
    } else {
        Err(VocabError::Unsupported {
            path: path.to_path_buf(),
            message:
                "not a tokenizer.json (no `model`), a vocab.json (no `tokens_hex`) or a GGUF file"
                    .into(),
        })
    }
}
