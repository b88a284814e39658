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

use grail_grammar::{ScalarSet, Symbol, SymbolKind};
use rustc_hash::FxHashSet;

use crate::graph::counted::CountedCopy;
use crate::graph::{Node, NodeId};

/// Repetitions with fewer optional copies than this get no twin (a token rarely stays
/// that far from their bound).
pub(crate) const TWIN_MIN_COPIES: u32 = 8;

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
