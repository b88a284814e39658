//! What the matchers of one compiled grammar learn, shared by all of them.
//!
//! A matcher learns as it goes: parse states and their transitions (`step_cache.rs`),
//! remembered trie walks, masks by parse state (`mask_cache.rs`), the twin bounds of
//! bounded repetitions (`counted.rs`). Every matcher of a grammar with one vocabulary —
//! forks, later matchers, matchers on other threads — reads and writes one store of it:
//! what one learns, the others use from their next step, so a server that keeps a
//! compiled grammar pays for learning its states once, not once per request or per
//! sequence of a batch.
//!
//! Walks and masks are facts about one vocabulary (trie ranges, token ids), so what is
//! learned is kept per vocabulary, told apart by the identity of its
//! `Arc<VocabularyIndex>` (held weakly: a vocabulary dropped leaves a dead entry, cleared
//! when the grammar's next matcher is made). The step cache is bounded (states, walks'
//! bytes); when it is full, new matchers start from a fresh one while the matchers
//! holding the old one keep it, so no matcher ever reads states of two caches. The mask
//! cache is bounded in bytes (the grammar's `max_mask_cache_bytes`) and cleared when
//! full; it is keyed by parse states' own descriptions, never by a cache's state ids.

use std::sync::{Arc, Mutex, RwLock, Weak};

use grail_vocab::VocabularyIndex;

use crate::automaton::mask_cache::MaskCache;
use crate::automaton::step_cache::StepCache;

/// Most vocabularies a grammar keeps learning for at once (the oldest make room).
const MAX_VOCABULARIES: usize = 4;

/// The masks of a grammar with one vocabulary, shared by its matchers (lookups share
/// the read lock).
pub(crate) type SharedMasks = Arc<RwLock<MaskCache>>;

/// What one matcher starts from: the step cache, the masks and the twin bounds.
pub(crate) struct Inheritance {
    pub(crate) step_cache: Arc<StepCache>,
    pub(crate) mask_cache: SharedMasks,
    pub(crate) twin_bounds: Option<Arc<[u32]>>,
}

/// The learning kept for one vocabulary (or for matchers without one).
#[derive(Debug)]
struct Entry {
    /// `None`: matchers without a vocabulary (no walks, no masks).
    vocabulary: Option<Weak<VocabularyIndex>>,
    step_cache: Arc<StepCache>,
    mask_cache: SharedMasks,
    twin_bounds: Option<Arc<[u32]>>,
}

impl Entry {
    fn is_for(&self, vocabulary: Option<&Arc<VocabularyIndex>>) -> bool {
        match (&self.vocabulary, vocabulary) {
            (None, None) => true,
            (Some(kept), Some(vocabulary)) => std::ptr::eq(kept.as_ptr(), Arc::as_ptr(vocabulary)),
            _ => false,
        }
    }

    fn is_dead(&self) -> bool {
        self.vocabulary
            .as_ref()
            .is_some_and(|kept| kept.strong_count() == 0)
    }
}

/// The learning of a compiled grammar's matchers, per vocabulary (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct LearnedStore {
    entries: Mutex<Vec<Entry>>,
}

impl LearnedStore {
    /// What a new matcher with `vocabulary` starts from (empty the first time).
    pub(crate) fn inherit(&self, vocabulary: Option<&Arc<VocabularyIndex>>) -> Inheritance {
        let mut entries = self.lock();
        entries.retain(|entry| !entry.is_dead());
        if let Some(entry) = entries.iter_mut().find(|entry| entry.is_for(vocabulary)) {
            if entry.step_cache.is_full() {
                entry.step_cache = Arc::default();
            }
            return Inheritance {
                step_cache: entry.step_cache.clone(),
                mask_cache: entry.mask_cache.clone(),
                twin_bounds: entry.twin_bounds.clone(),
            };
        }
        if entries.len() >= MAX_VOCABULARIES {
            entries.remove(0);
        }
        let entry = Entry {
            vocabulary: vocabulary.map(Arc::downgrade),
            step_cache: Arc::default(),
            mask_cache: Arc::default(),
            twin_bounds: None,
        };
        let inheritance = Inheritance {
            step_cache: entry.step_cache.clone(),
            mask_cache: entry.mask_cache.clone(),
            twin_bounds: None,
        };
        entries.push(entry);
        inheritance
    }

    /// Keeps the twin bounds a matcher with `vocabulary` worked out, when the store has
    /// none yet.
    pub(crate) fn hand_back_twin_bounds(
        &self,
        vocabulary: Option<&Arc<VocabularyIndex>>,
        twin_bounds: &Arc<[u32]>,
    ) {
        let mut entries = self.lock();
        if let Some(entry) = entries.iter_mut().find(|entry| entry.is_for(vocabulary))
            && entry.twin_bounds.is_none()
        {
            entry.twin_bounds = Some(twin_bounds.clone());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.entries
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use grail_vocab::{TokenBitmask, TokenKind, Vocabulary, VocabularyIndex};

    use crate::{CompiledGrammar, Matcher};

    fn vocabulary(tokens: &[&str]) -> Arc<VocabularyIndex> {
        let texts: Vec<Vec<u8>> = tokens
            .iter()
            .map(|token| token.as_bytes().to_vec())
            .collect();
        let kinds = vec![TokenKind::Text; texts.len()];
        Arc::new(VocabularyIndex::new(Vocabulary::new(
            "test",
            texts,
            kinds,
            vec![],
            None,
        )))
    }

    #[test]
    fn a_later_matcher_starts_from_what_earlier_ones_learned_with_its_vocabulary() {
        let grammar =
            CompiledGrammar::from_gbnf(r#"root ::= "{" ( "\"" [a-z]* "\"" ":" [0-9]+ )? "}""#)
                .unwrap();
        let first = vocabulary(&["{", "\"", "ab", "c", "\":", "1", "23", "}"]);
        let other = vocabulary(&["{", "}", "\"a\":1"]);
        let learned_at_start = |index: &Arc<VocabularyIndex>| {
            Matcher::with_vocabulary(&grammar, index.clone())
                .parser
                .step_cache()
                .state_count()
        };
        let cold = learned_at_start(&first);
        {
            let mut matcher = Matcher::with_vocabulary(&grammar, first.clone());
            let mut mask = TokenBitmask::new(8);
            for text in ["{", "\"", "ab", "\":", "23"] {
                matcher.fill_mask(&mut mask);
                matcher.accept_str(text).unwrap();
            }
        }
        let warm = learned_at_start(&first);
        assert!(warm > cold, "{warm} states inherited, {cold} at first");
        // Another vocabulary starts from its own (walks and masks are per vocabulary).
        assert_eq!(learned_at_start(&other), cold);
    }
}
