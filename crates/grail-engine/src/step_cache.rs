//! A lazily built DFA over the regular stretches of a parse.
//!
//! Most input is matched inside one rule call: the characters of a string, a number,
//! white space. There, a step's items all share one frame, and the closure after a byte
//! visits no call and no return, so the next item set depends only on the current set
//! of (node, partial character) pairs and the byte, not on the frame or the history.
//! Such sets are interned as states, and the transitions found are remembered: the next
//! time, a byte costs one table lookup and a copy of the (few) items, with no closure.
//! Steps that call or return are computed in full and recorded as "not cacheable".
//!
//! The cache is shared between forks (copy-on-write) and capped in size; past the cap,
//! new states are simply not cached.

use rustc_hash::FxHashMap;

use crate::compile::NodeId;
use crate::utf8::Partial;

/// A state id, or one of the markers below.
pub(crate) type StateId = u32;

/// No transition recorded yet.
pub(crate) const UNKNOWN: StateId = u32::MAX;
/// The transition calls or returns, or leaves the frame: compute it in full.
pub(crate) const NOT_CACHEABLE: StateId = u32::MAX - 1;
/// No item survives the byte.
pub(crate) const DEAD: StateId = u32::MAX - 2;
/// The step has no state (its items span several frames, or the cache is full).
pub(crate) const NO_STATE: StateId = u32::MAX - 3;

/// Most states cached per matcher family: 256 transitions of 4 bytes each, so about
/// 16 MB at the cap.
const MAX_STATES: usize = 16_384;

/// Most states whose token-trie walk is remembered (each holds a mask's worth of words).
const MAX_WALKS: usize = 512;

/// The walk of the token trie from one state, as far as it stays inside pure
/// transitions: the tokens it accepts there, and where it had to stop.
#[derive(Debug)]
pub(crate) struct PureWalk {
    /// Tokens whose every byte is a pure transition ending in a live state.
    pub(crate) mask_words: Box<[u32]>,
    /// Trie nodes whose byte leaves the pure region, grouped by the state before it and
    /// the byte: each group needs one real step at mask time.
    pub(crate) frontier: Vec<FrontierGroup>,
}

/// Trie nodes entered by the same byte from the same state.
#[derive(Debug)]
pub(crate) struct FrontierGroup {
    pub(crate) state: StateId,
    pub(crate) byte: u8,
    /// Positions in the trie's node array.
    pub(crate) nodes: Vec<u32>,
}

/// Interned item sets and the transitions between them.
#[derive(Debug, Clone, Default)]
pub(crate) struct StepCache {
    states: Vec<Box<[(NodeId, Partial)]>>,
    index: FxHashMap<Box<[(NodeId, Partial)]>, StateId>,
    transitions: Vec<StateId>,
    walks: FxHashMap<StateId, std::sync::Arc<PureWalk>>,
}

impl StepCache {
    /// The state for this item set, interning it if there is room.
    pub(crate) fn intern(&mut self, items: &[(NodeId, Partial)]) -> StateId {
        if let Some(&state) = self.index.get(items) {
            return state;
        }
        if self.states.len() >= MAX_STATES {
            return NO_STATE;
        }
        let state = self.states.len() as StateId;
        let key: Box<[(NodeId, Partial)]> = items.into();
        self.states.push(key.clone());
        self.index.insert(key, state);
        self.transitions.extend(std::iter::repeat_n(UNKNOWN, 256));
        state
    }

    /// The recorded transition from `state` on `byte`.
    pub(crate) fn transition(&self, state: StateId, byte: u8) -> StateId {
        self.transitions[state as usize * 256 + usize::from(byte)]
    }

    /// Records a transition.
    pub(crate) fn record(&mut self, state: StateId, byte: u8, target: StateId) {
        self.transitions[state as usize * 256 + usize::from(byte)] = target;
    }

    /// The remembered trie walk from `state`.
    pub(crate) fn walk(&self, state: StateId) -> Option<std::sync::Arc<PureWalk>> {
        self.walks.get(&state).cloned()
    }

    /// Remembers a trie walk, while there is room.
    pub(crate) fn remember_walk(&mut self, state: StateId, walk: std::sync::Arc<PureWalk>) {
        if self.walks.len() < MAX_WALKS {
            self.walks.insert(state, walk);
        }
    }

    /// The items of a state.
    pub(crate) fn items(&self, state: StateId) -> &[(NodeId, Partial)] {
        &self.states[state as usize]
    }
}
