//! A trie of token byte strings, flattened in depth-first order, so a walk that finds a
//! prefix dead skips its whole subtree with one jump.

use crate::vocabulary::{TokenKind, Vocabulary};

/// One trie node: the byte leading to it, its depth, the size of its subtree, and the
/// tokens whose bytes end exactly here.
#[derive(Debug, Clone, Copy)]
pub struct TrieNode {
    /// The byte on the edge into this node.
    pub byte: u8,
    /// Depth (the root is 0).
    pub depth: u32,
    /// Nodes in this subtree, itself included: `index + subtree_len` is the next sibling.
    pub subtree_len: u32,
    /// Range in [`TokenTrie::token_ids`] of the tokens ending here.
    pub tokens_start: u32,
    /// End of that range.
    pub tokens_end: u32,
}

/// The text tokens of a vocabulary as a flattened trie (special tokens and empty tokens
/// are not in it: they are never matched as text).
#[derive(Debug, Clone)]
pub struct TokenTrie {
    nodes: Vec<TrieNode>,
    token_ids: Vec<u32>,
    /// `token_offsets[i]`: tokens ending at nodes before `i` (one entry past the end), so a
    /// subtree's tokens are one range of `token_ids`.
    token_offsets: Vec<u32>,
    /// The bytes on the edges below big subtrees' roots (see [`TokenTrie::bytes_below`]).
    bytes_below: BytesBelow,
    /// For each node, whether every path below it is valid UTF-8 (a prefix of it) when
    /// the node ends in each of the phases of `UTF8_PHASES` (bit per phase).
    valid_below: Vec<u8>,
    /// For each node, whether the bytes from the root down to it are all ASCII (bit per
    /// node).
    ascii_path: Vec<u64>,
    /// The tokens whose bytes are all ASCII, in depth-first order, and for each node how
    /// many of them end at nodes before it (one entry past the end).
    ascii_token_ids: Vec<u32>,
    ascii_offsets: Vec<u32>,
}

/// Subtrees with at least this many nodes keep the bytes below their root in a table; for
/// smaller ones they are gathered when asked (from at most this many adjacent nodes).
/// Walks ask for big subtrees' bytes, so the table is about a twentieth of the nodes and
/// stays in cache.
const BYTES_BELOW_KEPT_FROM: u32 = 16;

/// The bytes below the roots of big subtrees, by rank among them.
#[derive(Debug, Clone)]
struct BytesBelow {
    /// Bit per node: whether its subtree is big (kept).
    kept: Vec<u64>,
    /// For each block of 64 nodes, the kept nodes before it.
    kept_before: Vec<u32>,
    /// Bytes below each kept node, in node order.
    bytes: Vec<u128>,
}

impl BytesBelow {
    /// Keeps the entries of `all` (bytes below each node) for nodes with big subtrees.
    fn new(nodes: &[TrieNode], all: &[u128]) -> BytesBelow {
        let mut kept = vec![0u64; nodes.len().div_ceil(64)];
        let mut kept_before = Vec::with_capacity(kept.len());
        let mut bytes = Vec::new();
        for (index, node) in nodes.iter().enumerate() {
            if index % 64 == 0 {
                kept_before.push(bytes.len() as u32);
            }
            if node.subtree_len >= BYTES_BELOW_KEPT_FROM {
                kept[index / 64] |= 1 << (index % 64);
                bytes.push(all[index]);
            }
        }
        BytesBelow {
            kept,
            kept_before,
            bytes,
        }
    }

    /// The entry of the kept node at `position`.
    #[inline]
    fn get(&self, position: usize) -> u128 {
        let block = self.kept[position / 64] & ((1u64 << (position % 64)) - 1);
        self.bytes[self.kept_before[position / 64] as usize + block.count_ones() as usize]
    }
}

/// The bit standing for `byte` in [`TokenTrie::bytes_below`]: its own bit for ASCII
/// 0x01..=0x7E, bit 0 for both NUL and DEL, bit 127 for every byte past ASCII.
#[inline]
pub fn byte_bit(byte: u8) -> u128 {
    match byte {
        0x80.. => 1 << 127,
        0x7F => 1,
        _ => 1 << byte,
    }
}

