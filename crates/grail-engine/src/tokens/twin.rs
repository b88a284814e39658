//! Masks through twin loops: for a state inside the copies of a bounded repetition far
//! from its bound, the mask of the same items in the repetition's twin loop (see
//! `compile/counted.rs`), and near the bound the twin's mask less the tokens too long for
//! the copies left.

use std::sync::Arc;

use grail_vocab::VocabularyIndex;

use crate::graph::NodeId;
use crate::graph::counted::{counted_copy, refuses};
use crate::graph::records::Item;
use crate::tokens::matcher::Matcher;

impl Matcher {
    /// For each copy with a twin, the copies that must remain for a mask to read it as
    /// the twin: the longest run of its class a token starts with, or the longest token.
    /// Works them out on first need (`self.twin_bounds`), with `vocabulary`, the
    /// matcher's.
    fn ensure_twin_bounds(&mut self, vocabulary: &Arc<VocabularyIndex>) {
        if self.twin_bounds.is_some() {
            return;
        }
        let index = &**vocabulary;
        // Copies are many (every copy of every bounded repetition) and their classes
        // few: each class is asked of the vocabulary once (its memo takes a lock).
        let mut runs: Vec<(u128, u32)> = Vec::new();
        let mut run_of = |bytes: u128| match runs.iter().find(|(class, _)| *class == bytes) {
            Some(&(_, run)) => run,
            None => {
                let run = index.longest_run(bytes);
                runs.push((bytes, run));
                run
            }
        };
        let mut json_units: Option<u32> = None;
        let bounds: Arc<[u32]> = self
            .parser
            .graph()
            .counted
            .iter()
            .map(|copy| match (copy.class_bytes, copy.json_char_starts) {
                (Some(bytes), _) => run_of(bytes),
                (None, Some(_)) => *json_units.get_or_insert_with(|| index.longest_json_units()),
                (None, None) => index.longest_text(),
            })
            .collect();
        self.share_twin_bounds(vocabulary, &bounds);
        self.twin_bounds = Some(bounds);
    }
}

/// How a mask may use twin loops (see [`Matcher::twin_plan`]).
pub(crate) struct TwinPlan {
    /// The current items with those in far copies moved to the twin.
    pub(crate) items: Vec<Item>,
    /// When the copies are within a token's reach of the bound: the tokens of the twin's
    /// mask that are too long (to remove from it).
    pub(crate) too_long: Option<TooLong>,
}

/// The tokens too long for the copies left near a bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TooLong {
    /// Those starting with more than `run` bytes of the byte class (as
    /// [`grail_vocab::byte_bit`] bits).
    Run { class: u128, run: u32 },
    /// Those starting with more than this many JSON string characters (see
    /// [`grail_vocab::VocabularyIndex::json_units`]).
    JsonUnits(u32),
    /// Those ending the string after fewer than this many JSON string characters.
    JsonStringEndsWithin(u32),
}

/// The bytes that begin a JSON string character (as [`grail_vocab::byte_bit`] bits, bit
/// 127 for the bytes past ASCII): everything from the space on, but `"`.
const JSON_UNIT_START_ASCII: u128 = !0u128 << 32 & !(1u128 << b'"');

impl Matcher {
    /// For a mask: whether some current items sit in copies of a bounded repetition whose
    /// twin gives the mask (see the module doc). Far from the bound, the twin's mask is
    /// the mask. Near it, for a repetition of one ASCII class where nothing else in the
    /// step takes a byte of that class (whitespace before a value), the twin's mask
    /// minus the tokens that start with more bytes of the class than copies remain: a
    /// token whose run is longer would need more copies, and nothing else could take
    /// the rest of its run.
    pub(crate) fn twin_plan(&mut self, vocabulary: &Arc<VocabularyIndex>) -> Option<TwinPlan> {
        if self.parser.graph().counted.is_empty() {
            return None;
        }
        self.ensure_twin_bounds(vocabulary);
        // Borrowed, not cloned: forks on other threads share the bounds' count.
        let bounds = self.twin_bounds.as_deref()?;
        let graph = self.parser.graph();
        let items = self.parser.current_items();
        let copy_of =
            |node: NodeId| counted_copy(graph, node).map(|(found, copy)| (copy, bounds[found]));
        let mut moved: Option<Vec<Item>> = None;
        let mut is_moved = vec![false; items.len()];
        let mut near: Option<TooLong> = None;
        let mut near_consistent = true;
        let mut far = false;
        for (position, item) in items.iter().enumerate() {
            let Some((copy, bound)) = copy_of(item.node) else {
                continue;
            };
            if copy.remaining >= bound && !copy.minimum {
                far = true;
            } else {
                let at_character_start = |starts: u64| {
                    item.partial.is_none() && starts >> (item.node - copy.first) & 1 == 1
                };
                let wanted = match (copy.class_bytes, copy.json_char_starts) {
                    (None, Some(starts)) if copy.minimum && at_character_start(starts) => {
                        TooLong::JsonStringEndsWithin(copy.remaining)
                    }
                    _ if copy.minimum => continue,
                    (Some(bytes), _) if bytes >> 127 == 0 && copy.len == 1 => TooLong::Run {
                        class: bytes,
                        run: copy.remaining,
                    },
                    // At a character's start only (the counts read from one).
                    (None, Some(starts)) if at_character_start(starts) => {
                        TooLong::JsonUnits(copy.remaining)
                    }
                    _ => continue,
                };
                near_consistent &= near.is_none_or(|known| known == wanted);
                near = Some(wanted);
            }
            let moved = moved.get_or_insert_with(|| items.to_vec());
            moved[position].node = copy.twin + (item.node - copy.first);
            is_moved[position] = true;
        }
        let mut moved = moved?;
        let too_long = match near {
            None => None,
            Some(too_long) => {
                // The bytes the repetition goes on with: no other item may take one (nor
                // match a token by id, which the correction knows nothing of), so the
                // repetition's copies alone decide how many of them a token may start
                // with.
                let (class, takes_past_ascii) = match too_long {
                    TooLong::Run { class, .. } => (class, false),
                    TooLong::JsonUnits(_) | TooLong::JsonStringEndsWithin(_) => {
                        (JSON_UNIT_START_ASCII, true)
                    }
                };
                let others_refuse = items.iter().zip(&is_moved).all(|(item, &moved)| {
                    moved || refuses(graph, item.node, item.partial, class, takes_past_ascii)
                });
                if far || !near_consistent || !others_refuse || class & 1 != 0 {
                    return None;
                }
                Some(too_long)
            }
        };
        moved.sort_unstable_by_key(|item| (item.node, item.partial.to_bits(), item.frame));
        moved.dedup_by_key(|item| (item.node, item.partial.to_bits(), item.frame));
        Some(TwinPlan {
            items: moved,
            too_long,
        })
    }
}
