//! What a conversion gives: the grammar with its warnings, or why not; and what a caller
//! writes around a schema converted as part of a larger grammar.

use grail_grammar::{Expr, Grammar, GrammarBuilder};

use crate::diagnostic::{SchemaDiagnostic, Severity};
use crate::findings::Findings;
#[cfg(doc)]
use crate::options::SchemaLimits;
use crate::options::SchemaOptions;

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

/// What a caller writes around a converted schema: given the builder, a reference to the
/// schema's rule and the whitespace rule (`Expr::Empty` with `Whitespace::None`), the
/// root's body.
pub type Frame<'f> = &'f mut dyn FnMut(&mut GrammarBuilder, Expr, Expr) -> Expr;

/// The options' own errors, as a refusal.
pub(crate) fn check_options(options: &SchemaOptions) -> Result<(), SchemaError> {
    options.validate().map_err(|message| SchemaError::Refused {
        diagnostics: vec![
            SchemaDiagnostic::new(Severity::Error, "option-invalid", "", None, message)
                .with_help("use `,` and `:`, or with JSON whitespace around them: `, ` and `: `"),
        ],
    })
}

/// The grammar `builder` holds, with the warnings and notes of `findings`; or the
/// refusal, when one of them is an error.
pub(crate) fn finish(
    findings: Findings,
    builder: GrammarBuilder,
) -> Result<SchemaGrammar, SchemaError> {
    let diagnostics = findings.into_sorted();
    if diagnostics
        .iter()
        .any(|diagnostic| diagnostic.severity == Severity::Error)
    {
        return Err(SchemaError::Refused { diagnostics });
    }
    let grammar = builder
        .build()
        .expect("every rule the converter declares is defined");
    Ok(SchemaGrammar {
        grammar,
        diagnostics,
    })
}
