//! Hugging Face `tokenizer.json`: token strings from `model.vocab` (BPE and WordPiece
//! maps, Unigram lists) and `added_tokens`, turned into exact bytes.
//!
//! The `tokenizers` crate decodes whole sequences to text, which cannot represent a token
//! that ends in the middle of a UTF-8 character, so the per-token bytes are derived here:
//! byte-level vocabularies (GPT-2 style: a `ByteLevel` decoder or pre-tokenizer) map each
//! character back to its byte; SentencePiece-style ones write spaces as `▁` and raw bytes
//! as `<0xNN>` tokens; anything else is taken as UTF-8 text.

use std::path::Path;

use serde_json::Value;

use crate::byte_level::ByteLevelDecoder;
use crate::error::VocabError;
use crate::vocabulary::{TokenKind, Vocabulary};

/// Reads a `tokenizer.json` from its JSON value. End-of-generation ids come from a
/// sibling `tokenizer_config.json` (`eos_token`) when there is one, else from the
/// special tokens' names.
pub fn from_tokenizer_json(path: &Path, json: Value) -> Result<Vocabulary, VocabError> {
    let malformed = |message: String| VocabError::Malformed {
        path: path.to_path_buf(),
        format: "tokenizer.json",
        message,
    };
    let model = json
        .get("model")
        .ok_or_else(|| malformed("no `model`".into()))?;
    let mut strings: Vec<Option<String>> = Vec::new();
    let mut put = |id: u64, text: &str| -> Result<(), VocabError> {
        let id = usize::try_from(id)
            .ok()
            .filter(|&id| id < 16_000_000)
            .ok_or_else(|| malformed(format!("token id {id} is too large")))?;
        if strings.len() <= id {
            strings.resize(id + 1, None);
        }
        strings[id] = Some(text.to_string());
        Ok(())
    };
    match model.get("vocab") {
        Some(Value::Object(map)) => {
            for (text, id) in map {
                let id = id
                    .as_u64()
                    .ok_or_else(|| malformed(format!("id of {text:?} is not a number")))?;
                put(id, text)?;
            }
        }
        Some(Value::Array(list)) => {
            for (id, entry) in list.iter().enumerate() {
                let text = entry
                    .get(0)
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed(format!("model.vocab[{id}] is not [piece, score]")))?;
                put(id as u64, text)?;
            }
        }
        _ => {
            return Err(malformed(
                "`model.vocab` is neither a map nor a list".into(),
            ));
        }
    }
    let mut special_ids = Vec::new();
    for token in json
        .get("added_tokens")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let id = token.get("id").and_then(Value::as_u64);
        let text = token.get("content").and_then(Value::as_str);
        let (Some(id), Some(text)) = (id, text) else {
            return Err(malformed(format!(
                "added token {token} has no id or content"
            )));
        };
        put(id, text)?;
        if token
            .get("special")
            .and_then(Value::as_bool)
            .unwrap_or(false)
        {
            special_ids.push(id as u32);
        }
    }
    let byte_level = mentions_type(json.get("decoder"), "ByteLevel")
        || mentions_type(json.get("pre_tokenizer"), "ByteLevel");
    let sentencepiece = !byte_level
        && (mentions_type(json.get("decoder"), "ByteFallback")
            || mentions_type(json.get("decoder"), "Metaspace")
            || model.get("byte_fallback").and_then(Value::as_bool) == Some(true));
    let decoder = ByteLevelDecoder::new();
    let mut tokens = Vec::with_capacity(strings.len());
    let mut kinds = vec![TokenKind::Text; strings.len()];
    for &id in &special_ids {
        kinds[id as usize] = TokenKind::Special;
    }
    for (id, text) in strings.iter().enumerate() {
        let Some(text) = text else {
            // A hole in the id space: a token no text can produce.
            tokens.push(Vec::new());
            kinds[id] = TokenKind::Special;
            continue;
        };
        let bytes = if kinds[id] == TokenKind::Special {
            text.as_bytes().to_vec()
        } else if byte_level {
            // Added non-special tokens are stored as plain text, not in the alphabet.
            decoder
                .decode(text)
                .unwrap_or_else(|| text.as_bytes().to_vec())
        } else if sentencepiece {
            sentencepiece_bytes(text)
        } else {
            text.as_bytes().to_vec()
        };
        tokens.push(bytes);
    }
    let config = read_config(path);
    let mut end_of_generation = Vec::new();
    let mut begin_of_text = None;
    if let Some(config) = &config {
        let lookup = |key: &str| {
            let value = config.get(key)?;
            let text = value.as_str().or_else(|| value.get("content")?.as_str())?;
            strings
                .iter()
                .position(|token| token.as_deref() == Some(text))
                .map(|id| id as u32)
        };
        end_of_generation.extend(lookup("eos_token"));
        begin_of_text = lookup("bos_token");
    }
    let name = path.display().to_string();
    Ok(Vocabulary::new(
        name,
        tokens,
        kinds,
        end_of_generation,
        begin_of_text,
    ))
}

/// The bytes of a SentencePiece piece: `<0xNN>` is one raw byte, `▁` is a space.
fn sentencepiece_bytes(piece: &str) -> Vec<u8> {
    if let Some(hex) = piece
        .strip_prefix("<0x")
        .and_then(|rest| rest.strip_suffix('>'))
        && hex.len() == 2
        && let Ok(byte) = u8::from_str_radix(hex, 16)
    {
        return vec![byte];
    }
    piece.replace('\u{2581}', " ").into_bytes()
}

/// True when a decoder or pre-tokenizer (possibly a `Sequence`) has a part of this type.
fn mentions_type(value: Option<&Value>, wanted: &str) -> bool {
    match value {
        Some(Value::Object(map)) => {
            map.get("type").and_then(Value::as_str) == Some(wanted)
                || map.values().any(|inner| mentions_type(Some(inner), wanted))
        }
        Some(Value::Array(items)) => items.iter().any(|item| mentions_type(Some(item), wanted)),
        _ => false,
    }
}

fn read_config(path: &Path) -> Option<Value> {
    let config = path.with_file_name("tokenizer_config.json");
    serde_json::from_str(&std::fs::read_to_string(config).ok()?).ok()
}
