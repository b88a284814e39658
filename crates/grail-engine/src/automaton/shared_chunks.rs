//! Append-only storage in chunks that never move, shared by threads: the step cache's
//! per-state and per-transition records, written by whichever matcher learns them and
//! read by every matcher of the grammar without a lock.
//!
//! Two forms: [`AppendOnly`] for records (each element set once, through a `OnceLock`,
//! so a reader sees a whole record or none), and [`SharedWords`] for the dense `u32`
//! tables walks read at every trie node (atomics, stored with release and loaded with
//! acquire: a reader that loads an index written by another thread then sees the record
//! it names). Both have a fixed directory of chunks, sized by their capacity when made,
//! so a reader never meets a directory being resized.
//!
//! Chunks hold at most [`CHUNK_BYTES`]: a vector that doubled copied everything learned
//! so far inside one mask, and past 64 KB its new buffer is a large object to mimalloc:
//! a fresh page whose first touch can be a transparent huge page fault, which
//! `prefault_heap` (64 KB blocks) does not prevent. Chunks are the allocator's medium
//! objects, which the prefaulted heap serves.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// Bytes a chunk holds at most: the size of the blocks `prefault_heap` makes resident.
pub(crate) const CHUNK_BYTES: usize = 64 << 10;

/// log2 of how many values of `size` bytes fit in a chunk (rounded down to a power of
/// two).
const fn chunk_shift(size: usize) -> u32 {
    let fit = CHUNK_BYTES / if size == 0 { 1 } else { size };
    assert!(fit > 0, "an element bigger than a chunk");
    fit.ilog2()
}

/// A chunk of [`AppendOnly`]: cells set once each.
type Chunk<T> = Box<[OnceLock<T>]>;

/// A sequence of `T` that only grows, up to a capacity fixed when made; elements are
/// appended and read through `&self`, from any thread.
#[derive(Debug)]
pub(crate) struct AppendOnly<T> {
    chunks: Box<[OnceLock<Chunk<T>>]>,
    /// Elements reserved so far (some may still be being written).
    reserved: AtomicUsize,
    capacity: usize,
}

impl<T> AppendOnly<T> {
    /// log2 of the elements per chunk.
    const SHIFT: u32 = chunk_shift(size_of::<OnceLock<T>>());

    /// Elements per chunk.
    const CHUNK_LEN: usize = 1 << Self::SHIFT;

    /// Room for `capacity` elements (the directory is made now, the chunks as needed).
    pub(crate) fn with_capacity(capacity: usize) -> AppendOnly<T> {
        let chunks = capacity.div_ceil(Self::CHUNK_LEN);
        AppendOnly {
            chunks: (0..chunks).map(|_| OnceLock::new()).collect(),
            reserved: AtomicUsize::new(0),
            capacity,
        }
    }

    /// How many elements were appended (or are being appended).
    pub(crate) fn len(&self) -> usize {
        self.reserved.load(Ordering::Acquire).min(self.capacity)
    }

    /// Whether `count` more elements fit.
    pub(crate) fn has_room_for(&self, count: usize) -> bool {
        self.len() + count <= self.capacity
    }

    /// Appends `value` and returns its index, or gives it back when full.
    pub(crate) fn push(&self, value: T) -> Result<usize, T> {
        let index = self.reserved.fetch_add(1, Ordering::AcqRel);
        if index >= self.capacity {
            self.reserved.store(self.capacity, Ordering::Release);
            return Err(value);
        }
        let chunk = self.chunks[index >> Self::SHIFT]
            .get_or_init(|| (0..Self::CHUNK_LEN).map(|_| OnceLock::new()).collect());
        // The index was reserved by this call alone, so its cell is empty.
        chunk[index & (Self::CHUNK_LEN - 1)]
            .set(value)
            .map_err(|_| ())
            .expect("an index is reserved once");
        Ok(index)
    }

    /// The element at `index`, once it is written.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        self.chunks
            .get(index >> Self::SHIFT)?
            .get()?
            .get(index & (Self::CHUNK_LEN - 1))?
            .get()
    }
}

impl<T> std::ops::Index<usize> for AppendOnly<T> {
    type Output = T;

