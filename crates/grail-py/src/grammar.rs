//! `Grammar`: a grammar compiled for Grail's engine, from GBNF, a JSON Schema or a tool
//! registry. Immutable; any number of matchers (in any threads) share one.

use grail_engine::{CompileOptions, CompiledGrammar};
use grail_grammar::{CheckOptions, print_grammar};
use grail_schema::{
    Dialect, KeyOrder, Mode, SchemaError as RustSchemaError, SchemaOptions, Severity, Whitespace,
};
use grail_tools::{
    CallOptions, Think, ToolChoice, ToolRegistry, ToolsError as RustToolsError, WireFormat,
    tool_call_grammar,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::{GrammarError, SchemaError, ToolsError, diagnostic_dict, with_diagnostics};
use crate::json::to_value;

/// A grammar compiled for Grail's engine (from GBNF, a JSON Schema or a tool registry).
///
/// Immutable and thread-safe: make it once, and give it to as many `Matcher`s as needed.
/// `str(grammar)` (or `.gbnf`) is the grammar as GBNF that llama.cpp accepts.
#[pyclass(module = "grail_gbnf", frozen)]
pub struct Grammar {
    pub(crate) compiled: CompiledGrammar,
    gbnf: String,
}

impl Grammar {
    fn from_ir(grammar: &grail_grammar::Grammar) -> PyResult<Grammar> {
        let compiled =
            CompiledGrammar::compile(grammar, &CompileOptions::default()).map_err(|error| {
                PyErr::new::<GrammarError, _>(format!("the grammar cannot be compiled: {error}"))
            })?;
        Ok(Grammar {
            compiled,
            gbnf: print_grammar(grammar),
        })
    }
}

#[pymethods]
impl Grammar {
    /// A grammar from GBNF text (llama.cpp's dialect), starting at rule `root`.
    ///
    /// Raises `GrammarError` with `diagnostics` (code, message, line, column, help) when
    /// the grammar does not parse or check (an undefined rule, say).
    #[staticmethod]
    #[pyo3(signature = (text, *, root = "root"))]
    fn from_gbnf(py: Python<'_>, text: &str, root: &str) -> PyResult<Grammar> {
        let options = CheckOptions {
            root: root.to_string(),
            ..CheckOptions::default()
        };
        match py.detach(|| grail_grammar::load(text, &options)) {
            Ok(loaded) => Grammar::from_ir(&loaded.grammar),
            Err(error) => {
                let mut dicts = Vec::new();
                for located in &error.errors {
                    let diagnostic = &located.diagnostic;
                    let dict = diagnostic_dict(
                        py,
                        &[
                            ("code", Some(diagnostic.code.to_string())),
                            ("message", Some(diagnostic.message.clone())),
                            ("help", diagnostic.help.clone()),
                        ],
                    )?;
                    dict.set_item("line", located.position.line)?;
                    dict.set_item("column", located.position.column)?;
                    dict.set_item("span", (diagnostic.span.start, diagnostic.span.end))?;
                    dicts.push(dict);
                }
                let message = match error.first() {
                    Some(first) => first.to_string(),
                    None => "the grammar is invalid".to_string(),
                };
                Err(with_diagnostics::<GrammarError>(py, message, dicts))
            }
        }
    }

    /// A grammar of the JSON values a JSON Schema (a dict, or JSON text) validates.
    ///
    /// Strict by default: a keyword Grail cannot enforce exactly raises `SchemaError`
    /// naming its JSON pointer and keyword; `lenient=True` weakens such keywords instead.
    /// `whitespace`: "llama" (llama.cpp's, the default), "none", "free", or a number (at
    /// most that many whitespace characters at each place). `key_order`: "schema" or
    /// "any". `additional_properties`: what objects without `additionalProperties` allow
    /// (default True, as the specification says). `llama_dialect`: read the schema as
    /// llama.cpp's converter does. `item_separator`/`key_separator`: "," and ":" with or
    /// without spaces. `depth_cap`: any JSON below this nesting level.
    #[staticmethod]
    #[pyo3(signature = (schema, *, lenient = false, whitespace = None, key_order = "schema", additional_properties = true, llama_dialect = false, item_separator = None, key_separator = None, depth_cap = None))]
    #[allow(clippy::too_many_arguments)]
    fn from_json_schema(
        py: Python<'_>,
        schema: &Bound<'_, PyAny>,
        lenient: bool,
        whitespace: Option<&Bound<'_, PyAny>>,
        key_order: &str,
        additional_properties: bool,
        llama_dialect: bool,
        item_separator: Option<String>,
        key_separator: Option<String>,
        depth_cap: Option<u32>,
    ) -> PyResult<Grammar> {
        let schema = to_value(schema, "the schema")?;
        let mut options = SchemaOptions {
            mode: if lenient { Mode::Lenient } else { Mode::Strict },
            key_order: match key_order {
                "schema" => KeyOrder::Schema,
                "any" => KeyOrder::Any,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "key_order must be \"schema\" or \"any\", not {other:?}"
                    )));
                }
            },
            additional_properties_default: additional_properties,
            dialect: if llama_dialect {
                Dialect::LlamaCpp
            } else {
                Dialect::Spec
            },
            depth_cap,
            ..SchemaOptions::default()
        };
        if let Some(whitespace) = whitespace {
            options.whitespace = match whitespace.extract::<u32>() {
                Ok(most) => Whitespace::Bounded(most),
                Err(_) => match whitespace.extract::<String>()?.as_str() {
                    "llama" => Whitespace::Llama,
                    "none" => Whitespace::None,
                    "free" => Whitespace::Free,
                    other => {
                        return Err(PyValueError::new_err(format!(
                            "whitespace must be \"llama\", \"none\", \"free\" or a number, not {other:?}"
                        )));
                    }
                },
            };
        }
        if let Some(separator) = item_separator {
            options.item_separator = separator;
        }
        if let Some(separator) = key_separator {
            options.key_separator = separator;
        }
        let converted = py.detach(|| grail_schema::schema_to_grammar(&schema, &options));
        match converted {
            Ok(converted) => Grammar::from_ir(&converted.grammar),
            Err(RustSchemaError::Refused { diagnostics }) => {
                let errors: Vec<_> = diagnostics
                    .iter()
                    .filter(|d| d.severity == Severity::Error)
                    .collect();
                let mut dicts = Vec::new();
                for diagnostic in &errors {
                    dicts.push(diagnostic_dict(
                        py,
                        &[
                            ("code", Some(diagnostic.code.to_string())),
                            ("message", Some(diagnostic.message.clone())),
                            ("pointer", Some(diagnostic.pointer.clone())),
                            ("keyword", diagnostic.keyword.clone()),
                            ("help", diagnostic.help.clone()),
                        ],
                    )?);
                }
                let message = match errors.first() {
                    Some(first) => format!(
                        "{}: {} [{}]",
                        if first.pointer.is_empty() {
                            "/"
                        } else {
                            &first.pointer
                        },
                        first.message,
                        first.code
                    ),
                    None => "the schema was refused".to_string(),
                };
                Err(with_diagnostics::<SchemaError>(py, message, dicts))
            }
            Err(other) => Err(PyErr::new::<SchemaError, _>(other.to_string())),
        }
    }

    /// The tool-call grammar of a tool registry (an OpenAI `tools` list, bare function
    /// definitions, or an MCP `tools/list` result): a tool's name fixes its arguments.
    ///
    /// `wire`: "openai" (`{"name", "arguments"}`), "tool-args", "hermes", "llama3" or
    /// "mistral". `choice`: "auto" (text or a call), "required", "none", or a tool's
    /// name. `parallel`: several calls (True: no maximum; a number: at most that many).
    /// `think`: a reasoning block first ("optional", "required" or "forced"). Raises
    /// `ToolsError` naming the tool, pointer and keyword of a schema Grail refuses.
    #[staticmethod]
    #[pyo3(signature = (tools, *, wire = "openai", choice = "auto", parallel = None, think = None))]
    fn from_tools(
        py: Python<'_>,
        tools: &Bound<'_, PyAny>,
        wire: &str,
        choice: &str,
        parallel: Option<&Bound<'_, PyAny>>,
        think: Option<&str>,
    ) -> PyResult<Grammar> {
        let (registry, options) = registry_and_options(tools, wire, choice, parallel, think)?;
        match py.detach(|| tool_call_grammar(&registry, &options)) {
            Ok(grammar) => Grammar::from_ir(&grammar.grammar),
            Err(error) => Err(tools_error(py, error)),
        }
    }

    /// The grammar as GBNF (llama.cpp accepts it).
    #[getter]
    fn gbnf(&self) -> &str {
        &self.gbnf
    }

    fn __str__(&self) -> &str {
        &self.gbnf
    }

    fn __repr__(&self) -> String {
        format!(
            "<grail_gbnf.Grammar: {} rules>",
            self.gbnf
                .lines()
                .filter(|line| line.contains("::="))
                .count()
        )
    }
}

