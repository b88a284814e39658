//! Why a registry, a grammar or an option could not be made.

use grail_schema::SchemaDiagnostic;

/// An error of the tool-calling layer, as data.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolsError {
    /// The registry text is not JSON.
    #[error("the tool registry is not valid JSON: {message} (line {line}, column {column})")]
    Json {
        /// What the JSON parser said.
        message: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// The registry is not a list of tools Grail can read.
    #[error("tool registry at {}: {message}", display_pointer(.pointer))]
    Registry {
        /// JSON pointer into the registry.
        pointer: String,
        /// What is wrong there.
        message: String,
    },
    /// Some tools' argument schemas are refused (strict mode): every diagnostic, with
    /// the tool it belongs to.
    #[error("{}", refusal_summary(.refusals))]
    SchemaRefused {
        /// (tool name, diagnostic with its pointer inside that tool's schema).
        refusals: Vec<(String, SchemaDiagnostic)>,
    },
    /// The options contradict the registry or each other.
    #[error("{0}")]
    Options(String),
}

fn display_pointer(pointer: &str) -> &str {
    if pointer.is_empty() {
        "the top"
    } else {
        pointer
    }
}

fn refusal_summary(refusals: &[(String, SchemaDiagnostic)]) -> String {
    match refusals.first() {
        Some((tool, diagnostic)) => format!(
            "the arguments' schema of tool `{tool}` is refused at {}: {}{}",
            display_pointer(&diagnostic.keyword_pointer()),
            diagnostic.message,
            match refusals.len() {
                1 => String::new(),
                more => format!(" (and {} more)", more - 1),
            }
        ),
        None => "a tool's schema is refused".into(),
    }
}
