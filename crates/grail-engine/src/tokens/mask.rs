//! Token masks: which tokens of a vocabulary the grammar allows next.
//!
//! A token is allowed when token elements match its id (`<[id]>`, `!<[id]>`), or, for a
//! text token, when its bytes are a viable continuation (a prefix of some valid text: it
//! may end inside a character). End-of-generation tokens are allowed exactly when the
//! grammar may end. Special tokens are never matched as text.
//!
//! Masks are remembered by parse state (`mask_cache.rs`). A new state's text part walks
//! the vocabulary's token trie depth first, one matcher step per trie node, skipping the
//! subtree of any byte the grammar refuses; from a step-cache state, the part of the walk
//! that stays in cached transitions is remembered per state (`table_walk.rs`). Walks leave
//! the matcher exactly where it was (they roll every step back).

use std::sync::Arc;

use grail_vocab::{TokenBitmask, VocabularyIndex, clear_from, ids_of, set_ids};

use crate::automaton::grammar::CompiledGrammar;
use crate::automaton::mask_cache::MAX_KEY_WORDS;
use crate::automaton::step_cache::StateId;
use crate::error::AcceptError;
use crate::graph::Node;
use crate::graph::records::Item;
use crate::tokens::matcher::Matcher;
use crate::tokens::table_walk::TrieRange;
use crate::tokens::twin::{TooLong, TwinPlan};

/// Trie ranges at least this big (or a sixteenth of the trie, in small vocabularies) are
/// walked through remembered walks (smaller ones cost less to walk than to remember).
const REMEMBERED_WALK_MIN_NODES: usize = 1024;

/// The size from which a trie range is worth remembering walks of.
fn remembered_walk_min(index: &VocabularyIndex) -> usize {
    (index.trie().nodes().len() / 16).clamp(16, REMEMBERED_WALK_MIN_NODES)
}

impl Matcher {
    /// A matcher whose tokens come from `vocabulary`: enables [`Matcher::accept_token`],
    /// [`Matcher::fill_mask`], [`Matcher::is_token_allowed`] and
    /// [`Matcher::rollback_tokens`].
    pub fn with_vocabulary(grammar: &CompiledGrammar, vocabulary: Arc<VocabularyIndex>) -> Matcher {
        Matcher::starting(grammar, Some(vocabulary))
    }

    /// The vocabulary, when the matcher has one.
    pub fn vocabulary(&self) -> Option<&Arc<VocabularyIndex>> {
        self.vocabulary.as_ref()
    }

    fn index_ref(&self) -> &Arc<VocabularyIndex> {
        self.vocabulary
            .as_ref()
            .expect("token operations need a matcher made with Matcher::with_vocabulary")
    }

    fn index(&self) -> Arc<VocabularyIndex> {
        self.vocabulary
            .clone()
            .expect("token operations need a matcher made with Matcher::with_vocabulary")
    }

    /// Accepts token `id` of the vocabulary: by id for token elements, by its bytes for
    /// the rest of the grammar; an end-of-generation token when the grammar may end (the
    /// matcher then accepts nothing more but end of generation). All or nothing.
    ///
    /// # Panics
    /// Without a vocabulary (see [`Matcher::with_vocabulary`]).
    pub fn accept_token(&mut self, id: u32) -> Result<(), AcceptError> {
        let index = self.index();
        let vocabulary = index.vocabulary();
        if id as usize >= vocabulary.len() {
            return Err(AcceptError::Rejected { consumed: 0 });
        }
        let start = self.parser.absolute_step_count();
        let matched = self.parser.accept_token_piece(id, vocabulary.text(id));
        let result = match matched {
            Err(AcceptError::Rejected { .. })
                if vocabulary.is_end_of_generation(id) && self.parser.is_accepting() =>
            {
                self.parser.end_generation();
                Ok(())
            }
            other => other,
        };
        if result.is_ok() {
            self.token_starts.push(start);
            self.trim_token_history();
        }
        result
    }

    /// Undoes the last `tokens` tokens accepted with [`Matcher::accept_token`] (and any
    /// text accepted after them). False, changing nothing, when fewer are in the history.
    pub fn rollback_tokens(&mut self, tokens: usize) -> bool {
        if tokens == 0 {
            return true;
        }
        if tokens > self.token_starts.len() {
            return false;
        }
        let start = self.token_starts[self.token_starts.len() - tokens];
        let keep = start - self.parser.steps_dropped();
        self.parser
            .rollback(self.parser.history_len() + 1 - keep as usize)
    }

