//! A conversion's outcome as comparable text, and JSON files read for the tests that
//! compare two ways of converting (`calls_route.rs`).

#![allow(dead_code)]

use std::path::Path;

use grail_grammar::print_grammar;
use grail_schema::{SchemaError, SchemaGrammar};
use serde_json::Value;

/// The grammar (or that it was refused) and every diagnostic. Diagnostics are sorted: one
/// way may find two of one severity in another order than the other.
pub fn outcome_text(result: Result<SchemaGrammar, SchemaError>) -> String {
    let (grammar, diagnostics) = match result {
        Ok(converted) => (print_grammar(&converted.grammar), converted.diagnostics),
        Err(SchemaError::Refused { diagnostics }) => ("refused".to_string(), diagnostics),
        Err(error) => (format!("refused: {error:?}"), Vec::new()),
    };
    let mut diagnostics: Vec<String> = diagnostics
        .iter()
        .map(|diagnostic| format!("{diagnostic:?}"))
        .collect();
    diagnostics.sort();
    format!("{grammar}\n{}", diagnostics.join("\n"))
}

/// The JSON of a test file (panics naming the file when it cannot be read).
pub fn read_json(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}
