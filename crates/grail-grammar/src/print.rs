//! Printing the IR back to GBNF, through the syntax tree and its canonical printer.

use grail_syntax::ast::{
    self, Alternatives, CharClass, ClassItem, Name, Quantifier, QuantifierStyle, Term, TermKind,
    TokenElement, TokenRef,
};
use grail_syntax::{Span, print_rules};

use crate::ir::{Grammar, Sequence, Symbol, SymbolKind, TokenReference};

/// Prints the grammar as GBNF that llama.cpp and Grail read back to the same IR.
///
/// Empty alternatives are printed first (`x ::= | "a"`), and a rule whose alternatives
/// are all empty ends in `""`: a line ending in `::=` or `|` would continue the rule onto
/// the next line.
pub fn print_grammar(grammar: &Grammar) -> String {
    let rules: Vec<ast::Rule> = grammar
        .rules
        .iter()
        .map(|rule| {
            let mut body = alternatives(grammar, &rule.alternatives);
            // A rule ending in an empty alternative would continue onto the next line
            // (after `::=` or `|`, a line break does not end a rule): spell it `""`.
            if let Some(last) = body.sequences.last_mut()
                && last.terms.is_empty()
            {
                last.terms.push(Term {
                    kind: TermKind::Literal(Vec::new()),
                    span: Span::default(),
                });
            }
            ast::Rule {
                name: name(&rule.name),
                body,
                span: Span::default(),
            }
        })
        .collect();
    print_rules(&rules)
}

/// Prints one symbol as GBNF (rule references by name).
pub fn print_symbol(grammar: &Grammar, symbol: &Symbol) -> String {
    let mut out = String::new();
    grail_syntax::format::write_term(&mut out, &term(grammar, symbol));
    out
}

fn name(text: &str) -> Name {
    Name {
        text: text.to_string(),
        span: Span::default(),
    }
}

fn alternatives(grammar: &Grammar, sequences: &[Sequence]) -> Alternatives {
    let mut ordered: Vec<&Sequence> = sequences
        .iter()
        .filter(|sequence| sequence.is_empty())
        .collect();
    ordered.extend(sequences.iter().filter(|sequence| !sequence.is_empty()));
    Alternatives {
        sequences: ordered
            .into_iter()
            .map(|sequence| ast::Sequence {
                terms: sequence
                    .iter()
                    .map(|symbol| term(grammar, symbol))
                    .collect(),
                span: Span::default(),
            })
            .collect(),
        span: Span::default(),
    }
}

fn term(grammar: &Grammar, symbol: &Symbol) -> Term {
    grail_syntax::stack::deep(|| {
        let kind = match &symbol.kind {
            SymbolKind::Literal(text) => TermKind::Literal(text.chars().map(u32::from).collect()),
            // `[]` and `[^]` mean the empty string in GBNF, so sets without ranges print as
            // "no character" and "any character".
            SymbolKind::Chars(set) if set.ranges().is_empty() && set.is_negated() => TermKind::Any,
            SymbolKind::Chars(set) if set.ranges().is_empty() => TermKind::Class(CharClass {
                negated: true,
                items: vec![ClassItem {
                    first: 0,
                    last: crate::charset::MAX_CODE_POINT,
                    is_range: true,
                    span: Span::default(),
                }],
            }),
            SymbolKind::Chars(set) => TermKind::Class(CharClass {
                negated: set.is_negated(),
                items: set
                    .ranges()
                    .iter()
                    .map(|&(first, last)| ClassItem {
                        first,
                        last,
                        is_range: first != last,
                        span: Span::default(),
                    })
                    .collect(),
            }),
            SymbolKind::Any => TermKind::Any,
            SymbolKind::Rule(id) => TermKind::RuleRef(name(&grammar.rule(*id).name)),
            SymbolKind::Group(sequences) => TermKind::Group(alternatives(grammar, sequences)),
            SymbolKind::Token(token) => TermKind::Token(TokenElement {
                negated: token.negated,
                token: match &token.reference {
                    TokenReference::Id(id) => TokenRef::Id(*id),
                    TokenReference::Text(text) => TokenRef::Text(text.clone()),
                },
            }),
            SymbolKind::Repeat(repetition) => {
                let style = match (repetition.min, repetition.max) {
                    (0, None) => QuantifierStyle::Star,
                    (1, None) => QuantifierStyle::Plus,
                    (0, Some(1)) => QuantifierStyle::Question,
                    _ => QuantifierStyle::Braces,
                };
                // Quantifiers stack in GBNF, except after `{0}`, which leaves nothing to repeat.
                let inner = match &repetition.symbol.kind {
                    SymbolKind::Repeat(inner) if inner.max == Some(0) => Term {
                        kind: TermKind::Group(alternatives(
                            grammar,
                            std::slice::from_ref(&vec![repetition.symbol.clone()]),
                        )),
                        span: Span::default(),
                    },
                    _ => term(grammar, &repetition.symbol),
                };
                TermKind::Repeat(
                    Box::new(inner),
                    Quantifier {
                        min: u64::from(repetition.min),
                        max: repetition.max.map(u64::from),
                        style,
                        span: Span::default(),
                    },
                )
            }
        };
        Term {
            kind,
            span: Span::default(),
        }
    })
}
