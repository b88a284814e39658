//! `grail sample`: random strings of a grammar's language.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use grail_engine::{Sampler, Segment};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use serde_json::json;

use crate::grammar::{
    SchemaSource, SchemaWarnings, grammar_or_schema, load_grammar, sort_positionals,
};

/// Arguments of `grail sample`.
#[derive(Debug, Args)]
#[command(group(grammar_or_schema(false)))]
pub struct SampleArgs {
    /// The GBNF grammar file, or `-` for standard input. Not with --schema.
    pub grammar: Option<PathBuf>,
    /// How many strings.
    #[arg(short = 'n', long = "count", default_value_t = 10)]
    pub count: usize,
    /// Random seed, for repeatable output (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Length budget in characters; exceeded only when the grammar's shortest completion
    /// needs more.
    #[arg(long, default_value_t = 200)]
    pub max_len: usize,
    /// The start rule of a GBNF grammar (not with --schema: a schema's grammar starts at
    /// `root`).
    #[arg(long, default_value = "root", conflicts_with = "schema")]
    pub root: String,
    /// The grammar of a JSON Schema instead of a GBNF file.
    #[command(flatten, next_help_heading = "JSON Schema (instead of a GBNF grammar)")]
    pub schema: SchemaSource,
}

/// Runs `grail sample`: one JSON string per line (`{"segments": [...]}` when the grammar
/// has token elements).
pub fn run(args: &SampleArgs) -> anyhow::Result<ExitCode> {
    let positionals =
        sort_positionals(args.grammar.as_ref(), None, &args.schema, &args.root, false)?;
    let grammar = load_grammar(positionals.grammar, None, SchemaWarnings::Show)?;
    let sampler = Sampler::new(&grammar);
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos() as u64)
    });
    let mut rng = SmallRng::seed_from_u64(seed);
    for _ in 0..args.count {
        let Some(segments) = sampler.sample(&mut rng, args.max_len) else {
            eprintln!("error: the grammar matches no string at all");
            return Ok(ExitCode::from(1));
        };
        let line = match segments.as_slice() {
            [Segment::Text(text)] => serde_json::to_string(text)?,
            _ => {
                let segments: Vec<_> = segments
                    .iter()
                    .map(|segment| match segment {
                        Segment::Text(text) => json!({"text": text}),
                        Segment::Token(id) => json!({"token": id}),
                    })
                    .collect();
                json!({"segments": segments}).to_string()
            }
        };
        println!("{}", escape_line_breaks(&line));
    }
    Ok(ExitCode::SUCCESS)
}

/// Escapes U+0085, U+2028 and U+2029 in a line of JSON (serde_json writes them raw): they
/// are line breaks to readers that split on Unicode line breaks (Python's
/// `str.splitlines`, JavaScript), which would cut a string in two. Outside strings JSON
/// holds none of them, so replacing every one is exact.
fn escape_line_breaks(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for character in line.chars() {
        match character {
            '\u{85}' => out.push_str("\\u0085"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            _ => out.push(character),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unicode_line_breaks_are_escaped() {
        let line = serde_json::to_string("a\u{85}b\u{2028}c\u{2029}d\n").unwrap();
        let escaped = escape_line_breaks(&line);
        assert_eq!(escaped, r#""a\u0085b\u2028c\u2029d\n""#);
        assert_eq!(escaped.lines().count(), 1);
        let back: String = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, "a\u{85}b\u{2028}c\u{2029}d\n");
    }
}
