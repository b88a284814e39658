//! Loading the grammar of the matching commands: a GBNF file (checked, its errors shown)
//! or a JSON Schema (`--schema`, converted, its diagnostics shown), then compiled.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::{ArgGroup, Args};
use grail_engine::{CompileOptions, CompiledGrammar};
use grail_grammar::{CheckOptions, Grammar, load};
use grail_schema::SchemaError;
use grail_syntax::{Diagnostic, source_from_bytes};
use grail_vocab::Vocabulary;

use crate::input::read_source;
use crate::render::{render_human, render_invalid_utf8, stderr_wants_color};
use crate::schema::{SchemaArgs, load_schema, render_schema_diagnostics};

/// `--schema FILE` and its conversion options, for the commands that take a grammar. The
/// conversion options need `--schema`.
#[derive(Debug, Args)]
#[command(mut_group("SchemaArgs", |group| group.requires("schema")))]
pub struct SchemaSource {
    /// Take the grammar from this JSON Schema (`-`: standard input) instead of a GBNF
    /// file, converted as the options below say (they need --schema).
    #[arg(long, value_name = "FILE")]
    pub schema: Option<PathBuf>,
    /// How the schema becomes a grammar.
    #[command(flatten)]
    pub options: SchemaArgs,
}

/// The clap group that asks for a grammar: the argument `grammar` (a GBNF file) or
/// `--schema`, at least one. With `positional_may_hold_text`, both may appear: with
/// `--schema`, a command's text lands in the positional `grammar` ([`sort_positionals`]
/// sorts that out).
pub fn grammar_or_schema(positional_may_hold_text: bool) -> ArgGroup {
    ArgGroup::new("grammar_or_schema")
        .args(["grammar", "schema"])
        .required(true)
        .multiple(positional_may_hold_text)
}

/// Where a command's grammar comes from.
#[derive(Debug, Clone, Copy)]
pub enum GrammarInput<'a> {
    /// A GBNF file (`-`: standard input) and its start rule.
    Gbnf {
        /// The file.
        path: &'a Path,
        /// The start rule.
        root: &'a str,
    },
    /// A JSON Schema file (`-`: standard input) and how to convert it.
    Schema {
        /// The file.
        path: &'a Path,
        /// The conversion options.
        options: &'a SchemaArgs,
    },
}

impl GrammarInput<'_> {
    /// The file the grammar is read from.
    pub fn path(&self) -> &Path {
        match self {
            GrammarInput::Gbnf { path, .. } | GrammarInput::Schema { path, .. } => path,
        }
    }
}

/// Whether lenient-mode warnings of a schema are shown (a command that builds the grammar
/// several times shows them once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaWarnings {
    /// Render them to stderr.
    Show,
    /// Say nothing.
    Quiet,
}

/// A command's positional arguments sorted out once `--schema` is known. The grammar
/// positional comes first, so with `--schema` (and no grammar) the first positional
/// clap saw is really the text.
pub struct Positionals<'a> {
    /// Where the grammar comes from.
    pub grammar: GrammarInput<'a>,
    /// The text, when one was given.
    pub text: Option<String>,
}

/// Sorts out `GRAMMAR [TEXT]` against `--schema`: exactly one of them gives the grammar.
/// With `--schema`, a lone positional is the text (when the command takes one); any other
/// positional is an error (exit 2). `root` is the GBNF start rule (clap keeps `--root`
/// away from `--schema`).
pub fn sort_positionals<'a>(
    grammar: Option<&'a PathBuf>,
    text: Option<&str>,
    schema: &'a SchemaSource,
    root: &'a str,
    takes_text: bool,
) -> anyhow::Result<Positionals<'a>> {
    let Some(schema_path) = &schema.schema else {
        let Some(path) = grammar else {
            bail!("no grammar: give a GBNF grammar file or --schema FILE");
        };
        return Ok(Positionals {
            grammar: GrammarInput::Gbnf { path, root },
            text: text.map(str::to_string),
        });
    };
    let text = match (grammar, text) {
        (Some(path), None) if takes_text => Some(text_argument(path.as_os_str().to_owned())?),
        (None, text) => text.map(str::to_string),
        (Some(path), _) => bail!(
            "give either a GBNF grammar file or --schema FILE, not both (`{}` and `{}`)",
            path.display(),
            schema_path.display()
        ),
    };
    Ok(Positionals {
        grammar: GrammarInput::Schema {
            path: schema_path,
            options: &schema.options,
        },
        text,
    })
}

/// A positional argument read as the grammar's path, taken as text instead.
fn text_argument(argument: OsString) -> anyhow::Result<String> {
    argument
        .into_string()
        .map_err(|argument| anyhow::anyhow!("the text {argument:?} is not UTF-8"))
}

/// Reads the grammar (checking a GBNF file, converting a schema) and compiles it; tokens
/// written as text (`<think>`) are resolved in `vocabulary`. A grammar's errors and a
/// schema's refusal are rendered to stderr and returned as an error (exit status 2: the
/// grammar, not the text, is wrong); a schema's warnings go to stderr unless `warnings`
/// is [`SchemaWarnings::Quiet`].
pub fn load_grammar(
    input: GrammarInput<'_>,
    vocabulary: Option<&Vocabulary>,
    warnings: SchemaWarnings,
) -> anyhow::Result<CompiledGrammar> {
    let (name, grammar) = match input {
        GrammarInput::Gbnf { path, root } => read_gbnf(path, root)?,
        GrammarInput::Schema { path, options } => convert_schema(path, options, warnings)?,
    };
    let resolve = |text: &str| vocabulary.and_then(|vocabulary| vocabulary.id_of_text(text));
    let options = CompileOptions {
        resolve_token_text: Some(&resolve),
        ..CompileOptions::default()
    };
    CompiledGrammar::compile(&grammar, &options).map_err(|error| anyhow::anyhow!("{name}: {error}"))
}

/// Reads and checks a GBNF file rooted at `root`: its name and grammar, or its errors
/// rendered to stderr.
fn read_gbnf(path: &Path, root: &str) -> anyhow::Result<(String, Grammar)> {
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
    match load(source, &options) {
        Ok(loaded) => Ok((input.name, loaded.grammar)),
        Err(error) => {
            let errors: Vec<Diagnostic> = error
                .errors
                .into_iter()
                .map(|located| located.diagnostic)
                .collect();
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

/// Converts a JSON Schema file: its name and grammar, its warnings rendered to stderr
/// (unless quiet); or, when refused, every diagnostic rendered to stderr.
fn convert_schema(
    path: &Path,
    options: &SchemaArgs,
    warnings: SchemaWarnings,
) -> anyhow::Result<(String, Grammar)> {
    let (name, text, result) = load_schema(path, options)?;
    match result {
        Ok(converted) => {
            if warnings == SchemaWarnings::Show {
                eprint!(
                    "{}",
                    render_schema_diagnostics(&name, &text, &converted.diagnostics)
                );
            }
            Ok((name, converted.grammar))
        }
        Err(SchemaError::Refused { diagnostics }) => {
            eprint!("{}", render_schema_diagnostics(&name, &text, &diagnostics));
            bail!("the schema `{name}` is refused")
        }
        Err(other) => bail!("{name}: {other}"),
    }
}
