//! `Vocabulary`: a model's tokens with their exact bytes, indexed for masks.

use std::path::Path;
use std::sync::Arc;

use grail_vocab::{TokenKind, Vocabulary as RustVocabulary, VocabularyIndex};
use napi::Either;
use napi::bindgen_prelude::{Buffer, Uint8Array};
use napi_derive::napi;

/// A model's vocabulary: every token's exact bytes, which are special, which end
/// generation, and the token trie masks are computed over. Immutable; share one among
/// all matchers of a model.
#[napi]
pub struct Vocabulary {
    pub(crate) index: Arc<VocabularyIndex>,
}

fn vocabulary_error(error: impl std::fmt::Display) -> napi::Error {
    napi::Error::new(napi::Status::InvalidArg, error.to_string())
}

impl Vocabulary {
    /// Indexes `vocabulary` (and, the first time in the process, makes heap resident for
    /// the masks to come: see `prefault.rs`).
    fn indexed(vocabulary: RustVocabulary) -> napi::Result<Vocabulary> {
        let index = Arc::new(VocabularyIndex::new(vocabulary));
        crate::prefault::prefault_heap_once()?;
        Ok(Vocabulary { index })
    }
}

/// Options of `Vocabulary.fromTokens`.
#[napi(object)]
pub struct TokensOptions {
    /// Ids of control tokens (never text).
    pub special: Option<Vec<u32>>,
    /// Ids of the tokens that end generation.
    pub eos_token_ids: Option<Vec<u32>>,
    /// A name for messages.
    pub name: Option<String>,
}

#[napi]
impl Vocabulary {
    /// Reads a Hugging Face `tokenizer.json`, a `.gguf` model's tokenizer, or Grail's
    /// `vocab.json`, deciding by content.
    #[napi(factory)]
    pub fn from_file(path: String) -> napi::Result<Vocabulary> {
        let vocabulary = grail_vocab::load(Path::new(&path)).map_err(vocabulary_error)?;
        Vocabulary::indexed(vocabulary)
    }

    /// Reads the text of a `tokenizer.json`.
    #[napi(factory)]
    pub fn from_tokenizer_json(text: String, name: Option<String>) -> napi::Result<Vocabulary> {
        let name = name.unwrap_or_else(|| "tokenizer.json".to_string());
        let vocabulary =
            grail_vocab::from_tokenizer_json(Path::new(&name), &text).map_err(vocabulary_error)?;
        Vocabulary::indexed(vocabulary)
    }

    /// A vocabulary from the tokens' text or bytes (token i is `tokens[i]`).
    #[napi(factory)]
    pub fn from_tokens(
        tokens: Vec<Either<String, Uint8Array>>,
        options: Option<TokensOptions>,
    ) -> napi::Result<Vocabulary> {
        let tokens: Vec<Vec<u8>> = tokens
            .into_iter()
            .map(|token| match token {
                Either::A(text) => text.into_bytes(),
                Either::B(bytes) => bytes.to_vec(),
            })
            .collect();
        let (special, ends, name) = match options {
            Some(options) => (
                options.special.unwrap_or_default(),
                options.eos_token_ids.unwrap_or_default(),
                options.name.unwrap_or_else(|| "custom".to_string()),
            ),
            None => (Vec::new(), Vec::new(), "custom".to_string()),
        };
        let mut kinds = vec![TokenKind::Text; tokens.len()];
        for id in special {
            match kinds.get_mut(id as usize) {
                Some(kind) => *kind = TokenKind::Special,
                None => {
                    return Err(vocabulary_error(format!(
                        "special token id {id} is outside the {} tokens",
                        tokens.len()
                    )));
                }
            }
        }
        Vocabulary::indexed(RustVocabulary::new(&name, tokens, kinds, ends, None))
    }

    /// The number of tokens (the width of logits and masks).
    #[napi(getter)]
    pub fn size(&self) -> u32 {
        self.index.vocabulary().len() as u32
    }

    /// The tokens that end generation.
    #[napi(getter)]
    pub fn eos_token_ids(&self) -> Vec<u32> {
        self.index.vocabulary().end_of_generation().to_vec()
    }

    /// The vocabulary's name (its file, or the name given).
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.index.vocabulary().name().to_string()
    }

    /// Token `id`'s bytes.
    #[napi]
    pub fn token_bytes(&self, id: u32) -> napi::Result<Buffer> {
        let vocabulary = self.index.vocabulary();
        if id as usize >= vocabulary.len() {
            return Err(vocabulary_error(format!(
                "token {id} is outside the {} tokens",
                vocabulary.len()
            )));
        }
        Ok(vocabulary.bytes(id).to_vec().into())
    }

    /// True when token `id` is a special (control) token.
    #[napi]
    pub fn is_special(&self, id: u32) -> bool {
        (id as usize) < self.index.vocabulary().len() && self.index.vocabulary().is_special(id)
    }
}
