//! A vocabulary prepared for masking: the vocabulary, its token trie and its empty tokens.
//! Built once per vocabulary and shared (`Arc`) by every grammar and matcher.

use std::sync::Arc;

use crate::bitmask::set_ids;
use crate::loop_slice::{LoopSlice, MAX_LOOP_SLICES};
use crate::memo::Memo;
use crate::trie::TokenTrie;
use crate::vocabulary::Vocabulary;

/// Most byte classes whose longest run an index remembers.
const MAX_REMEMBERED_RUNS: usize = 256;

/// Most (class, run) pairs whose long-run tokens an index remembers (a mask each).
const MAX_REMEMBERED_LONG_RUNS: usize = 64;

/// A vocabulary with the structures token masks need.
#[derive(Debug, Clone)]
pub struct VocabularyIndex {
    vocabulary: Vocabulary,
    trie: TokenTrie,
    empty_text_ids: Vec<u32>,
    longest_text: u32,
    /// Loop slices by byte class (see [`VocabularyIndex::loop_slice`]).
    loop_slices: Memo<u128, Arc<LoopSlice>>,
    /// Longest runs by byte class (see [`VocabularyIndex::longest_run`]).
    longest_runs: Memo<u128, u32>,
    /// Tokens with long runs by (byte class, run) (see
    /// [`VocabularyIndex::tokens_with_run_longer_than`]).
    long_runs: Memo<(u128, u32), Arc<[u32]>>,
}

impl VocabularyIndex {
    /// Indexes a vocabulary (builds its trie: one sort of the token texts).
    pub fn new(vocabulary: Vocabulary) -> VocabularyIndex {
        let trie = TokenTrie::new(&vocabulary);
        let longest_text = trie.longest_token();
        let empty_text_ids = vocabulary
            .iter()
            .filter(|&(_, bytes, kind)| kind == crate::TokenKind::Text && bytes.is_empty())
            .map(|(id, _, _)| id)
            .collect();
        VocabularyIndex {
            vocabulary,
            trie,
            empty_text_ids,
            longest_text,
            loop_slices: Memo::new(MAX_LOOP_SLICES),
            longest_runs: Memo::new(MAX_REMEMBERED_RUNS),
            long_runs: Memo::new(MAX_REMEMBERED_LONG_RUNS),
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
        self.loop_slices.get_or_build(class, || {
            Arc::new(LoopSlice::new(&self.trie, class, mask_words))
        })
    }

    /// The length in bytes of the longest text token.
    pub fn longest_text(&self) -> u32 {
        self.longest_text
    }

    /// The most bytes of `class` ([`crate::byte_bit`] bits) any text token starts with:
    /// computed on first need (a walk of the trie below such bytes), then remembered.
    pub fn longest_run(&self, class: u128) -> u32 {
        let run = || self.trie.longest_run(class);
        self.longest_runs
            .get_or_build(class, run)
            .unwrap_or_else(run)
    }

    /// The text tokens that start with more than `run` bytes of `class`
    /// ([`crate::byte_bit`] bits), as mask words: computed on first need (a walk of the
    /// trie below such bytes), then remembered (for up to 64 pairs).
    pub fn tokens_with_run_longer_than(&self, class: u128, run: u32) -> Arc<[u32]> {
        let words = || -> Arc<[u32]> {
            let mut words = vec![0u32; self.vocabulary.len().div_ceil(32)];
            set_ids(
                &mut words,
                &self.trie.tokens_with_run_longer_than(class, run),
            );
            words.into()
        };
        self.long_runs
            .get_or_build((class, run), words)
            .unwrap_or_else(words)
    }

    /// Text tokens with no bytes (not in the trie; they change nothing when accepted).
    pub fn empty_text_ids(&self) -> &[u32] {
        &self.empty_text_ids
    }
}
