//! Lints over the IR: shapes that are valid but slow or suspicious.

use grail_syntax::Span;

use crate::finding::{Finding, FindingKind};
use crate::ir::{Grammar, Sequence, Symbol, SymbolKind};
use crate::print::print_symbol;

/// Shortest run of identical optional items reported as a chain.
pub const OPTIONAL_CHAIN_MINIMUM: usize = 3;

/// Finds runs like `x? x? x?`, which llama.cpp's README warns make sampling slow.
pub fn optional_chains(grammar: &Grammar) -> Vec<Finding> {
    let mut findings = Vec::new();
    for rule in &grammar.rules {
        for sequence in &rule.alternatives {
            optional_chains_in(grammar, sequence, &mut findings);
        }
    }
    findings
}

fn optional_chains_in(grammar: &Grammar, sequence: &Sequence, findings: &mut Vec<Finding>) {
    grail_syntax::stack::deep(|| {
        let mut run: Vec<(String, Span)> = Vec::new();
        let flush = |run: &mut Vec<(String, Span)>, findings: &mut Vec<Finding>| {
            if run.len() >= OPTIONAL_CHAIN_MINIMUM {
                let span = run[0].1.to(run[run.len() - 1].1);
                findings.push(Finding::new(
                    FindingKind::OptionalChain {
                        item: run[0].0.clone(),
                        count: run.len(),
                    },
                    span,
                ));
            }
            run.clear();
        };
        for symbol in sequence {
            match optional_item(grammar, symbol) {
                Some(item) if run.last().is_some_and(|(previous, _)| *previous == item) => {
                    run.push((item, symbol.span))
                }
                Some(item) => {
                    flush(&mut run, findings);
                    run.push((item, symbol.span));
                }
                None => flush(&mut run, findings),
            }
            for_each_nested_sequence(symbol, |nested| {
                optional_chains_in(grammar, nested, findings)
            });
        }
        flush(&mut run, findings);
    })
}

/// Items nested deeper than this are not compared for chains (printing each would make
/// the lint quadratic on the deeply nested groups JSON Schema converters write).
const OPTIONAL_ITEM_MAX_DEPTH: usize = 8;

/// The printed item of `x?`, or `None` for anything else (or anything deeply nested).
fn optional_item(grammar: &Grammar, symbol: &Symbol) -> Option<String> {
    match &symbol.kind {
        SymbolKind::Repeat(repetition)
            if repetition.min == 0
                && repetition.max == Some(1)
                && is_shallow(&repetition.symbol, OPTIONAL_ITEM_MAX_DEPTH) =>
        {
            Some(print_symbol(grammar, &repetition.symbol))
        }
        _ => None,
    }
}

/// True when the symbol nests at most `depth` groups or repetitions.
fn is_shallow(symbol: &Symbol, depth: usize) -> bool {
    match &symbol.kind {
        _ if depth == 0 => matches!(
            symbol.kind,
            SymbolKind::Literal(_)
                | SymbolKind::Chars(_)
                | SymbolKind::Any
                | SymbolKind::Rule(_)
                | SymbolKind::Token(_)
        ),
        SymbolKind::Group(sequences) => sequences
            .iter()
            .flatten()
            .all(|inner| is_shallow(inner, depth - 1)),
        SymbolKind::Repeat(repetition) => is_shallow(&repetition.symbol, depth - 1),
        _ => true,
    }
}

fn for_each_nested_sequence(symbol: &Symbol, mut visit: impl FnMut(&Sequence)) {
    let mut current = symbol;
    loop {
        match &current.kind {
            SymbolKind::Group(sequences) => {
                sequences.iter().for_each(&mut visit);
                return;
            }
            SymbolKind::Repeat(repetition) => current = &repetition.symbol,
            _ => return,
        }
    }
}