    /// True when token `id` may come next (cheaper than a full mask: check the sampled
    /// token first, and fill the mask only when it is refused).
    pub fn is_token_allowed(&mut self, id: u32) -> bool {
        let index = self.index();
        let vocabulary = index.vocabulary();
        if id as usize >= vocabulary.len() {
            return false;
        }
        if self.token_element_allows(id) {
            return true;
        }
        if vocabulary.is_end_of_generation(id) && self.parser.is_accepting() {
            return true;
        }
        let Some(text) = vocabulary.text(id) else {
            return false;
        };
        if text.is_empty() {
            return self.parser.is_viable();
        }
        let mut stepped = 0;
        let mut alive = true;
        for &byte in text {
            match self.parser.step_byte(byte) {
                Ok(true) => stepped += 1,
                _ => {
                    alive = false;
                    break;
                }
            }
        }
        self.parser.rollback(stepped);
        alive
    }

    /// Sets `mask` to the tokens allowed next (clearing the rest).
    ///
    /// # Panics
    /// Without a vocabulary, or when `mask` is smaller than the vocabulary.
    pub fn fill_mask(&mut self, mask: &mut TokenBitmask) {
        assert!(
            mask.len() >= self.index_ref().vocabulary().len(),
            "the mask is smaller than the vocabulary"
        );
        self.fill_mask_words(mask.words_mut());
    }

    /// [`Matcher::fill_mask`] into packed words that someone else owns (a row of a
    /// batch's bitmask, in the layout of [`TokenBitmask`]), with no copy in between: every
    /// word of `words` is written, the bits of ids past the vocabulary cleared.
    ///
    /// # Panics
    /// Without a vocabulary, or when `words` holds fewer bits than the vocabulary has
    /// tokens.
    pub fn fill_mask_words(&mut self, words: &mut [u32]) {
        self.with_vocabulary_lent(|matcher, index| matcher.fill_mask_words_with(index, words));
    }

    /// [`Matcher::fill_mask_words`] with the matcher's vocabulary lent out.
    fn fill_mask_words_with(&mut self, index: &Arc<VocabularyIndex>, words: &mut [u32]) {
        assert!(
            words.len() * 32 >= index.vocabulary().len(),
            "the mask is smaller than the vocabulary"
        );
        let mask = words;
        // In a bounded repetition, the mask comes from its twin loop (`counted.rs`): one
        // state for every position far from the bound, and near it, one state less the
        // tokens too long for the copies left.
        let Some(plan) = self.twin_plan(index) else {
            return self.fill_mask_here(index, mask);
        };
        let Some(too_long) = plan.too_long else {
            return self.fill_twin_mask(index, &plan.items, mask);
        };
        let (mut key, mut slots) = (Vec::new(), Vec::new());
        let cacheable = self.mask_cache_key(Some(&plan), &mut key, &mut slots);
        if cacheable && self.cached_mask(&key, mask) {
            return;
        }
        self.fill_twin_mask(index, &plan.items, mask);
        let too_long = match too_long {
            TooLong::Run { class, run } => index.tokens_with_run_longer_than(class, run),
            TooLong::JsonUnits(units) => index.tokens_with_json_units_more_than(units),
            TooLong::JsonStringEndsWithin(units) => index.tokens_ending_json_string_within(units),
        };
        for (word, too_long) in mask.iter_mut().zip(too_long.iter()) {
            *word &= !too_long;
        }
        if cacheable {
            self.remember_mask(&key, mask);
        }
    }

    /// [`Matcher::fill_mask_words`] when the current state's mask is cached, so that
    /// nothing is computed: true when `words` was written, false (and `words` untouched)
    /// when the mask would have to be computed. For callers that hold a lock they would
    /// release for a computation but not for a copy (the Python binding and its GIL).
    ///
    /// # Panics
    /// Without a vocabulary, or when `words` holds fewer bits than the vocabulary has
    /// tokens.
    pub fn fill_mask_words_if_cached(&mut self, words: &mut [u32]) -> bool {
        self.with_vocabulary_lent(|matcher, index| {
            matcher.fill_mask_words_if_cached_with(index, words)
        })
    }

    /// [`Matcher::fill_mask_words_if_cached`] with the matcher's vocabulary lent out.
    fn fill_mask_words_if_cached_with(
        &mut self,
        index: &Arc<VocabularyIndex>,
        words: &mut [u32],
    ) -> bool {
        assert!(
            words.len() * 32 >= index.vocabulary().len(),
            "the mask is smaller than the vocabulary"
        );
        let plan = self.twin_plan(index);
        let (mut key, mut slots) = self.parser.take_key_buffers();
        let described = self.mask_cache_key(plan.as_ref(), &mut key, &mut slots);
        let served = described && self.cached_mask(&key, words);
        self.parser.give_back_key_buffers((key, slots));
        served
    }

