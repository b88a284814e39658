//! Bounded repetitions read as loops by token masks.
//!
//! `X{0,n}` compiles to `n` nested optional copies of `X` (and JSON Schema converters
//! write `maxLength` as the same nesting by hand: `char (char (char)?)?`). Each copy is
//! its own parse state, so a mask inside a long string of such copies was a cold walk
//! at every position, learning a new state for every byte of every token.
//!
//! But a token of `b` bytes can enter at most `b` more copies (each copy consumes at
//! least a byte, and a copy that consumes none can be skipped). So where at least that
//! many copies remain, the bound cannot be reached inside the next token, and the next
//! token's mask is the mask of the same items in an unbounded loop `X*` followed by the
//! same continuation. The compiler builds that loop (the *twin*, `X{m} X*` for
//! `X{m,n}`) beside the copies; masks move items from such copies to the twin's matching
//! nodes. Every position far from the bound then has one state and one mask: learned
//! once, then a cache hit. Near the bound, a repetition of one ASCII class that nothing
//! after it can continue (whitespace before a value) still takes the twin's mask, less
//! the tokens whose run of the class is longer than the copies left. Real steps
//! (accepting tokens and text) never use the twin.

use std::sync::Arc;

use grail_grammar::{Symbol, SymbolKind};
use grail_vocab::VocabularyIndex;
use rustc_hash::FxHashSet;

use crate::compile::{GrammarGraph, Node, NodeId};
use crate::matcher::{Item, Matcher};
use crate::utf8::Partial;
use grail_grammar::ScalarSet;

/// Repetitions with fewer optional copies than this get no twin (a token rarely stays
/// that far from their bound).
pub(crate) const TWIN_MIN_COPIES: u32 = 8;

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

/// Most paths through a copy that [`json_unit_starts`] reads.
const MAX_UNIT_PATHS: usize = 64;

/// When every way through one copy (nodes `first..end`, entered at `entry`; only
/// characters and splits) spells exactly one JSON string character as `grail-vocab`'s
/// `json_units` counts them (a character other than `"`, `\` and controls; `\` and one
/// of `"\/bfnrt`; `\u` and four hex digits that are not a high surrogate; or a high then
/// a low surrogate escape): the offsets of the copy's first consuming nodes, as bits.
pub(crate) fn json_unit_starts(
    nodes: &[Node],
    split_targets: &[NodeId],
    classes: &[ScalarSet],
    first: usize,
    end: usize,
    entry: NodeId,
) -> Option<u64> {
    if end - first > 64 {
        return None;
    }
    let inside = |node: NodeId| (first..end).contains(&(node as usize));
    // Every path as the sets of characters it consumes, depth first.
    let mut paths: Vec<Vec<ScalarSet>> = Vec::new();
    let mut starts = 0u64;
    let mut stack: Vec<(NodeId, Vec<ScalarSet>)> = vec![(entry, Vec::new())];
    while let Some((node, path)) = stack.pop() {
        if !inside(node) {
            paths.push(path);
            if paths.len() > MAX_UNIT_PATHS {
                return None;
            }
            continue;
        }
        if path.len() > 12 || stack.len() > MAX_UNIT_PATHS {
            return None;
        }
        let (set, next) = match nodes[node as usize] {
            Node::Split {
                first: targets,
                count,
            } => {
                for &target in &split_targets[targets as usize..(targets + count) as usize] {
                    stack.push((target, path.clone()));
                }
                continue;
            }
            Node::Char { code_point, next } => {
                (ScalarSet::from_ranges([(code_point, code_point)]), next)
            }
            Node::Class { set, next } => (classes[set as usize].clone(), next),
            Node::Any { next } => (ScalarSet::all(), next),
            _ => return None,
        };
        if path.is_empty() {
            starts |= 1 << (node as usize - first);
        }
        let mut path = path;
        path.push(set);
        stack.push((next, path));
    }
    paths
        .iter()
        .all(|path| is_one_json_unit(path))
        .then_some(starts)
}

