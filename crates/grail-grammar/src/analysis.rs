//! Analyses over the IR: references, nullability, productivity, left recursion, reachability.
//!
//! Every analysis is a least fixpoint computed one strongly connected component at a
//! time, in dependency order, so its cost stays near-linear in the grammar's size.

use std::collections::VecDeque;

use crate::graph::{cycle_through, strongly_connected_components};
use crate::ir::{Grammar, Rule, RuleId, Sequence, Symbol, SymbolKind};

/// The rules each rule refers to, anywhere in its body, without duplicates.
pub fn references(grammar: &Grammar) -> Vec<Vec<u32>> {
    grammar
        .rules
        .iter()
        .map(|rule| {
            let mut referenced = Vec::new();
            for sequence in &rule.alternatives {
                for symbol in sequence {
                    collect_references(symbol, &mut referenced);
                }
            }
            referenced.sort_unstable();
            referenced.dedup();
            referenced
        })
        .collect()
}

/// Appends the rules `symbol` refers to (with repeats) to `out`.
pub(crate) fn collect_references(symbol: &Symbol, out: &mut Vec<u32>) {
    match &symbol.kind {
        SymbolKind::Rule(id) => out.push(id.0),
        // Only what nests recurses, so only that checks the stack (most symbols nest
        // nothing).
        SymbolKind::Group(sequences) => grail_syntax::stack::deep(|| {
            for sequence in sequences {
                for inner in sequence {
                    collect_references(inner, out);
                }
            }
        }),
        SymbolKind::Repeat(repetition) => {
            grail_syntax::stack::deep(|| collect_references(&repetition.symbol, out))
        }
        SymbolKind::Literal(_) | SymbolKind::Chars(_) | SymbolKind::Any | SymbolKind::Token(_) => {}
    }
}

/// For each rule, whether it matches the empty string.
pub fn nullable_rules(grammar: &Grammar, references: &[Vec<u32>]) -> Vec<bool> {
    least_fixpoint(grammar, references, |rule, nullable| {
        rule.alternatives
            .iter()
            .any(|sequence| sequence_is_nullable(sequence, nullable))
    })
}

/// Whether every symbol of `sequence` matches the empty string, given per-rule answers.
pub fn sequence_is_nullable(sequence: &Sequence, nullable: &[bool]) -> bool {
    sequence
        .iter()
        .all(|symbol| symbol_is_nullable(symbol, nullable))
}

/// Whether `symbol` matches the empty string, given per-rule answers.
pub fn symbol_is_nullable(symbol: &Symbol, nullable: &[bool]) -> bool {
    grail_syntax::stack::deep(|| match &symbol.kind {
        SymbolKind::Literal(text) => text.is_empty(),
        SymbolKind::Chars(_) | SymbolKind::Any | SymbolKind::Token(_) => false,
        SymbolKind::Rule(id) => nullable[id.index()],
        SymbolKind::Group(sequences) => sequences
            .iter()
            .any(|sequence| sequence_is_nullable(sequence, nullable)),
        SymbolKind::Repeat(repetition) => {
            repetition.min == 0 || symbol_is_nullable(&repetition.symbol, nullable)
        }
    })
}

/// For each rule, whether it matches at least one finite string. With `structural`,
/// character sets that no text can satisfy count as matchable, so only rules that
/// recurse forever come out false.
pub fn productive_rules(grammar: &Grammar, references: &[Vec<u32>], structural: bool) -> Vec<bool> {
    least_fixpoint(grammar, references, |rule, productive| {
        rule.alternatives.iter().any(|sequence| {
            sequence
                .iter()
                .all(|symbol| symbol_is_productive(symbol, productive, structural))
        })
    })
}

