//! Values that depend on the vocabulary alone, computed on first need and remembered (up
//! to a cap), shared by every clone of their owner and across threads.

use std::sync::{Arc, Mutex};

/// Remembered values by key, at most `cap` of them.
#[derive(Debug)]
pub(crate) struct Memo<K, V> {
    entries: Arc<Mutex<Vec<(K, V)>>>,
    cap: usize,
}

impl<K, V> Memo<K, V> {
    /// An empty memo keeping at most `cap` values.
    pub(crate) fn new(cap: usize) -> Memo<K, V> {
        Memo {
            entries: Arc::default(),
            cap,
        }
    }
}

/// Clones share the remembered values.
impl<K, V> Clone for Memo<K, V> {
    fn clone(&self) -> Memo<K, V> {
        Memo {
            entries: self.entries.clone(),
            cap: self.cap,
        }
    }
}

impl<K: PartialEq, V: Clone> Memo<K, V> {
    /// The value of `key`: remembered, or built now and remembered; `None` (without
    /// building) when it is not remembered and the memo is full.
    pub(crate) fn get_or_build(&self, key: K, build: impl FnOnce() -> V) -> Option<V> {
        let mut entries = self
            .entries
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if let Some((_, value)) = entries.iter().find(|(known, _)| *known == key) {
            return Some(value.clone());
        }
        if entries.len() >= self.cap {
            return None;
        }
        let value = build();
        entries.push((key, value.clone()));
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_built_once_per_key_and_capped() {
        let memo: Memo<u32, u32> = Memo::new(2);
        let mut builds = 0;
        let mut build = |value| {
            builds += 1;
            value
        };
        assert_eq!(memo.get_or_build(1, || build(10)), Some(10));
        assert_eq!(memo.get_or_build(1, || build(11)), Some(10));
        assert_eq!(memo.clone().get_or_build(2, || build(20)), Some(20));
        // Full: a new key is not built, known ones still answer (the clone shared them).
        assert_eq!(memo.get_or_build(3, || build(30)), None);
        assert_eq!(memo.get_or_build(2, || build(21)), Some(20));
        assert_eq!(builds, 2);
    }
}
