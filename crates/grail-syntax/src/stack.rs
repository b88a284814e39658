//! Stack growth for the recursive walks over grammars.
//!
//! Parsing, lowering, checking, printing and compiling recurse along the nesting of
//! parentheses and quantifiers, which untrusted (or generated: llama.cpp's JSON Schema
//! converter nests one group per `maxLength` character) grammars make thousands deep.
//! Each recursive walk calls [`deep`] once per level: when less than [`RED_ZONE`] of
//! stack is left, the rest of the walk continues on a fresh heap-allocated segment, so
//! depth is bounded by [`crate::ParseLimits::max_nesting_depth`], not by the thread's stack.
//!
//! `deep` runs at every level of every walk (millions of times when a big schema is
//! converted and compiled), so it remembers, per thread, the lowest address the current
//! segment may reach before it must look again: above it, a level costs one thread-local
//! read and a comparison instead of `stacker`'s two calls and lazy thread-local.

use std::cell::Cell;

/// Stack that must remain before a level runs on the current segment.
pub const RED_ZONE: usize = 128 * 1024;

/// Size of each new segment.
pub const SEGMENT: usize = 4 * 1024 * 1024;

thread_local! {
    /// The lowest stack address at which a level may still run on this thread's current
    /// segment without asking `stacker` (its limit plus [`RED_ZONE`]); 0 when not known.
    static FLOOR: Cell<usize> = const { Cell::new(0) };
}

/// An address in the caller's stack frame (stacks grow down on every target Grail builds
/// for, as `stacker` assumes too).
#[inline(always)]
fn stack_address() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

/// Runs `f`, first moving to a new stack segment if this one is nearly full.
#[inline]
pub fn deep<R>(f: impl FnOnce() -> R) -> R {
    let floor = FLOOR.get();
    if floor != 0 && stack_address() >= floor {
        return f();
    }
    deep_checked(f)
}

/// `deep` when the floor is not known or is reached: asks `stacker` how much stack is
/// left, and either remembers the floor and runs `f` here, or runs it on a new segment
/// (whose floor is found on its first level, and the old one restored after).
#[inline(never)]
fn deep_checked<R>(f: impl FnOnce() -> R) -> R {
    match stacker::remaining_stack() {
        Some(remaining) if remaining >= RED_ZONE => {
            let limit = stack_address().saturating_sub(remaining);
            FLOOR.set(limit + RED_ZONE);
            f()
        }
        _ => {
            /// Puts the floor of the segment left back when the new one is done with
            /// (also when `f` unwinds).
            struct Restore(usize);
            impl Drop for Restore {
                fn drop(&mut self) {
                    FLOOR.set(self.0);
                }
            }
            let _restore = Restore(FLOOR.replace(0));
            stacker::grow(SEGMENT, f)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recurses `levels` deep through `deep`, with a frame big enough that the thread's
    /// stack alone would overflow; returns the sum of the levels.
    fn recurse(levels: u64) -> u64 {
        deep(|| {
            let ballast = std::hint::black_box([levels as u8; 1024]);
            if levels == 0 {
                u64::from(ballast[0])
            } else {
                levels + recurse(levels - 1)
            }
        })
    }

    #[test]
    fn recursion_far_deeper_than_the_thread_stack_runs_on_new_segments() {
        // 64 KiB of stack: 20,000 levels of over 1 KiB each need over 20 MB.
        let sum = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(|| recurse(20_000))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(sum, 20_000 * 20_001 / 2);
    }

    #[test]
    fn the_floor_of_the_thread_stack_is_back_after_a_new_segment() {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                deep(|| ());
                let floor = FLOOR.get();
                assert_ne!(floor, 0);
                assert_eq!(recurse(5_000), 5_000 * 5_001 / 2);
                assert_eq!(FLOOR.get(), floor);
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
