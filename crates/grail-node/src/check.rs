//! `check`: the diagnostics of `grail check`, as `grail check --format json` reports them.

use grail_grammar::{CheckOptions, Grammar, Symbol, SymbolKind, Target, TokenReference};
use grail_syntax::{Diagnostic, LineIndex, Severity, Span};
use grail_vocab::Vocabulary as RustVocabulary;
use napi_derive::napi;

use crate::errors::{DiagnosticObject, invalid};
use crate::vocabulary::Vocabulary;

/// Options of `check`.
#[napi(object)]
pub struct CheckArguments {
    /// The start rule (default `root`).
    pub root: Option<String>,
    /// `grail` (the default: Grail's engine, llama.cpp portability problems are notes) or
    /// `llama.cpp` (ok exactly when llama.cpp accepts the grammar).
    pub target: Option<String>,
}

/// What `check` found: `ok` when no diagnostic is an error; every diagnostic in source
/// order (errors, warnings and notes).
#[napi(object)]
pub struct CheckResult {
    /// True when no diagnostic is an error.
    pub ok: bool,
    /// The diagnostics.
    pub diagnostics: Vec<DiagnosticObject>,
}

/// Checks GBNF text as `grail check` does, with the same diagnostics; with a
/// vocabulary, tokens written as text (`<think>`) must each be one of its tokens.
#[napi]
pub fn check(
    text: String,
    options: Option<CheckArguments>,
    vocabulary: Option<&Vocabulary>,
) -> napi::Result<CheckResult> {
    let (root, target) = match options {
        Some(options) => (options.root, options.target),
        None => (None, None),
    };
    let target = match target.as_deref() {
        None | Some("grail") => Target::Grail,
        Some("llama.cpp") | Some("llama") => Target::LlamaCpp,
        Some(other) => {
            return Err(invalid(format!(
                "target must be \"grail\" or \"llama.cpp\", not {other:?}"
            )));
        }
    };
    let check_options = CheckOptions {
        target,
        root: root.unwrap_or_else(|| "root".to_string()),
        ..CheckOptions::default()
    };
    let mut report = grail_grammar::check(&text, &check_options);
    if let Some(grammar) = &report.grammar {
        let findings = token_diagnostics(
            grammar,
            vocabulary.map(|vocabulary| vocabulary.index.vocabulary()),
            target,
        );
        report.error_count += findings
            .iter()
            .filter(|diagnostic| diagnostic.severity == Severity::Error)
            .count();
        report.diagnostics.extend(findings);
        report
            .diagnostics
            .sort_by_key(|diagnostic| diagnostic.span.start);
    }
    let lines = LineIndex::new(&text);
    Ok(CheckResult {
        ok: report.is_ok(),
        diagnostics: report
            .diagnostics
            .iter()
            .map(|diagnostic| DiagnosticObject::gbnf(&text, &lines, diagnostic))
            .collect(),
    })
}

/// The CLI's findings on tokens written as text: with a vocabulary, an error for each
/// that is not exactly one of its tokens; without one, for llama.cpp, a warning that only
/// the model's vocabulary can decide.
fn token_diagnostics(
    grammar: &Grammar,
    vocabulary: Option<&RustVocabulary>,
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
            .filter(|(text, _)| vocabulary.id_of_text(text).is_none())
            .map(|(text, span)| {
                Diagnostic::new(
                    Severity::Error,
                    "token-unknown",
                    format!(
                        "`{text}` is not a token of the vocabulary `{}`",
                        vocabulary.name()
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
    match &symbol.kind {
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
    }
}
