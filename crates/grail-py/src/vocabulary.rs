//! `Vocabulary`: a model's tokens with their exact bytes, indexed for masks.

use std::path::Path;
use std::sync::Arc;

use grail_vocab::{TokenKind, Vocabulary as RustVocabulary, VocabularyIndex};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::VocabularyError;

/// A model's vocabulary: every token's exact bytes, which are special, which end
/// generation, and the token trie masks are computed over.
///
/// Immutable and thread-safe; share one among all matchers of a model. The first one
/// loaded in a process makes `GRAIL_PREFAULT_MIB` MiB of heap resident (32 when unset,
/// none with 0) and keeps freed memory resident, so the first masks do not page-fault.
#[pyclass(module = "grail_gbnf", frozen)]
pub struct Vocabulary {
    pub(crate) index: Arc<VocabularyIndex>,
}

impl Vocabulary {
    /// Indexes `vocabulary` (and, the first time in the process, makes heap resident for
    /// the masks to come: see `prefault.rs`).
    fn indexed(py: Python<'_>, vocabulary: RustVocabulary) -> PyResult<Vocabulary> {
        let index = Arc::new(py.detach(|| VocabularyIndex::new(vocabulary)));
        crate::prefault::prefault_heap_once(py)?;
        Ok(Vocabulary { index })
    }
}

fn vocabulary_error(error: impl std::fmt::Display) -> PyErr {
    PyErr::new::<VocabularyError, _>(error.to_string())
}

#[pymethods]
impl Vocabulary {
    /// Reads a Hugging Face `tokenizer.json`, a `.gguf` model's tokenizer, or an
    /// engine-neutral `vocab.json` (`tokens_hex`), deciding by content.
    #[staticmethod]
    fn from_file(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Vocabulary> {
        let vocabulary = py
            .detach(|| grail_vocab::load(&path))
            .map_err(vocabulary_error)?;
        Vocabulary::indexed(py, vocabulary)
    }

    /// Reads the text of a `tokenizer.json` (as `tokenizer.backend_tokenizer.to_str()`
    /// gives it for a Hugging Face fast tokenizer; `Vocabulary.from_hf` does that).
    /// `eos_token_ids` are added to the end-of-generation tokens.
    #[staticmethod]
    #[pyo3(signature = (text, *, eos_token_ids = Vec::new(), name = "tokenizer.json"))]
    fn from_tokenizer_json(
        py: Python<'_>,
        text: &str,
        eos_token_ids: Vec<u32>,
        name: &str,
    ) -> PyResult<Vocabulary> {
        let vocabulary = py
            .detach(|| grail_vocab::from_tokenizer_json(Path::new(name), text))
            .map_err(vocabulary_error)?;
        let vocabulary = with_end_tokens(vocabulary, &eos_token_ids);
        Vocabulary::indexed(py, vocabulary)
    }

    /// The vocabulary of a Hugging Face fast tokenizer (its `tokenizer.json` and its
    /// end-of-sequence token).
    #[staticmethod]
    fn from_hf(tokenizer: &Bound<'_, PyAny>) -> PyResult<Py<Vocabulary>> {
        let helper = tokenizer.py().import("grail_gbnf.hf")?;
        Ok(helper
            .call_method1("vocabulary_from_hf", (tokenizer,))?
            .extract::<Py<Vocabulary>>()?)
    }

    /// A vocabulary from token byte strings (token i is `tokens[i]`); `special` ids are
    /// control tokens (never text), `eos_token_ids` end generation.
    #[staticmethod]
    #[pyo3(signature = (tokens, *, special = Vec::new(), eos_token_ids = Vec::new(), name = "custom"))]
    fn from_tokens(
        py: Python<'_>,
        tokens: Vec<Vec<u8>>,
        special: Vec<u32>,
        eos_token_ids: Vec<u32>,
        name: &str,
    ) -> PyResult<Vocabulary> {
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
        let vocabulary = RustVocabulary::new(name, tokens, kinds, eos_token_ids, None);
        Vocabulary::indexed(py, vocabulary)
    }

    /// The number of tokens (the width of logits and masks).
    #[getter]
    fn size(&self) -> usize {
        self.index.vocabulary().len()
    }

    /// The tokens that end generation.
    #[getter]
    fn eos_token_ids(&self) -> Vec<u32> {
        self.index.vocabulary().end_of_generation().to_vec()
    }

    /// Token `id`'s bytes.
    fn token_bytes<'py>(&self, py: Python<'py>, id: u32) -> PyResult<Bound<'py, PyBytes>> {
        let vocabulary = self.index.vocabulary();
        if id as usize >= vocabulary.len() {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "token {id} is outside the {} tokens",
                vocabulary.len()
            )));
        }
        Ok(PyBytes::new(py, vocabulary.bytes(id)))
    }

    fn __len__(&self) -> usize {
        self.size()
    }

    fn __repr__(&self) -> String {
        let vocabulary = self.index.vocabulary();
        format!(
            "<grail_gbnf.Vocabulary {:?}: {} tokens>",
            vocabulary.name(),
            vocabulary.len()
        )
    }
}

/// `vocabulary` with `extra` ids also ending generation.
fn with_end_tokens(vocabulary: RustVocabulary, extra: &[u32]) -> RustVocabulary {
    if extra.iter().all(|id| vocabulary.is_end_of_generation(*id)) {
        return vocabulary;
    }
    let (mut tokens, mut kinds) = (
        Vec::with_capacity(vocabulary.len()),
        Vec::with_capacity(vocabulary.len()),
    );
    for (_, bytes, kind) in vocabulary.iter() {
        tokens.push(bytes.to_vec());
        kinds.push(kind);
    }
    let mut ends = vocabulary.end_of_generation().to_vec();
    ends.extend_from_slice(extra);
    RustVocabulary::new(
        vocabulary.name(),
        tokens,
        kinds,
        ends,
        vocabulary.begin_of_text(),
    )
}
