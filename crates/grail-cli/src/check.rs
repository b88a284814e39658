//! `grail check`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use grail_grammar::{CheckOptions, Target, TokenVocabulary, check_with_vocabulary};
use grail_syntax::source_from_bytes;
use serde_json::json;

use crate::input::read_source;
use crate::render::{json_diagnostics, render_human, stderr_wants_color, summary};

/// Arguments of `grail check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The grammar file, or `-` for standard input.
    pub file: PathBuf,
    /// The engine the grammar must work in.
    #[arg(long, value_enum, default_value_t = TargetArg::Grail)]
    pub target: TargetArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub format: OutputFormat,
    /// The start rule.
    #[arg(long, default_value = "root")]
    pub root: String,
    /// A vocabulary (tokenizer.json, .gguf or vocab.json) to check tokens written as
    /// text (`<think>`) against: each must be exactly one of its tokens.
    #[arg(long)]
    pub vocab: Option<PathBuf>,
}

/// `--target` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TargetArg {
    /// Grail's engine.
    Grail,
    /// llama.cpp: exit 0 exactly when llama.cpp accepts the grammar.
    #[value(name = "llama.cpp")]
    LlamaCpp,
}

/// `--format` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OutputFormat {
    /// rustc-style text on stderr.
    Human,
    /// One JSON object on stdout.
    Json,
}

/// Runs `grail check`.
pub fn run(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let input = read_source(&args.file)?;
    let options = CheckOptions {
        target: match args.target {
            TargetArg::Grail => Target::Grail,
            TargetArg::LlamaCpp => Target::LlamaCpp,
        },
        root: args.root.clone(),
        ..CheckOptions::default()
    };
    let vocabulary = match &args.vocab {
        Some(path) => Some(
            grail_vocab::load(path)
                .with_context(|| format!("cannot load the vocabulary `{}`", path.display()))?,
        ),
        None => None,
    };
    let (source, report_ok, diagnostics, rule_count) = match source_from_bytes(&input.bytes) {
        Ok(source) => {
            let tokens = vocabulary.as_ref().map(|vocabulary| {
                TokenVocabulary::new(vocabulary.name(), |text| {
                    vocabulary.id_of_text(text).is_some()
                })
            });
            let report = check_with_vocabulary(source, &options, tokens);
            let rules = report.grammar.as_ref().map(|grammar| grammar.rules.len());
            (
                source.to_string(),
                report.is_ok(),
                report.diagnostics,
                rules,
            )
        }
        Err(error) => {
            // Show the valid part, so the caret points at the bad byte's position.
            let valid =
                String::from_utf8_lossy(&input.bytes[..error.span.start as usize]).into_owned();
            (valid, false, vec![error.to_diagnostic()], None)
        }
    };
    match args.format {
        OutputFormat::Json => {
            let output = json!({
                "ok": report_ok,
                "diagnostics": json_diagnostics(&source, &diagnostics),
            });
            println!("{output}");
        }
        OutputFormat::Human => {
            eprint!(
                "{}",
                render_human(&input.name, &source, &diagnostics, stderr_wants_color())
            );
            let counts = summary(&diagnostics);
            if report_ok {
                let mut details: Vec<String> = Vec::new();
                if let Some(rules) = rule_count {
                    let noun = if rules == 1 { "rule" } else { "rules" };
                    details.push(format!("{rules} {noun}"));
                }
                if !counts.is_empty() {
                    details.push(counts);
                }
                if details.is_empty() {
                    eprintln!("{}: ok", input.name);
                } else {
                    eprintln!("{}: ok ({})", input.name, details.join(", "));
                }
            } else {
                eprintln!("{}: invalid grammar: {counts}", input.name);
            }
        }
    }
    Ok(if report_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
