//! Items that loop on their own class: a character class (or any character) that its
//! rule's automaton leads back to without consuming anything or leaving the rule
//! (`[a-z]*`, the free run of a searched pattern `.*needle.*`). A state holding such an
//! item at a character boundary takes every run of that class's whole characters,
//! whatever its other items do with them: the item is there again after each character.
//! Token-trie walks use it to take whole subtrees at once from states that do not loop
//! themselves (`Matcher::walk_table_nodes`, by the class kept per state in
//! `StateData::loop_item_class`): in a searched pattern every letter of the needle moves
//! the state on, yet the free run keeps every string character viable.

use std::sync::atomic::{AtomicU8, Ordering};

use crate::graph::utf8::Partial;
use crate::graph::{GrammarGraph, Node, NodeId};

/// How many split nodes the search for a way back to a node may visit, and how many
/// nodes it may look at (a loop's way back is a few splits: the loop's own and its
/// group's alternatives; past these, the node is taken not to loop, which only costs a
/// shortcut). Small: a class may be followed by a split of hundreds of alternatives.
const MAX_SPLITS_VISITED: usize = 6;
const MAX_NODES_SEEN: usize = 16;

/// Which class nodes (and any-character nodes) lead back to themselves through split
/// nodes alone: after consuming a character they are entered again in the same rule
/// call. Found on first need per node (states name few of a grammar's nodes; searching
/// from every class node at compile time cost a few percent of a big schema's compile)
/// and remembered, shared by every matcher of the grammar.
#[derive(Debug)]
pub(crate) struct LoopingNodes {
    /// Per node: 0 not yet known, 1 does not loop, 2 loops.
    known: Box<[AtomicU8]>,
}

const UNKNOWN: u8 = 0;
const DOES_NOT_LOOP: u8 = 1;
const LOOPS: u8 = 2;

impl LoopingNodes {
    /// Nothing known yet, for a graph of `node_count` nodes.
    pub(crate) fn new(node_count: usize) -> LoopingNodes {
        LoopingNodes {
            known: std::iter::repeat_with(|| AtomicU8::new(UNKNOWN))
                .take(node_count)
                .collect(),
        }
    }

    /// True when class (or any-character) node `node` leads back to itself through
    /// split nodes alone.
    pub(crate) fn loops(&self, nodes: &[Node], split_targets: &[NodeId], node: NodeId) -> bool {
        let slot = &self.known[node as usize];
        match slot.load(Ordering::Relaxed) {
            LOOPS => true,
            DOES_NOT_LOOP => false,
            _ => {
                let loops = leads_back(nodes, split_targets, node);
                slot.store(if loops { LOOPS } else { DOES_NOT_LOOP }, Ordering::Relaxed);
                loops
            }
        }
    }
}

/// True when class (or any-character) node `node` is reached again from the node after it
/// through split nodes alone (within [`MAX_SPLITS_VISITED`] and [`MAX_NODES_SEEN`]).
fn leads_back(nodes: &[Node], split_targets: &[NodeId], node: NodeId) -> bool {
    let next = match nodes[node as usize] {
        Node::Class { next, .. } | Node::Any { next } => next,
        _ => return false,
    };
    // On the stack (a state's new class nodes are searched as it is interned: two heap
    // vectors were most of the search): each split visited pushes at most
    // `MAX_NODES_SEEN` targets.
    let mut stack = [0 as NodeId; 1 + MAX_SPLITS_VISITED * MAX_NODES_SEEN];
    stack[0] = next;
    let mut stack_len = 1;
    let mut visited = [0 as NodeId; MAX_SPLITS_VISITED];
    let mut visited_len = 0;
    let mut seen = 0;
    while stack_len > 0 {
        stack_len -= 1;
        let at = stack[stack_len];
        seen += 1;
        if seen > MAX_NODES_SEEN {
            return false;
        }
        if at == node {
            return true;
        }
        let Node::Split { first, count } = nodes[at as usize] else {
            continue;
        };
        if visited_len >= MAX_SPLITS_VISITED || count as usize > MAX_NODES_SEEN {
            return false;
        }
        if visited[..visited_len].contains(&at) {
            continue;
        }
        visited[visited_len] = at;
        visited_len += 1;
        let targets = &split_targets[first as usize..(first + count) as usize];
        stack[stack_len..stack_len + targets.len()].copy_from_slice(targets);
        stack_len += targets.len();
    }
    false
}