fn symbol_is_productive(symbol: &Symbol, productive: &[bool], structural: bool) -> bool {
    grail_syntax::stack::deep(|| match &symbol.kind {
        SymbolKind::Literal(_) | SymbolKind::Any | SymbolKind::Token(_) => true,
        SymbolKind::Chars(set) => structural || !set.matches_nothing(),
        SymbolKind::Rule(id) => productive[id.index()],
        SymbolKind::Group(sequences) => sequences.iter().any(|sequence| {
            sequence
                .iter()
                .all(|inner| symbol_is_productive(inner, productive, structural))
        }),
        SymbolKind::Repeat(repetition) => {
            repetition.min == 0 || symbol_is_productive(&repetition.symbol, productive, structural)
        }
    })
}

/// Computes a monotone per-rule property from `false` upwards, one strongly connected
/// component at a time in dependency order.
fn least_fixpoint(
    grammar: &Grammar,
    references: &[Vec<u32>],
    holds: impl Fn(&Rule, &[bool]) -> bool,
) -> Vec<bool> {
    let mut values = vec![false; grammar.rules.len()];
    for component in strongly_connected_components(references) {
        loop {
            let mut changed = false;
            for &rule in &component {
                if !values[rule as usize] && holds(&grammar.rules[rule as usize], &values) {
                    values[rule as usize] = true;
                    changed = true;
                }
            }
            if !changed || component.len() == 1 {
                break;
            }
        }
    }
    values
}

/// A left-recursive cycle: rules from the first back to the first, each reachable from
/// the one before without consuming input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftCycle {
    /// The rules of the cycle, the first repeated at the end.
    pub rules: Vec<RuleId>,
}

/// The left-recursive cycles of the grammar, one per strongly connected component of the
/// "can start with" graph, starting at the component's first rule in source order.
pub fn left_recursive_cycles(grammar: &Grammar, nullable: &[bool]) -> Vec<LeftCycle> {
    let left_edges: Vec<Vec<u32>> = grammar
        .rules
        .iter()
        .map(|rule| {
            let mut edges = Vec::new();
            for sequence in &rule.alternatives {
                collect_left_references(sequence, nullable, &mut edges);
            }
            edges.sort_unstable();
            edges.dedup();
            edges
        })
        .collect();
    let mut cycles: Vec<LeftCycle> = strongly_connected_components(&left_edges)
        .into_iter()
        .filter(|component| {
            component.len() > 1 || left_edges[component[0] as usize].contains(&component[0])
        })
        .map(|component| {
            let start = *component.iter().min().expect("non-empty component");
            LeftCycle {
                rules: cycle_through(&left_edges, &component, start)
                    .into_iter()
                    .map(RuleId)
                    .collect(),
            }
        })
        .collect();
    cycles.sort_by_key(|cycle| cycle.rules[0]);
    cycles
}

fn collect_left_references(sequence: &Sequence, nullable: &[bool], out: &mut Vec<u32>) {
    for symbol in sequence {
        collect_left_references_of_symbol(symbol, nullable, out);
        if !symbol_is_nullable(symbol, nullable) {
            break;
        }
    }
}

fn collect_left_references_of_symbol(symbol: &Symbol, nullable: &[bool], out: &mut Vec<u32>) {
    grail_syntax::stack::deep(|| match &symbol.kind {
        SymbolKind::Rule(id) => out.push(id.0),
        SymbolKind::Group(sequences) => {
            for sequence in sequences {
                collect_left_references(sequence, nullable, out);
            }
        }
        SymbolKind::Repeat(repetition) if repetition.max != Some(0) => {
            collect_left_references_of_symbol(&repetition.symbol, nullable, out)
        }
        _ => {}
    })
}

/// For each rule, whether it is reachable from the root.
pub fn reachable_rules(grammar: &Grammar, references: &[Vec<u32>]) -> Vec<bool> {
    let mut reachable = vec![false; grammar.rules.len()];
    let mut queue = VecDeque::from([grammar.root.0]);
    reachable[grammar.root.index()] = true;
    while let Some(rule) = queue.pop_front() {
        for &next in &references[rule as usize] {
            if !reachable[next as usize] {
                reachable[next as usize] = true;
                queue.push_back(next);
            }
        }
    }
    reachable
}
