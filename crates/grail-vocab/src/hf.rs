//! Hugging Face `tokenizer.json`: token strings from `model.vocab` (BPE and WordPiece
//! maps, Unigram lists) and `added_tokens`, turned into exact bytes.
//!
//! The `tokenizers` crate decodes whole sequences to text, which cannot represent a token
//! that ends in the middle of a UTF-8 character, so the per-token bytes are derived here:
//! byte-level vocabularies (GPT-2 style: a `ByteLevel` decoder or pre-tokenizer) map each
//! character back to its byte; SentencePiece-style ones write spaces as `▁` and raw bytes
//! as `<0xNN>` tokens; anything else is taken as UTF-8 text.

use std::borrow::Cow;
use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::byte_level::ByteLevelDecoder;
use crate::error::VocabError;
use crate::vocabulary::{TokenKind, Vocabulary};

/// The parts of a `tokenizer.json` a vocabulary needs. Everything else (`merges`, a
/// third of a Llama 3 file, the normalizer, the post-processor) is skipped while parsing,
/// never built: a 128k vocabulary loads without holding the file as a JSON tree.
#[derive(Deserialize)]
struct TokenizerFile<'a> {
    #[serde(borrow)]
    model: ModelSection<'a>,
    #[serde(default, borrow)]
    added_tokens: Vec<AddedToken<'a>>,
    #[serde(default)]
    decoder: Option<Value>,
    #[serde(default)]
    pre_tokenizer: Option<Value>,
}

#[derive(Deserialize)]
struct ModelSection<'a> {
    #[serde(borrow)]
    vocab: Option<VocabSection<'a>>,
    #[serde(default)]
    byte_fallback: Option<bool>,
}

#[derive(Deserialize)]
struct AddedToken<'a> {
    id: Option<u64>,
    #[serde(borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default)]
    special: bool,
}

/// `model.vocab`: a map from piece to id (BPE, WordPiece) or a list of `[piece, score]`
/// (Unigram), read as (piece, id) pairs.
struct VocabSection<'a>(Result<Vec<(Cow<'a, str>, u64)>, String>);

impl<'de: 'a, 'a> Deserialize<'de> for VocabSection<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PiecesVisitor<'a>(std::marker::PhantomData<&'a ()>);

        impl<'de: 'a, 'a> Visitor<'de> for PiecesVisitor<'a> {
            type Value = VocabSection<'a>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a map of pieces to ids or a list of [piece, score]")
            }

            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut pieces = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some((piece, id)) = map.next_entry::<Cow<'a, str>, Value>()? {
                    match id.as_u64() {
                        Some(id) => pieces.push((piece, id)),
                        None => {
                            return Ok(VocabSection(Err(format!(
                                "id of {piece:?} is not a number"
                            ))));
                        }
                    }
                }
                Ok(VocabSection(Ok(pieces)))
            }

            fn visit_seq<S: SeqAccess<'de>>(self, mut list: S) -> Result<Self::Value, S::Error> {
                let mut pieces = Vec::with_capacity(list.size_hint().unwrap_or(0));
                while let Some(entry) = list.next_element::<UnigramEntry<'a>>()? {
                    let id = pieces.len() as u64;
                    match entry.0 {
                        Some(piece) => pieces.push((piece, id)),
                        None => {
                            return Ok(VocabSection(Err(format!(
                                "model.vocab[{id}] is not [piece, score]"
                            ))));
                        }
                    }
                }
                Ok(VocabSection(Ok(pieces)))
            }
        }

        deserializer.deserialize_any(PiecesVisitor(std::marker::PhantomData))
    }
}

/// One entry of a Unigram list, `[piece, score]`: its piece (`None` when the entry has
/// another shape).
struct UnigramEntry<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for UnigramEntry<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntryVisitor<'a>(std::marker::PhantomData<&'a ()>);

        impl<'de: 'a, 'a> Visitor<'de> for EntryVisitor<'a> {
            type Value = UnigramEntry<'a>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("[piece, score]")
            }

            fn visit_seq<S: SeqAccess<'de>>(self, mut entry: S) -> Result<Self::Value, S::Error> {
                let piece = entry.next_element::<Cow<'a, str>>().ok().flatten();
                while entry.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(UnigramEntry(piece))
            }

            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                while map
                    .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(UnigramEntry(None))
            }

            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(UnigramEntry(None))
            }

            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(UnigramEntry(None))
            }

            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(UnigramEntry(None))
            }

            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(UnigramEntry(None))
            }

            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(UnigramEntry(None))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(UnigramEntry(None))
            }
        }

        deserializer.deserialize_any(EntryVisitor(std::marker::PhantomData))
    }
}

