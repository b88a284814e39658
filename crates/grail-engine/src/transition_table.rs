//! The step cache's transition table: a row of 256 entries per state, in chunks.
//!
//! One contiguous table doubled as states were learned, copying every row learned so
//! far each time (an open object's first key steps learn hundreds of states: the copies
//! were a tenth of such a step's instructions, and more of its time, since the new
//! table's pages are touched by the copy). Chunks of [`CHUNK_STATES`] rows are allocated
//! as states need them and never move; a lookup costs one more (cached) load.

use crate::step_cache::{DEAD, StateId, UNKNOWN};

/// States per chunk: a chunk's rows are 64 KB, address space until written. The size of
/// the blocks `prefault_heap` makes resident: a bigger chunk is a large object to
/// mimalloc, served from a fresh 4 MiB page whose first touch can be a transparent huge
/// page fault of milliseconds (256-state chunks: one mask of 2.6–4 ms in every second
/// cold run of MaskBench BFCL_sql_12 and BFCL_sql_33, at most 0.11 ms with these).
pub(crate) const CHUNK_STATES: usize = 64;

/// Per state and byte: a marker (`UNKNOWN`, `DEAD`, ...) or an index into the step
/// cache's results.
#[derive(Debug, Clone, Default)]
pub(crate) struct TransitionTable {
    /// Rows of `CHUNK_STATES` states each; every chunk but the last is full.
    chunks: Vec<Vec<u32>>,
}

impl TransitionTable {
    /// Appends the row of the next state: `UNKNOWN` for the bytes set in `live`
    /// (bit per byte), `DEAD` for the rest.
    pub(crate) fn push_row(&mut self, live: &[u64; 4]) {
        if self
            .chunks
            .last()
            .is_none_or(|chunk| chunk.len() == CHUNK_STATES * 256)
        {
            self.chunks.push(Vec::with_capacity(CHUNK_STATES * 256));
        }
        let chunk = self.chunks.last_mut().expect("a chunk with room");
        // A quarter of the row at a time: copied whole where its 64 bytes are all live or
        // all dead (past ASCII, mostly), else one branchless pass (a loop over the live
        // bits wrote them one by one, a third of the time of interning a state).
        for &bits in live {
            match bits {
                u64::MAX => chunk.extend_from_slice(&[UNKNOWN; 64]),
                0 => chunk.extend_from_slice(&[DEAD; 64]),
                _ => chunk.extend((0..64).map(|bit| match bits >> bit & 1 {
                    1 => UNKNOWN,
                    _ => DEAD,
                })),
            }
        }
    }

    /// The entry of `state` for `byte`.
    #[inline]
    pub(crate) fn get(&self, state: StateId, byte: u8) -> u32 {
        let state = state as usize;
        self.chunks[state / CHUNK_STATES][state % CHUNK_STATES * 256 + usize::from(byte)]
    }

    /// Sets the entries of `state` for the ASCII bytes in `bytes` (bit per byte) that are
    /// still `UNKNOWN` to `value`. Branchless over each half of the ASCII row that has
    /// such bytes (a loop over the set bits wrote them one by one: a class of a hundred
    /// bytes cost as much as the rest of recording the transition).
    pub(crate) fn fill_unknown_ascii(&mut self, state: StateId, bytes: u128, value: u32) {
        let row = self.row_mut(state);
        for (half, entries) in row[..128].chunks_exact_mut(64).enumerate() {
            let bits = (bytes >> (64 * half)) as u64;
            if bits == 0 {
                continue;
            }
            for (bit, entry) in entries.iter_mut().enumerate() {
                let takes = bits >> bit & 1 == 1 && *entry == UNKNOWN;
                *entry = if takes { value } else { *entry };
            }
        }
    }

    /// Sets the entries of `state` for the bytes past ASCII in `bytes` (bit `byte - 0x80`)
    /// that are still `UNKNOWN` to `value`.
    pub(crate) fn fill_unknown_high(&mut self, state: StateId, bytes: u128, value: u32) {
        let row = self.row_mut(state);
        for (bit, entry) in row[128..].iter_mut().enumerate() {
            if bytes >> bit & 1 == 1 && *entry == UNKNOWN {
                *entry = value;
            }
        }
    }

    /// The row of `state`, to write.
    pub(crate) fn row_mut(&mut self, state: StateId) -> &mut [u32] {
        let state = state as usize;
        let start = state % CHUNK_STATES * 256;
        &mut self.chunks[state / CHUNK_STATES][start..start + 256]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_keep_their_entries_across_chunks() {
        let mut table = TransitionTable::default();
        let states = CHUNK_STATES * 2 + 3;
        for state in 0..states {
            // State k takes the bytes k % 256 and 255 - k % 256.
            let mut live = [0u64; 4];
            for byte in [state % 256, 255 - state % 256] {
                live[byte / 64] |= 1 << (byte % 64);
            }
            table.push_row(&live);
            table.row_mut(state as StateId)[state % 256] = state as u32;
        }
        assert_eq!(table.chunks.len(), 3);
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
    }
}
