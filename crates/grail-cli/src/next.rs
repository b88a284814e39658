//! `grail next`: what may come after some text.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use crate::check::OutputFormat;
use crate::feed::feed;
use crate::grammar::load_grammar;
use crate::match_text::{failure_json, open_text, render_failure};
use crate::rules::{rule_items, rules_json};

/// Arguments of `grail next`.
#[derive(Debug, Args)]
pub struct NextArgs {
    /// The grammar file, or `-` for standard input.
    pub grammar: PathBuf,
    /// The text so far (default: empty).
    #[arg(default_value = "", allow_hyphen_values = true)]
    pub text: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub format: OutputFormat,
    /// The start rule.
    #[arg(long, default_value = "root")]
    pub root: String,
}

/// Runs `grail next`.
pub fn run(args: &NextArgs) -> anyhow::Result<ExitCode> {
    let grammar = load_grammar(&args.grammar, &args.root, None)?;
    let source = open_text(Some(&args.text), None)?;
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