/// Where a strict UTF-8 decoder stands between bytes: the eight ways to be inside (or
/// between) characters — bytes still expected and the range of the next one.
const UTF8_PHASES: [(u8, u8, u8); 8] = [
    (0, 0x00, 0x00),
    (1, 0x80, 0xBF),
    (2, 0x80, 0xBF),
    (2, 0xA0, 0xBF),
    (2, 0x80, 0x9F),
    (3, 0x80, 0xBF),
    (3, 0x90, 0xBF),
    (3, 0x80, 0x8F),
];

/// The phase after `byte` from phase `phase` (indices into [`UTF8_PHASES`]), or `None`
/// when the bytes stop being valid UTF-8 (strict: no overlongs, surrogates or values
/// past U+10FFFF).
pub(crate) fn next_utf8_phase(phase: usize, byte: u8) -> Option<usize> {
    let (left, low, high) = UTF8_PHASES[phase];
    if left == 0 {
        return match byte {
            0x00..=0x7F => Some(0),
            0xC2..=0xDF => Some(1),
            0xE0 => Some(3),
            0xED => Some(4),
            0xE1..=0xEF => Some(2),
            0xF0 => Some(6),
            0xF4 => Some(7),
            0xF1..=0xF3 => Some(5),
            _ => None,
        };
    }
    (low..=high).contains(&byte).then_some(match left {
        1 => 0,
        2 => 1,
        _ => 2,
    })
}

/// Per node (a bit each): every path below it is valid UTF-8 when the node ends at a
/// character boundary. A reverse pass computes, per node and phase, whether the paths
/// below stay valid when entered in that phase.
fn valid_utf8_below(nodes: &[TrieNode]) -> Vec<u8> {
    // Bit `p` of `valid[n]`: the paths below `n` stay valid entered in phase `p`.
    let mut valid = vec![0u8; nodes.len()];
    for index in (0..nodes.len()).rev() {
        let end = index + nodes[index].subtree_len as usize;
        let mut bits = 0u8;
        for phase in 0..UTF8_PHASES.len() {
            let mut child = index + 1;
            let mut ok = true;
            while ok && child < end {
                ok = next_utf8_phase(phase, nodes[child].byte)
                    .is_some_and(|next| valid[child] >> next & 1 == 1);
                child += nodes[child].subtree_len as usize;
            }
            bits |= u8::from(ok) << phase;
        }
        valid[index] = bits;
    }
    valid
}

