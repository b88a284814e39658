//! Syntax errors: every way GBNF text can be malformed, as data.

use crate::diagnostic::{Diagnostic, Severity};
use crate::dialect::Dialect;
use crate::span::Span;

/// What is wrong with the grammar text at some span.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SyntaxError {
    /// A rule must start with its name.
    #[error("expected a rule name, found {found}")]
    RuleNameExpected {
        /// A description of what was found.
        found: String,
    },
    /// A name contains `_`, which GBNF does not allow. Reported once per name, at its
    /// first use.
    #[error("rule names cannot contain '_': `{name}`")]
    RuleNameUnderscore {
        /// The name as written, underscores included.
        name: String,
        /// How many times the name is written (definitions and uses).
        uses: usize,
    },
    /// A line starts with `|`, but the rule before it ended at the line break.
    #[error("this line starts with `|`, but the rule before it ended at the line break")]
    LineStartsWithBar,
    /// The text does not parse and reads like another grammar notation (Lark, W3C EBNF,
    /// ISO EBNF); this replaces the first error, at the first sign of that notation.
    #[error("this looks like {}, not GBNF", dialect.name())]
    OtherDialect {
        /// The notation it reads like.
        dialect: Dialect,
    },
    /// `::=` must follow a rule's name.
    #[error("expected `::=` after the rule name")]
    DefinitionExpected,
    /// Something follows a complete rule on its line.
    #[error("expected the end of the line after this rule, found {found}")]
    RuleEndExpected {
        /// A description of what was found.
        found: String,
    },
    /// A `)` with no open group.
    #[error("unmatched `)`")]
    GroupUnmatchedClose,
    /// A group was not closed.
    #[error("expected `)` to close the group, found {found}")]
    GroupUnclosed {
        /// A description of what was found instead.
        found: String,
    },
    /// A string literal reaches the end of the input.
    #[error("unterminated string literal")]
    LiteralUnterminated,
    /// A character class reaches the end of the input.
    #[error("unterminated character class")]
    ClassUnterminated,
    /// A backslash escape GBNF does not know.
    #[error("unknown escape `\\{escape}`")]
    EscapeUnknown {
        /// The character after the backslash.
        escape: char,
    },
    /// `\x`, `\u` or `\U` without enough hex digits.
    #[error("`\\{prefix}` needs exactly {digits} hex digits")]
    EscapeHexDigits {
        /// `x`, `u` or `U`.
        prefix: char,
        /// How many digits it needs: 2, 4 or 8.
        digits: usize,
    },
    /// A quantifier with nothing before it.
    #[error("`{quantifier}` has nothing to repeat")]
    QuantifierWithoutItem {
        /// The quantifier's first character.
        quantifier: char,
    },
    /// `{` not followed by a number.
    #[error("expected a number after `{{`")]
    RepetitionCountExpected,
    /// `{m` not followed by `}` or `,`; or `{m,n` not followed by `}`.
    #[error("expected {expected} in the repetition, found {found}")]
    RepetitionUnclosed {
        /// What could come next.
        expected: &'static str,
        /// A description of what was found.
        found: String,
    },
    /// A repetition count that does not fit in 64 bits.
    #[error("repetition count is too large")]
    RepetitionCountOverflow,
    /// A malformed token element.
    #[error("malformed token: expected {expected}")]
    TokenMalformed {
        /// What was expected.
        expected: &'static str,
    },
    /// A token id that does not fit in 32 bits.
    #[error("token id is too large (the maximum is {})", u32::MAX)]
    TokenIdOverflow,
    /// `!` must be followed by a token element.
    #[error("expected `<` after `!`: only tokens can be negated this way")]
    TokenNegationWithoutToken,
    /// Groups or stacked quantifiers nested deeper than the limit.
    #[error("nesting is deeper than the limit of {limit}")]
    NestingTooDeep {
        /// The limit in force ([`crate::ParseLimits::max_nesting_depth`]).
        limit: u32,
    },
    /// A NUL byte, which llama.cpp reads as the end of the grammar.
    #[error("NUL byte in the grammar")]
    NulByte,
    /// The source is larger than the limit.
    #[error("grammar is {size} bytes; the limit is {limit} bytes")]
    SourceTooLarge {
        /// The source size in bytes.
        size: usize,
        /// The limit in force ([`crate::ParseLimits::max_source_bytes`]).
        limit: usize,
    },
    /// The text is not valid UTF-8.
    #[error("grammar is not valid UTF-8")]
    InvalidUtf8,
}