/// True when every string the sets spell (one character from each) is one JSON string
/// character (see [`json_unit_starts`]).
fn is_one_json_unit(path: &[ScalarSet]) -> bool {
    let set_of =
        |characters: &str| ScalarSet::from_ranges(characters.chars().map(|c| (c as u32, c as u32)));
    let within = |set: &ScalarSet, allowed: &str| set.difference(&set_of(allowed)).is_empty();
    let meets = |set: &ScalarSet, some: &str| !set.intersection(&set_of(some)).is_empty();
    let only =
        |set: &ScalarSet, character: char| set.ranges() == [(character as u32, character as u32)];
    const HEX: &str = "0123456789abcdefABCDEF";
    let hex = |sets: &[ScalarSet]| sets.iter().all(|set| within(set, HEX));
    match path {
        [set] => {
            let not_itself =
                ScalarSet::from_ranges([(0, 0x1F), ('"' as u32, '"' as u32)]).union(&set_of("\\"));
            !set.is_empty() && set.intersection(&not_itself).is_empty()
        }
        [backslash, escaped] => only(backslash, '\\') && within(escaped, "\"\\/bfnrt"),
        // `\uXXXX`, never the high half of a surrogate pair (that reading would go on).
        [backslash, u, digits @ ..] if digits.len() == 4 => {
            only(backslash, '\\')
                && only(u, 'u')
                && hex(digits)
                && !(meets(&digits[0], "Dd") && meets(&digits[1], "89ABab"))
        }
        [backslash, u, h0, h1, h2, h3, backslash2, u2, d, low, l2, l3] => {
            only(backslash, '\\')
                && only(u, 'u')
                && within(h0, "Dd")
                && within(h1, "89ABab")
                && hex(&[h2.clone(), h3.clone()])
                && only(backslash2, '\\')
                && only(u2, 'u')
                && within(d, "Dd")
                && within(low, "CDEFcdef")
                && hex(&[l2.clone(), l3.clone()])
        }
        _ => false,
    }
}

/// `(X (X (X)?)?)?` written out (as JSON Schema converters do for `maxLength`): the
/// repeated symbol and how many levels, when `symbol` is such a chain of at least two.
/// `not_chains` remembers the links (by address) of chains that failed, so compiling a
/// long chain that fails deep inside stays linear: every link down to the failure fails
/// for the same reason.
pub(crate) fn optional_chain<'s>(
    symbol: &'s Symbol,
    not_chains: &mut FxHashSet<usize>,
) -> Option<(&'s Symbol, u32)> {
    // Most repetitions are no chain at their first link (`X*`, a lone `X?`): seen at
    // once, without the memo.
    if !opens_a_chain(symbol) {
        return None;
    }
    let address = |symbol: &Symbol| symbol as *const Symbol as usize;
    if not_chains.contains(&address(symbol)) {
        return None;
    }
    let mut links: Vec<&Symbol> = Vec::new();
    let found = chain_links(symbol, &mut links);
    if found.is_none() {
        not_chains.extend(links.iter().map(|&link| address(link)));
    }
    found
}

/// Whether `symbol` is `(X Y)?` with `Y` an optional: the first two links of a chain.
fn opens_a_chain(symbol: &Symbol) -> bool {
    let is_optional = |symbol: &Symbol| {
        matches!(&symbol.kind, SymbolKind::Repeat(repetition)
            if repetition.min == 0 && repetition.max == Some(1))
    };
    let SymbolKind::Repeat(repetition) = &symbol.kind else {
        return false;
    };
    if !is_optional(symbol) {
        return false;
    }
    match &repetition.symbol.kind {
        SymbolKind::Group(alternatives) => match alternatives.as_slice() {
            [sequence] => matches!(sequence.as_slice(), [_, rest] if is_optional(rest)),
            _ => false,
        },
        _ => false,
    }
}

/// The chain below `symbol` (see [`optional_chain`]), pushing each link visited.
fn chain_links<'s>(symbol: &'s Symbol, links: &mut Vec<&'s Symbol>) -> Option<(&'s Symbol, u32)> {
    let mut depth = 0;
    let mut repeated: Option<&Symbol> = None;
    let mut link = symbol;
    loop {
        links.push(link);
        let SymbolKind::Repeat(repetition) = &link.kind else {
            return None;
        };
        if repetition.min != 0 || repetition.max != Some(1) {
            return None;
        }
        let (first, rest) = match &repetition.symbol.kind {
            SymbolKind::Group(alternatives) => match alternatives.as_slice() {
                [sequence] => match sequence.as_slice() {
                    [only] => (only, None),
                    [first, rest] => (first, Some(rest)),
                    _ => (&repetition.symbol, None),
                },
                _ => (&repetition.symbol, None),
            },
            _ => (&repetition.symbol, None),
        };
        match repeated {
            None => repeated = Some(first),
            Some(known) if same_shape(known, first) => {}
            Some(_) => return None,
        }
        depth += 1;
        match rest {
            Some(rest) => link = rest,
            None => break,
        }
    }
    (depth >= 2).then(|| (repeated.expect("a chain has a first link"), depth))
}

