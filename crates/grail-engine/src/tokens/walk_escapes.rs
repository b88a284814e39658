//! Escapes of token-trie walks: where frames of the walk's state return to callers outside
//! it, the walk goes on below those nodes from the callers' step (see `table_walk.rs`).
//! One return step per group of nodes that the same frames escaped from; each child's
//! byte looked up once per group; every surviving child walked in one table walk.

use grail_vocab::{VocabularyIndex, set_ids};

use crate::automaton::step_cache::{DEAD, EscapeGroup};
use crate::tokens::matcher::Matcher;
use crate::tokens::table_walk::TrieRange;

impl Matcher {
    /// Walks on below the nodes of escape groups: from the step where the group's frames
    /// (slots of the walk's start, standing for `frames`) return to their callers outside
    /// the state they escaped from, each node's tokens (when that step is viable) and its
    /// subtree.
    pub(crate) fn resolve_escapes(
        &mut self,
        index: &VocabularyIndex,
        words: &mut [u32],
        frames: &[u32],
        groups: &[EscapeGroup],
    ) {
        for group in groups {
            let slots = (group.returning, group.inside);
            self.walk_escape(index, words, frames, slots, EscapeNodes::Remembered(group));
        }
    }

    /// One escape group (see [`Matcher::resolve_escapes`]): `returning` and `inside` are
    /// slots of the walk's start, standing for `frames`.
    pub(crate) fn walk_escape(
        &mut self,
        index: &VocabularyIndex,
        words: &mut [u32],
        frames: &[u32],
        (returning, inside): (u64, u64),
        escape: EscapeNodes<'_>,
    ) {
        let trie = index.trie();
        let mut buffers = self.walk_buffers.take();
        let pick = |bits: u64, picked: &mut Vec<u32>| {
            picked.extend(
                (0..frames.len())
                    .filter(|&slot| bits >> slot & 1 == 1)
                    .map(|slot| frames[slot]),
            );
        };
        pick(returning, &mut buffers.frames);
        pick(inside, &mut buffers.other_frames);
        if self
            .parser
            .push_return_step(&buffers.frames, &buffers.other_frames)
        {
            let viable = self.parser.is_viable();
            // Each child (with its subtree) from the callers' step, skipping the bytes a
            // cached step refuses.
            let state = self.parser.current_state(&mut buffers.frames);
            let live = |byte: u8| {
                state.is_none_or(|state| self.parser.step_cache().transition(state, byte) != DEAD)
            };
            match escape {
                EscapeNodes::Remembered(group) => {
                    if viable {
                        group.tokens.apply(words);
                    }
                    for (byte, children) in group.children_by_byte() {
                        if live(byte) {
                            buffers.ranges.extend(
                                children
                                    .iter()
                                    .map(|&child| TrieRange::with(trie, child as usize)),
                            );
                        }
                    }
                }
                EscapeNodes::Found(nodes) => {
                    for &(_, position) in nodes {
                        let position = position as usize;
                        let node = &trie.nodes()[position];
                        if viable {
                            set_ids(words, trie.tokens_at(node));
                        }
                        let mut child = position + 1;
                        while child < position + node.subtree_len as usize {
                            if live(trie.nodes()[child].byte) {
                                buffers.ranges.push(TrieRange::with(trie, child));
                            }
                            child += trie.nodes()[child].subtree_len as usize;
                        }
                    }
                }
            }
            match state {
                Some(state) if !buffers.ranges.is_empty() => grail_syntax::stack::deep(|| {
                    self.table_walk(index, words, state, &buffers.frames, &buffers.ranges);
                }),
                _ => self.walk_ranges(index, words, &buffers.ranges),
            }
            self.parser.rollback(1);
        }
        self.walk_buffers.give_back(buffers);
    }
}

/// The nodes of an escape group: remembered with a walk, or just found by one.
pub(crate) enum EscapeNodes<'a> {
    Remembered(&'a EscapeGroup),
    /// (group, position) pairs.
    Found(&'a [(u32, u32)]),
}
