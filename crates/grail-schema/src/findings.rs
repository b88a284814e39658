//! What one conversion found: every diagnostic of reading, combining and emitting, in the
//! order found, and the refusal or warnings they make at the end.

use crate::diagnostic::{SchemaDiagnostic, Severity};
use crate::options::Mode;

/// The diagnostics of one conversion so far.
pub(crate) struct Findings {
    /// Strict mode refuses a keyword Grail cannot enforce; lenient mode weakens it.
    mode: Mode,
    /// In the order found.
    found: Vec<SchemaDiagnostic>,
}

impl Findings {
    /// None yet, under `mode`.
    pub(crate) fn new(mode: Mode) -> Findings {
        Findings {
            mode,
            found: Vec::new(),
        }
    }

    /// Reports a keyword Grail cannot enforce exactly: an error in strict mode, a warning
    /// that the grammar is weaker in lenient mode (the caller then drops the constraint).
    pub(crate) fn unsupported(&mut self, pointer: &str, keyword: &str, reason: impl Into<String>) {
        let reason = reason.into();
        let diagnostic = match self.mode {
            Mode::Strict => SchemaDiagnostic::new(
                Severity::Error,
                "keyword-unsupported",
                pointer,
                Some(keyword),
                format!("`{keyword}` cannot be enforced exactly: {reason}"),
            )
            .with_help(
                "simplify the schema there, or compile leniently (`--lenient`) to drop the constraint with a warning",
            ),
            Mode::Lenient => SchemaDiagnostic::new(
                Severity::Warning,
                "keyword-weakened",
                pointer,
                Some(keyword),
                format!("`{keyword}` is not enforced: {reason}"),
            )
            .with_help("the grammar allows more than the schema here"),
        };
        self.found.push(diagnostic);
    }

    /// Reports an error that refuses the schema in every mode (an invalid schema, a limit).
    pub(crate) fn error(
        &mut self,
        code: &'static str,
        pointer: &str,
        keyword: Option<&str>,
        message: impl Into<String>,
    ) {
        self.found.push(SchemaDiagnostic::new(
            Severity::Error,
            code,
            pointer,
            keyword,
            message,
        ));
    }

    /// Reports any other finding.
    pub(crate) fn push(&mut self, diagnostic: SchemaDiagnostic) {
        self.found.push(diagnostic);
    }

    /// How many findings there are so far.
    pub(crate) fn count(&self) -> usize {
        self.found.len()
    }

    /// Whether a finding with this code was reported.
    pub(crate) fn has_code(&self, code: &str) -> bool {
        self.found.iter().any(|diagnostic| diagnostic.code == code)
    }

    /// Every finding once (a shape combined in several places reports once), errors
    /// first, then warnings, then notes, each in the order found.
    pub(crate) fn into_sorted(self) -> Vec<SchemaDiagnostic> {
        let mut unique: Vec<SchemaDiagnostic> = Vec::with_capacity(self.found.len());
        for diagnostic in self.found {
            if !unique.contains(&diagnostic) {
                unique.push(diagnostic);
            }
        }
        unique.sort_by_key(|diagnostic| std::cmp::Reverse(diagnostic.severity));
        unique
    }
}
