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
pub mod diagnostic;
mod document;
mod emit;
mod findings;
pub mod format;
mod format_llama;
pub mod json_text;
mod keywords;
pub mod locate;
mod meet;
pub mod numeric;
pub mod options;
mod outcome;
pub mod pattern;
mod pointer;
mod read;
mod resolve;
mod shape;
mod whole_types;

use serde_json::Value;

pub use calls::{
    ArgumentRules, Call, CallKeys, WriteCall, calls_to_grammar_framed,
    named_calls_to_grammar_framed,
};
pub use diagnostic::{SchemaDiagnostic, Severity};
pub use document::Mount;
pub use options::{Dialect, KeyOrder, Literals, Mode, SchemaLimits, SchemaOptions, Whitespace};
pub use outcome::{Frame, SchemaError, SchemaGrammar};

use document::Document;
use emit::Emitter;
use outcome::check_options;
use read::Reader;
use shape::Shape;

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

/// [`schema_to_grammar`], framed or not: the pipeline. The reader reads the root (and,
/// through the simplifier, what it combines); the emitter writes the root's rule, reading
/// each location it refers to as it goes.
fn convert(
    document: Document<'_>,
    options: &SchemaOptions,
    framing: Option<(&str, Frame<'_>)>,
) -> Result<SchemaGrammar, SchemaError> {
    check_options(options)?;
    let mut reader = Reader::new(document, options);
    // The root is read first, to find `$ref` chains that lead nowhere.
    if let Shape::Ref(target) = reader.read("") {
        let mut seen: Vec<std::rc::Rc<str>> = vec!["".into()];
        let mut current = target;
        while let Shape::Ref(next) = reader.read(&current) {
            if seen.contains(&next) || next == current {
                reader.findings().error(
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
    let schema_rule_name = framing.as_ref().map(|(name, _)| name.to_string());
    let mut emitter = Emitter::new(reader, options, schema_rule_name);
    let schema_rule = emitter.rule_of("");
    if let Some((_, frame)) = framing {
        emitter.frame_root(schema_rule, frame);
    }
    emitter.finish()
}
