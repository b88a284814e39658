//! `grail check`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use grail_grammar::{CheckOptions, Target, check};
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
    let (source, report_ok, diagnostics, rule_count) = match source_from_bytes(&input.bytes) {
        Ok(source) => {
            let report = check(source, &options);
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
                let rules = rule_count.unwrap_or(0);
                let details = if counts.is_empty() {
                    String::new()
                } else {
                    format!(", {counts}")
                };
                let noun = if rules == 1 { "rule" } else { "rules" };
                eprintln!("{}: ok ({rules} {noun}{details})", input.name);
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
