//! A vocabulary prepared for masking: the vocabulary, its token trie and its empty tokens.
//! Built once per vocabulary and shared (`Arc`) by every grammar and matcher.

use std::sync::Arc;

use crate::bitmask::set_ids;
use crate::json_units::JsonUnits;
use crate::loop_slice::{LoopSlice, MAX_LOOP_SLICES};
use crate::memo::Memo;
use crate::trie::TokenTrie;
use crate::vocabulary::Vocabulary;

/// Most byte classes whose longest run an index remembers.
const MAX_REMEMBERED_RUNS: usize = 256;

/// Most (class, run) pairs whose long-run tokens an index remembers (a mask each).
const MAX_REMEMBERED_LONG_RUNS: usize = 64;

/// Most unit counts whose long tokens an index remembers (a mask each).
const MAX_REMEMBERED_LONG_UNITS: usize = 64;

/// Which tokens a mask of JSON string characters selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JsonUnitBound {
    MoreThan(u32),
    EndingWithin(u32),
}

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
    /// Per token id, the JSON string characters its text starts with (see
    /// [`VocabularyIndex::json_units`]); one entry, built on first need.
    json_units: Memo<(), (Arc<[JsonUnits]>, u8)>,
    /// Tokens with too many or too few JSON string characters, by bound.
    long_json_units: Memo<JsonUnitBound, Arc<[u32]>>,
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
        let index = VocabularyIndex {
            vocabulary,
            trie,
            empty_text_ids,
            longest_text,
            loop_slices: Memo::new(MAX_LOOP_SLICES),
            longest_runs: Memo::new(MAX_REMEMBERED_RUNS),
            long_runs: Memo::new(MAX_REMEMBERED_LONG_RUNS),
            json_units: Memo::new(1),
            long_json_units: Memo::new(MAX_REMEMBERED_LONG_UNITS),
        };
        // Every JSON grammar loops on it: built here, with the vocabulary's setup.
        index.loop_slice(crate::loop_slice::JSON_STRING_BODY_CLASS);
        index
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

    /// Per token id, how many characters of a JSON string its text starts with and
    /// whether it ends the string after them (see [`JsonUnits`]; special tokens read
    /// as no characters, not ending): computed on first need, then shared.
    pub fn json_units(&self) -> Arc<[JsonUnits]> {
        self.json_unit_counts().0
    }

    /// The most JSON string characters any token starts with (see
    /// [`VocabularyIndex::json_units`]).
    pub fn longest_json_units(&self) -> u32 {
        u32::from(self.json_unit_counts().1)
    }

    /// The readings of [`VocabularyIndex::json_units`] and the most units among them.
    fn json_unit_counts(&self) -> (Arc<[JsonUnits]>, u8) {
        let count = || {
            let counts: Arc<[JsonUnits]> = self
                .vocabulary
                .iter()
                .map(|(_, bytes, kind)| match kind {
                    crate::TokenKind::Text => JsonUnits::read(bytes),
                    _ => JsonUnits {
                        units: 0,
                        stops: false,
                    },
                })
                .collect();
            let longest = counts.iter().map(|count| count.units).max().unwrap_or(0);
            (counts, longest)
        };
        self.json_units
            .get_or_build((), count)
            .unwrap_or_else(count)
    }

    /// The tokens that start with more than `units` JSON string characters (see
    /// [`VocabularyIndex::json_units`]), as mask words: computed on first need, then
    /// remembered (with [`VocabularyIndex::tokens_ending_json_string_within`], for up to
    /// 64 counts).
    pub fn tokens_with_json_units_more_than(&self, units: u32) -> Arc<[u32]> {
        self.json_unit_mask(JsonUnitBound::MoreThan(units))
    }

    /// The tokens that end a JSON string after fewer than `units` characters (see
    /// [`VocabularyIndex::json_units`]), as mask words, remembered as above.
    pub fn tokens_ending_json_string_within(&self, units: u32) -> Arc<[u32]> {
        self.json_unit_mask(JsonUnitBound::EndingWithin(units))
    }

    fn json_unit_mask(&self, bound: JsonUnitBound) -> Arc<[u32]> {
        let words = || -> Arc<[u32]> {
            let mut words = vec![0u32; self.vocabulary.len().div_ceil(32)];
            for (id, reading) in self.json_units().iter().enumerate() {
                let units = u32::from(reading.units);
                let selected = match bound {
                    JsonUnitBound::MoreThan(most) => units > most,
                    JsonUnitBound::EndingWithin(least) => reading.stops && units < least,
                };
                if selected {
                    words[id / 32] |= 1 << (id % 32);
                }
            }
            words.into()
        };
        self.long_json_units
            .get_or_build(bound, words)
            .unwrap_or_else(words)
    }

    /// Text tokens with no bytes (not in the trie; they change nothing when accepted).
    pub fn empty_text_ids(&self) -> &[u32] {
        &self.empty_text_ids
    }
}
