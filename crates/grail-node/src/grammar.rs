//! `Grammar`: a grammar compiled for Grail's engine, from GBNF, a JSON Schema or a tool
//! registry. Immutable; any number of matchers share one.
//!
//! The factories (`compileGbnf`, `compileJsonSchema`, `compileTools`) return the grammar
//! or a [`Failure`]; `index.js` exposes them as `Grammar.fromGbnf` and friends, throwing
//! the failure as an exception.

use grail_engine::{CompileOptions, CompiledGrammar};
use grail_grammar::{CheckOptions, print_grammar};
use grail_schema::{
    Dialect, KeyOrder, Mode, SchemaError as RustSchemaError, SchemaOptions, Severity, Whitespace,
};
use grail_tools::{
    CallOptions, Think, ToolChoice, ToolRegistry, ToolsError as RustToolsError, WireFormat,
    tool_call_grammar,
};
use napi::Either;
use napi_derive::napi;

use crate::check::parse_target;
use crate::errors::{DiagnosticObject, Failure, invalid, utf16_index};
use crate::vocabulary::Vocabulary;

/// A grammar compiled for Grail's engine (from GBNF, a JSON Schema or a tool registry).
/// Immutable: make it once, and give it to as many matchers and states as needed.
#[napi]
pub struct Grammar {
    pub(crate) compiled: CompiledGrammar,
    /// The grammar as GBNF (the source text for a GBNF grammar, printed otherwise).
    gbnf: String,
}

impl Grammar {
    /// Compiles checked IR, resolving tokens written as text in `vocabulary`.
    fn from_ir(
        grammar: &grail_grammar::Grammar,
        gbnf: String,
        vocabulary: Option<&Vocabulary>,
    ) -> Result<Grammar, String> {
        let resolve = |text: &str| {
            vocabulary.and_then(|vocabulary| vocabulary.index.vocabulary().id_of_text(text))
        };
        let options = CompileOptions {
            resolve_token_text: Some(&resolve),
            ..CompileOptions::default()
        };
        let compiled = CompiledGrammar::compile(grammar, &options)
            .map_err(|error| format!("the grammar cannot be compiled: {error}"))?;
        Ok(Grammar { compiled, gbnf })
    }
}

#[napi]
impl Grammar {
    /// The grammar as GBNF text (llama.cpp reads it).
    #[napi(getter)]
    pub fn gbnf(&self) -> String {
        self.gbnf.clone()
    }

    /// The grammar as GBNF text.
    #[napi(js_name = "toString")]
    pub fn to_js_string(&self) -> String {
        self.gbnf.clone()
    }
}

/// Options of a GBNF grammar.
#[napi(object)]
pub struct GbnfOptions {
    /// The start rule (default `root`).
    pub root: Option<String>,
    /// `grail` (the default: what Grail's engine runs, a superset of llama.cpp's
    /// grammars) or `llama.cpp` (refuse exactly what llama.cpp refuses: its rule budget,
    /// its repetition limits, left recursion).
    pub target: Option<String>,
}

/// A failure for a grammar that could not be compiled after it checked.
fn compile_failure(kind: &str, message: String) -> Failure {
    Failure {
        kind: kind.to_string(),
        reason: message.clone(),
        message: message.clone(),
        pos: None,
        diagnostics: vec![DiagnosticObject::bare("error", "compile", message)],
    }
}

/// Checks and compiles GBNF text (llama.cpp's dialect): the grammar, or a failure with
/// every error diagnostic (code, message, line, column, span) and the JavaScript index of
/// the first. Tokens written as text (`<think>`) are resolved in `vocabulary`.
#[napi]
pub fn compile_gbnf(
    text: String,
    options: Option<GbnfOptions>,
    vocabulary: Option<&Vocabulary>,
) -> napi::Result<Either<Grammar, Failure>> {
    let (root, target) = match options {
        Some(options) => (options.root, options.target),
        None => (None, None),
    };
    let target = parse_target(target.as_deref())?;
    let check_options = CheckOptions {
        root: root.unwrap_or_else(|| "root".to_string()),
        target,
        ..CheckOptions::default()
    };
    Ok(match grail_grammar::load(&text, &check_options) {
        Ok(loaded) => match Grammar::from_ir(&loaded.grammar, text.clone(), vocabulary) {
            Ok(grammar) => Either::A(grammar),
            Err(message) => Either::B(compile_failure("grammar", message)),
        },
        Err(error) => {
            let diagnostics: Vec<DiagnosticObject> = error
                .errors
                .iter()
                .map(|located| DiagnosticObject::located(&located.diagnostic, located.position))
                .collect();
            let (reason, pos) = match error.first() {
                Some(first) => (
                    first.diagnostic.message.clone(),
                    utf16_index(&text, first.diagnostic.span.start as usize),
                ),
                None => ("the grammar is invalid".to_string(), 0),
            };
            let message = match error.first() {
                Some(first) => first.to_string(),
                None => "the grammar is invalid".to_string(),
            };
            Either::B(Failure {
                kind: "grammar".to_string(),
                message,
                reason,
                pos: Some(pos),
                diagnostics,
            })
        }
    })
}

