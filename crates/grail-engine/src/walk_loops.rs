//! Which bytes take a step-cache state back to itself, so token-trie walks can take
//! whole subtrees at once (`Matcher::taken_whole`) and cross characters past ASCII by
//! UTF-8 validity alone (`Matcher::loops_on_non_ascii`,
//! `Matcher::uniform_character_start`). Facts are learned on first need and kept per
//! state (`step_cache::LoopFacts`).

use crate::compile::Node;
use crate::matcher::Matcher;
use crate::step_cache::{DEAD, NEVER_CACHEABLE, NOT_CACHEABLE, StateId, UNKNOWN};
use crate::utf8::Partial;

impl Matcher {
    /// True when `state` steps to itself on every byte of `bytes` ([`grail_vocab::byte_bit`]
    /// bits), keeping every frame in its slot and calling nothing: then any run of those
    /// bytes leaves the state as it was (bit 127: any run of whole characters past ASCII,
    /// see [`Matcher::loops_on_non_ascii`]). Learns the transitions it needs (its slots
    /// standing for `frames`) and remembers the answer per bit.
    pub(crate) fn loops_on(&mut self, state: StateId, frames: &[u32], bytes: u128) -> bool {
        let mut facts = self.step_cache().loop_bytes(state);
        if bytes & facts.breaks != 0 {
            return false;
        }
        let mut unknown = bytes & !facts.loops;
        let mut all_loop = true;
        while unknown != 0 {
            let bit = unknown.trailing_zeros();
            unknown &= unknown - 1;
            let found = match bit {
                127 => self.loops_on_non_ascii(state, frames).then_some(false),
                0 => match (
                    self.loop_escapes(state, frames, 0),
                    self.loop_escapes(state, frames, 0x7F),
                ) {
                    (Some(first), Some(second)) => Some(first || second),
                    _ => None,
                },
                _ => self.loop_escapes(state, frames, bit as u8),
            };
            match found {
                Some(escapes) => {
                    facts.loops |= 1 << bit;
                    if escapes {
                        facts.escaping |= 1 << bit;
                    }
                }
                None => {
                    facts.breaks |= 1 << bit;
                    all_loop = false;
                    break;
                }
            }
        }
        self.step_cache_mut().remember_loop_bytes(state, facts);
        all_loop
    }

    /// The bytes (as [`grail_vocab::byte_bit`] bits) that take `state` back to itself
    /// without returning to any caller outside it: the class a walk from `state` may take
    /// the loop slice of (`grail_vocab::LoopSlice`). Learns what it must of every live
    /// byte; empty when the state is inside a character.
    pub(crate) fn closed_loop_class(
        &mut self,
        state: StateId,
        frames: &[u32],
        min_bytes: u32,
    ) -> u128 {
        let data = self.step_cache().state(state);
        if data.items.iter().any(|item| !item.1.is_none()) {
            return 0;
        }
        let takes_non_ascii = data.takes_non_ascii;
        let live = (1..0x7Fu8)
            .filter(|&byte| self.step_cache().transition(state, byte) != DEAD)
            .fold(0u128, |live, byte| live | 1 << byte);
        // Not worth learning every byte's step when too few can loop.
        let mut possible = live.count_ones() + 1;
        if possible < min_bytes && !takes_non_ascii {
            return 0;
        }
        for bit in (0..128u32).filter(|&bit| live >> bit & 1 == 1 || bit == 0 || bit == 127) {
            if !self.loops_on(state, frames, 1 << bit) {
                possible -= u32::from(bit != 127);
                if possible < min_bytes && !takes_non_ascii {
                    return 0;
                }
            }
        }
        let facts = self.step_cache().loop_bytes(state);
        facts.loops & !facts.escaping
    }

    /// When `byte` takes `state` back to itself (every frame in its slot, no calls):
    /// whether that transition also returns to callers outside the state.
    fn loop_escapes(&mut self, state: StateId, frames: &[u32], byte: u8) -> Option<bool> {
        let transition = self.step_to(state, frames, byte, true)?;
        let result = self.step_cache().result(transition);
        (result.target == state).then_some(result.escapes != 0)
    }

