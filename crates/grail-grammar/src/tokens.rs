//! Tokens written as text (`<think>`): checked against a vocabulary, as `grail check
//! --vocab` does.
//!
//! A grammar names such a token by its text; only a vocabulary can say whether that text
//! is exactly one token. This crate knows no vocabulary, so the caller passes one as a
//! name and a lookup ([`TokenVocabulary`]).

use grail_syntax::{Diagnostic, Severity, Span};

use crate::check::{CheckOptions, CheckReport, check};
use crate::finding::Target;
use crate::ir::{Grammar, Symbol, SymbolKind, TokenReference};

/// A vocabulary as the check of tokens written as text sees it: its name, for messages,
/// and whether a text is exactly one of its tokens.
pub struct TokenVocabulary<'a> {
    name: &'a str,
    has_token: Box<dyn Fn(&str) -> bool + 'a>,
}

impl<'a> TokenVocabulary<'a> {
    /// The vocabulary called `name` in messages, where `has_token(text)` is true when
    /// `text` is exactly one of its tokens.
    pub fn new(name: &'a str, has_token: impl Fn(&str) -> bool + 'a) -> TokenVocabulary<'a> {
        TokenVocabulary {
            name,
            has_token: Box::new(has_token),
        }
    }
}

/// Checks GBNF text as [`check`] does, then its tokens written as text: with a
/// vocabulary, an error (`token-unknown`) for each that is not exactly one of its tokens;
/// without one, for [`Target::LlamaCpp`], a warning (`token-needs-vocabulary`) that only
/// the model's vocabulary can decide. The report's diagnostics stay in source order.
///
/// ```
/// use grail_grammar::{CheckOptions, TokenVocabulary, check_with_vocabulary};
/// let vocabulary = TokenVocabulary::new("tiny", |text| text == "<think>");
/// let source = "root ::= <think> <answer>\n";
/// let report = check_with_vocabulary(source, &CheckOptions::default(), Some(vocabulary));
/// assert_eq!(report.error_count, 1);
/// assert_eq!(report.diagnostics[0].code, "token-unknown");
/// ```
pub fn check_with_vocabulary(
    source: &str,
    options: &CheckOptions,
    vocabulary: Option<TokenVocabulary<'_>>,
) -> CheckReport {
    let mut report = check(source, options);
    if let Some(grammar) = &report.grammar {
        let findings = token_diagnostics(grammar, vocabulary.as_ref(), options.target);
        report.error_count += findings
            .iter()
            .filter(|diagnostic| diagnostic.severity == Severity::Error)
            .count();
        report.diagnostics.extend(findings);
        report
            .diagnostics
            .sort_by_key(|diagnostic| diagnostic.span.start);
    }
    report
}

/// The diagnostics of [`check_with_vocabulary`] on the tokens written as text.
fn token_diagnostics(
    grammar: &Grammar,
    vocabulary: Option<&TokenVocabulary<'_>>,
    target: Target,
) -> Vec<Diagnostic> {
    let mut tokens = Vec::new();
    for symbol in grammar
        .rules
        .iter()
        .flat_map(|rule| rule.alternatives.iter().flatten())
    {
        token_texts(symbol, &mut tokens);
    }
    match vocabulary {
        Some(vocabulary) => tokens
            .into_iter()
            .filter(|(text, _)| !(vocabulary.has_token)(text))
            .map(|(text, span)| {
                Diagnostic::new(
                    Severity::Error,
                    "token-unknown",
                    format!(
                        "`{text}` is not a token of the vocabulary `{}`",
                        vocabulary.name
                    ),
                    span,
                )
                .with_help(Some(
                    "a token written as text must be exactly one token (llama.cpp refuses the grammar otherwise); write the text as a literal, or the token by id: `<[id]>`".to_string(),
                ))
            })
            .collect(),
        None if target == Target::LlamaCpp => tokens
            .into_iter()
            .map(|(text, span)| {
                Diagnostic::new(
                    Severity::Warning,
                    "token-needs-vocabulary",
                    format!("llama.cpp resolves `{text}` with the model's vocabulary"),
                    span,
                )
                .with_help(Some(
                    "it must be exactly one token, and llama.cpp refuses the grammar without a vocabulary; pass --vocab to check it".to_string(),
                ))
            })
            .collect(),
        None => Vec::new(),
    }
}

/// The tokens written as text inside `symbol`, with where they are written.
fn token_texts(symbol: &Symbol, out: &mut Vec<(String, Span)>) {
    grail_syntax::stack::deep(|| match &symbol.kind {
        SymbolKind::Token(token) => {
            if let TokenReference::Text(text) = &token.reference {
                out.push((text.clone(), symbol.span));
            }
        }
        SymbolKind::Group(sequences) => {
            for inner in sequences.iter().flatten() {
                token_texts(inner, out);
            }
        }
        SymbolKind::Repeat(repetition) => token_texts(&repetition.symbol, out),
        _ => {}
    })
}
