//! Stack growth for the recursive walks over grammars.
//!
//! Parsing, lowering, checking, printing and compiling recurse along the nesting of
//! parentheses and quantifiers, which untrusted (or generated: llama.cpp's JSON Schema
//! converter nests one group per `maxLength` character) grammars make thousands deep.
//! Each recursive walk calls [`deep`] once per level: when less than [`RED_ZONE`] of
//! stack is left, the rest of the walk continues on a fresh heap-allocated segment, so
//! depth is bounded by [`crate::ParseLimits::max_nesting_depth`], not by the thread's stack.

/// Stack that must remain before a level runs on the current segment.
pub const RED_ZONE: usize = 128 * 1024;

/// Size of each new segment.
pub const SEGMENT: usize = 4 * 1024 * 1024;

/// Runs `f`, first moving to a new stack segment if this one is nearly full.
pub fn deep<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}
