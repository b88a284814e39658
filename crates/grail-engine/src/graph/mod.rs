//! The compiled grammar's graph: the records every layer above reads and none writes.
//!
//! Every rule becomes a small automaton inside one node array. Consuming nodes (a code
//! point, a class, any character, a token) and calls point at the node that follows;
//! `Split` fans out to alternatives and loop exits; each rule ends in its `Return` node.
//! Nodes that can never reach their rule's end are marked unproductive (`productive`).
//! Beside the graph: the parse state's records (`records.rs`), characters begun
//! (`utf8.rs`), and the queries on the graph that states and masks share (which class
//! nodes loop, `loop_items.rs`; bounded repetitions' copies, `counted.rs`).

pub(crate) mod counted;
pub(crate) mod loop_items;
pub(crate) mod records;
pub(crate) mod utf8;

use grail_grammar::ScalarSet;

use crate::graph::counted::CountedCopy;
use crate::graph::loop_items::LoopingNodes;
use crate::limits::EngineLimits;

/// Index of a node in the compiled graph.
pub(crate) type NodeId = u32;

/// One node of the compiled graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Node {
    /// Consumes exactly this code point.
    Char { code_point: u32, next: NodeId },
    /// Consumes a code point of the class `set` (an index into the class table).
    Class { set: u32, next: NodeId },
    /// Consumes any scalar value.
    Any { next: NodeId },
    /// Consumes one whole token whose id is (or, negated, is not) in the token set.
    Token { set: u32, next: NodeId },
    /// Calls `rule`; when it returns, continues at `next`.
    Call { rule: u32, next: NodeId },
    /// Continues at every node in `split_targets[first..first + count]`.
    Split { first: u32, count: u32 },
    /// The end of the rule being matched.
    Return,
}

/// A token element: the ids it names and whether it is negated (`!<[id]>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenSet {
    /// Sorted, deduplicated ids.
    pub ids: Vec<u32>,
    /// True for `!<...>`: any token except these.
    pub negated: bool,
}

impl TokenSet {
    /// True when the element matches the token `id`.
    pub fn matches(&self, id: u32) -> bool {
        self.ids.binary_search(&id).is_ok() != self.negated
    }
}

/// A compiled rule: its name and where its automaton starts.
#[derive(Debug, Clone)]
pub(crate) struct CompiledRule {
    pub(crate) name: String,
    pub(crate) start: NodeId,
}

/// The compiled graph of a grammar: immutable, shared by its matchers (the data of a
/// [`crate::CompiledGrammar`] beside its learned store).
#[derive(Debug)]
pub(crate) struct GrammarGraph {
    pub(crate) nodes: Vec<Node>,
    pub(crate) split_targets: Vec<NodeId>,
    pub(crate) classes: Vec<ScalarSet>,
    /// For each class, its ASCII members as a bitmap (the fast path of matching).
    pub(crate) class_ascii: Vec<u128>,
    /// For each class, the first bytes of its members' UTF-8 encodings (a 256-bit set).
    pub(crate) class_lead_bytes: Vec<[u64; 4]>,
    /// For each class: `Some(true)` when it holds every scalar past ASCII, `Some(false)`
    /// when it holds none, `None` when some.
    pub(crate) class_all_non_ascii: Vec<Option<bool>>,
    /// Per node, the node that carries an item inside a character there (see
    /// `character_carriers`), or [`NO_CARRIER`]; empty when no node has one.
    pub(crate) character_carriers: Vec<NodeId>,
    /// For each class, the written form (negation kept), for next-character rules.
    pub(crate) class_negated: Vec<bool>,
    /// For each class, the written ranges as scalars (before negation).
    pub(crate) class_listed: Vec<ScalarSet>,
    pub(crate) token_sets: Vec<TokenSet>,
    pub(crate) rules: Vec<CompiledRule>,
    pub(crate) root: u32,
    /// The calls in tail position compiled to jumps (see `elide_tail_calls`): the split
    /// whose targets start at `tail_jumps_first + i` jumps to the start of rule
    /// `tail_jumps[i].0`, for a call that continued at the return `tail_jumps[i].1`.
    pub(crate) tail_jumps_first: u32,
    pub(crate) tail_jumps: Vec<(u32, NodeId)>,
    /// `productive[node]`: the node can reach its rule's `Return`.
    pub(crate) productive: Vec<bool>,
    /// Optional copies of bounded repetitions that have a twin loop for masks (see
    /// `counted.rs`), in node order, not overlapping.
    pub(crate) counted: Vec<CountedCopy>,
    /// The nodes of `counted` that walks may count through, as bits (see
    /// `counted::countable_nodes`); empty when none.
    pub(crate) countable_nodes: Vec<u64>,
    /// Which class nodes loop on their own class, found on first need
    /// (`loop_items.rs`).
    pub(crate) looping_nodes: LoopingNodes,
    pub(crate) limits: EngineLimits,
}

impl GrammarGraph {
    pub(crate) fn targets(&self, first: u32, count: u32) -> &[NodeId] {
        &self.split_targets[first as usize..(first + count) as usize]
    }

    pub(crate) fn is_productive(&self, node: NodeId) -> bool {
        self.productive[node as usize]
    }

    /// For the split whose targets start at `first`: when it is a tail call compiled to a
    /// jump, the rule it jumps to and the return the call continued at.
    #[inline]
    pub(crate) fn tail_jump(&self, first: u32) -> Option<(u32, NodeId)> {
        let index = first.checked_sub(self.tail_jumps_first)?;
        self.tail_jumps.get(index as usize).copied()
    }
}

/// No carrier node (see [`GrammarGraph::character_carriers`]).
pub(crate) const NO_CARRIER: NodeId = NodeId::MAX;

/// True when a consuming node accepts the code point.
pub(crate) fn edge_matches(graph: &GrammarGraph, node: Node, code_point: u32) -> bool {
    match node {
        Node::Char {
            code_point: expected,
            ..
        } => expected == code_point,
        Node::Class { set, .. } if code_point < 128 => {
            graph.class_ascii[set as usize] >> code_point & 1 == 1
        }
        Node::Class { set, .. } => graph.classes[set as usize].contains(code_point),
        Node::Any { .. } => true,
        _ => false,
    }
}

/// True when the consuming `node` takes every scalar of `low..=high` (a range with no
/// surrogates in it, as [`Partial::code_point_range`] gives).
pub(crate) fn edge_contains(graph: &GrammarGraph, node: Node, low: u32, high: u32) -> bool {
    match node {
        Node::Class { set, .. } => {
            let ranges = graph.classes[set as usize].ranges();
            let index = ranges.partition_point(|&(_, last)| last < low);
            ranges
                .get(index)
                .is_some_and(|&(first, last)| first <= low && high <= last)
        }
        Node::Any { .. } => true,
        _ => false,
    }
}

/// True when a consuming node accepts some scalar in `[low, high]` (a range that holds
/// no surrogates).
pub(crate) fn edge_intersects(graph: &GrammarGraph, node: Node, low: u32, high: u32) -> bool {
    match node {
        Node::Char { code_point, .. } => (low..=high).contains(&code_point),
        Node::Class { set, .. } => {
            let ranges = graph.classes[set as usize].ranges();
            let index = ranges.partition_point(|&(_, last)| last < low);
            ranges.get(index).is_some_and(|&(first, _)| first <= high)
        }
        Node::Any { .. } => true,
        _ => false,
    }
}
