//! Append-only storage in chunks that never move, shared by threads: the step cache's
//! per-state and per-transition records, written by whichever matcher learns them and
//! read by every matcher of the grammar without a lock.
//!
//! Two forms: [`AppendOnly`] for records (each element set once by the push that reserved
//! it and published with release, so a reader sees a whole record or none), and
//! [`SharedWords`] for the dense `u32` tables walks read at every trie node (atomics,
//! stored with release and loaded with acquire: a reader that loads an index written by
//! another thread then sees the record it names). Both have a fixed directory of chunks, sized by their capacity when made,
//! so a reader never meets a directory being resized.
//!
//! Chunks hold at most [`CHUNK_BYTES`]: a vector that doubled copied everything learned
//! so far inside one mask, and past 64 KB its new buffer is a large object to mimalloc:
//! a fresh page whose first touch can be a transparent huge page fault, which
//! `prefault_heap` (64 KB blocks) does not prevent. Chunks are the allocator's medium
//! objects, which the prefaulted heap serves.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicUsize, Ordering};

/// Bytes a chunk holds at most: the size of the blocks `prefault_heap` makes resident.
pub(crate) const CHUNK_BYTES: usize = 64 << 10;

/// log2 of how many values of `size` bytes fit in a chunk (rounded down to a power of
/// two).
const fn chunk_shift(size: usize) -> u32 {
    let fit = CHUNK_BYTES / if size == 0 { 1 } else { size };
    assert!(fit > 0, "an element bigger than a chunk");
    fit.ilog2()
}

/// A cell written once, by the one push that reserved its index, and read by anyone
/// after: all-zero bits are an empty cell, so a chunk of them is zeroed memory that is not
/// written until used (a chunk made eagerly wrote tens of KB inside a cold mask).
struct SetOnce<T> {
    /// 0: empty; 1: written (stored with release after the value).
    ready: AtomicU8,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: a cell's value is written once, before `ready` is set with release, by the
// single push that reserved it, and only read (shared) after `ready` is seen with acquire;
// so sharing cells between threads is sound for values that are themselves `Send + Sync`.
unsafe impl<T: Send + Sync> Sync for SetOnce<T> {}

impl<T> SetOnce<T> {
    fn get(&self) -> Option<&T> {
        // SAFETY: `ready` is set (with release) only after the value is written, and the
        // value is never written again.
        (self.ready.load(Ordering::Acquire) == 1)
            .then(|| unsafe { (*self.value.get()).assume_init_ref() })
    }

    /// Writes the value; the caller is the only writer of this cell (it reserved it).
    fn set(&self, value: T) {
        debug_assert_eq!(self.ready.load(Ordering::Relaxed), 0, "a cell is set once");
        // SAFETY: no one reads the value before `ready` is set, and the reservation makes
        // this the only write.
        unsafe { (*self.value.get()).write(value) };
        self.ready.store(1, Ordering::Release);
    }
}

impl<T> Drop for SetOnce<T> {
    fn drop(&mut self) {
        if *self.ready.get_mut() == 1 {
            // SAFETY: set, so initialized; dropped once, with the cell.
            unsafe { self.value.get_mut().assume_init_drop() };
        }
    }
}

/// `len` empty cells in zeroed memory (`calloc`: pages fresh from the system are not
/// written).
fn empty_cells<T>(len: usize) -> Box<[SetOnce<T>]> {
    let layout = std::alloc::Layout::array::<SetOnce<T>>(len).expect("a chunk's layout");
    assert!(layout.size() > 0, "cells of zero size");
    // SAFETY: the layout has a non-zero size; zeroed memory is a valid array of empty
    // cells (an `AtomicU8` of 0, and a `MaybeUninit` whatever its bits), so the box owns
    // `len` initialized cells allocated with the global allocator and this layout.
    unsafe {
        let memory = std::alloc::alloc_zeroed(layout) as *mut SetOnce<T>;
        if memory.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(memory, len))
    }
}

/// A chunk of [`AppendOnly`]: cells set once each.
type Chunk<T> = Box<[SetOnce<T>]>;

