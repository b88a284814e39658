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
    /// [`VocabularyIndex::json_units`]), grouped for the masks made from them.
    json_units: JsonUnitTable,
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
        // Read here, with the vocabulary's setup, not in the first mask that needs it (a
        // few milliseconds with Llama 3): it depends on the vocabulary alone.
        let json_units = JsonUnitTable::new(&vocabulary);
        let index = VocabularyIndex {
            vocabulary,
            trie,
            empty_text_ids,
            longest_text,
            loop_slices: Memo::new(MAX_LOOP_SLICES),
            longest_runs: Memo::new(MAX_REMEMBERED_RUNS),
            long_runs: Memo::new(MAX_REMEMBERED_LONG_RUNS),
            json_units,
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
    /// as no characters, not ending): read when the index is built.
    pub fn json_units(&self) -> Arc<[JsonUnits]> {
        self.json_units.readings.clone()
    }

    /// The most JSON string characters any token starts with (see
    /// [`VocabularyIndex::json_units`]).
    pub fn longest_json_units(&self) -> u32 {
        u32::from(self.json_units.longest)
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
            set_ids(&mut words, self.json_units.selected(bound));
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

/// The JSON string readings of every token, and the token ids grouped by them so that a
/// mask of a bound sets only the ids it selects (it used to read all 128k readings).
#[derive(Debug, Clone)]
struct JsonUnitTable {
    readings: Arc<[JsonUnits]>,
    longest: u8,
    /// Text token ids by units, ascending.
    by_units: Arc<[u32]>,
    /// Where each unit count starts in `by_units` (entry `n` for `n` units; one more
    /// entry than counts, the end).
    by_units_start: Box<[u32]>,
    /// The ids of tokens that end the string, by units, ascending.
    stopping: Arc<[u32]>,
    /// Where each unit count starts in `stopping`, as above.
    stopping_start: Box<[u32]>,
}

impl JsonUnitTable {
    fn new(vocabulary: &Vocabulary) -> JsonUnitTable {
        let readings: Arc<[JsonUnits]> = vocabulary
            .iter()
            .map(|(_, bytes, kind)| match kind {
                crate::TokenKind::Text => JsonUnits::read(bytes),
                _ => JsonUnits {
                    units: 0,
                    stops: false,
                },
            })
            .collect();
        let longest = readings
            .iter()
            .map(|reading| reading.units)
            .max()
            .unwrap_or(0);
        let text = |id: usize| vocabulary.kind(id as u32) == crate::TokenKind::Text;
        let (by_units, by_units_start) = group_by_units(&readings, longest, |id, _| text(id));
        let (stopping, stopping_start) =
            group_by_units(&readings, longest, |id, reading| text(id) && reading.stops);
        JsonUnitTable {
            readings,
            longest,
            by_units,
            by_units_start,
            stopping,
            stopping_start,
        }
    }

    /// The token ids a bound selects.
    fn selected(&self, bound: JsonUnitBound) -> &[u32] {
        let start_of = |starts: &[u32], units: u32| -> usize {
            starts[(units as usize).min(starts.len() - 1)] as usize
        };
        match bound {
            JsonUnitBound::MoreThan(most) => {
                &self.by_units[start_of(&self.by_units_start, most.saturating_add(1))..]
            }
            JsonUnitBound::EndingWithin(least) => {
                &self.stopping[..start_of(&self.stopping_start, least)]
            }
        }
    }
}

/// The ids `keep` selects, sorted by units (a counting sort), and where each count
/// starts.
fn group_by_units(
    readings: &[JsonUnits],
    longest: u8,
    keep: impl Fn(usize, JsonUnits) -> bool,
) -> (Arc<[u32]>, Box<[u32]>) {
    let counts = usize::from(longest) + 1;
    let mut starts = vec![0u32; counts + 1];
    for (id, &reading) in readings.iter().enumerate() {
        if keep(id, reading) {
            starts[usize::from(reading.units) + 1] += 1;
        }
    }
    for count in 1..starts.len() {
        starts[count] += starts[count - 1];
    }
    let mut next = starts.clone();
    let mut ids = vec![0u32; starts[counts] as usize];
    for (id, &reading) in readings.iter().enumerate() {
        if keep(id, reading) {
            let slot = &mut next[usize::from(reading.units)];
            ids[*slot as usize] = id as u32;
            *slot += 1;
        }
    }
    (ids.into(), starts.into_boxed_slice())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TokenKind;
    use proptest::prelude::*;

    fn is_set(words: &[u32], id: usize) -> bool {
        words[id / 32] >> (id % 32) & 1 == 1
    }

    proptest! {
        /// The grouped masks select exactly what the readings say, for every bound.
        #[test]
        fn json_unit_masks_match_the_readings(
            tokens in proptest::collection::vec(
                (proptest::collection::vec(
                    prop_oneof![Just(b'a'), Just(b'"'), Just(b'\\'), Just(b'u'), Just(b'0'),
                                Just(0xC3u8), Just(0xA9u8), Just(b'\n')], 0..8),
                 any::<bool>()),
                1..60),
            bound in 0u32..12,
        ) {
            let kinds = tokens.iter().map(|&(_, special)| match special {
                true => TokenKind::Special,
                false => TokenKind::Text,
            }).collect();
            let vocabulary = Vocabulary::new(
                "t", tokens.iter().map(|(bytes, _)| bytes.clone()).collect(), kinds, vec![], None);
            let index = VocabularyIndex::new(vocabulary);
            let readings = index.json_units();
            let more = index.tokens_with_json_units_more_than(bound);
            let ending = index.tokens_ending_json_string_within(bound);
            for (id, reading) in readings.iter().enumerate() {
                let text = index.vocabulary().kind(id as u32) == TokenKind::Text;
                prop_assert_eq!(is_set(&more, id), text && u32::from(reading.units) > bound);
                prop_assert_eq!(
                    is_set(&ending, id),
                    text && reading.stops && u32::from(reading.units) < bound
                );
            }
            prop_assert_eq!(
                index.longest_json_units(),
                readings.iter().map(|reading| u32::from(reading.units)).max().unwrap_or(0)
            );
        }
    }
}