    /// Writes into `key` the state the current mask is cached under, `plan` being the
    /// current step's [`Matcher::twin_plan`]: in a bounded repetition far from its bound,
    /// the twin loop's state (the items of `plan`); otherwise, near the bound too, the
    /// current state. False when the state is not cacheable. `fill_mask_words` and
    /// `fill_mask_words_if_cached` both key by it, so the second finds what the first cached.
    fn mask_cache_key(
        &mut self,
        plan: Option<&TwinPlan>,
        key: &mut Vec<u32>,
        slots: &mut Vec<u32>,
    ) -> bool {
        match plan {
            Some(TwinPlan {
                items,
                too_long: None,
            }) => {
                let accepting = self.parser.is_accepting();
                self.parser
                    .state_key_of(items, accepting, key, slots, MAX_KEY_WORDS)
            }
            _ => self.parser.state_key(key, slots, MAX_KEY_WORDS),
        }
    }

    /// The mask of a step holding `items` (the current ones moved to a twin loop, the
    /// accepting flag kept): cached by that step's state, computed on a pushed step.
    fn fill_twin_mask(&mut self, index: &VocabularyIndex, items: &[Item], mask: &mut [u32]) {
        let accepting = self.parser.is_accepting();
        let (mut key, mut slots) = self.parser.take_key_buffers();
        let cacheable =
            self.parser
                .state_key_of(items, accepting, &mut key, &mut slots, MAX_KEY_WORDS);
        if !(cacheable && self.cached_mask(&key, mask)) {
            self.parser.push_items_step_accepting(items, accepting);
            self.compute_mask(index, mask);
            self.parser.rollback(1);
            if cacheable {
                self.remember_mask(&key, mask);
            }
        }
        self.parser.give_back_key_buffers((key, slots));
    }

    /// [`Matcher::fill_mask`] from the current step as it is.
    fn fill_mask_here(&mut self, index: &VocabularyIndex, mask: &mut [u32]) {
        let (mut key, mut slots) = self.parser.take_key_buffers();
        let cacheable = self.parser.state_key(&mut key, &mut slots, MAX_KEY_WORDS);
        if !(cacheable && self.cached_mask(&key, mask)) {
            self.compute_mask(index, mask);
            if cacheable {
                self.remember_mask(&key, mask);
            }
        }
        self.parser.give_back_key_buffers((key, slots));
    }

    /// Copies the mask cached for state `key` into `mask`; false when there is none.
    fn cached_mask(&self, key: &[u32], mask: &mut [u32]) -> bool {
        let cache = self
            .mask_cache
            .read()
            .unwrap_or_else(|poison| poison.into_inner());
        match cache.get(key) {
            Some(words) if words.len() == mask.len() => {
                mask.copy_from_slice(words);
                true
            }
            _ => false,
        }
    }

    /// Caches `mask` as the mask of state `key` (within the cache's byte limit).
    fn remember_mask(&self, key: &[u32], mask: &[u32]) {
        let max_bytes = self.parser.graph().limits.max_mask_cache_bytes;
        let mut cache = self
            .mask_cache
            .write()
            .unwrap_or_else(|poison| poison.into_inner());
        cache.insert(key, mask, max_bytes);
    }

    /// Computes the mask of the current state from scratch.
    fn compute_mask(&mut self, index: &VocabularyIndex, mask: &mut [u32]) {
        let vocabulary = index.vocabulary();
        mask.fill(0);
        self.fill_token_elements(mask, vocabulary.len() as u32);
        if self.parser.is_accepting() {
            set_ids(mask, vocabulary.end_of_generation());
        }
        let graph = self.parser.graph();
        let has_text_items = self
            .parser
            .current_items()
            .iter()
            .any(|item| !matches!(graph.nodes[item.node as usize], Node::Token { .. }));
        if has_text_items {
            self.walk_subtree(index, mask, TrieRange::all(index.trie()));
        }
        if self.parser.is_viable() {
            set_ids(mask, index.empty_text_ids());
        }
    }

    /// Walks the trie nodes of `range` from the current state (the state at the range's
    /// base depth), setting the tokens accepted in `words`: along the step cache's table
    /// when the state is cached, else one matcher step per node, skipping the subtree of
    /// any byte the grammar refuses. Leaves the matcher as it was.
    pub(crate) fn walk_subtree(
        &mut self,
        index: &VocabularyIndex,
        words: &mut [u32],
        range: TrieRange,
    ) {
        // Walks nest one level per rule call met along a token: as deep as tokens are
        // long, so the native stack grows on the heap when needed.
        grail_syntax::stack::deep(|| self.walk_subtree_here(index, words, range));
    }

