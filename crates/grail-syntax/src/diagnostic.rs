//! Diagnostics as data: what went wrong, where, and how to fix it. Only front ends render them.

use crate::span::Span;

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Information that changes nothing (for example, a portability remark for another engine).
    Note,
    /// The grammar is accepted, but something is likely wrong.
    Warning,
    /// The grammar is refused.
    Error,
}

impl Severity {
    /// The lowercase name used in JSON output: `error`, `warning` or `note`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl std::fmt::Display for Severity {
    /// The lowercase name, as [`Severity::as_str`].
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A secondary location shown with a diagnostic, with a short label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// Where.
    pub span: Span,
    /// What is there, in a few words.
    pub message: String,
}

/// One finding about a grammar, ready to render: severity, a stable code, a message,
/// the primary span, secondary labels and an optional help line with the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error, warning or note.
    pub severity: Severity,
    /// A stable kebab-case identifier, such as `rule-undefined`; tools match on it.
    pub code: &'static str,
    /// What is wrong, in one sentence.
    pub message: String,
    /// The primary location.
    pub span: Span,
    /// A short label under the primary location's caret.
    pub label: Option<String>,
    /// Other locations that explain the finding.
    pub related: Vec<Label>,
    /// How to fix it, when there is a known fix.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic with no label, related spans or help.
    pub fn new(
        severity: Severity,
        code: &'static str,
        message: impl Into<String>,
        span: Span,
    ) -> Diagnostic {
        Diagnostic {
            severity,
            code,
            message: message.into(),
            span,
            label: None,
            related: Vec::new(),
            help: None,
        }
    }

    /// Sets the label under the primary caret.
    pub fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = Some(label.into());
        self
    }

    /// Adds a secondary location.
    pub fn with_related(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.related.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    /// Sets the help line.
    pub fn with_help(mut self, help: Option<String>) -> Diagnostic {
        self.help = help;
        self
    }
}
