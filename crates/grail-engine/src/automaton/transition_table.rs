//! The step cache's transition table: a row of 256 entries per state, in chunks shared
//! by threads (`shared_chunks.rs`).
//!
//! One contiguous table doubled as states were learned, copying every row learned so
//! far each time (an open object's first key steps learn hundreds of states: the copies
//! were a tenth of such a step's instructions, and more of its time, since the new
//! table's pages are touched by the copy). Chunks of [`CHUNK_STATES`] rows are allocated
//! as states need them and never move; a lookup costs one more (cached) load.

use crate::automaton::shared_chunks::SharedWords;
use crate::automaton::step_cache::{DEAD, StateId, UNKNOWN};

/// States per chunk: a chunk's rows are 64 KB, address space until written. The size of
/// the blocks `prefault_heap` makes resident: a bigger chunk is a large object to
/// mimalloc, served from a fresh 4 MiB page whose first touch can be a transparent huge
/// page fault of milliseconds (256-state chunks: one mask of 2.6–4 ms in every second
/// cold run of MaskBench BFCL_sql_12 and BFCL_sql_33, at most 0.11 ms with these).
pub(crate) const CHUNK_STATES: usize = 64;

/// Per state and byte: a marker (`UNKNOWN`, `DEAD`, ...) or an index into the step
/// cache's results. Shared by threads: an entry is stored (release) after the result it
/// names, so a thread that loads it (acquire) finds that result written.
///
/// Entries of one (state, byte) may be written more than once, by threads that learned
/// the same transition at once, or by a walk that learns again a transition a step could
/// not keep: every value written describes the same transition, so a reader may see any.
#[derive(Debug)]
pub(crate) struct TransitionTable {
    words: SharedWords,
}

impl TransitionTable {
    /// Room for the rows of `max_states` states.
    pub(crate) fn with_capacity(max_states: usize) -> TransitionTable {
        TransitionTable {
            // Entries never written read as `DEAD`: a row needs only its live bytes set.
            words: SharedWords::with_capacity(max_states * 256, CHUNK_STATES * 256, DEAD),
        }
    }

    /// Writes the row of `state` (before it is published): `UNKNOWN` for the bytes set
    /// in `live` (bit per byte); the rest read as `DEAD`.
    pub(crate) fn write_row(&self, state: StateId, live: &[u64; 4]) {
        let row = state as usize * 256;
        for (quarter, &bits) in live.iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                let bit = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                self.words.set(row + quarter * 64 + bit, UNKNOWN);
            }
        }
    }

    /// The entry of `state` for `byte`.
    #[inline]
    pub(crate) fn get(&self, state: StateId, byte: u8) -> u32 {
        self.words.get(state as usize * 256 + usize::from(byte))
    }

    /// Sets the entry of `state` for `byte`.
    pub(crate) fn set(&self, state: StateId, byte: u8, value: u32) {
        self.words
            .set(state as usize * 256 + usize::from(byte), value);
    }

    /// Sets the entries of `state` for the ASCII bytes in `bytes` (bit per byte) that are
    /// still `UNKNOWN` to `value`.
    pub(crate) fn fill_unknown_ascii(&self, state: StateId, bytes: u128, value: u32) {
        self.fill_unknown(state as usize * 256, bytes, value);
    }

    /// Sets the entries of `state` for the bytes past ASCII in `bytes` (bit `byte - 0x80`)
    /// that are still `UNKNOWN` to `value`.
    pub(crate) fn fill_unknown_high(&self, state: StateId, bytes: u128, value: u32) {
        self.fill_unknown(state as usize * 256 + 128, bytes, value);
    }

    /// Sets the entries `start + bit` for the bits of `bytes` that are still `UNKNOWN`.
    /// Another thread may write an entry in between: every value written for it describes
    /// the same transition, so either may stay.
    fn fill_unknown(&self, start: usize, bytes: u128, value: u32) {
        let mut bits = bytes;
        while bits != 0 {
            let bit = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            self.words.replace(start + bit, UNKNOWN, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_keep_their_entries_across_chunks() {
        let states = CHUNK_STATES * 2 + 3;
        let table = TransitionTable::with_capacity(states);
        for state in 0..states {
            // State k takes the bytes k % 256 and 255 - k % 256.
            let mut live = [0u64; 4];
            for byte in [state % 256, 255 - state % 256] {
                live[byte / 64] |= 1 << (byte % 64);
            }
            table.write_row(state as StateId, &live);
            table.set(state as StateId, (state % 256) as u8, state as u32);
        }
        for state in 0..states {
            let id = state as StateId;
            let own = (state % 256) as u8;
            assert_eq!(table.get(id, own), state as u32);
            let mirrored = 255 - own;
            if mirrored != own {
                assert_eq!(table.get(id, mirrored), UNKNOWN);
            }
            let other = own.wrapping_add(1);
            if other != mirrored {
                assert_eq!(table.get(id, other), DEAD);
            }
        }
        // Filling a class sets its unknown entries only (state 0 knows byte 0, and
        // byte 255 is unknown).
        table.fill_unknown_ascii(0, 1 | 1 << 7, 42);
        table.fill_unknown_high(0, 1 | 1 << 127, 42);
        assert_eq!(
            [0, 7, 128, 255].map(|byte| table.get(0, byte)),
            [0, DEAD, DEAD, 42]
        );
    }
}
