//! The copies of bounded repetitions that have a twin loop, as the compiled graph records
//! them, and the queries on them that parse states and masks share: which copy a node
//! belongs to, and a state's view with its item moved to the twin (see
//! `compile/counted.rs` for why twins exist and how they are built).

use crate::graph::utf8::Partial;
use crate::graph::{GrammarGraph, Node, NodeId};

/// One copy (optional or mandatory) of a bounded repetition that has a twin loop.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CountedCopy {
    /// The copy's first node.
    pub(crate) first: NodeId,
    /// How many nodes each copy has (`first..first + len`).
    pub(crate) len: u32,
    /// Copies from this one to the last, this one included.
    pub(crate) remaining: u32,
    /// The first node of the copy's counterpart in the twin (same layout).
    pub(crate) twin: NodeId,
    /// When the repeated symbol is one character class: its bytes as
    /// [`grail_vocab::byte_bit`] bits (bit 127 for any byte past ASCII), so the bound is
    /// the longest run of such bytes a token starts with rather than the longest token.
    pub(crate) class_bytes: Option<u128>,
    /// When the repeated symbol is exactly one JSON string character (as itself or one
    /// escape, see [`json_unit_starts`]): the offsets in the copy of its first consuming
    /// nodes, as bits, so the bound is the most such characters a token starts with.
    pub(crate) json_char_starts: Option<u64>,
    /// True for a mandatory copy of `X{m,}` (one JSON string character), `remaining`
    /// counting the mandatory copies left and `twin` the loop `X*` itself: a mask reads
    /// it as the loop, less the tokens that end the string too soon.
    pub(crate) minimum: bool,
}

/// The copy (and its index in `graph.counted`) that `node` belongs to, if any.
pub(crate) fn counted_copy(graph: &GrammarGraph, node: NodeId) -> Option<(usize, &CountedCopy)> {
    let found = graph
        .counted
        .partition_point(|copy| copy.first + copy.len <= node);
    graph
        .counted
        .get(found)
        .filter(|copy| copy.first <= node)
        .map(|copy| (found, copy))
}

/// Whether an item at `node` (inside a character when `partial` is not none) takes no
/// byte of the ASCII `class` ([`grail_vocab::byte_bit`] bits), nor, when
/// `takes_past_ascii`, any character past ASCII. Unknown node kinds do not refuse.
pub(crate) fn refuses(
    graph: &GrammarGraph,
    node: NodeId,
    partial: Partial,
    class: u128,
    takes_past_ascii: bool,
) -> bool {
    !partial.is_none()
        || match graph.nodes[node as usize] {
            Node::Char { code_point, .. } => {
                if code_point >= 128 {
                    !takes_past_ascii
                } else {
                    class >> code_point & 1 == 0
                }
            }
            Node::Class { set, .. } => {
                graph.class_ascii[set as usize] & class == 0
                    && (!takes_past_ascii || graph.class_all_non_ascii[set as usize] == Some(false))
            }
            _ => false,
        }
}

/// A state's items with the one in a copy of a bounded repetition moved to the twin
/// loop (see [`counted_twin_of`]).
pub(crate) struct CountedTwin {
    /// The step-cache key of the state with the item moved.
    pub(crate) key: Vec<u32>,
    /// Its items.
    pub(crate) items: Vec<(NodeId, Partial, u8)>,
    /// How many more bytes of the class the copies take.
    pub(crate) remaining: u32,
    /// The repetition's class, as [`grail_vocab::byte_bit`] bits.
    pub(crate) class: u128,
}

/// For a step-cache state (its `key` as `describe_step` writes it, and its items): when
/// exactly one item sits in a copy that walks may count through ([`countable_nodes`]),
/// at a character's start, and no other item takes a byte of that class, the same state
/// with that item moved to the twin.
///
/// Walks may then step through the twin instead of the copies, counting the class's
/// bytes: from the copies, a byte of the class goes one copy on and any other byte
/// leaves the repetition (only the continuation takes it, the same after the copies as
/// after the twin), so the state with `k` copies left is the twin allowed `k` more bytes
/// of the class. The twin only has one state where the copies have one per count.
pub(crate) fn counted_twin_of(
    graph: &GrammarGraph,
    key: &[u32],
    items: &[(NodeId, Partial, u8)],
) -> Option<CountedTwin> {
    if graph.countable_nodes.is_empty() {
        return None;
    }
    let mut found: Option<usize> = None;
    for (position, &(node, partial, _)) in items.iter().enumerate() {
        if graph.countable_nodes[node as usize / 64] >> (node % 64) & 1 == 0 {
            continue;
        }
        if found.is_some() || !partial.is_none() {
            return None;
        }
        found = Some(position);
    }
    let position = found?;
    let (_, copy) = counted_copy(graph, items[position].0)?;
    let class = copy.class_bytes?;
    let others_refuse = items
        .iter()
        .enumerate()
        .all(|(other, &(node, partial, _))| {
            other == position || refuses(graph, node, partial, class, false)
        });
    if !others_refuse {
        return None;
    }
    // The key holds the accepting flag, the item count, then (node, partial, slot) per
    // item: the moved item keeps its place, so its slot numbering holds.
    let node_in_key = 2 + 3 * position;
    if key.get(1).copied() != Some(items.len() as u32)
        || key.get(node_in_key) != Some(&items[position].0)
    {
        return None;
    }
    let twin_node = copy.twin + (items[position].0 - copy.first);
    let mut key = key.to_vec();
    key[node_in_key] = twin_node;
    let mut items = items.to_vec();
    items[position].0 = twin_node;
    Some(CountedTwin {
        key,
        items,
        remaining: copy.remaining,
        class,
    })
}
