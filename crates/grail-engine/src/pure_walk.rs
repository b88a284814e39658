//! The part of a token-trie walk that does not depend on the callers.
//!
//! From a step-cache state, the walk along cached transitions that create no frames needs
//! only the DFA table, not the matcher: it runs once per state and is remembered as a
//! bitmask of the tokens it accepts plus a frontier, the trie nodes whose byte leaves the
//! cached region (inside a JSON string: the tokens that close it), grouped by state and
//! byte. A mask for that state then costs a bitmask OR, one real step per frontier group
//! and the small subtrees behind it. Slot maps follow each path, so a frontier group knows
//! which of the start's frames its state's slots stand for.

use std::sync::Arc;

use grail_vocab::{TokenBitmask, VocabularyIndex};

use crate::matcher::Matcher;
use crate::step_cache::{DEAD, FrontierGroup, NOT_CACHEABLE, PureWalk, StateId, UNKNOWN};

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
    /// The text tokens allowed from a cached state: the remembered pure part of the walk
    /// (computed on first use), plus one real step per frontier group and the walk of
    /// the subtrees behind it, which depend on the callers.
    pub(crate) fn walk_from_state(
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
                NOT_CACHEABLE | UNKNOWN => {
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
}