impl TokenTrie {
    /// Builds the trie of a vocabulary's text tokens.
    pub fn new(vocabulary: &Vocabulary) -> TokenTrie {
        let mut texts: Vec<(&[u8], u32)> = vocabulary
            .iter()
            .filter(|&(_, bytes, kind)| kind == TokenKind::Text && !bytes.is_empty())
            .map(|(id, bytes, _)| (bytes, id))
            .collect();
        texts.sort_unstable();
        let mut nodes = vec![TrieNode {
            byte: 0,
            depth: 0,
            subtree_len: 0,
            tokens_start: 0,
            tokens_end: 0,
        }];
        let mut token_ids = Vec::with_capacity(texts.len());
        // The path of open nodes: (node index, depth).
        let mut path: Vec<usize> = vec![0];
        let mut previous: &[u8] = &[];
        for (bytes, id) in texts {
            let shared = previous
                .iter()
                .zip(bytes)
                .take_while(|(a, b)| a == b)
                .count();
            // Close the nodes deeper than the shared prefix.
            while path.len() > shared + 1 {
                let closed = path.pop().expect("path is not empty");
                nodes[closed].subtree_len = (nodes.len() - closed) as u32;
            }
            for (depth, &byte) in bytes.iter().enumerate().skip(shared) {
                nodes.push(TrieNode {
                    byte,
                    depth: depth as u32 + 1,
                    subtree_len: 0,
                    tokens_start: 0,
                    tokens_end: 0,
                });
                path.push(nodes.len() - 1);
            }
            let node = *path.last().expect("path is not empty");
            if nodes[node].tokens_end == nodes[node].tokens_start {
                nodes[node].tokens_start = token_ids.len() as u32;
            }
            token_ids.push(id);
            nodes[node].tokens_end = token_ids.len() as u32;
            previous = bytes;
        }
        while let Some(closed) = path.pop() {
            nodes[closed].subtree_len = (nodes.len() - closed) as u32;
        }
        let mut token_offsets = Vec::with_capacity(nodes.len() + 1);
        let mut count = 0;
        for node in &nodes {
            token_offsets.push(count);
            count += node.tokens_end - node.tokens_start;
        }
        token_offsets.push(count);
        // Children come after their parent, so a reverse pass sees every child first.
        let mut bytes_below = vec![0u128; nodes.len()];
        for index in (0..nodes.len()).rev() {
            let mut child = index + 1;
            let end = index + nodes[index].subtree_len as usize;
            let mut below = 0;
            while child < end {
                below |= bytes_below[child] | byte_bit(nodes[child].byte);
                child += nodes[child].subtree_len as usize;
            }
            bytes_below[index] = below;
        }
        let bytes_below = BytesBelow::new(&nodes, &bytes_below);
        let valid_below = valid_utf8_below(&nodes);
        let mut ascii_path = vec![0u64; nodes.len().div_ceil(64)];
        let mut ascii_token_ids = Vec::new();
        let mut ascii_offsets = Vec::with_capacity(nodes.len() + 1);
        let mut path_ascii: Vec<bool> = vec![true];
        for (index, node) in nodes.iter().enumerate() {
            ascii_offsets.push(ascii_token_ids.len() as u32);
            let ascii = if index == 0 {
                true
            } else {
                path_ascii.truncate(node.depth as usize);
                path_ascii[node.depth as usize - 1] && node.byte < 0x80
            };
            if index > 0 {
                path_ascii.push(ascii);
            }
            if ascii {
                ascii_path[index / 64] |= 1 << (index % 64);
                ascii_token_ids.extend_from_slice(
                    &token_ids[node.tokens_start as usize..node.tokens_end as usize],
                );
            }
        }
        ascii_offsets.push(ascii_token_ids.len() as u32);
        TokenTrie {
            nodes,
            token_ids,
            token_offsets,
            bytes_below,
            valid_below,
            ascii_path,
            ascii_token_ids,
            ascii_offsets,
        }
    }

    /// The tokens ending at `position` or anywhere below it.
    #[inline]
    pub fn subtree_tokens(&self, position: usize) -> &[u32] {
        let end = position + self.nodes[position].subtree_len as usize;
        &self.token_ids[self.token_offsets[position] as usize..self.token_offsets[end] as usize]
    }

    /// The bytes on the edges below the node at `position` (see [`byte_bit`]).
    #[inline]
    pub fn bytes_below(&self, position: usize) -> u128 {
        let node = &self.nodes[position];
        if node.subtree_len >= BYTES_BELOW_KEPT_FROM {
            return self.bytes_below.get(position);
        }
        let end = position + node.subtree_len as usize;
        self.nodes[position + 1..end]
            .iter()
            .fold(0, |below, child| below | byte_bit(child.byte))
    }

    /// [`TokenTrie::bytes_below`] when every one of them is in `class` (same bits), else
    /// `None`: a small subtree's nodes are read only up to the first byte outside it.
    #[inline]
    pub fn bytes_below_within(&self, position: usize, class: u128) -> Option<u128> {
        let node = &self.nodes[position];
        if node.subtree_len >= BYTES_BELOW_KEPT_FROM {
            let below = self.bytes_below.get(position);
            return (below & !class == 0).then_some(below);
        }
        let end = position + node.subtree_len as usize;
        let mut below = 0;
        for child in &self.nodes[position + 1..end] {
            let bit = byte_bit(child.byte);
            if bit & class == 0 {
                return None;
            }
            below |= bit;
        }
        Some(below)
    }

