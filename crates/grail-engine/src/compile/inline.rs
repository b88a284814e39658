//! Which rules to compile inline at their call sites instead of as calls.
//!
//! A call costs the matcher a frame, a caller link and a completion walk; inlining a
//! small non-recursive rule (`ws`, `string`, `digit`) turns it into plain graph
//! structure, so text inside it is matched without any rule bookkeeping. Recursive
//! rules must stay calls (inlining them would not terminate), and size is capped so the
//! graph stays proportional to the grammar.

use grail_grammar::graph::strongly_connected_components;
use grail_grammar::{Grammar, Symbol, SymbolKind};

/// Largest estimated size (in nodes, after inlining its own callees) of a rule that is
/// inlined at its call sites.
pub(crate) const INLINE_MAX_NODES: u64 = 256;

/// A rule this small is inlined wherever it is used.
pub(crate) const INLINE_ALWAYS_NODES: u64 = 16;

/// A larger rule is inlined only while its copies take at most this many nodes in all
/// (once where it is used once, twice where it is at most half this size, ...). A rule
/// kept as a call has its states learned once for every call site (a state's frames are
/// slots), where each inlined copy is learned again: at 4,096, the cold masks of six
/// MaskBench schemas took 15–36% more instructions (docs/performance.md).
pub(crate) const INLINE_TOTAL_NODES: u64 = 256;

/// Deepest chain of rules inlined into one another; deeper calls stay calls, so
/// compiling stays shallow on long chains of tiny rules.
pub(crate) const INLINE_MAX_DEPTH: u32 = 32;

/// About how many nodes a grammar compiles to, from [`rule_sizes`]: the sizes of the
/// rules compiled as rules (inlined ones count inside their callers; a recursive rule,
/// which has no size, as [`UNSIZED_RULE_NODES`]). Room for them is made at once, so the
/// graph is not copied as it grows.
pub(crate) fn node_estimate(inline: &[bool], sizes: &[u64]) -> usize {
    let total = inline
        .iter()
        .zip(sizes)
        .filter(|&(&inline, _)| !inline)
        .map(|(_, &size)| {
            if size == u64::MAX {
                UNSIZED_RULE_NODES
            } else {
                size
            }
        })
        .fold(0, u64::saturating_add);
    usize::try_from(total).unwrap_or(usize::MAX)
}

/// The nodes [`node_estimate`] counts for a rule with no size (a recursive one).
const UNSIZED_RULE_NODES: u64 = 16;

/// Which rules are inlined (`inline[rule]`: the rule is not recursive, small enough to
/// inline, and not one that must stay a call: `calls_only`, indexed by rule, shorter than
/// the rules means false), and the estimated size of each sized rule. `edges` are the
/// grammar's references (`grail_grammar::analysis::references`).
pub(crate) fn rule_sizes(
    grammar: &Grammar,
    calls_only: &[bool],
    edges: &[Vec<u32>],
) -> (Vec<bool>, Vec<u64>) {
    let components = strongly_connected_components(edges);
    let uses = rule_uses(grammar);
    let mut inline = vec![false; grammar.rules.len()];
    let mut size = vec![u64::MAX; grammar.rules.len()];
    // Tarjan's algorithm yields components callees-first, so a rule's callees are sized
    // before it.
    for component in components {
        let [rule] = component.as_slice() else {
            continue;
        };
        let rule = *rule as usize;
        if edges[rule].contains(&(rule as u32)) || calls_only.get(rule).copied().unwrap_or(false) {
            continue;
        }
        let estimate: u64 = grammar.rules[rule]
            .alternatives
            .iter()
            .flatten()
            .map(|symbol| symbol_size(symbol, &inline, &size))
            .fold(1, u64::saturating_add);
        size[rule] = estimate;
        inline[rule] = estimate <= INLINE_MAX_NODES
            && (estimate <= INLINE_ALWAYS_NODES
                || estimate.saturating_mul(uses[rule]) <= INLINE_TOTAL_NODES);
    }
    (inline, size)
}

/// How many times each rule is written in the grammar.
fn rule_uses(grammar: &Grammar) -> Vec<u64> {
    fn count(symbol: &Symbol, uses: &mut [u64]) {
        grail_syntax::stack::deep(|| match &symbol.kind {
            SymbolKind::Rule(rule) => uses[rule.index()] += 1,
            SymbolKind::Group(alternatives) => {
                for inner in alternatives.iter().flatten() {
                    count(inner, uses);
                }
            }
            SymbolKind::Repeat(repetition) => count(&repetition.symbol, uses),
            _ => {}
        })
    }
    let mut uses = vec![0; grammar.rules.len()];
    for symbol in grammar
        .rules
        .iter()
        .flat_map(|rule| rule.alternatives.iter().flatten())
    {
        count(symbol, &mut uses);
    }
    uses
}

/// Estimated node count of a symbol, with inlinable callees counted at their size.
fn symbol_size(symbol: &Symbol, inline: &[bool], size: &[u64]) -> u64 {
    grail_syntax::stack::deep(|| match &symbol.kind {
        SymbolKind::Literal(text) => text.chars().count() as u64,
        SymbolKind::Chars(_) | SymbolKind::Any | SymbolKind::Token(_) => 1,
        SymbolKind::Rule(rule) if inline[rule.index()] => size[rule.index()],
        SymbolKind::Rule(_) => 1,
        SymbolKind::Group(alternatives) => alternatives
            .iter()
            .flatten()
            .map(|symbol| symbol_size(symbol, inline, size))
            .fold(1, u64::saturating_add),
        SymbolKind::Repeat(repetition) => {
            let copies = u64::from(repetition.max.unwrap_or(repetition.min).max(1));
            symbol_size(&repetition.symbol, inline, size)
                .saturating_add(1)
                .saturating_mul(copies)
        }
    })
}
