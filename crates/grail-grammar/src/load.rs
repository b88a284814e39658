//! `load`: GBNF text to a checked grammar, the one road every caller takes (the engine's
//! `from_gbnf`, the command line, the server and the Python and Node packages). It runs
//! the full [`check`] and keeps what it says: the grammar with its warnings, or the
//! errors (each with its line and column) that stop it.

use std::fmt;

use grail_syntax::{Diagnostic, LineColumn, LineIndex, Severity};

use crate::check::{CheckOptions, check};
use crate::ir::Grammar;

/// A diagnostic with its 1-based line and column in the loaded text.
#[derive(Debug, Clone, PartialEq)]
pub struct LocatedDiagnostic {
    /// The diagnostic, as `check` reported it.
    pub diagnostic: Diagnostic,
    /// Where its primary span starts.
    pub position: LineColumn,
}

impl fmt::Display for LocatedDiagnostic {
    /// `LINE:COLUMN: message [code]`.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{}:{}: {} [{}]",
            self.position.line, self.position.column, self.diagnostic.message, self.diagnostic.code
        )
    }
}

/// A grammar that loaded: the checked IR and the warnings and notes `check` had for it.
#[derive(Debug, Clone)]
pub struct LoadedGrammar {
    /// The checked grammar, ready to compile.
    pub grammar: Grammar,
    /// The warnings and notes, in source order (none of them stops the grammar).
    pub warnings: Vec<LocatedDiagnostic>,
}

/// Why a grammar did not load: its errors, in source order, at least one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct LoadError {
    /// The errors (at most the check's diagnostic limit; `error_count` counts them all).
    pub errors: Vec<LocatedDiagnostic>,
    /// How many errors `check` found, including any it did not list.
    pub error_count: usize,
}

impl LoadError {
    /// The first error, which the one-line summary names.
    pub fn first(&self) -> Option<&LocatedDiagnostic> {
        self.errors.first()
    }
}

impl fmt::Display for LoadError {
    /// The first error as `LINE:COLUMN: message [code]`, and how many more there are.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.first() {
            Some(first) => write!(formatter, "{first}")?,
            None => write!(formatter, "the grammar is invalid")?,
        }
        let more = self.error_count.saturating_sub(1);
        match more {
            0 => Ok(()),
            1 => write!(formatter, " (and 1 more error)"),
            _ => write!(formatter, " (and {more} more errors)"),
        }
    }
}

/// Parses and checks GBNF text: the grammar and its warnings, or every error that stops
/// it, each located by line and column.
///
/// ```
/// use grail_grammar::{CheckOptions, load};
/// let loaded = load("root ::= [0-9]+\n", &CheckOptions::default()).unwrap();
/// assert!(loaded.warnings.is_empty());
/// let error = load("root ::= numbr\n", &CheckOptions::default()).unwrap_err();
/// assert_eq!(error.to_string(), "1:10: rule `numbr` is not defined [rule-undefined]");
/// ```
pub fn load(source: &str, options: &CheckOptions) -> Result<LoadedGrammar, LoadError> {
    let report = check(source, options);
    let lines = LineIndex::new(source);
    let locate = |diagnostic: Diagnostic| LocatedDiagnostic {
        position: lines.line_column(source, diagnostic.span.start),
        diagnostic,
    };
    let (errors, warnings): (Vec<Diagnostic>, Vec<Diagnostic>) = report
        .diagnostics
        .into_iter()
        .partition(|diagnostic| diagnostic.severity == Severity::Error);
    match report.grammar {
        Some(grammar) if report.error_count == 0 => Ok(LoadedGrammar {
            grammar,
            warnings: warnings.into_iter().map(locate).collect(),
        }),
        _ => Err(LoadError {
            errors: errors.into_iter().map(locate).collect(),
            error_count: report.error_count.max(1),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_grammar_keeps_its_warnings() {
        let loaded = load(
            "root ::= \"a\"\nunused ::= \"b\"\n",
            &CheckOptions::default(),
        )
        .unwrap();
        assert_eq!(loaded.warnings.len(), 1);
        assert_eq!(loaded.warnings[0].diagnostic.code, "rule-unused");
        assert_eq!(
            loaded.warnings[0].position,
            LineColumn { line: 2, column: 1 }
        );
    }

    #[test]
    fn errors_are_located_and_counted() {
        let error = load("root ::= a b\n", &CheckOptions::default()).unwrap_err();
        assert_eq!(error.error_count, 2);
        assert_eq!(error.errors.len(), 2);
        assert_eq!(
            error.errors[1].position,
            LineColumn {
                line: 1,
                column: 12
            }
        );
        assert_eq!(
            error.to_string(),
            "1:10: rule `a` is not defined [rule-undefined] (and 1 more error)"
        );
    }

    #[test]
    fn a_syntax_error_has_no_grammar() {
        let error = load("root ::= (\"a\"\n", &CheckOptions::default()).unwrap_err();
        assert!(error.error_count >= 1);
        assert!(error.first().is_some());
    }
}
