//! A vector kept in chunks of at most 64 KB that never move, for the step cache's
//! per-state and per-transition records.
//!
//! A vector that doubles copies everything learned so far inside one mask, and past
//! 64 KB its new buffer is a large object to mimalloc: a fresh page whose first touch can
//! be a transparent huge page fault, which `prefault_heap` (64 KB blocks) does not
//! prevent. Github_hard o33027's cold document doubled its states' records to 4,096 at
//! one key step, 300–500 µs slower than that step in later runs of the same process.
//! Chunks are the allocator's medium objects, which the prefaulted heap serves (as the
//! transition table's rows, `transition_table.rs`); an element costs one more cached load.

use std::ops::{Index, IndexMut};

/// Bytes a chunk holds at most: the size of the blocks `prefault_heap` makes resident.
const CHUNK_BYTES: usize = 64 << 10;

/// A growable sequence of `T` stored in chunks of a power-of-two length (as many
/// elements as fit in [`CHUNK_BYTES`]), every chunk but the last full.
#[derive(Debug, Clone)]
pub(crate) struct ChunkedVec<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for ChunkedVec<T> {
    fn default() -> Self {
        ChunkedVec {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> ChunkedVec<T> {
    /// log2 of the elements per chunk.
    const SHIFT: u32 = {
        let fit = CHUNK_BYTES
            / if size_of::<T>() == 0 {
                1
            } else {
                size_of::<T>()
            };
        assert!(fit > 0, "an element bigger than a chunk");
        fit.ilog2()
    };

    /// Elements per chunk.
    const CHUNK_LEN: usize = 1 << Self::SHIFT;

    /// How many elements it holds.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Appends `value`, starting a chunk when the last is full.
    pub(crate) fn push(&mut self, value: T) {
        if self.len.is_multiple_of(Self::CHUNK_LEN) {
            self.chunks.push(Vec::with_capacity(Self::CHUNK_LEN));
        }
        self.chunks
            .last_mut()
            .expect("a chunk with room")
            .push(value);
        self.len += 1;
    }

    /// The element at `index`, if there is one.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        self.chunks
            .get(index >> Self::SHIFT)?
            .get(index & (Self::CHUNK_LEN - 1))
    }
}

// One bounds check (against `len`) rather than one per level: these are read at every
// node of a token-trie walk.
impl<T> Index<usize> for ChunkedVec<T> {
    type Output = T;

    #[inline]
    fn index(&self, index: usize) -> &T {
        assert!(index < self.len, "index {index} past {} elements", self.len);
        // SAFETY: every chunk but the last holds `CHUNK_LEN` elements and the last the
        // rest (`push` keeps it so, and a clone copies it), so an index below `len` is
        // inside the chunk it names.
        unsafe {
            self.chunks
                .get_unchecked(index >> Self::SHIFT)
                .get_unchecked(index & (Self::CHUNK_LEN - 1))
        }
    }
}

impl<T> IndexMut<usize> for ChunkedVec<T> {
    #[inline]
    fn index_mut(&mut self, index: usize) -> &mut T {
        assert!(index < self.len, "index {index} past {} elements", self.len);
        // SAFETY: as for `index`.
        unsafe {
            self.chunks
                .get_unchecked_mut(index >> Self::SHIFT)
                .get_unchecked_mut(index & (Self::CHUNK_LEN - 1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_stay_in_order_across_chunks_and_copies() {
        let mut records: ChunkedVec<[u64; 3]> = ChunkedVec::default();
        let per_chunk = ChunkedVec::<[u64; 3]>::CHUNK_LEN;
        assert!(per_chunk * 24 <= CHUNK_BYTES && per_chunk * 48 > CHUNK_BYTES);
        let count = per_chunk * 2 + 5;
        for index in 0..count as u64 {
            records.push([index, index * 2, index * 3]);
        }
        assert_eq!(records.len(), count);
        records[per_chunk][1] = 7;
        let copy = records.clone();
        let mut copy_grown = copy.clone();
        copy_grown.push([0; 3]);
        for index in 0..count {
            let expected = if index == per_chunk {
                [index as u64, 7, index as u64 * 3]
            } else {
                [index as u64, index as u64 * 2, index as u64 * 3]
            };
            assert_eq!(records[index], expected);
            assert_eq!(copy.get(index), Some(&expected));
            assert_eq!(copy_grown[index], expected);
        }
        assert_eq!(records.get(count), None);
        assert_eq!(copy_grown.len(), count + 1);
        assert_eq!(copy_grown[count], [0; 3]);
    }
}