/// How a JSON Schema becomes a grammar (all optional; the defaults are Grail's).
#[napi(object)]
pub struct JsonSchemaOptions {
    /// Weaken keywords Grail cannot enforce exactly instead of refusing the schema.
    pub lenient: Option<bool>,
    /// `llama` (llama.cpp's, the default), `none`, `free`, or a number: at most that many
    /// whitespace characters at each place.
    pub whitespace: Option<Either<String, u32>>,
    /// `schema` (the default) or `any`.
    pub key_order: Option<String>,
    /// What objects without `additionalProperties` allow (default true, as the
    /// specification says).
    pub additional_properties: Option<bool>,
    /// Read the schema as llama.cpp's converter does.
    pub llama_dialect: Option<bool>,
    /// The separator between items (default `,` with llama.cpp's spacing).
    pub item_separator: Option<String>,
    /// The separator between a key and its value.
    pub key_separator: Option<String>,
    /// Any JSON below this nesting level.
    pub depth_cap: Option<u32>,
}

fn schema_options(options: Option<JsonSchemaOptions>) -> napi::Result<SchemaOptions> {
    let mut result = SchemaOptions::default();
    let Some(options) = options else {
        return Ok(result);
    };
    if options.lenient == Some(true) {
        result.mode = Mode::Lenient;
    }
    if let Some(order) = options.key_order {
        result.key_order = match order.as_str() {
            "schema" => KeyOrder::Schema,
            "any" => KeyOrder::Any,
            other => {
                return Err(invalid(format!(
                    "keyOrder must be \"schema\" or \"any\", not {other:?}"
                )));
            }
        };
    }
    if let Some(additional) = options.additional_properties {
        result.additional_properties_default = additional;
    }
    if options.llama_dialect == Some(true) {
        result.dialect = Dialect::LlamaCpp;
    }
    result.depth_cap = options.depth_cap;
    if let Some(whitespace) = options.whitespace {
        result.whitespace = match whitespace {
            Either::B(most) => Whitespace::Bounded(most),
            Either::A(name) => match name.as_str() {
                "llama" => Whitespace::Llama,
                "none" => Whitespace::None,
                "free" => Whitespace::Free,
                other => {
                    return Err(invalid(format!(
                        "whitespace must be \"llama\", \"none\", \"free\" or a number, not {other:?}"
                    )));
                }
            },
        };
    }
    if let Some(separator) = options.item_separator {
        result.item_separator = separator;
    }
    if let Some(separator) = options.key_separator {
        result.key_separator = separator;
    }
    Ok(result)
}

fn parse_json(text: &str, what: &str) -> napi::Result<serde_json::Value> {
    serde_json::from_str(text)
        .map_err(|error| invalid(format!("{what} is not valid JSON: {error}")))
}

/// The grammar of the JSON values a JSON Schema (JSON text) validates, or a failure
/// naming the JSON pointer and keyword Grail refuses (strict by default).
#[napi]
pub fn compile_json_schema(
    schema: String,
    options: Option<JsonSchemaOptions>,
) -> napi::Result<Either<Grammar, Failure>> {
    let schema = parse_json(&schema, "the schema")?;
    let options = schema_options(options)?;
    Ok(match grail_schema::schema_to_grammar(&schema, &options) {
        Ok(converted) => {
            let gbnf = print_grammar(&converted.grammar);
            match Grammar::from_ir(&converted.grammar, gbnf, None) {
                Ok(grammar) => Either::A(grammar),
                Err(message) => Either::B(compile_failure("schema", message)),
            }
        }
        Err(RustSchemaError::Refused { diagnostics }) => {
            let errors: Vec<DiagnosticObject> = diagnostics
                .iter()
                .filter(|diagnostic| diagnostic.severity == Severity::Error)
                .map(|diagnostic| DiagnosticObject {
                    help: diagnostic.help.clone(),
                    pointer: Some(diagnostic.pointer.clone()),
                    keyword: diagnostic.keyword.clone(),
                    ..DiagnosticObject::bare("error", diagnostic.code, diagnostic.message.clone())
                })
                .collect();
            let (message, reason) = match errors.first() {
                Some(first) => {
                    let pointer = first.pointer.as_deref().unwrap_or_default();
                    (
                        format!(
                            "{}: {} [{}]",
                            if pointer.is_empty() { "/" } else { pointer },
                            first.message,
                            first.code
                        ),
                        first.message.clone(),
                    )
                }
                None => (
                    "the schema was refused".to_string(),
                    "the schema was refused".to_string(),
                ),
            };
            Either::B(Failure {
                kind: "schema".to_string(),
                message,
                reason,
                pos: None,
                diagnostics: errors,
            })
        }
        Err(other) => Either::B(compile_failure("schema", other.to_string())),
    })
}

