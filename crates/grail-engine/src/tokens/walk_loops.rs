//! Which bytes take a step-cache state back to itself, so token-trie walks can take
//! whole subtrees at once (`Matcher::taken_whole`) and cross characters past ASCII by
//! UTF-8 validity alone (`Matcher::loops_on_non_ascii`,
//! `Matcher::uniform_character_start`). Facts are learned on first need and kept per
//! state (`step_cache::LoopFacts`).

use crate::automaton::step_cache::{DEAD, NEVER_CACHEABLE, NOT_CACHEABLE, StateId, UNKNOWN};
use crate::graph::Node;
use crate::graph::utf8::Partial;
use crate::tokens::matcher::Matcher;

impl Matcher {
    /// True when `state` steps to itself on every byte of `bytes` ([`grail_vocab::byte_bit`]
    /// bits), keeping every frame in its slot and calling nothing: then any run of those
    /// bytes leaves the state as it was (bit 127: any run of whole characters past ASCII,
    /// see [`Matcher::loops_on_non_ascii`]). Learns the transitions it needs (its slots
    /// standing for `frames`) and remembers the answer per bit.
    pub(crate) fn loops_on(&mut self, state: StateId, frames: &[u32], bytes: u128) -> bool {
        let mut facts = self.parser.step_cache().loop_bytes(state);
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
        self.parser.step_cache().remember_loop_bytes(state, facts);
        all_loop
    }

    /// The bytes (as [`grail_vocab::byte_bit`] bits) that take `state` back to itself
    /// without returning to any caller outside it: the class a walk from `state` may take
    /// the loop slice of (`grail_vocab::LoopSlice`); empty when it cannot be big enough
    /// for one (fewer than `min_bytes` ASCII bytes, and not the characters past ASCII) or
    /// the state is inside a character. Learns what it must of each class of live bytes.
    pub(crate) fn closed_loop_class(
        &mut self,
        state: StateId,
        frames: &[u32],
        min_bytes: u32,
    ) -> u128 {
        let data = self.parser.step_cache().state(state);
        if data.items.iter().any(|item| !item.1.is_none()) {
            return 0;
        }
        let takes_non_ascii = data.takes_non_ascii;
        let live = (1..0x7Fu8)
            .filter(|&byte| self.parser.step_cache().transition(state, byte) != DEAD)
            .fold(0u128, |live, byte| live | 1 << byte);
        // Not worth learning every byte's step when too few can loop.
        let mut possible = live.count_ones() + 1;
        if possible < min_bytes && !takes_non_ascii {
            return 0;
        }
        // Past ASCII first: where those characters do not loop, the class is big by its
        // ASCII bytes alone, so the search stops as soon as too few of them can loop.
        let big_past_ascii = takes_non_ascii && self.loops_on(state, frames, 1 << 127);
        if possible < min_bytes && !big_past_ascii {
            return 0;
        }
        // Bit 0 stands for NUL and DEL (see `grail_vocab::byte_bit`).
        let mut untried = live | 1;
        while untried != 0 {
            let bit = untried.trailing_zeros();
            untried &= untried - 1;
            if self.loops_on(state, frames, 1 << bit) {
                continue;
            }
            // None of the others of its class loops either (a key trie's free
            // characters: one step learned, not ninety asked).
            let class = self.class_mates(state, bit);
            possible -= 1 + (untried & class).count_ones();
            untried &= !class;
            if possible < min_bytes && !big_past_ascii {
                return 0;
            }
        }
        let facts = self.parser.step_cache().loop_bytes(state);
        facts.loops & !facts.escaping
    }

    /// The bytes ([`grail_vocab::byte_bit`] bits) that step from `state` as the one of
    /// `bit` does: for an ASCII byte, its class (the bytes every item of the state takes
    /// all or none of); bit 0 (NUL and DEL) and bit 127 (past ASCII) alone.
    fn class_mates(&self, state: StateId, bit: u32) -> u128 {
        match bit {
            0 | 127 => 1 << bit,
            _ => {
                let class =
                    self.parser
                        .step_cache()
                        .ascii_class_of(self.parser.graph(), state, bit as u8);
                (class & !(1 | 1 << 127)) | 1 << bit
            }
        }
    }

