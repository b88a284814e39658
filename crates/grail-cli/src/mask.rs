//! `grail mask`: the tokens of a vocabulary the grammar allows after some text.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use grail_engine::{Matcher, TokenBitmask, VocabularyIndex};
use serde_json::json;

use crate::check::OutputFormat;
use crate::grammar::{
    SchemaSource, SchemaWarnings, grammar_or_schema, load_grammar, sort_positionals,
};

/// Arguments of `grail mask`.
#[derive(Debug, Args)]
#[command(group(grammar_or_schema(true)))]
pub struct MaskArgs {
    /// The GBNF grammar file, or `-` for standard input. Not with --schema, where the
    /// first positional argument is the text.
    pub grammar: Option<PathBuf>,
    /// The text generated so far (default: empty), matched as text.
    #[arg(allow_hyphen_values = true)]
    pub text: Option<String>,
    /// The vocabulary: tokenizer.json, a .gguf file or vocab.json.
    #[arg(long)]
    pub vocab: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub format: OutputFormat,
    /// Most tokens listed in human output (JSON lists all).
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// The start rule of a GBNF grammar (not with --schema: a schema's grammar starts at
    /// `root`).
    #[arg(long, default_value = "root", conflicts_with = "schema")]
    pub root: String,
    /// The grammar of a JSON Schema instead of a GBNF file.
    #[command(flatten, next_help_heading = "JSON Schema (instead of a GBNF grammar)")]
    pub schema: SchemaSource,
}

/// A token's bytes as readable text: characters as they are, control characters and
/// invalid bytes escaped (and `"`, when `quote` is set, for display between quotes).
fn escaped(bytes: &[u8], quote: bool) -> String {
    let mut text = String::new();
    for chunk in bytes.utf8_chunks() {
        for character in chunk.valid().chars() {
            match character {
                '"' if quote => text.push_str("\\\""),
                '\\' => text.push_str("\\\\"),
                '\n' => text.push_str("\\n"),
                '\t' => text.push_str("\\t"),
                '\r' => text.push_str("\\r"),
                character if character.is_control() => {
                    text.push_str(&format!("\\u{{{:x}}}", u32::from(character)))
                }
                character => text.push(character),
            }
        }
        for byte in chunk.invalid() {
            text.push_str(&format!("\\x{byte:02x}"));
        }
    }
    text
}

/// Runs `grail mask`.
pub fn run(args: &MaskArgs) -> anyhow::Result<ExitCode> {
    let positionals = sort_positionals(
        args.grammar.as_ref(),
        args.text.as_deref(),
        &args.schema,
        &args.root,
        true,
    )?;
    let text = positionals.text.as_deref().unwrap_or("");
    let vocabulary = grail_vocab::load(&args.vocab)
        .with_context(|| format!("cannot load the vocabulary `{}`", args.vocab.display()))?;
    let grammar = load_grammar(positionals.grammar, Some(&vocabulary), SchemaWarnings::Show)?;
    let index = Arc::new(VocabularyIndex::new(vocabulary));
    let mut matcher = Matcher::with_vocabulary(&grammar, index.clone());
    let viable = matcher.accept_str(text).is_ok() && matcher.is_viable();
    let mut mask = TokenBitmask::new(index.vocabulary().len());
    if viable {
        matcher.fill_mask(&mut mask);
    }
    let vocabulary = index.vocabulary();
    let allowed: Vec<u32> = mask.ids().collect();
    let end_allowed = vocabulary
        .end_of_generation()
        .iter()
        .any(|&id| mask.is_set(id));
    match args.format {
        OutputFormat::Json => {
            let tokens: Vec<_> = allowed
                .iter()
                .map(|&id| {
                    json!({
                        "id": id,
                        "text": escaped(vocabulary.bytes(id), false),
                        "special": vocabulary.is_special(id),
                    })
                })
                .collect();
            let output = json!({
                "viable": viable,
                "count": allowed.len(),
                "end_of_generation_allowed": end_allowed,
                "tokens": tokens,
            });
            println!("{output}");
        }
        OutputFormat::Human => {
            if !viable {
                eprintln!(
                    "the text is not a viable prefix of the grammar (see `grail match --prefix`)"
                );
            } else {
                println!(
                    "{} of {} tokens allowed{}",
                    allowed.len(),
                    vocabulary.len(),
                    if end_allowed {
                        ", end of generation included"
                    } else {
                        ""
                    }
                );
                for &id in allowed.iter().take(args.limit) {
                    let kind = if vocabulary.is_special(id) {
                        " (special)"
                    } else {
                        ""
                    };
                    println!("{id:>7}  \"{}\"{kind}", escaped(vocabulary.bytes(id), true));
                }
                if allowed.len() > args.limit {
                    println!(
                        "... {} more (--limit, or --format json for all)",
                        allowed.len() - args.limit
                    );
                }
            }
        }
    }
    Ok(if viable {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