/// How tool calls are framed and chosen (all optional).
#[napi(object)]
pub struct ToolsOptions {
    /// `openai` (the default: `{"name", "arguments"}`), `tool-args`, `hermes`, `llama3`
    /// or `mistral`.
    pub wire: Option<String>,
    /// `auto` (the default: text or a call), `required`, `none`, or a tool's name.
    pub choice: Option<String>,
    /// Several calls: true for no maximum, a number for at most that many.
    pub parallel: Option<Either<bool, u32>>,
    /// A reasoning block first: `optional`, `required` or `forced`.
    pub think: Option<String>,
}

/// A registry (JSON text) and call options.
pub fn registry_and_options(
    tools: &str,
    options: Option<ToolsOptions>,
) -> napi::Result<Result<(ToolRegistry, CallOptions), Failure>> {
    let value = parse_json(tools, "the tools")?;
    let registry = match ToolRegistry::from_value(&value) {
        Ok(registry) => registry,
        Err(error) => return Ok(Err(tools_failure(error))),
    };
    let options = options.unwrap_or(ToolsOptions {
        wire: None,
        choice: None,
        parallel: None,
        think: None,
    });
    let wire_label = options.wire.as_deref().unwrap_or("openai");
    let wire = WireFormat::from_label(wire_label).ok_or_else(|| {
        invalid(format!(
            "wire must be one of {}, not {wire_label:?}",
            WireFormat::ALL.map(WireFormat::label).join(", ")
        ))
    })?;
    let choice: ToolChoice = options
        .choice
        .as_deref()
        .unwrap_or("auto")
        .parse()
        .map_err(|error: grail_tools::ToolsError| invalid(error.to_string()))?;
    let max_calls = match options.parallel {
        None | Some(Either::A(false)) => Some(1),
        Some(Either::A(true)) => None,
        Some(Either::B(most)) => Some(most),
    };
    let think: Think = options
        .think
        .as_deref()
        .unwrap_or("off")
        .parse()
        .map_err(|error: grail_tools::ToolsError| invalid(error.to_string()))?;
    Ok(Ok((
        registry,
        CallOptions {
            wire,
            choice,
            max_calls,
            think,
            ..CallOptions::default()
        },
    )))
}

/// A failure from a tools error.
pub fn tools_failure(error: RustToolsError) -> Failure {
    match error {
        RustToolsError::SchemaRefused { refusals } => {
            let diagnostics: Vec<DiagnosticObject> = refusals
                .iter()
                .map(|(tool, diagnostic)| DiagnosticObject {
                    tool: Some(tool.clone()),
                    pointer: Some(diagnostic.pointer.clone()),
                    keyword: diagnostic.keyword.clone(),
                    help: diagnostic.help.clone(),
                    ..DiagnosticObject::bare("error", diagnostic.code, diagnostic.message.clone())
                })
                .collect();
            let (message, reason) = match refusals.first() {
                Some((tool, diagnostic)) => (
                    format!(
                        "tool `{tool}`, at {}: {}",
                        if diagnostic.pointer.is_empty() {
                            "/"
                        } else {
                            &diagnostic.pointer
                        },
                        diagnostic.message
                    ),
                    diagnostic.message.clone(),
                ),
                None => (
                    "a tool's schema was refused".to_string(),
                    "a tool's schema was refused".to_string(),
                ),
            };
            Failure {
                kind: "tools".to_string(),
                message,
                reason,
                pos: None,
                diagnostics,
            }
        }
        other => {
            let message = other.to_string();
            Failure {
                kind: "tools".to_string(),
                reason: message.clone(),
                message: message.clone(),
                pos: None,
                diagnostics: vec![DiagnosticObject::bare("error", "tools", message)],
            }
        }
    }
}

/// The tool-call grammar of a tool registry (JSON text: an OpenAI `tools` list, bare
/// function definitions, or an MCP `tools/list` result), or a failure naming the tool,
/// pointer and keyword Grail refuses.
#[napi]
pub fn compile_tools(
    tools: String,
    options: Option<ToolsOptions>,
) -> napi::Result<Either<Grammar, Failure>> {
    let (registry, options) = match registry_and_options(&tools, options)? {
        Ok(pair) => pair,
        Err(failure) => return Ok(Either::B(failure)),
    };
    Ok(match tool_call_grammar(&registry, &options) {
        Ok(grammar) => {
            let gbnf = print_grammar(&grammar.grammar);
            match Grammar::from_ir(&grammar.grammar, gbnf, None) {
                Ok(grammar) => Either::A(grammar),
                Err(message) => Either::B(compile_failure("tools", message)),
            }
        }
        Err(error) => Either::B(tools_failure(error)),
    })
}