/// A sequence of `T` that only grows, up to a capacity fixed when made; elements are
/// appended and read through `&self`, from any thread.
pub(crate) struct AppendOnly<T> {
    chunks: Box<[OnceLock<Chunk<T>>]>,
    /// Elements reserved so far (some may still be being written).
    reserved: AtomicUsize,
    capacity: usize,
}

impl<T> std::fmt::Debug for AppendOnly<T> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("AppendOnly")
            .field("len", &self.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl<T> AppendOnly<T> {
    /// log2 of the elements per chunk.
    const SHIFT: u32 = chunk_shift(size_of::<SetOnce<T>>());

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
        let chunk = self.chunks[index >> Self::SHIFT].get_or_init(|| empty_cells(Self::CHUNK_LEN));
        // The index was reserved by this call alone, so this is its cell's one write.
        chunk[index & (Self::CHUNK_LEN - 1)].set(value);
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

/// A table of `u32` words in chunks of a power-of-two length, up to a capacity fixed when
/// made: written and read through `&self` from any thread. A word never written reads as
/// the table's `unwritten` value: words are stored XORed with it, so a chunk starts as
/// zeroed memory (fresh pages from the allocator, not written until used).
#[derive(Debug)]
pub(crate) struct SharedWords {
    chunks: Box<[OnceLock<Box<[AtomicU32]>>]>,
    /// log2 of the words per chunk.
    shift: u32,
    unwritten: u32,
}

/// `len` words of zeroed memory, as atomics.
fn zeroed_words(len: usize) -> Box<[AtomicU32]> {
    // Zeroed by the allocator (`calloc`): pages fresh from the system are not written.
    let words: Box<[u32]> = vec![0u32; len].into_boxed_slice();
    // SAFETY: `AtomicU32` has the same size, alignment and bit validity as `u32`, so the
    // allocation is a valid `[AtomicU32]` of the same length and layout.
    unsafe { Box::from_raw(Box::into_raw(words) as *mut [AtomicU32]) }
}

impl SharedWords {
    /// Room for `capacity` words in chunks of `chunk_words` (a power of two), every word
    /// reading as `unwritten` until set.
    pub(crate) fn with_capacity(
        capacity: usize,
        chunk_words: usize,
        unwritten: u32,
    ) -> SharedWords {
        assert!(chunk_words.is_power_of_two());
        SharedWords {
            chunks: (0..capacity.div_ceil(chunk_words))
                .map(|_| OnceLock::new())
                .collect(),
            shift: chunk_words.ilog2(),
            unwritten,
        }
    }

    /// The chunk holding word `index` and the word's place in it, the chunk made if
    /// needed.
    fn word(&self, index: usize) -> &AtomicU32 {
        let chunk = self.chunks[index >> self.shift].get_or_init(|| zeroed_words(1 << self.shift));
        &chunk[index & ((1 << self.shift) - 1)]
    }

    /// The word at `index`.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> u32 {
        let stored = match self.chunks[index >> self.shift].get() {
            Some(chunk) => chunk[index & ((1 << self.shift) - 1)].load(Ordering::Acquire),
            None => 0,
        };
        stored ^ self.unwritten
    }

    /// Sets the word at `index`.
    pub(crate) fn set(&self, index: usize, value: u32) {
        self.word(index)
            .store(value ^ self.unwritten, Ordering::Release);
    }

    /// Sets the word at `index` to `value` when it holds `expected`. Another thread may
    /// write it in between (callers write only values equivalent to each other).
    pub(crate) fn replace(&self, index: usize, expected: u32, value: u32) {
        let word = self.word(index);
        if word.load(Ordering::Relaxed) ^ self.unwritten == expected {
            word.store(value ^ self.unwritten, Ordering::Release);
        }
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
    fn words_read_what_was_set_and_the_unwritten_value_elsewhere() {
        let words = SharedWords::with_capacity(1024, 256, 7);
        assert_eq!(words.get(1000), 7);
        words.set(300, 9);
        assert_eq!(words.get(300), 9);
        assert_eq!(words.get(301), 7);
        words.set(301, 0);
        assert_eq!(words.get(301), 0);
        words.replace(302, 7, 5);
        words.replace(300, 7, 5);
        assert_eq!([words.get(300), words.get(302)], [9, 5]);
    }
}
