//! `grail schema`: a JSON Schema to GBNF, and the schema options every grammar-taking
//! command shares (`--schema`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use grail_schema::{
    KeyOrder, Mode, SchemaDiagnostic, SchemaError, SchemaGrammar, SchemaOptions, Whitespace,
    locate::locate, schema_text_to_grammar,
};
use grail_syntax::{Diagnostic, Span};
use serde_json::json;

use crate::input::read_source;
use crate::render::{render_human, stderr_wants_color};

/// How a schema becomes a grammar (shared by `grail schema` and `--schema`).
#[derive(Debug, Clone, Args)]
pub struct SchemaArgs {
    /// Compile keywords Grail cannot enforce exactly as the closest superset, with a
    /// warning each (default: refuse the schema).
    #[arg(long)]
    pub lenient: bool,
    /// Whitespace between JSON tokens.
    #[arg(long, value_enum, default_value_t = WhitespaceArg::Llama)]
    pub whitespace: WhitespaceArg,
    /// With `--whitespace bounded`: at most this many whitespace characters at each place.
    #[arg(long, default_value_t = 4)]
    pub max_whitespace: u32,
    /// Properties in any order (objects of up to 8 declared properties), not only the
    /// schema's.
    #[arg(long)]
    pub any_order: bool,
    /// The text between items and between properties: `,` or with JSON whitespace
    /// around it (`, ` as Python's json.dumps writes it).
    #[arg(long, default_value = ",", value_name = "TEXT")]
    pub item_separator: String,
    /// The text between a key and its value: `:` or with JSON whitespace around it
    /// (`: `).
    #[arg(long, default_value = ":", value_name = "TEXT")]
    pub key_separator: String,
    /// Whether objects without `additionalProperties` take undeclared properties (the
    /// specification: true; llama.cpp: false).
    #[arg(long, value_name = "BOOL")]
    pub additional_properties: Option<bool>,
    /// Follow llama.cpp's converter: no undeclared properties unless allowed, `{}` as any
    /// object, numbers of at most 16 digits per part, compact constants.
    #[arg(long)]
    pub llama_cpp: bool,
    /// Write objects and arrays nested more than N levels deep as any JSON object or array
    /// (with a warning saying where), unrolling recursive schemas to that depth. Default:
    /// exact at every depth.
    #[arg(long, value_name = "N")]
    pub depth_cap: Option<u32>,
}

/// `--whitespace` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum WhitespaceArg {
    /// llama.cpp's `space` rule: nothing, a space, or one or two newlines and indentation.
    Llama,
    /// None: compact JSON.
    None,
    /// Any JSON whitespace.
    Free,
    /// JSON whitespace up to --max-whitespace characters.
    Bounded,
}

impl SchemaArgs {
    /// The conversion options these arguments ask for.
    pub fn options(&self) -> SchemaOptions {
        let mut options = if self.llama_cpp {
            SchemaOptions::llama_cpp()
        } else {
            SchemaOptions::default()
        };
        options.mode = if self.lenient {
            Mode::Lenient
        } else {
            Mode::Strict
        };
        options.whitespace = match self.whitespace {
            WhitespaceArg::Llama => Whitespace::Llama,
            WhitespaceArg::None => Whitespace::None,
            WhitespaceArg::Free => Whitespace::Free,
            WhitespaceArg::Bounded => Whitespace::Bounded(self.max_whitespace),
        };
        if self.any_order {
            options.key_order = KeyOrder::Any;
        }
        options.item_separator = self.item_separator.clone();
        options.key_separator = self.key_separator.clone();
        if let Some(additional) = self.additional_properties {
            options.additional_properties_default = additional;
        }
        options.depth_cap = self.depth_cap;
        options
    }
}

/// Arguments of `grail schema`.
#[derive(Debug, Args)]
pub struct SchemaCommandArgs {
    /// The schema file, or `-` for standard input.
    pub file: PathBuf,
    /// How to convert it.
    #[command(flatten)]
    pub schema: SchemaArgs,
    /// Output: the grammar as GBNF (diagnostics on stderr), or one JSON object with both.
    #[arg(long, value_enum, default_value_t = SchemaFormat::Gbnf)]
    pub format: SchemaFormat,
}

