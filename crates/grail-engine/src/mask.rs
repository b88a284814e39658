//! Token masks: which tokens of a vocabulary the grammar allows next.
//!
//! A token is allowed when token elements match its id (`<[id]>`, `!<[id]>`), or, for a
//! text token, when its bytes are a viable continuation (a prefix of some valid text: it
//! may end inside a character). End-of-generation tokens are allowed exactly when the
//! grammar may end. Special tokens are never matched as text.
//!
//! The text part walks the vocabulary's token trie depth first, one matcher step per trie
//! node, and skips the subtree of any byte the grammar refuses; the step cache makes the
//! steps inside strings, numbers and white space table lookups. The walk leaves the
//! matcher exactly where it was (it rolls every step back).

use std::sync::Arc;

use grail_vocab::{TokenBitmask, VocabularyIndex};

use crate::compile::{CompiledGrammar, Node};
use crate::error::AcceptError;
use crate::mask_cache::MAX_KEY_WORDS;
use crate::matcher::Matcher;
use crate::step_cache::{DEAD, FrontierGroup, NO_STATE, NOT_CACHEABLE, PureWalk, StateId, UNKNOWN};

/// Slot maps met along trie paths (for each slot of a state, a slot of the walk's start),
/// interned so paths share them, with their compositions remembered.
struct SlotMaps {
    maps: Vec<Box<[u8]>>,
    index: rustc_hash::FxHashMap<Box<[u8]>, u32>,
    composed: rustc_hash::FxHashMap<(u32, u32), u32>,
}

impl SlotMaps {
    /// Starts with the identity map over `slots` slots (index 0).
    fn new(slots: usize) -> SlotMaps {
        let identity: Box<[u8]> = (0..slots as u8).collect();
        let mut index = rustc_hash::FxHashMap::default();
        index.insert(identity.clone(), 0);
        SlotMaps {
            maps: vec![identity],
            index,
            composed: Default::default(),
        }
    }

    fn get(&self, map: u32) -> &[u8] {
        &self.maps[map as usize]
    }

    /// The map of a transition's target: its slot k holds the start slot that the
    /// parent's slot `step[k]` holds.
    fn compose(&mut self, parent: u32, result: u32, step: &[u8]) -> u32 {
        // Most transitions keep every slot in place.
        let parent_len = self.maps[parent as usize].len();
        if step.len() == parent_len
            && step
                .iter()
                .enumerate()
                .all(|(slot, &from)| usize::from(from) == slot)
        {
            return parent;
        }
        if let Some(&known) = self.composed.get(&(parent, result)) {
            return known;
        }
        let parent_map = &self.maps[parent as usize];
        let child: Box<[u8]> = step.iter().map(|&slot| parent_map[slot as usize]).collect();
        let next = self.maps.len() as u32;
        let id = *self.index.entry(child.clone()).or_insert(next);
        if id == next {
            self.maps.push(child);
        }
        self.composed.insert((parent, result), id);
        id
    }
}

impl Matcher {
    /// A matcher whose tokens come from `vocabulary`: enables [`Matcher::accept_token`],
    /// [`Matcher::fill_mask`], [`Matcher::is_token_allowed`] and
    /// [`Matcher::rollback_tokens`].
    pub fn with_vocabulary(grammar: &CompiledGrammar, vocabulary: Arc<VocabularyIndex>) -> Matcher {
        let mut matcher = Matcher::new(grammar);
        matcher.vocabulary = Some(vocabulary);
        matcher
    }

