//! What one parser holds of its own: the memory a sequence's parse costs beyond what the
//! matchers of its grammar share (the learned store of `automaton/learned.rs`).

use super::{Parser, Scratch};

/// Bytes of the heap buffers of `vector` (its capacity, used or not).
pub(crate) fn vec_bytes<T>(vector: &Vec<T>) -> usize {
    vector.capacity() * size_of::<T>()
}

impl Scratch {
    fn heap_bytes(&self) -> usize {
        self.seen.heap_bytes()
            + vec_bytes(&self.worklist)
            + vec_bytes(&self.kernel)
            + vec_bytes(&self.carried)
            + vec_bytes(&self.rule_calls)
            + vec_bytes(&self.tail_jumps)
            + vec_bytes(&self.state_items)
            + vec_bytes(&self.key)
            + vec_bytes(&self.slot_frames)
            + vec_bytes(&self.source_frames)
            + vec_bytes(&self.regular_items)
            + vec_bytes(&self.mask_key)
            + vec_bytes(&self.mask_key_slots)
    }
}

impl Parser {
    /// Bytes this parser holds of its own (its history and working buffers, buffers
    /// counted at their capacity), not what it shares with the grammar's other matchers.
    pub(crate) fn own_bytes(&self) -> usize {
        size_of::<Parser>()
            + vec_bytes(&self.frames)
            + vec_bytes(&self.links)
            + vec_bytes(&self.items)
            + vec_bytes(&self.steps)
            + self.scratch.heap_bytes()
    }
}