impl SyntaxError {
    /// The stable kebab-case code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            SyntaxError::RuleNameExpected { .. } => "rule-name-expected",
            SyntaxError::RuleNameUnderscore { .. } => "rule-name-underscore",
            SyntaxError::LineStartsWithBar => "line-starts-with-bar",
            SyntaxError::OtherDialect { .. } => "other-dialect",
            SyntaxError::DefinitionExpected => "definition-expected",
            SyntaxError::RuleEndExpected { .. } => "rule-end-expected",
            SyntaxError::GroupUnmatchedClose => "group-unmatched-close",
            SyntaxError::GroupUnclosed { .. } => "group-unclosed",
            SyntaxError::LiteralUnterminated => "literal-unterminated",
            SyntaxError::ClassUnterminated => "class-unterminated",
            SyntaxError::EscapeUnknown { .. } => "escape-unknown",
            SyntaxError::EscapeHexDigits { .. } => "escape-hex-digits",
            SyntaxError::QuantifierWithoutItem { .. } => "quantifier-without-item",
            SyntaxError::RepetitionCountExpected => "repetition-count-expected",
            SyntaxError::RepetitionUnclosed { .. } => "repetition-unclosed",
            SyntaxError::RepetitionCountOverflow => "repetition-count-overflow",
            SyntaxError::TokenMalformed { .. } => "token-malformed",
            SyntaxError::TokenIdOverflow => "token-id-overflow",
            SyntaxError::TokenNegationWithoutToken => "token-negation-without-token",
            SyntaxError::NestingTooDeep { .. } => "nesting-too-deep",
            SyntaxError::NulByte => "nul-byte",
            SyntaxError::SourceTooLarge { .. } => "source-too-large",
            SyntaxError::InvalidUtf8 => "invalid-utf8",
        }
    }

    /// How to fix it, where there is a known fix.
    pub fn help(&self) -> Option<String> {
        Some(match self {
            SyntaxError::RuleNameExpected { .. } => {
                "a rule is written `name ::= ...`; names use ASCII letters, digits and '-'".into()
            }
            SyntaxError::RuleNameUnderscore { name, uses: 1 } => format!(
                "rule names cannot contain '_'; try `{}` (`grail fix` renames it)",
                name.replace('_', "-")
            ),
            SyntaxError::RuleNameUnderscore { name, uses } => format!(
                "rule names cannot contain '_'; try `{}`, everywhere the name is written ({uses} places; `grail fix` renames them all)",
                name.replace('_', "-")
            ),
            SyntaxError::LineStartsWithBar => "a line break ends a rule unless the line ends with `|`; move this `|` to the end of the line before (`grail fix` does), or wrap the alternatives in parentheses".into(),
            SyntaxError::OtherDialect { dialect } => dialect.help().into(),
            SyntaxError::DefinitionExpected => "write the rule as `name ::= ...`".into(),
            SyntaxError::RuleEndExpected { found } | SyntaxError::GroupUnclosed { found }
                if found == "`'`" =>
            {
                "string literals use double quotes: \"...\"".into()
            }
            SyntaxError::RuleEndExpected { .. } => "each rule ends at the end of its line; to continue it on the next line, end this line with `|` or wrap the continuation in parentheses".into(),
            SyntaxError::GroupUnmatchedClose => "remove it, or add the `(` it should close".into(),
            SyntaxError::GroupUnclosed { .. } => "add `)` where the group ends".into(),
            SyntaxError::LiteralUnterminated => "add the closing `\"`; write a quote inside a string as `\\\"`".into(),
            SyntaxError::ClassUnterminated => "add the closing `]`; write a bracket inside a class as `\\]`".into(),
            SyntaxError::EscapeUnknown { .. } => "the escapes are \\n \\r \\t \\\\ \\\" \\[ \\] \\- \\xHH \\uHHHH \\UHHHHHHHH; write a backslash as `\\\\`".into(),
            SyntaxError::EscapeHexDigits { prefix, digits } => {
                format!("write `\\{prefix}` followed by exactly {digits} hex digits")
            }
            SyntaxError::QuantifierWithoutItem { .. } => {
                "put the quantifier right after the item it repeats; an empty string or class cannot be repeated".into()
            }
            SyntaxError::RepetitionCountExpected => {
                "write `{m}`, `{m,}` or `{m,n}`; for at most n repetitions write `{0,n}`".into()
            }
            SyntaxError::RepetitionUnclosed { .. } => "write `{m}`, `{m,}` or `{m,n}`".into(),
            SyntaxError::TokenMalformed { .. } => {
                "write a token as `<[id]>` or `<text>`, optionally negated with `!`".into()
            }
            SyntaxError::TokenNegationWithoutToken => {
                "to exclude characters use a negated class such as `[^a]`".into()
            }
            SyntaxError::NestingTooDeep { .. } => {
                "split the nested part into named rules".into()
            }
            SyntaxError::NulByte => "remove the NUL byte; llama.cpp stops reading the grammar there".into(),
            _ => return None,
        })
    }
}

/// A syntax error at a span.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct ParseError {
    /// What is wrong.
    pub kind: SyntaxError,
    /// Where.
    pub span: Span,
    /// A related location, such as the opening quote of an unterminated literal.
    pub related: Option<(Span, &'static str)>,
}

impl ParseError {
    /// The error as a renderable diagnostic.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let mut diagnostic = Diagnostic::new(
            Severity::Error,
            self.kind.code(),
            self.kind.to_string(),
            self.span,
        )
        .with_help(self.kind.help());
        if let Some((span, message)) = self.related {
            diagnostic = diagnostic.with_related(span, message);
        }
        diagnostic
    }
}
