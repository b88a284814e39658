//! Findings about a schema, as data: where (a JSON pointer and a keyword), what, and how
//! to fix it.

use std::borrow::Cow;
use std::fmt;

/// How serious a finding is: the severity of every diagnostic in Grail, GBNF's included.
pub use grail_syntax::Severity;

/// One finding about a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaDiagnostic {
    /// How serious it is.
    pub severity: Severity,
    /// A stable kebab-case code (`keyword-unsupported`, `ref-unresolved`, ...).
    pub code: &'static str,
    /// The JSON pointer of the schema object concerned (`/properties/tags`), `""` for the
    /// root.
    pub pointer: String,
    /// The keyword concerned (`uniqueItems`), if one.
    pub keyword: Option<String>,
    /// What was found.
    pub message: String,
    /// How to fix it, if there is a known way.
    pub help: Option<String>,
}

impl SchemaDiagnostic {
    /// A finding without help.
    pub fn new(
        severity: Severity,
        code: &'static str,
        pointer: &str,
        keyword: Option<&str>,
        message: impl Into<String>,
    ) -> SchemaDiagnostic {
        SchemaDiagnostic {
            severity,
            code,
            pointer: pointer.to_string(),
            keyword: keyword.map(str::to_string),
            message: message.into(),
            help: None,
        }
    }

    /// Adds how to fix it.
    pub fn with_help(mut self, help: impl Into<String>) -> SchemaDiagnostic {
        self.help = Some(help.into());
        self
    }

    /// The full pointer of the keyword (`/properties/tags/uniqueItems`).
    pub fn keyword_pointer(&self) -> String {
        match &self.keyword {
            Some(keyword) => format!("{}/{}", self.pointer, escape_pointer_token(keyword)),
            None => self.pointer.clone(),
        }
    }
}

impl fmt::Display for SchemaDiagnostic {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.keyword_pointer();
        let at = if at.is_empty() { "/" } else { at.as_str() };
        write!(
            formatter,
            "{}[{}] at {at}: {}",
            self.severity, self.code, self.message
        )?;
        if let Some(help) = &self.help {
            write!(formatter, " (help: {help})")?;
        }
        Ok(())
    }
}

/// A reference token of a JSON pointer, with `~` and `/` escaped (RFC 6901).
/// Borrowed when there is nothing to escape (nearly always: schema keywords and property
/// names), so building a pointer allocates once.
pub fn escape_pointer_token(token: &str) -> Cow<'_, str> {
    if token.contains(['~', '/']) {
        Cow::Owned(token.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_tokens_escape_tilde_then_slash_and_borrow_otherwise() {
        assert_eq!(escape_pointer_token("a~/b"), "a~0~1b");
        assert_eq!(escape_pointer_token("~1"), "~01");
        assert!(matches!(
            escape_pointer_token("plain"),
            Cow::Borrowed("plain")
        ));
    }
}