/// The bytes (as [`grail_vocab::byte_bit`] bits) whose every run of whole characters a
/// self-looping class (or any-character) `node` takes: its ASCII members (bit 0 only
/// when it has both NUL and DEL), and bit 127 when it has every character past ASCII.
fn looping_bytes(graph: &GrammarGraph, node: NodeId) -> u128 {
    let (ascii, all_past_ascii) = match graph.nodes[node as usize] {
        Node::Class { set, .. } => (
            graph.class_ascii[set as usize],
            graph.class_all_non_ascii[set as usize] == Some(true),
        ),
        Node::Any { .. } => (u128::MAX, true),
        _ => return 0,
    };
    const NUL_AND_DEL: u128 = 1 | 1 << 0x7F;
    (ascii & !NUL_AND_DEL)
        | u128::from(ascii & NUL_AND_DEL == NUL_AND_DEL)
        | u128::from(all_past_ascii) << 127
}

/// The widest class one of `items` loops on at a character boundary (see
/// [`looping_bytes`]); empty when none does.
pub(crate) fn widest_loop_item_class(
    graph: &GrammarGraph,
    items: &[(NodeId, Partial, u8)],
) -> u128 {
    items
        .iter()
        .filter(|&&(node, partial, _)| {
            partial.is_none()
                && matches!(
                    graph.nodes[node as usize],
                    Node::Class { .. } | Node::Any { .. }
                )
                && graph
                    .looping_nodes
                    .loops(&graph.nodes, &graph.split_targets, node)
        })
        .map(|&(node, ..)| looping_bytes(graph, node))
        .max_by_key(|class| class.count_ones())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CompiledGrammar;

    /// The ASCII members of the classes of the nodes that loop.
    fn looping_ascii(source: &str) -> Vec<u128> {
        let grammar = CompiledGrammar::from_gbnf(source).expect("the grammar compiles");
        let graph = &grammar.inner;
        let mut classes: Vec<u128> = (0..graph.nodes.len())
            .filter(|&index| {
                graph
                    .looping_nodes
                    .loops(&graph.nodes, &graph.split_targets, index as NodeId)
            })
            .map(|index| match graph.nodes[index] {
                Node::Class { set, .. } => graph.class_ascii[set as usize],
                other => panic!("{other:?} cannot loop on a class"),
            })
            .collect();
        classes.sort_unstable();
        classes.dedup();
        classes
    }

    fn ascii_range(first: u8, last: u8) -> u128 {
        (first..=last).fold(0, |bits, byte| bits | 1 << byte)
    }

    #[test]
    fn starred_and_plussed_classes_loop_and_sequences_do_not() {
        // `[a-z]*` and `[0-9]+` loop; `"x"`, `"-"`, `"y"`, `[a-c]` and `[d-f]` are met once.
        let looping = looping_ascii(r#"root ::= "x" [a-z]* "-" [0-9]+ "y" [a-c] [d-f]"#);
        assert_eq!(
            looping,
            vec![ascii_range(b'0', b'9'), ascii_range(b'a', b'z')]
        );
        assert!(looping_ascii(r#"root ::= "x" [a-c] [d-f] "y""#).is_empty());
    }

    #[test]
    fn a_loop_through_a_group_of_alternatives_loops_and_a_rule_call_is_not_followed() {
        let looping = looping_ascii(concat!(
            r#"root ::= ([a-z] | "\\" ["n])* "!" item"#,
            "\n",
            "item ::= [0-9]",
        ));
        // The class of the group loops; the escape's backslash is followed by another
        // character (not itself again); `item`'s class ends its rule.
        assert_eq!(looping, vec![ascii_range(b'a', b'z')]);
    }

    #[test]
    fn looping_bytes_need_every_character_past_ascii_and_both_nul_and_del() {
        let grammar = CompiledGrammar::from_gbnf(
            r#"root ::= [^"]* "|" [a-z\x80-\U0010FFFF]* "|" [\x00-\x7F]* "|" [\x01-\x7E]*"#,
        )
        .expect("the grammar compiles");
        let graph = &grammar.inner;
        let bytes: Vec<u128> = (0..graph.nodes.len() as NodeId)
            .filter(|&node| {
                graph
                    .looping_nodes
                    .loops(&graph.nodes, &graph.split_targets, node)
            })
            .map(|node| looping_bytes(graph, node))
            .collect();
        assert_eq!(bytes.len(), 4);
        let quote = grail_vocab::byte_bit(b'"');
        let past_ascii = 1u128 << 127;
        assert!(bytes.contains(&!quote));
        assert!(
            bytes
                .iter()
                .any(|&b| b & past_ascii != 0 && b & 1 == 0 && b >> b'a' & 1 == 1)
        );
        assert!(bytes.iter().any(|&b| b & past_ascii == 0 && b & 1 == 1));
        assert!(
            bytes
                .iter()
                .any(|&b| b & past_ascii == 0 && b & 1 == 0 && b >> b'~' & 1 == 1)
        );
    }
}
