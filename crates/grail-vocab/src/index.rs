//! A vocabulary prepared for masking: the vocabulary, its token trie and its empty tokens.
//! Built once per vocabulary and shared (`Arc`) by every grammar and matcher.

use std::sync::Arc;

use crate::loop_slice::{LoopSlice, LoopSlices};
use crate::trie::TokenTrie;
use crate::vocabulary::Vocabulary;

/// A vocabulary with the structures token masks need.
#[derive(Debug, Clone)]
pub struct VocabularyIndex {
    vocabulary: Vocabulary,
    trie: TokenTrie,
    empty_text_ids: Vec<u32>,
    loop_slices: LoopSlices,
}

impl VocabularyIndex {
    /// Indexes a vocabulary (builds its trie: one sort of the token texts).
    pub fn new(vocabulary: Vocabulary) -> VocabularyIndex {
        let trie = TokenTrie::new(&vocabulary);
        let empty_text_ids = vocabulary
            .iter()
            .filter(|&(_, bytes, kind)| kind == crate::TokenKind::Text && bytes.is_empty())
            .map(|(id, _, _)| id)
            .collect();
        VocabularyIndex {
            vocabulary,
            trie,
            empty_text_ids,
            loop_slices: LoopSlices::default(),
        }
    }

    /// The vocabulary.
    pub fn vocabulary(&self) -> &Vocabulary {
        &self.vocabulary
    }

    /// The trie of text tokens.
    pub fn trie(&self) -> &TokenTrie {
        &self.trie
    }

    /// The loop slice of a byte class (see [`LoopSlice`]): built on first need, then
    /// shared; `None` once [`crate::MAX_LOOP_SLICES`] classes have slices.
    pub fn loop_slice(&self, class: u128) -> Option<Arc<LoopSlice>> {
        let mask_words = self.vocabulary.len().div_ceil(32);
        self.loop_slices.get(&self.trie, class, mask_words)
    }

    /// Text tokens with no bytes (not in the trie; they change nothing when accepted).
    pub fn empty_text_ids(&self) -> &[u32] {
        &self.empty_text_ids
    }
}