    /// The element at `index`: indices are handed out by `push` and reach readers only
    /// once their element is written (through a record or a table entry stored after
    /// it), so a missing one is a bug.
    #[inline]
    fn index(&self, index: usize) -> &T {
        match self.get(index) {
            Some(value) => value,
            None => panic!("no element {index} yet ({} reserved)", self.len()),
        }
    }
}

/// A table of `u32` words in chunks of `CHUNK_WORDS`, up to a capacity fixed when made:
/// written and read through `&self` from any thread.
#[derive(Debug)]
pub(crate) struct SharedWords {
    chunks: Box<[OnceLock<Box<[AtomicU32]>>]>,
    chunk_words: usize,
}

impl SharedWords {
    /// Room for `capacity` words in chunks of `chunk_words` (a power of two).
    pub(crate) fn with_capacity(capacity: usize, chunk_words: usize) -> SharedWords {
        debug_assert!(chunk_words.is_power_of_two());
        SharedWords {
            chunks: (0..capacity.div_ceil(chunk_words))
                .map(|_| OnceLock::new())
                .collect(),
            chunk_words,
        }
    }

    /// The chunk holding word `index`, made (filled with `fill`) if it is the first
    /// word written there.
    fn chunk(&self, index: usize, fill: u32) -> &[AtomicU32] {
        self.chunks[index / self.chunk_words].get_or_init(|| {
            (0..self.chunk_words)
                .map(|_| AtomicU32::new(fill))
                .collect()
        })
    }

    /// The words `start..start + len` (inside one chunk), made if needed.
    pub(crate) fn slice(&self, start: usize, len: usize, fill: u32) -> &[AtomicU32] {
        let offset = start % self.chunk_words;
        &self.chunk(start, fill)[offset..offset + len]
    }

    /// The word at `index`.
    ///
    /// # Panics
    /// When no word of its chunk was written.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> u32 {
        match self.chunks[index / self.chunk_words].get() {
            Some(chunk) => chunk[index % self.chunk_words].load(Ordering::Acquire),
            None => panic!("word {index} read before its chunk was written"),
        }
    }

    /// Sets the word at `index` (its chunk made, filled with `fill`, if needed).
    pub(crate) fn set(&self, index: usize, value: u32, fill: u32) {
        self.chunk(index, fill)[index % self.chunk_words].store(value, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_stay_in_order_across_chunks_and_threads() {
        let per_chunk = AppendOnly::<[u64; 3]>::CHUNK_LEN;
        let count = per_chunk * 2 + 5;
        let records = AppendOnly::with_capacity(count + 1);
        std::thread::scope(|scope| {
            for thread in 0..2u64 {
                let records = &records;
                scope.spawn(move || {
                    for value in 0..(count as u64 / 2) {
                        let index = records.push([thread, value, 0]).unwrap();
                        assert_eq!(records[index], [thread, value, 0]);
                    }
                });
            }
        });
        // Each thread's elements are all there, in the order it pushed them.
        for thread in 0..2 {
            let values: Vec<u64> = (0..records.len())
                .map(|index| records[index])
                .filter(|record| record[0] == thread)
                .map(|record| record[1])
                .collect();
            assert_eq!(values, (0..count as u64 / 2).collect::<Vec<_>>());
        }
        assert_eq!(records.len(), count / 2 * 2);
        while records.push([9; 3]).is_ok() {}
        // Full: the capacity holds, and a push past it gives its value back.
        assert_eq!(records.len(), count + 1);
        assert_eq!(records.push([8; 3]), Err([8; 3]));
        assert_eq!(records.get(count + 1), None);
        assert!(!records.has_room_for(1));
    }

    #[test]
    fn words_read_what_was_set_and_the_fill_elsewhere() {
        let words = SharedWords::with_capacity(1024, 256);
        words.set(300, 7, u32::MAX);
        assert_eq!(words.get(300), 7);
        assert_eq!(words.get(301), u32::MAX);
        assert_eq!(words.slice(256, 256, 0)[44].load(Ordering::Relaxed), 7);
        words.slice(512, 256, 5);
        assert_eq!(words.get(600), 5);
    }
}