    /// The vocabulary, when the matcher has one.
    pub fn vocabulary(&self) -> Option<&Arc<VocabularyIndex>> {
        self.vocabulary.as_ref()
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
        let start = self.absolute_step_count();
        let matched = self.accept_token_piece(id, vocabulary.text(id));
        let result = match matched {
            Err(AcceptError::Rejected { .. })
                if vocabulary.is_end_of_generation(id) && self.is_accepting() =>
            {
                self.end_generation();
                Ok(())
            }
            other => other,
        };
        if result.is_ok() {
            self.token_starts.push(start);
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
        let keep = start - self.steps_dropped;
        self.rollback(self.history_len() + 1 - keep as usize)
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
        if vocabulary.is_end_of_generation(id) && self.is_accepting() {
            return true;
        }
        let Some(text) = vocabulary.text(id) else {
            return false;
        };
        if text.is_empty() {
            return self.is_viable();
        }
        let mut stepped = 0;
        let mut alive = true;
        for &byte in text {
            match self.step_byte(byte) {
                Ok(true) => stepped += 1,
                _ => {
                    alive = false;
                    break;
                }
            }
        }
        self.rollback(stepped);
        alive
    }

    /// Sets `mask` to the tokens allowed next (clearing the rest).
    ///
    /// # Panics
    /// Without a vocabulary, or when `mask` is smaller than the vocabulary.
    pub fn fill_mask(&mut self, mask: &mut TokenBitmask) {
        let index = self.index();
        assert!(
            mask.len() >= index.vocabulary().len(),
            "the mask is smaller than the vocabulary"
        );
        let mut key = Vec::new();
        let cacheable = self.state_key(&mut key, MAX_KEY_WORDS);
        if cacheable {
            let cache = self
                .mask_cache
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            if let Some(words) = cache.get(&key)
                && words.len() == mask.words().len()
            {
                mask.words_mut().copy_from_slice(words);
                return;
            }
        }
        self.compute_mask(&index, mask);
        if cacheable {
            let max_bytes = self.graph().limits.max_mask_cache_bytes;
            let mut cache = self
                .mask_cache
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            cache.insert(&key, mask.words(), max_bytes);
        }
    }

    /// Computes the mask of the current state from scratch.
    fn compute_mask(&mut self, index: &VocabularyIndex, mask: &mut TokenBitmask) {
        let vocabulary = index.vocabulary();
        mask.clear();
        self.fill_token_elements(mask, vocabulary.len() as u32);
        if self.is_accepting() {
            for &id in vocabulary.end_of_generation() {
                mask.set(id);
            }
        }
        let graph = self.graph();
        let has_text_items = self
            .current_items()
            .iter()
            .any(|item| !matches!(graph.nodes[item.node as usize], Node::Token { .. }));
        if has_text_items {
            let mut frames = Vec::new();
            match self.current_state(&mut frames) {
                Some(state) => self.walk_from_state(index, mask, state, &frames),
                None => {
                    let end = index.trie().nodes().len();
                    self.walk_subtree(index, mask, 1, end, 0);
                }
            }
        }
        if self.is_viable() {
            for &id in index.empty_text_ids() {
                mask.set(id);
            }
        }
    }

    /// The text tokens allowed from a cached state: the remembered pure part of the walk
    /// (computed on first use), plus one real step per frontier group and the walk of
    /// the subtrees behind it, which depend on the callers.
    fn walk_from_state(
        &mut self,
        index: &VocabularyIndex,
        mask: &mut TokenBitmask,
        state: StateId,
        frames: &[u32],
    ) {
        let walk = match self.step_cache().walk(state) {
            Some(walk) => walk,
            None => {
                let walk = Arc::new(self.pure_walk(index, state, frames));
                self.step_cache_mut().remember_walk(state, walk.clone());
                walk
            }
        };
        for (word, pure) in mask.words_mut().iter_mut().zip(walk.mask_words.iter()) {
            *word |= pure;
        }
        let nodes = index.trie().nodes();
        let mut group_frames = Vec::new();
        for group in &walk.frontier {
            group_frames.clear();
            group_frames.extend(group.slots.iter().map(|&slot| frames[slot as usize]));
            self.push_state_step(group.state, &group_frames);
            if matches!(self.step_byte(group.byte), Ok(true)) {
                for &position in &group.nodes {
                    let position = position as usize;
                    let node = &nodes[position];
                    for &id in index.trie().tokens_at(node) {
                        mask.set(id);
                    }
                    let end = position + node.subtree_len as usize;
                    self.walk_subtree(index, mask, position + 1, end, node.depth);
                }
                self.rollback(1);
            }
            self.rollback(1);
        }
    }

    /// Walks the trie from `state` along cached transitions only (no matcher steps,
    /// except once per unknown transition to learn it), collecting the tokens accepted
    /// and the nodes where the walk leaves the cacheable region. Slot maps follow each
    /// path, so a frontier group knows which of the start's frames its state's slots hold.
    fn pure_walk(&mut self, index: &VocabularyIndex, state: StateId, frames: &[u32]) -> PureWalk {
        let trie = index.trie();
        let nodes = trie.nodes();
        let mut words = vec![0u32; index.vocabulary().len().div_ceil(32)];
        let mut maps = SlotMaps::new(frames.len());
        let mut groups: rustc_hash::FxHashMap<(StateId, u8, u32), Vec<u32>> = Default::default();
        // The state (and slot map to the start) after each depth of the current path.
        let mut path: Vec<(StateId, u32)> = vec![(state, 0)];
        let mut learn_frames = Vec::new();
        let mut position = 1;
        while position < nodes.len() {
            let node = &nodes[position];
            path.truncate(node.depth as usize);
            let (parent, map) = *path.last().expect("the start state is on the path");
            let mut transition = self.step_cache().transition(parent, node.byte);
            if transition == UNKNOWN {
                learn_frames.clear();
                learn_frames.extend(maps.get(map).iter().map(|&slot| frames[slot as usize]));
                transition = self.learn_transition(parent, &learn_frames, node.byte);
            }
            match transition {
                DEAD => position += node.subtree_len as usize,
                NOT_CACHEABLE | UNKNOWN | NO_STATE => {
                    groups
                        .entry((parent, node.byte, map))
                        .or_default()
                        .push(position as u32);
                    position += node.subtree_len as usize;
                }
                result if self.step_cache().result(result).new_frames > 0 => {
                    // Rule calls make frames: the walk continues at mask time.
                    groups
                        .entry((parent, node.byte, map))
                        .or_default()
                        .push(position as u32);
                    position += node.subtree_len as usize;
                }
                result => {
                    for &id in trie.tokens_at(node) {
                        words[id as usize / 32] |= 1 << (id % 32);
                    }
                    let step = self.step_cache().result(result);
                    let target = step.target;
                    let child = maps.compose(map, result, &step.slot_map);
                    path.push((target, child));
                    position += 1;
                }
            }
        }
        let mut frontier: Vec<FrontierGroup> = groups
            .into_iter()
            .map(|((state, byte, map), nodes)| FrontierGroup {
                state,
                slots: maps.get(map).into(),
                byte,
                nodes,
            })
            .collect();
        frontier.sort_by_key(|group| (group.state, group.byte, group.nodes[0]));
        PureWalk {
            mask_words: words.into_boxed_slice(),
            frontier,
        }
    }

    /// Takes one real step from `state` (its slots standing for `frames`) on `byte`, so
    /// the step cache records the transition, and returns what it recorded.
    fn learn_transition(&mut self, state: StateId, frames: &[u32], byte: u8) -> u32 {
        self.push_state_step(state, frames);
        if matches!(self.step_byte(byte), Ok(true)) {
            self.rollback(1);
        }
        self.rollback(1);
        self.step_cache().transition(state, byte)
    }

    /// Depth-first walk of the trie nodes `first..end` (a subtree's descendants, or the
    /// whole trie) from the current state, which is the state at trie depth `base_depth`.
    fn walk_subtree(
        &mut self,
        index: &VocabularyIndex,
        mask: &mut TokenBitmask,
        first: usize,
        end: usize,
        base_depth: u32,
    ) {
        let trie = index.trie();
        let nodes = trie.nodes();
        let mut depth = base_depth;
        let mut position = first;
        while position < end {
            let node = &nodes[position];
            // Climb back to this node's parent.
            if depth >= node.depth {
                self.rollback((depth - node.depth + 1) as usize);
                depth = node.depth - 1;
            }
            if matches!(self.step_byte(node.byte), Ok(true)) {
                depth += 1;
                for &id in trie.tokens_at(node) {
                    mask.set(id);
                }
                position += 1;
            } else {
                position += node.subtree_len as usize;
            }
        }
        self.rollback((depth - base_depth) as usize);
    }

    /// Sets the tokens the current token elements accept by id.
    fn fill_token_elements(&self, mask: &mut TokenBitmask, vocabulary_len: u32) {
        let graph = self.graph();
        let mut excluded_by_every_negation: Option<Vec<u32>> = None;
        for item in self.current_items() {
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
                        mask.set(id);
                    }
                }
            }
        }
        if let Some(excluded) = excluded_by_every_negation {
            let positive: Vec<u32> = mask.ids().collect();
            mask.fill();
            for id in vocabulary_len..mask.len() as u32 {
                mask.unset(id);
            }
            for id in excluded.into_iter().filter(|&id| id < vocabulary_len) {
                if positive.binary_search(&id).is_err() {
                    mask.unset(id);
                }
            }
        }
    }

    /// True when a current token element accepts `id`.
    fn token_element_allows(&self, id: u32) -> bool {
        let graph = self.graph();
        self.current_items().iter().any(|item| {
            item.partial.is_none()
                && matches!(graph.nodes[item.node as usize], Node::Token { set, .. }
                    if graph.token_sets[set as usize].matches(id))
        })
    }
}