/// The repeated symbol and bounds of a bounded repetition (`X{m,n}`, or a chain of
/// nested optionals: `X{0,depth}`).
pub(crate) fn bounded_repetition_of<'s>(
    symbol: &'s Symbol,
    not_chains: &mut FxHashSet<usize>,
) -> Option<(&'s Symbol, u32, u32)> {
    if let Some((repeated, depth)) = optional_chain(symbol, not_chains) {
        return Some((repeated, 0, depth));
    }
    match &symbol.kind {
        SymbolKind::Repeat(repetition) => repetition
            .max
            .map(|max| (&repetition.symbol, repetition.min, max)),
        _ => None,
    }
}

/// True when two symbols match the same way (their source locations aside).
pub(crate) fn same_shape(a: &Symbol, b: &Symbol) -> bool {
    grail_syntax::stack::deep(|| match (&a.kind, &b.kind) {
        (SymbolKind::Group(left), SymbolKind::Group(right)) => {
            left.len() == right.len()
                && left.iter().zip(right).all(|(left, right)| {
                    left.len() == right.len()
                        && left.iter().zip(right).all(|(a, b)| same_shape(a, b))
                })
        }
        (SymbolKind::Repeat(left), SymbolKind::Repeat(right)) => {
            left.min == right.min
                && left.max == right.max
                && same_shape(&left.symbol, &right.symbol)
        }
        (left, right) => left == right,
    })
}

/// True when two nodes of copies of one symbol are the same but for where they lead.
pub(crate) fn same_node_shape(a: Node, b: Node) -> bool {
    match (a, b) {
        (Node::Char { code_point: x, .. }, Node::Char { code_point: y, .. }) => x == y,
        (Node::Class { set: x, .. }, Node::Class { set: y, .. }) => x == y,
        (Node::Any { .. }, Node::Any { .. }) => true,
        (Node::Split { count: x, .. }, Node::Split { count: y, .. }) => x == y,
        _ => false,
    }
}

impl Matcher {
    /// For each copy with a twin, the copies that must remain for a mask to read it as
    /// the twin: the longest run of its class a token starts with, or the longest token.
    fn twin_bounds(&mut self, index: &VocabularyIndex) -> Arc<[u32]> {
        if let Some(bounds) = &self.twin_bounds {
            return bounds.clone();
        }
        // Copies are many (every copy of every bounded repetition) and their classes
        // few: each class is asked of the vocabulary once (its memo takes a lock).
        let mut runs: Vec<(u128, u32)> = Vec::new();
        let mut run_of = |bytes: u128| match runs.iter().find(|(class, _)| *class == bytes) {
            Some(&(_, run)) => run,
            None => {
                let run = index.longest_run(bytes);
                runs.push((bytes, run));
                run
            }
        };
        let mut json_units: Option<u32> = None;
        let bounds: Arc<[u32]> = self
            .graph()
            .counted
            .iter()
            .map(|copy| match (copy.class_bytes, copy.json_char_starts) {
                (Some(bytes), _) => run_of(bytes),
                (None, Some(_)) => *json_units.get_or_insert_with(|| index.longest_json_units()),
                (None, None) => index.longest_text(),
            })
            .collect();
        self.share_twin_bounds(&bounds);
        self.twin_bounds = Some(bounds.clone());
        bounds
    }
}

/// How a mask may use twin loops (see [`Matcher::twin_plan`]).
pub(crate) struct TwinPlan {
    /// The current items with those in far copies moved to the twin.
    pub(crate) items: Vec<Item>,
    /// When the copies are within a token's reach of the bound: the tokens of the twin's
    /// mask that are too long (to remove from it).
    pub(crate) too_long: Option<TooLong>,
}

/// The tokens too long for the copies left near a bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TooLong {
    /// Those starting with more than `run` bytes of the byte class (as
    /// [`grail_vocab::byte_bit`] bits).
    Run { class: u128, run: u32 },
    /// Those starting with more than this many JSON string characters (see
    /// [`grail_vocab::VocabularyIndex::json_units`]).
    JsonUnits(u32),
    /// Those ending the string after fewer than this many JSON string characters.
    JsonStringEndsWithin(u32),
}

/// The bytes that begin a JSON string character (as [`grail_vocab::byte_bit`] bits, bit
/// 127 for the bytes past ASCII): everything from the space on, but `"`.
const JSON_UNIT_START_ASCII: u128 = !0u128 << 32 & !(1u128 << b'"');

