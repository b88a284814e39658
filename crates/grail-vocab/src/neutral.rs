//! The engine-neutral `vocab.json`: `{name, vocab_size, eos_token_id, bos_token_id,
//! special_token_ids, tokens_hex}`, where `tokens_hex[i]` is token i's exact bytes in hex.

use std::path::Path;

use serde::Deserialize;

use crate::error::VocabError;
use crate::vocabulary::{TokenKind, Vocabulary};

#[derive(Deserialize)]
struct NeutralFile {
    name: Option<String>,
    tokens_hex: Vec<String>,
    #[serde(default)]
    special_token_ids: Vec<u32>,
    eos_token_id: Option<EosIds>,
    bos_token_id: Option<u32>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum EosIds {
    One(u32),
    Many(Vec<u32>),
}

/// Reads an engine-neutral `vocab.json` from its text.
pub fn from_neutral_json(path: &Path, text: &str) -> Result<Vocabulary, VocabError> {
    let malformed = |message: String| VocabError::Malformed {
        path: path.to_path_buf(),
        format: "vocab.json",
        message,
    };
    let file: NeutralFile =
        serde_json::from_str(text).map_err(|error| malformed(error.to_string()))?;
    let mut tokens = Vec::with_capacity(file.tokens_hex.len());
    for (id, hex) in file.tokens_hex.iter().enumerate() {
        tokens.push(decode_hex(hex).ok_or_else(|| {
            malformed(format!(
                "tokens_hex[{id}] is not an even-length hex string: {hex:?}"
            ))
        })?);
    }
    let mut kinds = vec![TokenKind::Text; tokens.len()];
    for &id in &file.special_token_ids {
        let kind = kinds
            .get_mut(id as usize)
            .ok_or_else(|| malformed(format!("special token id {id} is out of range")))?;
        *kind = TokenKind::Special;
    }
    let end_of_generation = match file.eos_token_id {
        Some(EosIds::One(id)) => vec![id],
        Some(EosIds::Many(ids)) => ids,
        None => Vec::new(),
    };
    let name = file.name.unwrap_or_else(|| path.display().to_string());
    Ok(Vocabulary::new(
        name,
        tokens,
        kinds,
        end_of_generation,
        file.bos_token_id,
    ))
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|index| u8::from_str_radix(hex.get(index..index + 2)?, 16).ok())
        .collect()
}
