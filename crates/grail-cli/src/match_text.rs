//! `grail match`: does the text match the grammar, and if not, where did it break.

use std::io::{BufReader, Read};
use std::path::PathBuf;
use std::process::ExitCode;

use annotate_snippets::{AnnotationKind, Level, Renderer, Snippet};
use anyhow::{Context, bail};
use clap::Args;
use grail_engine::NextRule;
use serde_json::{Value, json};

use crate::check::OutputFormat;
use crate::feed::{Failure, Outcome, feed};
use crate::grammar::{
    GrammarInput, SchemaSource, SchemaWarnings, grammar_or_schema, load_grammar, sort_positionals,
};
use crate::render::stderr_wants_color;
use crate::rules::{expected_label, rules_json};

/// Arguments of `grail match`.
#[derive(Debug, Args)]
#[command(group(grammar_or_schema(true)))]
pub struct MatchArgs {
    /// The GBNF grammar file, or `-` for standard input. Not with --schema, where the
    /// first positional argument is the text.
    pub grammar: Option<PathBuf>,
    /// The text to match. Without it (and without --file), standard input is read. A
    /// text may start with `-`; put `--` before one that looks like an option.
    #[arg(allow_hyphen_values = true)]
    pub text: Option<String>,
    /// Read the text from this file (`-`: standard input). Streamed: memory does not grow
    /// with the file's size.
    #[arg(long, conflicts_with = "text")]
    pub file: Option<PathBuf>,
    /// Succeed when the text is a viable prefix (it can still be completed).
    #[arg(long)]
    pub prefix: bool,
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

/// Where the text comes from, for reading and for messages.
pub struct TextSource {
    /// Shown in messages: the file name, `<text>` or `<stdin>`.
    pub name: String,
    /// The reader.
    pub reader: Box<dyn Read>,
}

/// Opens the text given as an argument, a file, or standard input.
pub fn open_text(text: Option<&str>, file: Option<&PathBuf>) -> anyhow::Result<TextSource> {
    Ok(match (text, file) {
        (Some(text), _) => TextSource {
            name: "<text>".to_string(),
            reader: Box::new(std::io::Cursor::new(text.as_bytes().to_vec())),
        },
        (None, Some(path)) if path.as_os_str() != "-" => TextSource {
            name: path.display().to_string(),
            reader: Box::new(BufReader::new(
                std::fs::File::open(path)
                    .with_context(|| format!("cannot read `{}`", path.display()))?,
            )),
        },
        _ => TextSource {
            name: "<stdin>".to_string(),
            reader: Box::new(std::io::stdin()),
        },
    })
}

/// Runs `grail match`.
pub fn run(args: &MatchArgs) -> anyhow::Result<ExitCode> {
    let positionals = sort_positionals(
        args.grammar.as_ref(),
        args.text.as_deref(),
        &args.schema,
        &args.root,
        true,
    )?;
    if positionals.text.is_some() && args.file.is_some() {
        bail!("give the text as an argument or with --file, not both");
    }
    let text_from_stdin = positionals.text.is_none()
        && args
            .file
            .as_ref()
            .is_none_or(|file| file.as_os_str() == "-");
    if text_from_stdin && positionals.grammar.path().as_os_str() == "-" {
        bail!("the grammar and the text cannot both come from standard input");
    }
    let grammar = load_grammar(positionals.grammar, None, SchemaWarnings::Show)?;
    let source = open_text(positionals.text.as_deref(), args.file.as_ref())?;
    let outcome = feed(&grammar, source.reader)?;
    let matched = if args.prefix {
        outcome.viable
    } else {
        outcome.complete
    };
    let failure = outcome.failure.as_ref().filter(|failure| {
        // In prefix mode, ending early is not a failure.
        !(args.prefix && failure.at_end)
    });
    match args.format {
        OutputFormat::Json => {
            let output = json!({
                "matched": matched,
                "complete": outcome.complete,
                "viable": outcome.viable,
                "error": failure.map(failure_json),
            });
            println!("{output}");
        }
        OutputFormat::Human => match failure {
            Some(failure) => {
                eprint!("{}", render_failure(&source.name, failure));
                if matches!(positionals.grammar, GrammarInput::Schema { .. })
                    && only_the_end_was_expected(failure)
                {
                    eprintln!(
                        "  = note: a schema's grammar ends with the JSON value: nothing may follow it, not even whitespace or a final line break"
                    );
                }
            }
            None => eprintln!("{}", success_line(&source.name, &outcome, args.prefix)),
        },
    }
    Ok(if matched {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// True when the text went on after a complete match, where only its end could come.
fn only_the_end_was_expected(failure: &Failure) -> bool {
    !failure.at_end
        && !failure.invalid_utf8
        && matches!(failure.expected.rules.as_slice(), [NextRule::End])
}

fn success_line(name: &str, outcome: &Outcome, prefix: bool) -> String {
    let bytes = outcome.matcher.offset();
    if prefix && !outcome.complete {
        format!("{name}: ok, a viable prefix ({bytes} bytes; more must follow)")
    } else if prefix {
        format!("{name}: ok, a complete match ({bytes} bytes)")
    } else {
        format!("{name}: ok, matches ({bytes} bytes)")
    }
}

/// The `error` object of the JSON output.
pub fn failure_json(failure: &Failure) -> Value {
    json!({
        "offset": failure.offset,
        "line": failure.line,
        "column": failure.column,
        "at_end": failure.at_end,
        "invalid_utf8": failure.invalid_utf8,
        "expected": rules_json(&failure.expected),
    })
}

/// A rustc-style report: the failing line with a caret and what was expected there.
pub fn render_failure(name: &str, failure: &Failure) -> String {
    let title = if failure.at_end {
        "the text ends before the grammar does"
    } else if failure.invalid_utf8 {
        "the text is not valid UTF-8"
    } else {
        "the text does not match the grammar"
    };
    let label = if failure.invalid_utf8 {
        "this byte does not begin a UTF-8 character; Grail matches valid UTF-8 only".to_string()
    } else {
        expected_label(&failure.expected)
    };
    let groups = [Level::ERROR.primary_title(title).element(
        Snippet::source(failure.line_text.as_str())
            .path(name)
            .line_start(failure.line as usize)
            .annotation(
                AnnotationKind::Primary
                    .span(failure.caret.clone())
                    .label(label.as_str()),
            ),
    )];
    let renderer = if stderr_wants_color() {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    format!(
        "{}\n  = note: at byte offset {}, line {}, column {}\n",
        renderer.render(&groups),
        failure.offset,
        failure.line,
        failure.column
    )
}