/// Reads a `tokenizer.json` from its text. End-of-generation ids come from a sibling
/// `tokenizer_config.json` (`eos_token`) when there is one, else from the special tokens'
/// names.
pub fn from_tokenizer_json<'t>(path: &Path, text: &'t str) -> Result<Vocabulary, VocabError> {
    let malformed = |message: String| VocabError::Malformed {
        path: path.to_path_buf(),
        format: "tokenizer.json",
        message,
    };
    let file: TokenizerFile<'t> = serde_json::from_str(text).map_err(|error| {
        malformed(if error.to_string().contains("missing field `model`") {
            "no `model`".to_string()
        } else {
            error.to_string()
        })
    })?;
    let pieces = match file.model.vocab {
        Some(VocabSection(Ok(pieces))) => pieces,
        Some(VocabSection(Err(message))) => return Err(malformed(message)),
        None => {
            return Err(malformed(
                "`model.vocab` is neither a map nor a list".into(),
            ));
        }
    };
    let mut strings: Vec<Option<Cow<'t, str>>> = Vec::new();
    let mut put = |id: u64, text: Cow<'t, str>| -> Result<(), VocabError> {
        let id = usize::try_from(id)
            .ok()
            .filter(|&id| id < 16_000_000)
            .ok_or_else(|| malformed(format!("token id {id} is too large")))?;
        if strings.len() <= id {
            strings.resize(id + 1, None);
        }
        strings[id] = Some(text);
        Ok(())
    };
    for (piece, id) in pieces {
        put(id, piece)?;
    }
    let mut special_ids = Vec::new();
    for token in file.added_tokens {
        let (Some(id), Some(text)) = (token.id, token.content) else {
            return Err(malformed("an added token has no id or content".to_string()));
        };
        put(id, text)?;
        if token.special {
            special_ids.push(id as u32);
        }
    }
    let byte_level = mentions_type(file.decoder.as_ref(), "ByteLevel")
        || mentions_type(file.pre_tokenizer.as_ref(), "ByteLevel");
    let sentencepiece = !byte_level
        && (mentions_type(file.decoder.as_ref(), "ByteFallback")
            || mentions_type(file.decoder.as_ref(), "Metaspace")
            || file.model.byte_fallback == Some(true));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vocabulary, VocabError> {
        from_tokenizer_json(Path::new("/nonexistent/tokenizer.json"), text)
    }

    #[test]
    fn a_unigram_list_and_escaped_pieces_are_read() {
        let vocabulary = read(
            r#"{"model": {"type": "Unigram", "vocab": [["\u2581a", -1.0], ["\"q\\", -2.5], ["<0x41>", 0]],
                "byte_fallback": true},
               "added_tokens": [{"id": 3, "content": "</s>", "special": true}],
               "decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}]}}"#,
        )
        .unwrap();
        let bytes: Vec<&[u8]> = (0..4).map(|id| vocabulary.bytes(id)).collect();
        assert_eq!(bytes, [&b" a"[..], b"\"q\\", b"A", b"</s>"]);
        assert!(vocabulary.is_special(3));
        assert_eq!(vocabulary.end_of_generation(), [3]);
    }

    #[test]
    fn a_bpe_map_skips_merges_and_fills_holes_as_special() {
        let vocabulary = read(
            r#"{"model": {"type": "BPE", "merges": [["a", "b"], "c d"], "vocab": {"a": 0, "b": 2}},
               "pre_tokenizer": {"type": "ByteLevel"}, "normalizer": null}"#,
        )
        .unwrap();
        assert_eq!(vocabulary.len(), 3);
        assert_eq!(vocabulary.bytes(2), b"b");
        assert!(vocabulary.is_special(1), "a hole in the ids is never text");
    }

    #[test]
    fn malformed_files_say_what_is_wrong() {
        let message = |text: &str| read(text).unwrap_err().to_string();
        assert!(message(r#"{"version": "1.0"}"#).contains("no `model`"));
        assert!(message(r#"{"model": {"vocab": {"a": "x"}}}"#).contains("is not a number"));
        assert!(message(r#"{"model": {"vocab": [["a", 0], 7]}}"#).contains("model.vocab[1]"));
        assert!(message(r#"{"model": {}}"#).contains("neither a map nor a list"));
        assert!(message(r#"{"model": {"vocab": {"a": 99999999}}}"#).contains("too large"));
        assert!(
            message(r#"{"model": {"vocab": {}}, "added_tokens": [{"id": 1}]}"#)
                .contains("no id or content")
        );
        assert!(message("{").contains("EOF"));
    }
}
