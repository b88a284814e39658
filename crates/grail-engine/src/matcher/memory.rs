//! What one matcher holds of its own: the memory a sequence costs beyond what the
//! matchers of its grammar share (the step cache, walks and masks of `learned.rs`).

use super::{Matcher, Scratch};

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

impl Matcher {
    /// Bytes this matcher holds of its own (its parse history, working buffers and
    /// token history; buffers counted at their capacity), not counting what it shares
    /// with the other matchers of its grammar: the memory one more sequence costs. Keep it
    /// bounded with [`Matcher::set_token_history_limit`].
    pub fn own_bytes(&self) -> usize {
        size_of::<Matcher>()
            + vec_bytes(&self.frames)
            + vec_bytes(&self.links)
            + vec_bytes(&self.items)
            + vec_bytes(&self.steps)
            + vec_bytes(&self.token_starts)
            + self.scratch.heap_bytes()
            + self.walk_buffers.heap_bytes()
            + self
                .twin_bounds
                .as_ref()
                .map_or(0, |bounds| 4 * bounds.len())
    }
}