    /// When `byte` takes `state` back to itself (every frame in its slot, no calls):
    /// whether that transition also returns to callers outside the state.
    fn loop_escapes(&mut self, state: StateId, frames: &[u32], byte: u8) -> Option<bool> {
        let transition = self.step_to(state, frames, byte, true)?;
        let result = self.parser.step_cache().result(transition);
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
        let facts = self.parser.step_cache().loop_bytes(state);
        // Past ASCII, the bytes below must be valid UTF-8 (the state loops on such
        // characters only between characters).
        let utf8_ok = below >> 127 == 0 || trie.valid_utf8_below(position);
        if utf8_ok && below & facts.breaks == 0 && self.loops_on(state, frames, below) {
            return Some(trie.subtree_tokens(position));
        }
        let ascii = below & !(1 << 127);
        if below >> 127 == 0
            || !trie.ascii_path(position)
            || self.parser.step_cache().state(state).takes_non_ascii
            || ascii & self.parser.step_cache().loop_bytes(state).breaks != 0
            || !self.loops_on(state, frames, ascii)
            || ascii & self.parser.step_cache().loop_bytes(state).escaping != 0
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
        let mut transition = self.parser.step_cache().transition(state, byte);
        if transition == UNKNOWN || transition == NOT_CACHEABLE {
            transition = self.parser.learn_inner_transition(state, frames, byte);
        }
        if matches!(transition, DEAD | NOT_CACHEABLE | NEVER_CACHEABLE | UNKNOWN) {
            return None;
        }
        let step = self.parser.step_cache().result(transition);
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
        Some(self.parser.step_cache().result(transition).target)
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
        let graph = self.parser.graph();
        let items = &self.parser.step_cache().state(state).items;
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
            let enters = bytes
                .iter()
                .all(|&byte| self.step_to_state(state, frames, byte) == Some(target));
            // The other bytes of its class step the same way.
            let alike = self.class_mates(state, bit) & (ascii | 1 << bit);
            ascii &= !alike;
            if !enters {
                exceptions |= alike;
            }
        }
        (class >> 127 == 0 || self.steps_on_non_ascii_to(state, frames, target))
            .then_some(exceptions)
    }

    /// True when every character past ASCII takes `state` to `target` (see
    /// [`Matcher::loops_on_non_ascii`]).
    fn steps_on_non_ascii_to(&mut self, state: StateId, frames: &[u32], target: StateId) -> bool {
        let graph = self.parser.graph();
        let mut some_accept = false;
        for &(node, partial, _) in self.parser.step_cache().state(state).items.iter() {
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

#[cfg(test)]
mod tests {
    use crate::tokens::test_support::matcher_after;

    /// A key that is one of some names or any other string (a declared and an undeclared
    /// property), and a string of any characters but a few.
    const KEYS: &str = concat!(
        r#"root ::= "{\"" ("name" | "size" | ([a-z0-9 ] | [^"\\\x00-\x1F])+) "\": 1}""#,
        "\n"
    );
    const STRING: &str = "root ::= \"\\\"\" [^\"\\\\q\\x00-\\x1F]* \"\\\"\"\n";

    /// Closed loop classes found a byte class at a time (a byte's class-mates step as it
    /// does) equal those found by asking every byte on its own, in a matcher that has
    /// learned nothing else; and with a minimum size, the class is that one or empty.
    #[test]
    fn loop_classes_found_by_byte_class_are_those_found_byte_by_byte() {
        for (source, prefix) in [
            (KEYS, &b"{\""[..]),
            (KEYS, b"{\"n"),
            (KEYS, b"{\"x"),
            (KEYS, b"{\"x\xC3\xA9"),
            (STRING, b"\""),
            (STRING, b"\"ab"),
        ] {
            let (mut matcher, state, frames) = matcher_after(source, prefix);
            let class = matcher.closed_loop_class(state, &frames, 0);
            let (mut each, state, frames) = matcher_after(source, prefix);
            let mut by_byte = 0u128;
            for bit in 0..128 {
                if each.loops_on(state, &frames, 1 << bit) {
                    by_byte |= 1 << bit;
                }
            }
            let escaping = each.parser.step_cache().loop_bytes(state).escaping;
            assert_eq!(class, by_byte & !escaping, "after {prefix:?}");
            let (mut bounded, state, frames) = matcher_after(source, prefix);
            let at_least_32 = bounded.closed_loop_class(state, &frames, 32);
            assert!(at_least_32 == 0 || at_least_32 == class, "after {prefix:?}");
        }
    }

    /// The bytes of a loop's class that do not take a state into the loop, found a byte
    /// class at a time, are those found by trying every byte.
    #[test]
    fn bytes_not_entering_a_loop_by_byte_class_are_those_byte_by_byte() {
        for (source, prefix, into) in [(KEYS, &b"{\""[..], b'x'), (STRING, b"\"", b'a')] {
            let (mut matcher, state, frames) = matcher_after(source, prefix);
            let looping = matcher
                .step_to_state(state, &frames, into)
                .expect("the byte enters the loop");
            let class = matcher.closed_loop_class(looping, &frames, 0);
            assert!(class.count_ones() > 32, "after {prefix:?}: a big loop");
            let exceptions = matcher
                .bytes_not_entering(state, &frames, looping, class)
                .expect("characters past ASCII enter the loop");
            // Byte by byte, in a matcher of its own (its states numbered as it learns).
            let (mut each, state, frames) = matcher_after(source, prefix);
            let looping = each.step_to_state(state, &frames, into);
            let mut by_byte = 0u128;
            for bit in 0..127u32 {
                if class >> bit & 1 == 0 {
                    continue;
                }
                let bytes: &[u8] = if bit == 0 { &[0, 0x7F] } else { &[bit as u8] };
                if bytes
                    .iter()
                    .any(|&byte| each.step_to_state(state, &frames, byte) != looping)
                {
                    by_byte |= 1 << bit;
                }
            }
            assert_eq!(exceptions, by_byte, "after {prefix:?}");
            // The keys' first letters and the string's all lead elsewhere or in.
            assert_eq!(exceptions != 0, source == KEYS, "after {prefix:?}");
        }
    }
}
