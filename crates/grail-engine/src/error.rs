//! Errors of compiling and matching, as data.

use grail_syntax::Span;

/// Why a grammar could not be compiled.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CompileError {
    /// The GBNF text has errors (syntax, undefined rules, ...), each located.
    #[error("the grammar is invalid: {0}")]
    Invalid(#[from] grail_grammar::LoadError),
    /// The compiled graph would exceed [`crate::EngineLimits::max_nodes`].
    #[error(
        "the compiled grammar exceeds the limit of {limit} nodes; reduce repetition counts or split large rules"
    )]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// A token written as text (`<think>`) that no vocabulary resolved to one token.
    #[error(
        "token `{text}` is not a token of the vocabulary (a token written as text must be exactly one token, and needs a vocabulary)"
    )]
    TokenUnresolved {
        /// The token's text.
        text: String,
        /// Where it is written.
        span: Span,
    },
}

/// Why [`crate::Matcher::accept_tokens`] took none of a draft: the first token the
/// grammar refused, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("token {index} of the draft (id {id}) is refused: {error}")]
pub struct DraftRefused {
    /// Its position in the draft (the tokens before it were acceptable).
    pub index: usize,
    /// Its id.
    pub id: u32,
    /// Why the grammar refused it.
    pub error: AcceptError,
}

/// A limit the matcher enforces so pathological grammars and inputs fail instead of
/// hanging or exhausting memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitExceeded {
    /// One input step produced more parser items than [`crate::EngineLimits::max_items_per_step`].
    #[error("one step needed more than {limit} parser items (a highly ambiguous grammar)")]
    ItemsPerStep {
        /// The limit.
        limit: usize,
    },
    /// The matcher state grew past [`crate::EngineLimits::max_state_items`].
    #[error(
        "the matcher state grew past {limit} items; lower the rollback history or simplify the grammar"
    )]
    StateSize {
        /// The limit.
        limit: usize,
    },
}

/// Why input was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AcceptError {
    /// The input is not a prefix of any string of the grammar. For text, the matcher stays
    /// after the longest accepted prefix, `consumed` bytes into this call's input; for a
    /// token, nothing is consumed.
    #[error("input rejected after {consumed} byte(s)")]
    Rejected {
        /// Bytes of this call's input that were accepted.
        consumed: usize,
    },
    /// A limit stopped matching; the matcher is left as before the failing byte.
    #[error("{limit} (after {consumed} byte(s))")]
    Limit {
        /// Which limit.
        limit: LimitExceeded,
        /// Bytes of this call's input that were accepted.
        consumed: usize,
    },
}