/// A registry and call options from the Python arguments of `from_tools` and
/// `validate_call`.
pub fn registry_and_options(
    tools: &Bound<'_, PyAny>,
    wire: &str,
    choice: &str,
    parallel: Option<&Bound<'_, PyAny>>,
    think: Option<&str>,
) -> PyResult<(ToolRegistry, CallOptions)> {
    let py = tools.py();
    let value = to_value(tools, "the tools")?;
    let registry = ToolRegistry::from_value(&value).map_err(|error| tools_error(py, error))?;
    let wire = WireFormat::from_label(wire).ok_or_else(|| {
        PyValueError::new_err(format!(
            "wire must be one of {}, not {wire:?}",
            WireFormat::ALL.map(WireFormat::label).join(", ")
        ))
    })?;
    let choice: ToolChoice = choice
        .parse()
        .map_err(|error: RustToolsError| PyValueError::new_err(error.to_string()))?;
    let max_calls = match parallel {
        None => Some(1),
        Some(value) => match value.extract::<bool>() {
            Ok(true) => None,
            Ok(false) => Some(1),
            Err(_) => Some(value.extract::<u32>()?),
        },
    };
    let think: Think = think
        .unwrap_or("off")
        .parse()
        .map_err(|error: RustToolsError| PyValueError::new_err(error.to_string()))?;
    let options = CallOptions {
        wire,
        choice,
        max_calls,
        think,
        ..CallOptions::default()
    };
    Ok((registry, options))
}

/// A `ToolsError` exception from the Rust error.
pub fn tools_error(py: Python<'_>, error: RustToolsError) -> PyErr {
    match error {
        RustToolsError::SchemaRefused { refusals } => {
            let mut dicts = Vec::new();
            for (tool, diagnostic) in &refusals {
                if let Ok(dict) = diagnostic_dict(
                    py,
                    &[
                        ("tool", Some(tool.clone())),
                        ("code", Some(diagnostic.code.to_string())),
                        ("message", Some(diagnostic.message.clone())),
                        ("pointer", Some(diagnostic.pointer.clone())),
                        ("keyword", diagnostic.keyword.clone()),
                    ],
                ) {
                    dicts.push(dict);
                }
            }
            let message = match refusals.first() {
                Some((tool, diagnostic)) => format!(
                    "tool `{tool}`, at {}: {}",
                    if diagnostic.pointer.is_empty() {
                        "/"
                    } else {
                        &diagnostic.pointer
                    },
                    diagnostic.message
                ),
                None => "a tool's schema was refused".to_string(),
            };
            with_diagnostics::<ToolsError>(py, message, dicts)
        }
        other => PyErr::new::<ToolsError, _>(other.to_string()),
    }
}