    /// True when the bytes below `position` (every token below it, minus the bytes down to
    /// it) are valid UTF-8, possibly ending inside a character, provided `position` ends
    /// between characters. Strict: no overlongs, surrogates or values past U+10FFFF.
    #[inline]
    pub fn valid_utf8_below(&self, position: usize) -> bool {
        self.valid_below[position] & 1 == 1
    }

    /// True when the bytes below `position` are valid UTF-8 (possibly ending inside a
    /// character) provided `position` ends inside a character that still expects
    /// `remaining` continuation bytes (1–3), the first in `low..=high` (as strict UTF-8
    /// narrows it after E0, ED, F0 and F4). False for any other combination.
    #[inline]
    pub fn valid_utf8_below_inside(
        &self,
        position: usize,
        remaining: u8,
        low: u8,
        high: u8,
    ) -> bool {
        UTF8_PHASES
            .iter()
            .position(|&phase| phase == (remaining, low, high))
            .is_some_and(|phase| phase > 0 && self.valid_below[position] >> phase & 1 == 1)
    }

    /// True when the bytes below `position` are valid UTF-8 (possibly ending inside a
    /// character) when `position` ends in phase `phase` (an index into `UTF8_PHASES`).
    #[inline]
    pub(crate) fn valid_utf8_below_in_phase(&self, position: usize, phase: usize) -> bool {
        self.valid_below[position] >> phase & 1 == 1
    }

    /// True when the bytes from the root down to `position` are all ASCII.
    #[inline]
    pub fn ascii_path(&self, position: usize) -> bool {
        self.ascii_path[position / 64] >> (position % 64) & 1 == 1
    }

    /// The tokens at or below `position` whose bytes are all ASCII (below a node with an
    /// [`TokenTrie::ascii_path`]: exactly those with no byte past ASCII below it).
    #[inline]
    pub fn ascii_subtree_tokens(&self, position: usize) -> &[u32] {
        let end = position + self.nodes[position].subtree_len as usize;
        &self.ascii_token_ids
            [self.ascii_offsets[position] as usize..self.ascii_offsets[end] as usize]
    }

    /// The most bytes a token starts with that are all in `class` ([`byte_bit`] bits; bit
    /// 127 for any byte past ASCII): the deepest node reached from the root by such bytes.
    pub fn longest_run(&self, class: u128) -> u32 {
        let mut longest = 0;
        let mut position = 1;
        while position < self.nodes.len() {
            let node = &self.nodes[position];
            // Nodes are visited only below nodes whose path is in the class.
            if class & byte_bit(node.byte) != 0 {
                longest = longest.max(node.depth);
                position += 1;
            } else {
                position += node.subtree_len as usize;
            }
        }
        longest
    }

    /// The tokens that start with more than `run` bytes of `class` ([`byte_bit`] bits):
    /// every token below a node reached from the root by `run + 1` such bytes.
    pub fn tokens_with_run_longer_than(&self, class: u128, run: u32) -> Vec<u32> {
        let mut ids = Vec::new();
        let mut position = 1;
        while position < self.nodes.len() {
            let node = &self.nodes[position];
            if class & byte_bit(node.byte) == 0 {
                position += node.subtree_len as usize;
            } else if node.depth > run {
                ids.extend_from_slice(self.subtree_tokens(position));
                position += node.subtree_len as usize;
            } else {
                position += 1;
            }
        }
        ids
    }

    /// The length in bytes of the longest token.
    pub fn longest_token(&self) -> u32 {
        self.nodes.iter().map(|node| node.depth).max().unwrap_or(0)
    }

    /// The nodes, root first, in depth-first order.
    #[inline]
    pub fn nodes(&self) -> &[TrieNode] {
        &self.nodes
    }

