//! `check`: the diagnostics of `grail check`, as `grail check --format json` reports them.

use grail_grammar::{CheckOptions, Target, TokenVocabulary, check_with_vocabulary};
use grail_syntax::LineIndex;
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

/// The `target` option of `check` and `compileGbnf`: `grail` (also when absent) or
/// `llama.cpp` (`llama` too); anything else is an invalid-argument error.
pub(crate) fn parse_target(target: Option<&str>) -> napi::Result<Target> {
    match target {
        None | Some("grail") => Ok(Target::Grail),
        Some("llama.cpp") | Some("llama") => Ok(Target::LlamaCpp),
        Some(other) => Err(invalid(format!(
            "target must be \"grail\" or \"llama.cpp\", not {other:?}"
        ))),
    }
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
    let target = parse_target(target.as_deref())?;
    let check_options = CheckOptions {
        target,
        root: root.unwrap_or_else(|| "root".to_string()),
        ..CheckOptions::default()
    };
    let tokens = vocabulary.map(|vocabulary| {
        let vocabulary = vocabulary.index.vocabulary();
        TokenVocabulary::new(vocabulary.name(), |text| {
            vocabulary.id_of_text(text).is_some()
        })
    });
    let report = check_with_vocabulary(&text, &check_options, tokens);
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
