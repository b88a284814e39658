//! JSON Schema → grammar.
//!
//! A schema (draft 2020-12, plus the draft-04/07 spellings common in tool definitions:
//! `definitions`, array-form `items` with `additionalItems`, boolean `exclusiveMinimum`)
//! becomes a [`Grammar`] built with the grammar builder, never by string concatenation.
//! Where Grail cannot enforce a keyword exactly, the schema is refused with the JSON
//! pointer and the keyword ([`Mode::Strict`], the default), or compiled to the closest
//! superset with a warning for every weakened keyword ([`Mode::Lenient`]). Keywords that
//! carry no constraint (`title`, `description`, `default`, `examples`, `$comment`, vendor
//! `x-…`, and any keyword the specification does not define) are ignored quietly.
//!
//! ```
//! use grail_schema::{SchemaOptions, schema_to_grammar};
//! let schema = serde_json::json!({
//!     "type": "object",
//!     "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
//!     "required": ["name"],
//!     "additionalProperties": false
//! });
//! let converted = schema_to_grammar(&schema, &SchemaOptions::default()).unwrap();
//! let gbnf = grail_grammar::print_grammar(&converted.grammar);
//! assert!(gbnf.starts_with("root ::= "));
//!
//! let refused = schema_to_grammar(&serde_json::json!({"type": "array", "uniqueItems": true}), &SchemaOptions::default());
//! let diagnostics = refused.unwrap_err().diagnostics().to_vec();
//! assert_eq!(diagnostics[0].keyword_pointer(), "/uniqueItems");
//! ```
#![warn(missing_docs)]

mod calls;
mod char_automaton;
mod convert;
pub mod diagnostic;
mod direct;
mod document;
mod emit;
mod emit_array;
mod emit_object;
mod emit_string;
pub mod format;
mod format_llama;
pub mod json_text;
mod keywords;
pub mod locate;
mod meet;
pub mod numeric;
pub mod options;
pub mod pattern;
mod read;
mod resolve;
mod shape;
mod whole_types;

use grail_grammar::{Expr, Grammar, GrammarBuilder};
use serde_json::Value;

pub use calls::{Call, CallKeys, calls_to_grammar_framed};
pub use diagnostic::{SchemaDiagnostic, Severity};
pub use direct::without_direct_path;
pub use document::Mount;
pub use options::{Dialect, KeyOrder, Mode, SchemaLimits, SchemaOptions, Whitespace};

use convert::Converter;
use document::Document;
use shape::Shape;

/// A schema converted to a grammar, with what was weakened (lenient mode) or noted.
#[derive(Debug, Clone)]
pub struct SchemaGrammar {
    /// The grammar; its root is `root`.
    pub grammar: Grammar,
    /// Warnings (every weakened keyword, in lenient mode) and notes.
    pub diagnostics: Vec<SchemaDiagnostic>,
}

/// Why a schema could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema text is not JSON.
    #[error("the schema is not valid JSON: {message} (line {line}, column {column})")]
    Json {
        /// What the JSON parser said.
        message: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// The schema text is over [`SchemaLimits::max_schema_bytes`].
    #[error(
        "the schema is {size} bytes, over the limit of {limit} (SchemaLimits::max_schema_bytes)"
    )]
    TooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The schema is refused: every diagnostic, errors first.
    #[error("the schema is refused: {}", .diagnostics.first().map(ToString::to_string).unwrap_or_default())]
    Refused {
        /// The diagnostics (at least one error).
        diagnostics: Vec<SchemaDiagnostic>,
    },
}

impl SchemaError {
    /// The diagnostics of a refusal (empty for the other errors).
    pub fn diagnostics(&self) -> &[SchemaDiagnostic] {
        match self {
            SchemaError::Refused { diagnostics } => diagnostics,
            _ => &[],
        }
    }
}

/// Converts a schema given as JSON text.
pub fn schema_text_to_grammar(
    text: &str,
    options: &SchemaOptions,
) -> Result<SchemaGrammar, SchemaError> {
    if text.len() > options.limits.max_schema_bytes {
        return Err(SchemaError::TooLarge {
            size: text.len(),
            limit: options.limits.max_schema_bytes,
        });
    }
    let schema: Value = serde_json::from_str(text).map_err(|error| SchemaError::Json {
        message: error.to_string(),
        line: error.line(),
        column: error.column(),
    })?;
    schema_to_grammar(&schema, options)
}

