//! A reader of the tokenizer metadata of a GGUF file (the model weights are not read).
//!
//! GGUF starts with `GGUF`, a version (2 or 3), tensor and key-value counts, then the
//! key-value pairs: a key string and a typed value (numbers, booleans, strings, arrays).
//! Only `tokenizer.ggml.*` keys are kept. Token types: 1 normal, 2 unknown, 3 control,
//! 4 user-defined, 5 unused, 6 byte (`<0xNN>`). `tokenizer.ggml.model` says how token
//! strings map to bytes: `gpt2` is byte-level BPE, `llama` is SentencePiece.

use std::collections::HashMap;
use std::io::{BufReader, Read};
use std::path::Path;

use crate::byte_level::ByteLevelDecoder;
use crate::error::VocabError;
use crate::vocabulary::{TokenKind, Vocabulary};

/// Longest string read (a token or a key); longer means a corrupt file.
const MAX_STRING_BYTES: u64 = 1 << 20;
/// Most elements in one array (tokens, merges); more means a corrupt file.
const MAX_ARRAY_LEN: u64 = 16 << 20;

/// A metadata value.
#[derive(Debug, Clone)]
enum Value {
    Integer(i64),
    Other,
    String(Vec<u8>),
    Strings(Vec<Vec<u8>>),
    Integers(Vec<i64>),
}

struct Reader<'p, R> {
    input: R,
    path: &'p Path,
}

impl<R: Read> Reader<'_, R> {
    fn malformed(&self, message: impl Into<String>) -> VocabError {
        VocabError::Malformed {
            path: self.path.to_path_buf(),
            format: "GGUF file",
            message: message.into(),
        }
    }

    fn bytes<const N: usize>(&mut self) -> Result<[u8; N], VocabError> {
        let mut buffer = [0; N];
        self.input
            .read_exact(&mut buffer)
            .map_err(|_| self.malformed("the metadata ends early"))?;
        Ok(buffer)
    }

    fn u32(&mut self) -> Result<u32, VocabError> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }

    fn u64(&mut self) -> Result<u64, VocabError> {
        Ok(u64::from_le_bytes(self.bytes()?))
    }

    fn string(&mut self) -> Result<Vec<u8>, VocabError> {
        let length = self.u64()?;
        if length > MAX_STRING_BYTES {
            return Err(self.malformed(format!("a string of {length} bytes")));
        }
        let mut text = vec![0; length as usize];
        self.input
            .read_exact(&mut text)
            .map_err(|_| self.malformed("the metadata ends early"))?;
        Ok(text)
    }

    /// Reads one scalar of `kind`, as an integer when it is one.
    fn scalar(&mut self, kind: u32) -> Result<Option<i64>, VocabError> {
        Ok(match kind {
            0 => Some(i64::from(self.bytes::<1>()?[0])),
            1 => Some(i64::from(self.bytes::<1>()?[0] as i8)),
            2 => Some(i64::from(u16::from_le_bytes(self.bytes()?))),
            3 => Some(i64::from(i16::from_le_bytes(self.bytes()?))),
            4 => Some(i64::from(self.u32()?)),
            5 => Some(i64::from(i32::from_le_bytes(self.bytes()?))),
            6 => {
                self.bytes::<4>()?;
                None
            }
            7 => Some(i64::from(self.bytes::<1>()?[0])),
            10 => Some(self.u64()? as i64),
            11 => Some(i64::from_le_bytes(self.bytes()?)),
            12 => {
                self.bytes::<8>()?;
                None
            }
            other => return Err(self.malformed(format!("unknown value type {other}"))),
        })
    }

    /// Reads past one value of `kind` without keeping it (merges, scores and the rest of
    /// the metadata a vocabulary does not need).
    fn skip(&mut self, kind: u32) -> Result<(), VocabError> {
        match kind {
            8 => self.skip_string(),
            9 => {
                let element = self.u32()?;
                let count = self.u64()?;
                if count > MAX_ARRAY_LEN {
                    return Err(self.malformed(format!("an array of {count} elements")));
                }
                if element == 9 {
                    return Err(self.malformed("nested arrays are not supported"));
                }
                for _ in 0..count {
                    self.skip(element)?;
                }
                Ok(())
            }
            _ => self.scalar(kind).map(drop),
        }
    }

    fn skip_string(&mut self) -> Result<(), VocabError> {
        let length = self.u64()?;
        if length > MAX_STRING_BYTES {
            return Err(self.malformed(format!("a string of {length} bytes")));
        }
        let skipped = std::io::copy(&mut (&mut self.input).take(length), &mut std::io::sink())
            .map_err(|_| self.malformed("the metadata ends early"))?;
        if skipped < length {
            return Err(self.malformed("the metadata ends early"));
        }
        Ok(())
    }

    fn value(&mut self, kind: u32) -> Result<Value, VocabError> {
        match kind {
            8 => Ok(Value::String(self.string()?)),
            9 => {
                let element = self.u32()?;
                let count = self.u64()?;
                if count > MAX_ARRAY_LEN {
                    return Err(self.malformed(format!("an array of {count} elements")));
                }
                match element {
                    8 => (0..count)
                        .map(|_| self.string())
                        .collect::<Result<_, _>>()
                        .map(Value::Strings),
                    9 => Err(self.malformed("nested arrays are not supported")),
                    _ => {
                        let mut integers = Vec::with_capacity(count.min(1 << 20) as usize);
                        for _ in 0..count {
                            integers.push(self.scalar(element)?.unwrap_or(0));
                        }
                        Ok(Value::Integers(integers))
                    }
                }
            }
            _ => Ok(self.scalar(kind)?.map_or(Value::Other, Value::Integer)),
        }
    }
}

