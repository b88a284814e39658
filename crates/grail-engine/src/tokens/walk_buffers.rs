//! Working buffers of token-trie walks, kept between walks.
//!
//! A mask can run hundreds of small table walks (one per frontier group or escape group
//! met along tokens), each needing a path, lists of frontier and escape nodes and frame
//! lists. Allocating them per walk cost more than the walks themselves, so the matcher
//! keeps them in a pool: walks nest (one level per rule call or return met along a
//! token), and each level takes its own buffers and gives them back.

use crate::automaton::step_cache::StateId;
use crate::graph::utf8::Partial;
use crate::tokens::table_walk::{BulkOdds, TrieRange};

/// The buffers of one table walk (contents are meaningless between walks).
#[derive(Debug, Default)]
pub(crate) struct WalkBuffers {
    /// The state, slot map, character begun and count (bytes a bounded repetition's
    /// twin loop still takes, or `UNCOUNTED`) after each depth of the current path.
    pub(crate) path: Vec<(StateId, u32, Partial, u32)>,
    /// Frontier nodes: (state before, byte, slot map, position).
    pub(crate) frontier_nodes: Vec<(StateId, u8, u32, u32)>,
    /// Escape groups' keys: (returning, inside) slots of the walk's start.
    pub(crate) escape_keys: Vec<(u64, u64)>,
    /// Escape nodes: (index in `escape_keys`, position).
    pub(crate) escape_nodes: Vec<(u32, u32)>,
    /// Frames of a state met on the path (for learning), or of a group's step.
    pub(crate) frames: Vec<u32>,
    /// Frames of the other side of a step (an escape group's frames inside the state).
    pub(crate) other_frames: Vec<u32>,
    /// Trie ranges to walk on from one step.
    pub(crate) ranges: Vec<TrieRange>,
    /// For each state met, (checks, hits) of whole-subtree taking so far in the walk.
    pub(crate) bulk_odds: rustc_hash::FxHashMap<StateId, BulkOdds>,
}

/// Buffers of walks not running now. A clone starts empty (a fork needs no copies).
#[derive(Debug, Default)]
pub(crate) struct WalkBufferPool(Vec<WalkBuffers>);

impl Clone for WalkBufferPool {
    fn clone(&self) -> WalkBufferPool {
        WalkBufferPool::default()
    }
}

impl WalkBufferPool {
    /// Buffers for a walk (give them back with [`WalkBufferPool::give_back`]).
    pub(crate) fn take(&mut self) -> WalkBuffers {
        let mut buffers = self.0.pop().unwrap_or_default();
        buffers.path.clear();
        buffers.frontier_nodes.clear();
        buffers.escape_keys.clear();
        buffers.escape_nodes.clear();
        buffers.frames.clear();
        buffers.other_frames.clear();
        buffers.ranges.clear();
        buffers.bulk_odds.clear();
        buffers
    }

    /// Bytes of the heap buffers kept.
    pub(crate) fn heap_bytes(&self) -> usize {
        use crate::parse::matcher::vec_bytes;
        self.0
            .iter()
            .map(|buffers| {
                size_of::<WalkBuffers>()
                    + vec_bytes(&buffers.path)
                    + vec_bytes(&buffers.frontier_nodes)
                    + vec_bytes(&buffers.escape_keys)
                    + vec_bytes(&buffers.escape_nodes)
                    + vec_bytes(&buffers.frames)
                    + vec_bytes(&buffers.other_frames)
                    + vec_bytes(&buffers.ranges)
                    + buffers.bulk_odds.capacity() * (size_of::<(StateId, BulkOdds)>() + 1)
            })
            .sum()
    }

    /// Returns buffers taken with [`WalkBufferPool::take`].
    pub(crate) fn give_back(&mut self, buffers: WalkBuffers) {
        self.0.push(buffers);
    }
}
