//! Printing the IR back to GBNF, in the canonical format (what `grail_syntax::format`
//! writes for the same rules: the formatter leaves printed text as it is). The text is
//! written straight from the IR, without building a syntax tree first.

use std::fmt::Write as _;

use grail_syntax::escape::{write_class_ranges, write_literal_text};
use grail_syntax::format::{INDENT, LINE_WIDTH};

use crate::charset::MAX_CODE_POINT;
use crate::ir::{Grammar, Repetition, Sequence, Symbol, SymbolKind, TokenReference};

/// Prints the grammar as GBNF that llama.cpp and Grail read back to the same IR.
///
/// Empty alternatives are printed first (`x ::= | "a"`), and a rule whose alternatives
/// are all empty ends in `""`: a line ending in `::=` or `|` would continue the rule onto
/// the next line. A rule wider than [`LINE_WIDTH`] with several alternatives has one
/// alternative per line.
pub fn print_grammar(grammar: &Grammar) -> String {
    let mut out = String::with_capacity(grammar.rules.len() * 64);
    // One rule's alternatives on one line, to measure before choosing the layout.
    let mut flat = String::new();
    for rule in &grammar.rules {
        out.push_str(&rule.name);
        out.push_str(" ::=");
        let ordered = empties_first(&rule.alternatives);
        // A rule ending in an empty alternative would continue onto the next line (after
        // `::=` or `|`, a line break does not end a rule): its last one is spelled `""`.
        let all_empty = rule.alternatives.iter().all(Vec::is_empty);
        flat.clear();
        write_alternatives(grammar, &ordered, all_empty, &mut flat);
        let width = rule.name.len() + 5 + flat.chars().count();
        if ordered.len() < 2 || width <= LINE_WIDTH {
            if !flat.is_empty() {
                out.push(' ');
                out.push_str(&flat);
            }
        } else {
            for (index, sequence) in ordered.iter().enumerate() {
                out.push('\n');
                out.extend(std::iter::repeat_n(' ', INDENT));
                let last = index + 1 == ordered.len();
                write_sequence(grammar, sequence, last && all_empty, &mut out);
                if !last {
                    out.push_str(" |");
                }
            }
        }
        out.push('\n');
    }
    out
}

/// Prints one symbol as GBNF (rule references by name).
pub fn print_symbol(grammar: &Grammar, symbol: &Symbol) -> String {
    let mut out = String::new();
    write_symbol(grammar, symbol, &mut out);
    out
}

/// The alternatives with the empty ones first (an empty alternative reads only there).
fn empties_first(sequences: &[Sequence]) -> Vec<&Sequence> {
    let mut ordered: Vec<&Sequence> = sequences
        .iter()
        .filter(|sequence| sequence.is_empty())
        .collect();
    ordered.extend(sequences.iter().filter(|sequence| !sequence.is_empty()));
    ordered
}

/// `a | b | c`; `| b` when the first is empty. `last_as_quotes`: the last alternative is
/// empty and written `""`.
fn write_alternatives(
    grammar: &Grammar,
    ordered: &[&Sequence],
    last_as_quotes: bool,
    out: &mut String,
) {
    // Whether an alternative prints as nothing at all.
    let prints_nothing =
        |index: usize| ordered[index].is_empty() && !(last_as_quotes && index + 1 == ordered.len());
    for (index, sequence) in ordered.iter().enumerate() {
        if index == 1 && prints_nothing(0) {
            out.push('|');
        } else if index > 0 {
            out.push_str(" |");
        }
        if index > 0 && !prints_nothing(index) {
            out.push(' ');
        }
        let quotes = last_as_quotes && index + 1 == ordered.len();
        write_sequence(grammar, sequence, quotes, out);
    }
}

/// The symbols separated by spaces; `""` for an empty sequence when `quotes`.
fn write_sequence(grammar: &Grammar, sequence: &Sequence, quotes: bool, out: &mut String) {
    if sequence.is_empty() && quotes {
        out.push_str("\"\"");
    }
    for (index, symbol) in sequence.iter().enumerate() {
        if index > 0 {
            out.push(' ');
        }
        write_symbol(grammar, symbol, out);
    }
}

fn write_symbol(grammar: &Grammar, symbol: &Symbol, out: &mut String) {
    grail_syntax::stack::deep(|| match &symbol.kind {
        SymbolKind::Literal(text) => write_literal_text(out, text),
        // `[]` and `[^]` mean the empty string in GBNF, so sets without ranges print as
        // "no character" and "any character".
        SymbolKind::Chars(set) if set.ranges().is_empty() && set.is_negated() => out.push('.'),
        SymbolKind::Chars(set) if set.ranges().is_empty() => {
            write_class_ranges(out, true, &[(0, MAX_CODE_POINT)])
        }
        SymbolKind::Chars(set) => write_class_ranges(out, set.is_negated(), set.ranges()),
        SymbolKind::Any => out.push('.'),
        SymbolKind::Rule(id) => out.push_str(&grammar.rule(*id).name),
        SymbolKind::Group(sequences) => {
            out.push('(');
            write_alternatives(grammar, &empties_first(sequences), false, out);
            out.push(')');
        }
        SymbolKind::Token(token) => {
            if token.negated {
                out.push('!');
            }
            match &token.reference {
                TokenReference::Id(id) => {
                    // Writing to a `String` cannot fail.
                    let _ = write!(out, "<[{id}]>");
                }
                TokenReference::Text(text) => out.push_str(text),
            }
        }
        SymbolKind::Repeat(repetition) => write_repetition(grammar, repetition, out),
    })
}

fn write_repetition(grammar: &Grammar, repetition: &Repetition, out: &mut String) {
    match &repetition.symbol.kind {
        // Quantifiers stack in GBNF, except after `{0}`, which leaves nothing to repeat.
        SymbolKind::Repeat(inner) if inner.max == Some(0) => {
            out.push('(');
            write_symbol(grammar, &repetition.symbol, out);
            out.push(')');
        }
        _ => write_symbol(grammar, &repetition.symbol, out),
    }
    // Writing to a `String` cannot fail.
    match (repetition.min, repetition.max) {
        (0, None) => out.push('*'),
        (1, None) => out.push('+'),
        (0, Some(1)) => out.push('?'),
        (min, Some(max)) if min == max => {
            let _ = write!(out, "{{{max}}}");
        }
        (min, Some(max)) => {
            let _ = write!(out, "{{{min},{max}}}");
        }
        (min, None) => {
            let _ = write!(out, "{{{min},}}");
        }
    }
}
