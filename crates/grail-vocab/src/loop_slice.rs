//! Loop slices: for a class of bytes that a grammar state loops on (the characters of a
//! JSON string, of a comment), the tokens made only of such bytes, as a ready bitmask, and
//! the trie subtrees where tokens first leave the class.
//!
//! A mask walk from a state that steps back to itself on every byte of the class takes
//! the slice with one OR of words and walks only those exits, where it used to visit the
//! trie down to every token and set ~120k ids one by one (Llama 3, a JSON string). The
//! slice depends on the vocabulary and the class alone, so it is built once per
//! vocabulary (on first need) and shared by every state, grammar and matcher that loops
//! on the same class — the copies of `string` inlined at each call site included.

use crate::bitmask::set_ids;
use crate::trie::{TokenTrie, byte_bit, next_utf8_phase};

/// Most slices one vocabulary keeps (each is a bitmask of the vocabulary and a list of
/// exits: about 40 KB with Llama 3). Past it, walks go on without slices.
pub const MAX_LOOP_SLICES: usize = 64;

/// The byte class of a JSON string's body as JSON grammars write it (`[^"\\\x7F\x00-\x1F]`:
/// printable ASCII but `"` and `\`, and every non-ASCII character), the loop of every
/// JSON string value and key. [`crate::VocabularyIndex::new`] builds its slice up front
/// (about 0.4 ms with Llama 3), so the first string of the first document does not pay
/// for it in the middle of a step.
pub const JSON_STRING_BODY_CLASS: u128 = json_string_body_class();

const fn json_string_body_class() -> u128 {
    let mut class = 1 << 127;
    let mut byte = 0x20u8;
    while byte < 0x7F {
        if byte != b'"' && byte != b'\\' {
            class |= 1 << byte;
        }
        byte += 1;
    }
    class
}

/// The tokens of a byte class, and where tokens leave it.
#[derive(Debug)]
pub struct LoopSlice {
    class: u128,
    words: Box<[u32]>,
    /// Grouped by their byte (in trie order within a group), so that a walk looks up
    /// once per byte whether its exits are dead.
    exits: Box<[ExitNode]>,
}

/// An exit of a [`LoopSlice`]: a trie node, with what a walk of it and its subtree needs
/// (so a walk of the exits reads them in order rather than the trie's nodes at random).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitNode {
    /// The node's position in the trie's node array.
    pub position: u32,
    /// The position just past its subtree.
    pub end: u32,
    /// Its depth (its byte is the `depth`-th of its tokens).
    pub depth: u32,
    /// Its byte, the first outside the class: a walk that finds it dead from the looping
    /// state skips the exit without reading the trie (a JSON string's exits are four
    /// fifths line breaks, which no string takes).
    pub byte: u8,
    /// The first byte of its tokens (the root child it is below).
    pub first_byte: u8,
}

impl LoopSlice {
    /// Builds the slice of `class` ([`byte_bit`] bits; bit 127 stands for every character
    /// past ASCII) over a trie, for masks of `mask_words` words.
    ///
    /// A token is in the slice when each of its ASCII bytes is in the class, it has bytes
    /// past ASCII only if bit 127 is, and it is valid UTF-8 (possibly ending inside a
    /// character). An exit is a node, reached from the root by bytes of the class and
    /// ending between characters, whose own byte is not in the class: every token outside
    /// the slice that is not invalid UTF-8 is at or below exactly one exit.
    pub fn new(trie: &TokenTrie, class: u128, mask_words: usize) -> LoopSlice {
        let nodes = trie.nodes();
        let non_ascii = class >> 127 == 1;
        let mut words = vec![0u32; mask_words];
        let mut exits = Vec::new();
        let mut first_byte = 0;
        // The UTF-8 phase after each depth of the current path (the root: between
        // characters).
        let mut phases: Vec<usize> = vec![0];
        let mut position = 1;
        while position < nodes.len() {
            let node = &nodes[position];
            if node.depth == 1 {
                first_byte = node.byte;
            }
            phases.truncate(node.depth as usize);
            let phase = *phases.last().expect("the root is on the path");
            let byte_in_class = if node.byte < 0x80 {
                class & byte_bit(node.byte) != 0
            } else {
                non_ascii
            };
            let next = next_utf8_phase(phase, node.byte);
            match next {
                Some(next) if byte_in_class => {
                    set_ids(&mut words, trie.tokens_at(node));
                    let below = trie.bytes_below(position);
                    if below & !class == 0 && trie.valid_utf8_below_in_phase(position, next) {
                        set_ids(&mut words, trie.subtree_tokens(position));
                        position += node.subtree_len as usize;
                    } else {
                        phases.push(next);
                        position += 1;
                    }
                }
                // Between characters, a byte outside the class: an exit.
                _ if phase == 0 => {
                    exits.push(ExitNode {
                        position: position as u32,
                        end: (position + node.subtree_len as usize) as u32,
                        depth: node.depth,
                        byte: node.byte,
                        first_byte,
                    });
                    position += node.subtree_len as usize;
                }
                // Inside a character, a byte that breaks it: no valid text has these
                // tokens.
                _ => position += node.subtree_len as usize,
            }
        }
        // Stable: trie order within each byte's group.
        exits.sort_by_key(|exit| exit.byte);
        LoopSlice {
            class,
            words: words.into_boxed_slice(),
            exits: exits.into_boxed_slice(),
        }
    }

