//! Masks remembered by parse state.
//!
//! The tokens allowed next depend only on the parse state: the current items and, through
//! their frames, the callers up to the root (`Matcher::state_key`). Generation revisits
//! the same states constantly (inside a string, after a comma in an object at the same
//! depth), so a mask computed once is reused whenever the same state comes back. The cache
//! is shared by a matcher and its forks and bounded in bytes; when full, it is cleared.

use rustc_hash::FxHashMap;

/// Keys longer than this (very deep or very ambiguous states) are not cached.
pub(crate) const MAX_KEY_WORDS: usize = 2048;

/// Masks by state key.
#[derive(Debug, Default)]
pub(crate) struct MaskCache {
    masks: FxHashMap<Box<[u32]>, Box<[u32]>>,
    bytes: usize,
}

impl MaskCache {
    /// The mask words remembered for `key`.
    pub(crate) fn get(&self, key: &[u32]) -> Option<&[u32]> {
        self.masks.get(key).map(|words| &**words)
    }

    /// Remembers a mask, clearing the cache first if it would pass `max_bytes`.
    pub(crate) fn insert(&mut self, key: &[u32], words: &[u32], max_bytes: usize) {
        let size = 4 * (key.len() + words.len()) + 64;
        if size > max_bytes {
            return;
        }
        if self.bytes + size > max_bytes {
            self.masks.clear();
            self.bytes = 0;
        }
        self.masks.insert(key.into(), words.into());
        self.bytes += size;
    }
}