/// `--format` values of `grail schema`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SchemaFormat {
    /// GBNF on stdout.
    Gbnf,
    /// `{"ok", "grammar", "diagnostics": [{severity, code, pointer, keyword, message, help}]}`.
    Json,
}

/// Reads a schema file (`-`: standard input) and converts it: the name to show, the text
/// (for pointing diagnostics into it) and the conversion's result. Nothing is printed.
pub fn load_schema(
    path: &Path,
    args: &SchemaArgs,
) -> anyhow::Result<(String, String, Result<SchemaGrammar, SchemaError>)> {
    let options = args.options();
    options
        .validate()
        .map_err(|message| anyhow::anyhow!("{message} (--item-separator / --key-separator)"))?;
    let input = read_source(path)?;
    let text = String::from_utf8(input.bytes)
        .map_err(|_| anyhow::anyhow!("`{}` is not UTF-8, so not JSON", input.name))?;
    let result = schema_text_to_grammar(&text, &options);
    Ok((input.name, text, result))
}

/// The schema's diagnostics as rustc-style text, each pointing at its keyword in the file.
pub fn render_schema_diagnostics(
    name: &str,
    text: &str,
    diagnostics: &[SchemaDiagnostic],
) -> String {
    let rendered: Vec<Diagnostic> = diagnostics
        .iter()
        .map(|diagnostic| {
            let span = locate(text, &diagnostic.keyword_pointer())
                .or_else(|| locate(text, &diagnostic.pointer))
                .map(|(start, end)| Span::new(start, end))
                .unwrap_or_else(|| Span::empty_at(0));
            let severity = match diagnostic.severity {
                grail_schema::Severity::Error => grail_syntax::Severity::Error,
                grail_schema::Severity::Warning => grail_syntax::Severity::Warning,
                grail_schema::Severity::Note => grail_syntax::Severity::Note,
            };
            let pointer = diagnostic.keyword_pointer();
            let pointer = if pointer.is_empty() {
                "/".to_string()
            } else {
                pointer
            };
            Diagnostic::new(severity, diagnostic.code, diagnostic.message.clone(), span)
                .with_label(format!("at {pointer}"))
                .with_help(diagnostic.help.clone())
        })
        .collect();
    render_human(name, text, &rendered, stderr_wants_color())
}

/// A schema diagnostic as JSON.
pub fn diagnostic_json(diagnostic: &SchemaDiagnostic) -> serde_json::Value {
    json!({
        "severity": diagnostic.severity.to_string(),
        "code": diagnostic.code,
        "pointer": diagnostic.keyword_pointer(),
        "keyword": diagnostic.keyword,
        "message": diagnostic.message,
        "help": diagnostic.help,
    })
}

/// Runs `grail schema`.
pub fn run(args: &SchemaCommandArgs) -> anyhow::Result<ExitCode> {
    let (name, text, result) = load_schema(&args.file, &args.schema)?;
    let (grammar, diagnostics) = match result {
        Ok(converted) => (Some(converted.grammar), converted.diagnostics),
        Err(SchemaError::Refused { diagnostics }) => (None, diagnostics),
        Err(other) => {
            eprintln!("error: {name}: {other}");
            return Ok(ExitCode::from(2));
        }
    };
    let gbnf = grammar.as_ref().map(grail_grammar::print_grammar);
    match args.format {
        SchemaFormat::Gbnf => {
            eprint!("{}", render_schema_diagnostics(&name, &text, &diagnostics));
            match &gbnf {
                Some(gbnf) => print!("{gbnf}"),
                None => eprintln!("{name}: refused"),
            }
        }
        SchemaFormat::Json => {
            let output = json!({
                "ok": gbnf.is_some(),
                "grammar": gbnf,
                "diagnostics": diagnostics.iter().map(diagnostic_json).collect::<Vec<_>>(),
            });
            println!("{output}");
        }
    }
    Ok(if gbnf.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