    /// The class this is the slice of.
    pub fn class(&self) -> u128 {
        self.class
    }

    /// The tokens of the slice, as mask words.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// The exits, grouped by their byte (in trie order within a group): each is walked
    /// with its own byte from the looping state.
    pub fn exits(&self) -> &[ExitNode] {
        &self.exits
    }

    /// The exits by byte: each byte with its exits (in trie order).
    pub fn exits_by_byte(&self) -> impl Iterator<Item = (u8, &[ExitNode])> {
        // Each group's end found by binary search: a walk skips the dead groups (a JSON
        // string's line feeds, two thirds of its exits) without reading them.
        let mut rest = &self.exits[..];
        std::iter::from_fn(move || {
            let byte = rest.first()?.byte;
            let (group, after) = rest.split_at(rest.partition_point(|exit| exit.byte == byte));
            rest = after;
            Some((byte, group))
        })
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.words.len() * 4 + self.exits.len() * std::mem::size_of::<ExitNode>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trie::tests::trie_of;

    #[test]
    fn the_json_string_body_class_is_its_bytes_classes() {
        let expected = (0u8..=0xFF)
            .filter(|&byte| {
                byte >= 0x80 || (0x20..0x7F).contains(&byte) && !b"\"\\".contains(&byte)
            })
            .fold(0u128, |class, byte| class | byte_bit(byte));
        assert_eq!(JSON_STRING_BODY_CLASS, expected);
    }

    fn ids(words: &[u32]) -> Vec<u32> {
        (0..words.len() as u32 * 32)
            .filter(|&id| words[id as usize / 32] >> (id % 32) & 1 == 1)
            .collect()
    }

    /// The bytes of the exits, from the root.
    fn exit_paths(trie: &TokenTrie, slice: &LoopSlice) -> Vec<Vec<u8>> {
        let mut paths = Vec::new();
        let mut path = Vec::new();
        for (position, node) in trie.nodes().iter().enumerate().skip(1) {
            path.truncate(node.depth as usize - 1);
            path.push(node.byte);
            if slice
                .exits()
                .iter()
                .any(|exit| exit.position == position as u32)
            {
                paths.push(path.clone());
            }
        }
        paths
    }

    #[test]
    fn a_slice_holds_the_tokens_made_of_its_class_and_exits_where_others_leave_it() {
        let texts: [&[u8]; 10] = [
            b"ab",           // 0: in
            b"a\"",          // 1: leaves at `"`
            b"\"",           // 2: leaves at once
            "é".as_bytes(),  // 3: in (characters past ASCII are in the class)
            &[0xC3],         // 4: in (ends inside a character)
            &[0xC3, b'a'],   // 5: invalid UTF-8: in no slice, at no exit
            b"a\"b",         // 6: leaves at `"` (the same exit as 1)
            &[0xFF],         // 7: invalid lead byte: an exit (walks find it dead)
            b"b",            // 8: in
            "éa".as_bytes(), // 9: in
        ];
        let trie = trie_of(&texts);
        let class = byte_bit(b'a') | byte_bit(b'b') | 1 << 127;
        let slice = LoopSlice::new(&trie, class, 1);
        assert_eq!(ids(slice.words()), vec![0, 3, 4, 8, 9]);
        assert_eq!(
            exit_paths(&trie, &slice),
            vec![b"\"".to_vec(), b"a\"".to_vec(), vec![0xFF]]
        );
        // Grouped by their byte, each knowing the first byte of its tokens.
        let groups: Vec<(u8, Vec<u8>)> = slice
            .exits_by_byte()
            .map(|(byte, exits)| (byte, exits.iter().map(|exit| exit.first_byte).collect()))
            .collect();
        assert_eq!(groups, vec![(b'"', vec![b'"', b'a']), (0xFF, vec![0xFF])]);
        // Without characters past ASCII in the class, they are exits too.
        let ascii = LoopSlice::new(&trie, byte_bit(b'a') | byte_bit(b'b'), 1);
        assert_eq!(ids(ascii.words()), vec![0, 8]);
        assert_eq!(
            exit_paths(&trie, &ascii),
            vec![b"\"".to_vec(), b"a\"".to_vec(), vec![0xC3], vec![0xFF]]
        );
    }
}