/// A GGUF file's metadata values by key.
type Metadata = HashMap<String, Value>;

/// The reader of a GGUF file.
type FileReader<'p> = Reader<'p, BufReader<std::fs::File>>;

/// The metadata values of a GGUF file whose keys `wanted` takes (the rest skipped), and
/// the reader (for its errors).
fn read_metadata<'p>(
    path: &'p Path,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<(Metadata, FileReader<'p>), VocabError> {
    let file = std::fs::File::open(path).map_err(|source| VocabError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut reader = Reader {
        input: BufReader::new(file),
        path,
    };
    if &reader.bytes::<4>()? != b"GGUF" {
        return Err(reader.malformed("it does not start with `GGUF`"));
    }
    let version = reader.u32()?;
    if !(2..=3).contains(&version) {
        return Err(VocabError::Unsupported {
            path: path.to_path_buf(),
            message: format!("GGUF version {version}; Grail reads versions 2 and 3"),
        });
    }
    let _tensors = reader.u64()?;
    let pairs = reader.u64()?;
    let mut metadata = Metadata::new();
    for _ in 0..pairs {
        let key = String::from_utf8_lossy(&reader.string()?).into_owned();
        let kind = reader.u32()?;
        if wanted(&key) {
            let value = reader.value(kind)?;
            metadata.insert(key, value);
        } else {
            reader.skip(kind)?;
        }
    }
    Ok((metadata, reader))
}

/// The chat template of a GGUF file (`tokenizer.chat_template`), if it has one, read
/// from its metadata alone (the weights are not loaded).
pub fn chat_template_of_gguf(path: &Path) -> Result<Option<String>, VocabError> {
    let (mut metadata, _) = read_metadata(path, &|key| key == "tokenizer.chat_template")?;
    Ok(match metadata.remove("tokenizer.chat_template") {
        Some(Value::String(bytes)) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        _ => None,
    })
}

/// Reads the vocabulary from a GGUF file's metadata.
pub fn from_gguf(path: &Path) -> Result<Vocabulary, VocabError> {
    let wanted = |key: &str| {
        matches!(
            key,
            "general.name"
                | "tokenizer.ggml.tokens"
                | "tokenizer.ggml.token_type"
                | "tokenizer.ggml.model"
                | "tokenizer.ggml.eos_token_id"
                | "tokenizer.ggml.eot_token_id"
                | "tokenizer.ggml.eom_token_id"
                | "tokenizer.ggml.bos_token_id"
        )
    };
    let (mut metadata, reader) = read_metadata(path, &wanted)?;
    let Some(Value::Strings(strings)) = metadata.remove("tokenizer.ggml.tokens") else {
        return Err(reader.malformed("no `tokenizer.ggml.tokens` array"));
    };
    let types = match metadata.get("tokenizer.ggml.token_type") {
        Some(Value::Integers(types)) => types.clone(),
        _ => vec![1; strings.len()],
    };
    let model = match metadata.get("tokenizer.ggml.model") {
        Some(Value::String(model)) => String::from_utf8_lossy(model).into_owned(),
        _ => String::new(),
    };
    let byte_level = model == "gpt2";
    let decoder = ByteLevelDecoder::new();
    let mut tokens = Vec::with_capacity(strings.len());
    let mut kinds = Vec::with_capacity(strings.len());
    for (id, text) in strings.iter().enumerate() {
        let token_type = types.get(id).copied().unwrap_or(1);
        let special = matches!(token_type, 2 | 3 | 5);
        let as_text = String::from_utf8_lossy(text);
        let bytes = if special || token_type == 4 {
            text.clone()
        } else if token_type == 6 {
            parse_byte_token(&as_text).map_or_else(|| text.clone(), |byte| vec![byte])
        } else if byte_level {
            decoder.decode(&as_text).unwrap_or_else(|| text.clone())
        } else {
            as_text.replace('\u{2581}', " ").into_bytes()
        };
        tokens.push(bytes);
        kinds.push(if special {
            TokenKind::Special
        } else {
            TokenKind::Text
        });
    }
    let id = |key: &str| match metadata.get(key) {
        Some(Value::Integer(id)) => u32::try_from(*id).ok(),
        _ => None,
    };
    let end_of_generation: Vec<u32> = [
        "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.eot_token_id",
        "tokenizer.ggml.eom_token_id",
    ]
    .iter()
    .filter_map(|key| id(key))
    .collect();
    let name = match metadata.get("general.name") {
        Some(Value::String(name)) => String::from_utf8_lossy(name).into_owned(),
        _ => path.display().to_string(),
    };
    Ok(Vocabulary::new(
        name,
        tokens,
        kinds,
        end_of_generation,
        id("tokenizer.ggml.bos_token_id"),
    ))
}

fn parse_byte_token(text: &str) -> Option<u8> {
    let hex = text.strip_prefix("<0x")?.strip_suffix('>')?;
    u8::from_str_radix(hex, 16).ok()
}
