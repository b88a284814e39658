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
        TokenTrie { nodes, token_ids }
    }

    /// The nodes, root first, in depth-first order.
    pub fn nodes(&self) -> &[TrieNode] {
        &self.nodes
    }

    /// The token ids ending at a node.
    pub fn tokens_at(&self, node: &TrieNode) -> &[u32] {
        &self.token_ids[node.tokens_start as usize..node.tokens_end as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_token_is_reached_by_its_bytes() {
        let texts: [&[u8]; 7] = [b"ab", b"a", b"abc", b"b", b"", b"ab", b"\xC3"];
        let vocabulary = Vocabulary::new(
            "t",
            texts.iter().map(|text| text.to_vec()).collect(),
            vec![TokenKind::Text; 7],
            vec![],
            None,
        );
        let trie = TokenTrie::new(&vocabulary);
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
        let a = trie
            .nodes()
            .iter()
            .position(|node| node.depth == 1 && node.byte == b'a')
            .unwrap();
        assert_eq!(trie.nodes()[a].subtree_len, 3);
        assert_eq!(trie.nodes()[0].subtree_len as usize, trie.nodes().len());
    }
}
