//! The `pattern` keyword (temporary interface; the real module is being written).
use grail_grammar::Expr;

/// Why a pattern has no exact grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    /// Not a valid regular expression.
    #[error("{message}")]
    Syntax { message: String, offset: usize },
    /// A feature a grammar cannot express exactly.
    #[error("{feature} is not supported")]
    Unsupported { feature: String, offset: usize },
}

/// The strings a `pattern` matches, as JSON-encoded characters.
pub fn pattern_expr(_pattern: &str) -> Result<Expr, PatternError> {
    Err(PatternError::Unsupported {
        feature: "patterns".into(),
        offset: 0,
    })
}

/// Least and greatest character counts of the strings the pattern matches.
pub fn pattern_char_lengths(_pattern: &str) -> Result<(u64, Option<u64>), PatternError> {
    Err(PatternError::Unsupported {
        feature: "patterns".into(),
        offset: 0,
    })
}
