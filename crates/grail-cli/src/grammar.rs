//! Loading a grammar file for the matching commands: check it, show its errors, compile.

use std::path::Path;

use anyhow::bail;
use grail_engine::{CompileOptions, CompiledGrammar};
use grail_grammar::{CheckOptions, check};
use grail_syntax::{Severity, source_from_bytes};
use grail_vocab::Vocabulary;

use crate::input::read_source;
use crate::render::{render_human, render_invalid_utf8, stderr_wants_color};

/// Reads, checks and compiles a grammar rooted at `root`; tokens written as text
/// (`<think>`) are resolved in `vocabulary`. Errors are rendered to stderr and returned as
/// an error (exit status 2: the grammar, not the text, is wrong).
pub fn load_grammar(
    path: &Path,
    root: &str,
    vocabulary: Option<&Vocabulary>,
) -> anyhow::Result<CompiledGrammar> {
    let input = read_source(path)?;
    let source = match source_from_bytes(&input.bytes) {
        Ok(source) => source,
        Err(error) => {
            eprint!("{}", render_invalid_utf8(&input.name, &input.bytes, &error));
            bail!("`{}` is not a valid grammar", input.name);
        }
    };
    let options = CheckOptions {
        root: root.to_string(),
        ..CheckOptions::default()
    };
    let report = check(source, &options);
    let errors: Vec<_> = report
        .diagnostics
        .into_iter()
        .filter(|diagnostic| diagnostic.severity == Severity::Error)
        .collect();
    match report.grammar {
        Some(grammar) if errors.is_empty() => {
            let resolve =
                |text: &str| vocabulary.and_then(|vocabulary| vocabulary.id_of_text(text));
            let options = CompileOptions {
                resolve_token_text: Some(&resolve),
                ..CompileOptions::default()
            };
            Ok(CompiledGrammar::compile(&grammar, &options)
                .map_err(|error| anyhow::anyhow!("{}: {error}", input.name))?)
        }
        _ => {
            eprint!(
                "{}",
                render_human(&input.name, source, &errors, stderr_wants_color())
            );
            bail!(
                "`{}` is not a valid grammar (run `grail check {}` for every diagnostic)",
                input.name,
                input.name
            )
        }
    }
}