impl Matcher {
    /// For a mask: whether some current items sit in copies of a bounded repetition whose
    /// twin gives the mask (see the module doc). Far from the bound, the twin's mask is
    /// the mask. Near it, for a repetition of one ASCII class where nothing else in the
    /// step takes a byte of that class (whitespace before a value), the twin's mask
    /// minus the tokens that start with more bytes of the class than copies remain: a
    /// token whose run is longer would need more copies, and nothing else could take
    /// the rest of its run.
    pub(crate) fn twin_plan(&mut self, index: &VocabularyIndex) -> Option<TwinPlan> {
        if self.graph().counted.is_empty() {
            return None;
        }
        let bounds = self.twin_bounds(index);
        let graph = self.graph();
        let items = self.current_items();
        let copy_of =
            |node: NodeId| counted_copy(graph, node).map(|(found, copy)| (copy, bounds[found]));
        let mut moved: Option<Vec<Item>> = None;
        let mut is_moved = vec![false; items.len()];
        let mut near: Option<TooLong> = None;
        let mut near_consistent = true;
        let mut far = false;
        for (position, item) in items.iter().enumerate() {
            let Some((copy, bound)) = copy_of(item.node) else {
                continue;
            };
            if copy.remaining >= bound && !copy.minimum {
                far = true;
            } else {
                let at_character_start = |starts: u64| {
                    item.partial.is_none() && starts >> (item.node - copy.first) & 1 == 1
                };
                let wanted = match (copy.class_bytes, copy.json_char_starts) {
                    (None, Some(starts)) if copy.minimum && at_character_start(starts) => {
                        TooLong::JsonStringEndsWithin(copy.remaining)
                    }
                    _ if copy.minimum => continue,
                    (Some(bytes), _) if bytes >> 127 == 0 && copy.len == 1 => TooLong::Run {
                        class: bytes,
                        run: copy.remaining,
                    },
                    // At a character's start only (the counts read from one).
                    (None, Some(starts)) if at_character_start(starts) => {
                        TooLong::JsonUnits(copy.remaining)
                    }
                    _ => continue,
                };
                near_consistent &= near.is_none_or(|known| known == wanted);
                near = Some(wanted);
            }
            let moved = moved.get_or_insert_with(|| items.to_vec());
            moved[position].node = copy.twin + (item.node - copy.first);
            is_moved[position] = true;
        }
        let mut moved = moved?;
        let too_long = match near {
            None => None,
            Some(too_long) => {
                // The bytes the repetition goes on with: no other item may take one (nor
                // match a token by id, which the correction knows nothing of), so the
                // repetition's copies alone decide how many of them a token may start
                // with.
                let (class, takes_past_ascii) = match too_long {
                    TooLong::Run { class, .. } => (class, false),
                    TooLong::JsonUnits(_) | TooLong::JsonStringEndsWithin(_) => {
                        (JSON_UNIT_START_ASCII, true)
                    }
                };
                let others_refuse = items.iter().zip(&is_moved).all(|(item, &moved)| {
                    moved || refuses(graph, item.node, item.partial, class, takes_past_ascii)
                });
                if far || !near_consistent || !others_refuse || class & 1 != 0 {
                    return None;
                }
                Some(too_long)
            }
        };
        moved.sort_unstable_by_key(|item| (item.node, item.partial.to_bits(), item.frame));
        moved.dedup_by_key(|item| (item.node, item.partial.to_bits(), item.frame));
        Some(TwinPlan {
            items: moved,
            too_long,
        })
    }
}

/// The nodes (as bits of 64-bit words) of the copies that walks may count through (see
/// [`counted_twin_of`]): optional copies of one node, a class of ASCII bytes other than
/// NUL. Empty when there are none.
pub(crate) fn countable_nodes(counted: &[CountedCopy], node_count: usize) -> Vec<u64> {
    let countable = |copy: &&CountedCopy| {
        !copy.minimum
            && copy.len == 1
            && copy
                .class_bytes
                .is_some_and(|class| class >> 127 == 0 && class & 1 == 0)
    };
    if !counted.iter().any(|copy| countable(&copy)) {
        return Vec::new();
    }
    let mut bits = vec![0u64; node_count.div_ceil(64)];
    for copy in counted.iter().filter(countable) {
        bits[copy.first as usize / 64] |= 1 << (copy.first % 64);
    }
    bits
}

/// The copy (and its index in `graph.counted`) that `node` belongs to, if any.
fn counted_copy(graph: &GrammarGraph, node: NodeId) -> Option<(usize, &CountedCopy)> {
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
fn refuses(
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