    /// The token ids ending at a node.
    #[inline]
    pub fn tokens_at(&self, node: &TrieNode) -> &[u32] {
        &self.token_ids[node.tokens_start as usize..node.tokens_end as usize]
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The trie of a vocabulary of these text tokens (ids in order).
    pub(crate) fn trie_of(texts: &[&[u8]]) -> TokenTrie {
        let vocabulary = Vocabulary::new(
            "t",
            texts.iter().map(|text| text.to_vec()).collect(),
            vec![TokenKind::Text; texts.len()],
            vec![],
            None,
        );
        TokenTrie::new(&vocabulary)
    }

    /// The position of the node at `depth` entered by `byte` (the first, in order).
    fn node_at(trie: &TokenTrie, depth: u32, byte: u8) -> usize {
        trie.nodes()
            .iter()
            .position(|node| node.depth == depth && node.byte == byte)
            .unwrap()
    }

    #[test]
    fn every_token_is_reached_by_its_bytes() {
        let texts: [&[u8]; 7] = [b"ab", b"a", b"abc", b"b", b"", b"ab", b"\xC3"];
        let trie = trie_of(&texts);
        // Walk the trie, rebuilding each node's bytes from the depth-first order.
        let mut path: Vec<u8> = Vec::new();
        let mut found: Vec<(Vec<u8>, u32)> = Vec::new();
        for node in &trie.nodes()[1..] {
            path.truncate(node.depth as usize - 1);
            path.push(node.byte);
            for &id in trie.tokens_at(node) {
                found.push((path.clone(), id));
            }
        }
        found.sort();
        let mut expected: Vec<(Vec<u8>, u32)> = texts
            .iter()
            .enumerate()
            .filter(|(_, text)| !text.is_empty())
            .map(|(id, text)| (text.to_vec(), id as u32))
            .collect();
        expected.sort();
        assert_eq!(found, expected);
        // Subtree sizes: "a" holds a, ab, abc.
        let a = node_at(&trie, 1, b'a');
        assert_eq!(trie.nodes()[a].subtree_len, 3);
        assert_eq!(trie.nodes()[0].subtree_len as usize, trie.nodes().len());
    }

    #[test]
    fn subtrees_know_their_tokens_and_bytes() {
        let texts: [&[u8]; 6] = [b"ab", b"a", b"a\xC3\xA9", b"b", b"a\x7F", b"ax"];
        let trie = trie_of(&texts);
        let a = node_at(&trie, 1, b'a');
        let mut under_a = trie.subtree_tokens(a).to_vec();
        under_a.sort();
        assert_eq!(under_a, vec![0, 1, 2, 4, 5]);
        // Below "a": b, x, DEL (sharing bit 0 with NUL) and the two bytes of é (bit 127).
        assert_eq!(
            trie.bytes_below(a),
            byte_bit(b'b') | byte_bit(b'x') | byte_bit(0x7F) | byte_bit(0xC3)
        );
        assert_eq!(byte_bit(0xC3), byte_bit(0xA9));
        assert_eq!(byte_bit(0x7F), byte_bit(0x00));
        assert!(trie.valid_utf8_below(a));
        let b = node_at(&trie, 1, b'b');
        assert_eq!(trie.subtree_tokens(b), &[3]);
        assert_eq!(trie.bytes_below(b), 0);
        assert_eq!(trie.subtree_tokens(0).len(), 6);
        // Below "a", the tokens with no byte past ASCII: a, ab, a DEL, ax (not aé).
        assert!(trie.ascii_path(a));
        let mut ascii_under_a = trie.ascii_subtree_tokens(a).to_vec();
        ascii_under_a.sort();
        assert_eq!(ascii_under_a, vec![0, 1, 4, 5]);
        let e_lead = node_at(&trie, 2, 0xC3);
        assert!(!trie.ascii_path(e_lead));
    }

    #[test]
    fn bytes_below_big_and_small_subtrees_match_their_nodes() {
        // Subtrees of every size around the size from which the bytes below are kept in
        // a table (the root's, "k"'s and "kA"'s are big, the others small).
        let texts: Vec<Vec<u8>> = (0u8..40)
            .flat_map(|i| {
                [
                    vec![b'k', b'a' + i % 26, b'0' + i % 10],
                    vec![b'k', b'A' + i % 7, 0x7F, 0xC3 + i % 2],
                    vec![b'q', b'!' + i % 3],
                    vec![b'k', b'A', b'a' + i % 26],
                ]
            })
            .collect();
        let text_slices: Vec<&[u8]> = texts.iter().map(Vec::as_slice).collect();
        let trie = trie_of(&text_slices);
        let nodes = trie.nodes();
        let mut kept = 0;
        for (position, node) in nodes.iter().enumerate() {
            let end = position + node.subtree_len as usize;
            let expected = nodes[position + 1..end]
                .iter()
                .fold(0, |below, child| below | byte_bit(child.byte));
            assert_eq!(trie.bytes_below(position), expected, "node {position}");
            for class in [
                expected,
                expected | 1 << 127,
                expected & expected.wrapping_sub(1),
                0,
            ] {
                let within = (expected & !class == 0).then_some(expected);
                assert_eq!(
                    trie.bytes_below_within(position, class),
                    within,
                    "node {position}"
                );
            }
            kept += usize::from(node.subtree_len >= BYTES_BELOW_KEPT_FROM);
        }
        assert!(
            kept >= 3 && kept < nodes.len(),
            "{kept} of {} kept",
            nodes.len()
        );
    }

    #[test]
    fn invalid_utf8_below_a_node_is_known() {
        // "x\xC3" ends inside é (valid prefix); "y\xA9" starts with a continuation byte,
        // "z\xED\xA0" begins a surrogate (refused by strict UTF-8).
        // "\xA9a": below the lone continuation byte, "a" is valid once it ends a character.
        let texts: [&[u8]; 5] = [b"x\xC3", b"y\xA9", b"z\xED\xA0", b"z\xED\x9F", b"\xA9a"];
        let trie = trie_of(&texts);
        let at = |byte: u8| node_at(&trie, 1, byte);
        assert!(trie.valid_utf8_below(at(b'x')));
        assert!(!trie.valid_utf8_below(at(b'y')));
        assert!(!trie.valid_utf8_below(at(b'z')));
        assert!(trie.valid_utf8_below(at(0xA9)));
        assert!(!trie.valid_utf8_below(0));
    }

    #[test]
    fn validity_below_a_node_inside_a_character_depends_on_what_it_expects() {
        // Below "p\xED" (expects one of 80..9F, then one more): "\x9F\xBF" and "\x80"
        // are valid, so is the prefix; below "q\xED": "\xA0" would be a surrogate.
        // Below "r\xC3": "\xA9" completes é, then "!" is ASCII.
        let texts: [&[u8]; 6] = [
            b"p\xED\x9F\xBF",
            b"p\xED\x80",
            b"q\xED\xA0",
            b"r\xC3\xA9!",
            b"r\xC3",
            b"p\xED",
        ];
        let trie = trie_of(&texts);
        let lead_below = |first: u8| {
            let parent = node_at(&trie, 1, first);
            parent
                + 1
                + trie.nodes()[parent + 1..]
                    .iter()
                    .position(|node| node.depth == 2)
                    .unwrap()
        };
        let p = lead_below(b'p');
        assert!(trie.valid_utf8_below_inside(p, 2, 0x80, 0x9F));
        // The same bytes are not valid where one continuation byte ends the character:
        // "\xBF" would then start one.
        assert!(!trie.valid_utf8_below_inside(p, 1, 0x80, 0xBF));
        let q = lead_below(b'q');
        assert!(!trie.valid_utf8_below_inside(q, 2, 0x80, 0x9F));
        assert!(trie.valid_utf8_below_inside(q, 2, 0x80, 0xBF));
        let r = lead_below(b'r');
        assert!(trie.valid_utf8_below_inside(r, 1, 0x80, 0xBF));
        // Not a phase of strict UTF-8.
        assert!(!trie.valid_utf8_below_inside(r, 1, 0x80, 0x9F));
    }
}