    /// Walks each of `ranges` from the current state as [`Matcher::walk_subtree`] does,
    /// the small ones along the table in one walk when the state is cached (one walk's
    /// setup for what are often hundreds of tiny subtrees).
    pub(crate) fn walk_ranges(
        &mut self,
        index: &VocabularyIndex,
        words: &mut [u32],
        ranges: &[TrieRange],
    ) {
        let min = remembered_walk_min(index);
        let mut buffers = self.walk_buffers.take();
        let state = self.parser.current_state(&mut buffers.frames);
        let small: &[TrieRange] = match state {
            Some(_) if ranges.iter().all(|range| range.len() < min) => ranges,
            _ => {
                for &range in ranges {
                    if state.is_none() || range.len() >= min {
                        self.walk_subtree(index, words, range);
                    } else {
                        buffers.ranges.push(range);
                    }
                }
                &buffers.ranges
            }
        };
        if let Some(state) = state
            && !small.is_empty()
        {
            grail_syntax::stack::deep(|| {
                self.table_walk(index, words, state, &buffers.frames, small);
            });
        }
        self.walk_buffers.give_back(buffers);
    }

    fn walk_subtree_here(&mut self, index: &VocabularyIndex, words: &mut [u32], range: TrieRange) {
        if range.len() >= remembered_walk_min(index)
            && let Some(parts) = self.parser.items_by_frame()
        {
            // Walked apart, each rule call's items make a state that does not depend on
            // the caller, so its (big) walk is remembered once for every place that
            // calls the rule.
            for part in parts {
                self.parser.push_items_step(&part);
                self.walk_subtree(index, words, range);
                self.parser.rollback(1);
            }
            return;
        }
        let mut frames = Vec::new();
        if let Some(state) = self.parser.current_state(&mut frames) {
            self.walk_from_cached(index, words, state, &frames, range);
            return;
        }
        let trie = index.trie();
        let nodes = trie.nodes();
        let mut depth = range.base_depth;
        let mut position = range.first;
        while position < range.end {
            let node = &nodes[position];
            // Climb back to this node's parent.
            if depth >= node.depth {
                self.parser.rollback((depth - node.depth + 1) as usize);
                depth = node.depth - 1;
            }
            if matches!(self.parser.step_byte(node.byte), Ok(true)) {
                depth += 1;
                set_ids(words, trie.tokens_at(node));
                if let Some(state) = self.parser.current_state(&mut frames) {
                    // Cached from here on: walk this node's subtree along the table.
                    let below = TrieRange::below(trie, position);
                    self.walk_from_cached(index, words, state, &frames, below);
                    position = below.end;
                    continue;
                }
                position += 1;
            } else {
                position += node.subtree_len as usize;
            }
        }
        self.parser.rollback((depth - range.base_depth) as usize);
    }

    /// Walks `range` from the cached `state` (its slots standing for `frames`): big ranges
    /// through the walks remembered per state and range, small ones along the table
    /// directly.
    fn walk_from_cached(
        &mut self,
        index: &VocabularyIndex,
        words: &mut [u32],
        state: StateId,
        frames: &[u32],
        range: TrieRange,
    ) {
        if range.len() >= remembered_walk_min(index) {
            self.walk_remembered(index, words, state, frames, range);
        } else {
            self.table_walk(index, words, state, frames, &[range]);
        }
    }

    /// Sets the tokens the current token elements accept by id.
    fn fill_token_elements(&self, mask: &mut [u32], vocabulary_len: u32) {
        let graph = self.parser.graph();
        let mut excluded_by_every_negation: Option<Vec<u32>> = None;
        for item in self.parser.current_items() {
            if !item.partial.is_none() {
                continue;
            }
            if let Node::Token { set, .. } = graph.nodes[item.node as usize] {
                let token_set = &graph.token_sets[set as usize];
                if token_set.negated {
                    excluded_by_every_negation = Some(match excluded_by_every_negation {
                        None => token_set.ids.clone(),
                        Some(previous) => previous
                            .into_iter()
                            .filter(|id| token_set.ids.binary_search(id).is_ok())
                            .collect(),
                    });
                } else {
                    for &id in token_set.ids.iter().filter(|&&id| id < vocabulary_len) {
                        set_ids(mask, &[id]);
                    }
                }
            }
        }
        if let Some(excluded) = excluded_by_every_negation {
            let positive: Vec<u32> = ids_of(mask).collect();
            mask.fill(u32::MAX);
            clear_from(mask, vocabulary_len);
            for id in excluded.into_iter().filter(|&id| id < vocabulary_len) {
                if positive.binary_search(&id).is_err() {
                    mask[id as usize / 32] &= !(1 << (id % 32));
                }
            }
        }
    }

    /// True when a current token element accepts `id`.
    fn token_element_allows(&self, id: u32) -> bool {
        let graph = self.parser.graph();
        self.parser.current_items().iter().any(|item| {
            item.partial.is_none()
                && matches!(graph.nodes[item.node as usize], Node::Token { set, .. }
                    if graph.token_sets[set as usize].matches(id))
        })
    }
}