/// Converts a schema.
pub fn schema_to_grammar(
    schema: &Value,
    options: &SchemaOptions,
) -> Result<SchemaGrammar, SchemaError> {
    convert(Document::alone(schema), options, None)
}

/// What a caller writes around a converted schema: given the builder, a reference to the
/// schema's rule and the whitespace rule (`Expr::Empty` with `Whitespace::None`), the
/// root's body.
pub type Frame<'f> = &'f mut dyn FnMut(&mut GrammarBuilder, Expr, Expr) -> Expr;

/// Converts a schema as one part of a larger grammar: the schema becomes the rule `name`,
/// and `frame` writes the root around it with the same builder, so the parts share the
/// converter's rules (`space`, `string`, …). Tool calls wrap the union of their tools'
/// schemas this way (`<tool_call>` … `</tool_call>`, several calls, free text).
///
/// `mounts` places other schema documents inside `schema` without copying them (see
/// [`Mount`]): tool calls mount each tool's arguments schema where the call's arguments
/// go. Diagnostics inside a mounted document carry the pointer of its place in `schema`.
pub fn schema_to_grammar_framed(
    schema: &Value,
    mounts: &[Mount<'_>],
    options: &SchemaOptions,
    name: &str,
    frame: Frame<'_>,
) -> Result<SchemaGrammar, SchemaError> {
    let document = Document {
        root: schema,
        mounts,
    };
    if let Err(diagnostic) = document.check_mounts() {
        return Err(SchemaError::Refused {
            diagnostics: vec![*diagnostic],
        });
    }
    convert(document, options, Some((name, frame)))
}

/// [`schema_to_grammar`], framed or not.
fn convert(
    document: Document<'_>,
    options: &SchemaOptions,
    framing: Option<(&str, Frame<'_>)>,
) -> Result<SchemaGrammar, SchemaError> {
    check_options(options)?;
    let mut converter = Converter::new(document, options);
    converter.framed_as = framing.as_ref().map(|(name, _)| name.to_string());
    // A plain root is written directly (and is no `$ref`); any other is read first, to
    // find `$ref` chains that lead nowhere.
    let document = converter.document;
    let plain_root = document
        .lookup("")
        .is_some_and(|root| converter.direct_kind(root).is_some());
    let root_shape = match plain_root {
        true => Shape::Any,
        false => converter.read(""),
    };
    if let Shape::Ref(target) = &root_shape {
        let mut seen: Vec<std::rc::Rc<str>> = vec!["".into()];
        let mut current = target.clone();
        while let Shape::Ref(next) = converter.read(&current) {
            if seen.contains(&next) || next == current {
                converter.error(
                    "ref-cycle",
                    &current,
                    Some("$ref"),
                    "these schemas refer to one another through `$ref` alone, so they allow nothing definite",
                );
                break;
            }
            seen.push(current);
            current = next;
        }
    }
    let schema_rule = converter.rule_of("");
    if let Some((_, frame)) = framing {
        converter.frame_root(schema_rule, frame);
    }
    finish(converter)
}

/// The options' own errors, as a refusal.
fn check_options(options: &SchemaOptions) -> Result<(), SchemaError> {
    options.validate().map_err(|message| SchemaError::Refused {
        diagnostics: vec![
            SchemaDiagnostic::new(Severity::Error, "option-invalid", "", None, message)
                .with_help("use `,` and `:`, or with JSON whitespace around them: `, ` and `: `"),
        ],
    })
}

/// The grammar `converter` built, or the refusal: its diagnostics once each, errors
/// first.
fn finish(mut converter: Converter<'_>) -> Result<SchemaGrammar, SchemaError> {
    let diagnostics = std::mem::take(&mut converter.diagnostics);
    // A shape combined in several places reports once.
    let mut unique: Vec<SchemaDiagnostic> = Vec::with_capacity(diagnostics.len());
    for diagnostic in diagnostics {
        if !unique.contains(&diagnostic) {
            unique.push(diagnostic);
        }
    }
    let mut diagnostics = unique;
    diagnostics.sort_by_key(|diagnostic| std::cmp::Reverse(diagnostic.severity));
    if diagnostics
        .iter()
        .any(|diagnostic| diagnostic.severity == Severity::Error)
    {
        return Err(SchemaError::Refused { diagnostics });
    }
    let grammar = converter
        .builder
        .build()
        .expect("every rule the converter declares is defined");
    Ok(SchemaGrammar {
        grammar,
        diagnostics,
    })
}