    /// The tokens at or below the trie node at `position` that `state` (just entered by
    /// that node's byte, its slots standing for `frames`) takes without a walk, if any:
    /// all of them when every byte below loops on the state; or, where no item takes a
    /// byte past ASCII and the path to the node is ASCII, the ASCII ones when every ASCII
    /// byte below loops on it without leaving it (the others die at their first such
    /// byte, and no return to a caller could take them instead).
    pub(crate) fn taken_whole<'t>(
        &mut self,
        trie: &'t grail_vocab::TokenTrie,
        position: usize,
        state: StateId,
        frames: &[u32],
    ) -> Option<&'t [u32]> {
        let below = trie.bytes_below(position);
        let facts = self.step_cache().loop_bytes(state);
        // Past ASCII, the bytes below must be valid UTF-8 (the state loops on such
        // characters only between characters).
        let utf8_ok = below >> 127 == 0 || trie.valid_utf8_below(position);
        if utf8_ok && below & facts.breaks == 0 && self.loops_on(state, frames, below) {
            return Some(trie.subtree_tokens(position));
        }
        let ascii = below & !(1 << 127);
        if below >> 127 == 0
            || !trie.ascii_path(position)
            || self.step_cache().state(state).takes_non_ascii
            || ascii & self.step_cache().loop_bytes(state).breaks != 0
            || !self.loops_on(state, frames, ascii)
            || ascii & self.step_cache().loop_bytes(state).escaping != 0
        {
            return None;
        }
        Some(trie.ascii_subtree_tokens(position))
    }

    /// The transition (a result index) of `state` on `byte` when it keeps every slot and
    /// calls nothing. With `allow_escapes`, it may also return to callers outside the
    /// state.
    fn step_to(
        &mut self,
        state: StateId,
        frames: &[u32],
        byte: u8,
        allow_escapes: bool,
    ) -> Option<u32> {
        let mut transition = self.step_cache().transition(state, byte);
        if transition == UNKNOWN || transition == NOT_CACHEABLE {
            transition = self.learn_inner_transition(state, frames, byte);
        }
        if matches!(transition, DEAD | NOT_CACHEABLE | NEVER_CACHEABLE | UNKNOWN) {
            return None;
        }
        let step = self.step_cache().result(transition);
        if step.escapes != 0 && !allow_escapes {
            return None;
        }
        (step.new_frames == 0 && step.keeps_slots && step.slot_map.len() == frames.len())
            .then_some(transition)
    }

    /// The state `byte` takes `state` to, by a transition that keeps every slot, calls
    /// nothing and returns to no caller outside.
    pub(crate) fn step_to_state(
        &mut self,
        state: StateId,
        frames: &[u32],
        byte: u8,
    ) -> Option<StateId> {
        let transition = self.step_to(state, frames, byte, false)?;
        Some(self.step_cache().result(transition).target)
    }

    /// When `state` is inside a character (every item has begun the same one) and every
    /// item takes any character past ASCII, all its completions lead to one state: that
    /// state and the character begun, so a walk crosses the rest of the character by
    /// UTF-8 validity alone (learning one completion, not one per byte).
    pub(crate) fn uniform_character_start(
        &mut self,
        state: StateId,
        frames: &[u32],
    ) -> Option<(StateId, Partial)> {
        let graph = self.graph();
        let items = &self.step_cache().state(state).items;
        let partial = items.first()?.1;
        if partial.is_none() {
            return None;
        }
        for &(node, item_partial, _) in items.iter() {
            let takes_all = match graph.nodes[node as usize] {
                Node::Class { set, .. } => graph.class_all_non_ascii[set as usize] == Some(true),
                Node::Any { .. } => true,
                _ => false,
            };
            if item_partial != partial || !takes_all {
                return None;
            }
        }
        // Complete it with the smallest character it can be.
        let character = char::from_u32(partial.code_point_range().0)?;
        let mut buffer = [0u8; 4];
        let bytes = character.encode_utf8(&mut buffer).as_bytes();
        let mut current = state;
        for &byte in &bytes[partial.bytes_seen()..] {
            current = self.step_to_state(current, frames, byte)?;
        }
        Some((current, partial))
    }

    /// True when every character past ASCII takes `state` back to itself: every item is
    /// at a character boundary and accepts either all of them or none (so all lead to the
    /// same place), some item accepts them, and `é` goes round through slot-keeping
    /// transitions. Every byte sequence that is a valid UTF-8 prefix then stays live.
    fn loops_on_non_ascii(&mut self, state: StateId, frames: &[u32]) -> bool {
        self.steps_on_non_ascii_to(state, frames, state)
    }

    /// The ASCII bytes of `class` (as [`grail_vocab::byte_bit`] bits) that do not take
    /// `state` to `target`; `None` when characters past ASCII are in the class and do not
    /// all take it there.
    pub(crate) fn bytes_not_entering(
        &mut self,
        state: StateId,
        frames: &[u32],
        target: StateId,
        class: u128,
    ) -> Option<u128> {
        let mut exceptions = 0u128;
        let mut ascii = class & !(1 << 127);
        while ascii != 0 {
            let bit = ascii.trailing_zeros();
            ascii &= ascii - 1;
            let bytes: &[u8] = if bit == 0 { &[0, 0x7F] } else { &[bit as u8] };
            for &byte in bytes {
                if self.step_to_state(state, frames, byte) != Some(target) {
                    exceptions |= 1 << bit;
                }
            }
        }
        (class >> 127 == 0 || self.steps_on_non_ascii_to(state, frames, target))
            .then_some(exceptions)
    }

    /// True when every character past ASCII takes `state` to `target` (see
    /// [`Matcher::loops_on_non_ascii`]).
    fn steps_on_non_ascii_to(&mut self, state: StateId, frames: &[u32], target: StateId) -> bool {
        let graph = self.graph();
        let mut some_accept = false;
        for &(node, partial, _) in self.step_cache().state(state).items.iter() {
            if !partial.is_none() {
                return false;
            }
            match graph.nodes[node as usize] {
                Node::Char { code_point, .. } if code_point >= 0x80 => return false,
                Node::Class { set, .. } => match graph.class_all_non_ascii[set as usize] {
                    Some(all) => some_accept |= all,
                    None => return false,
                },
                Node::Any { .. } => some_accept = true,
                _ => {}
            }
        }
        some_accept
            && self
                .step_to_state(state, frames, 0xC3)
                .is_some_and(|middle| self.step_to_state(middle, frames, 0xA9) == Some(target))
    }
}
