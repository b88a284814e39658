//! `grail next`: what may come after some text.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use crate::check::OutputFormat;
use crate::feed::feed;
use crate::grammar::{
    SchemaSource, SchemaWarnings, grammar_or_schema, load_grammar, sort_positionals,
};
use crate::match_text::{failure_json, open_text, render_failure};
use crate::rules::{rule_items, rules_json};

/// Arguments of `grail next`.
#[derive(Debug, Args)]
#[command(group(grammar_or_schema(true)))]
pub struct NextArgs {
    /// The GBNF grammar file, or `-` for standard input. Not with --schema, where the
    /// first positional argument is the text.
    pub grammar: Option<PathBuf>,
    /// The text so far (default: empty).
    #[arg(allow_hyphen_values = true)]
    pub text: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub format: OutputFormat,
    /// The start rule of a GBNF grammar (not with --schema: a schema's grammar starts at
    /// `root`).
    #[arg(long, default_value = "root", conflicts_with = "schema")]
    pub root: String,
    /// The grammar of a JSON Schema instead of a GBNF file.
    #[command(flatten, next_help_heading = "JSON Schema (instead of a GBNF grammar)")]
    pub schema: SchemaSource,
}

/// Runs `grail next`.
pub fn run(args: &NextArgs) -> anyhow::Result<ExitCode> {
    let positionals = sort_positionals(
        args.grammar.as_ref(),
        args.text.as_deref(),
        &args.schema,
        &args.root,
        true,
    )?;
    let grammar = load_grammar(positionals.grammar, None, SchemaWarnings::Show)?;
    let source = open_text(Some(positionals.text.as_deref().unwrap_or("")), None)?;
    let outcome = feed(&grammar, source.reader)?;
    let broken = outcome.failure.as_ref().filter(|failure| !failure.at_end);
    let next = outcome.matcher.next_characters();
    match args.format {
        crate::check::OutputFormat::Json => {
            let mut output = json!({
                "viable": outcome.viable,
                "rules": if outcome.viable { rules_json(&next) } else { Vec::new() },
            });
            if let Some(failure) = broken {
                output["error"] = failure_json(failure);
            }
            println!("{output}");
        }
        crate::check::OutputFormat::Human => match broken {
            Some(failure) => eprint!("{}", render_failure(&source.name, failure)),
            None => {
                for rule in &next.rules {
                    let kind = match rule {
                        grail_engine::NextRule::Char(_) => "CHAR",
                        grail_engine::NextRule::CharExclude(_) => "CHAR_EXCLUDE",
                        grail_engine::NextRule::Token { .. } => "TOKEN",
                        grail_engine::NextRule::End => "END",
                    };
                    println!("{kind:<13}{}", rule_items(rule).join(" "));
                }
                let forced = outcome.matcher.forced(200);
                if !forced.is_empty() {
                    println!("forced       {}", serde_json::to_string(&forced)?);
                }
            }
        },
    }
    Ok(if outcome.viable {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
