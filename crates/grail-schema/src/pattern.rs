//! The `pattern` keyword: an ECMA-262 regular expression → the JSON-encoded characters of
//! the strings it matches.
//!
//! # The dialect read
//!
//! JSON Schema says a `pattern` is an ECMA-262 regular expression, built with the `u` flag
//! (code points, not UTF-16 units), searched for anywhere in the string: `abc` matches
//! every string containing `abc`. The pattern is read as ECMA-262 with the `u` flag and no
//! other flags:
//!
//! - `\d` is `[0-9]` and `\w` is `[A-Za-z0-9_]` (ASCII only, unlike regex-syntax's
//!   Unicode defaults); `\s` is ECMA white space and line terminators (tab, LF, VT, FF, CR,
//!   space, U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000,
//!   U+FEFF); `\D`, `\W`, `\S` are their complements.
//! - `.` is any code point except the line terminators `\n`, `\r`, U+2028 and U+2029.
//! - `^` and `$` are the start and the very end of the string (no multiline flag; `$` does
//!   not allow a trailing newline).
//! - Escapes: `\f \n \r \t \v`, `\cX` (a letter), `\0` (not before a digit), `\xHH`,
//!   `\uHHHH` (a surrogate pair written as two escapes is one code point), `\u{H...}`,
//!   `\p{...}`/`\P{...}` (Unicode properties, looked up with regex-syntax, which also
//!   takes some names ECMA does not, such as a bare script name), and `[\b]` (backspace).
//!   A lone surrogate can be no character of a valid string, so it matches nothing.
//! - Classes follow ECMA: `[]` matches nothing, `[^]` any character, `[` is literal inside
//!   a class, `-` is literal first or last or after a range, and a class escape such as
//!   `\d` cannot end a range.
//! - Groups `(...)`, `(?:...)`, `(?<name>...)`; quantifiers `* + ? {n} {n,} {n,m}`, lazy
//!   or not (the same strings either way).
//!
//! Leniency, where every other common flavour (ECMA without `u`, Python, PCRE) agrees on
//! the meaning: an escaped character that is not an ASCII letter or digit stands for
//! itself (`\-`, `\@`, `\"` outside classes), and `]`, `}` and a `{` that does not begin
//! a quantifier are literal characters. Escapes of other letters and digits (`\a`, `\e`,
//! octal `\01`) differ between flavours and are syntax errors, as in ECMA with `u`.
//!
//! Refused as [`PatternError::Unsupported`], because a grammar cannot express them
//! exactly: lookahead and lookbehind (`(?=`, `(?!`, `(?<=`, `(?<!`), backreferences (`\1`,
//! `\k<name>`), word boundaries (`\b`, `\B`) and inline modifiers (`(?i:...)`). Case
//! insensitivity is no part of JSON Schema patterns.
//!
//! # How
//!
//! 1. A small recursive-descent parser reads the ECMA syntax (with byte offsets for every
//!    error) and builds regex-syntax's HIR through its smart constructors, which merge
//!    literals, flatten groups and turn alternations of characters into classes.
//! 2. Anchors are resolved exactly, wherever they are: the strings a sub-expression
//!    matches depend only on whether its match starts at the start of the string and ends
//!    at its end. Each sub-expression is rewritten for the cases it is used in, so `a^b`
//!    matches nothing, `(^|,)x` is `x` at the start or `,x` anywhere, and `(^a)*` is
//!    handled too. The search is then `R` where both ends are the string's, or `R`
//!    followed by at least one character, and so on (at most four alternatives; one,
//!    `any* R any*`, without anchors).
//! 3. The result is written over the canonical JSON encoding of the characters (see
//!    [`crate::json_text`]): each class becomes one `Chars` (plus one alternative per
//!    escaped character in it), literal runs one `Literal`, `{m,n}` stays a `Repeat`.
//!    An unbounded repetition of something that can match the empty string (`(a?)*`) is
//!    rewritten to a repetition of a non-empty body, which llama.cpp requires.
//!
//! A pattern that matches no string at all (`[]`, `a^b`) gives the expression
//! `Expr::Chars` of the empty set, which matches nothing.
//!
//! # Limits
//!
//! Groups may nest 250 deep (regex-syntax's default). The expression may have at most
//! 2,000,000 nodes (and 10,000 plus 16 per byte of pattern) and nest at most 1000 deep, so
//! every input is answered in time and memory proportional to its length and the result
//! is safe to walk recursively. Only huge patterns or many anchors in odd places (the
//! exact rewriting of `(^|a)(^|a)...` copies what follows each anchor) reach these;
//! they give [`PatternError::TooLarge`].

use std::collections::HashMap;

use grail_grammar::{CharSet, Expr};
use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look, Repetition};

use crate::json_text;

/// Why a pattern has no exact grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    /// The pattern is not a valid regular expression; `offset` is a byte offset into it.
    #[error("invalid regular expression at byte {offset}: {message}")]
    Syntax {
        /// What is wrong.
        message: String,
        /// Byte offset of the offending part of the pattern.
        offset: usize,
    },
    /// A feature a grammar cannot express exactly (lookaround, backreferences, word
    /// boundaries, inline modifiers), with where it is.
    #[error("{feature} at byte {offset} cannot be expressed exactly as a grammar")]
    Unsupported {
        /// The feature, as written.
        feature: String,
        /// Byte offset of the feature in the pattern.
        offset: usize,
    },
    /// A count or size beyond what Grail represents or builds: repetition counts above
    /// 4294967295, groups nested over 250 deep, or a grammar over 2,000,000 nodes (or
    /// 16 per byte of pattern, plus 10,000) or nested over 1000 deep, which only huge
    /// patterns or many anchors in odd places (whose exact rewriting copies what follows
    /// them) reach.
    #[error("{what} at byte {offset} is too large")]
    TooLarge {
        /// What is too large.
        what: String,
        /// Byte offset of it in the pattern (0 when it is the pattern as a whole).
        offset: usize,
    },
}

/// The strings matched by a JSON Schema `pattern` (ECMA-262 flavour, searched anywhere in
/// the string unless anchored, as the spec says), as an expression over their JSON-encoded
/// characters between the quotes (canonical encoding, see json_text).
///
/// A pattern that matches no string gives `Expr::Chars` of the empty set.
pub fn pattern_expr(pattern: &str) -> Result<Expr, PatternError> {
    Ok(encode(&search_language(pattern)?))
}

/// The least and greatest number of characters (code points) of a string the pattern
/// matches, `None` for no maximum. Used to tell whether minLength/maxLength beside a
/// pattern add anything (when the pattern's range lies inside them, they are implied).
///
/// A pattern that matches no string gives `(0, Some(0))`. Counts too large for `u64`
/// give `u64::MAX` as the least and `None` as the greatest.
pub fn pattern_char_lengths(pattern: &str) -> Result<(u64, Option<u64>), PatternError> {
    Ok(char_lengths(&search_language(pattern)?).unwrap_or((0, Some(0))))
}

/// Groups may nest this deep (regex-syntax's default nesting limit).
const MAX_GROUP_DEPTH: usize = 250;

/// The expression may nest this deep, so that code walking it recursively (`Drop`,
/// `Clone`, `Debug`) stays well within a thread's stack.
const MAX_EXPRESSION_DEPTH: usize = 1000;

/// Nodes the anchor rewriting may build: a base plus a share per byte of pattern, so any
/// pattern without anchors fits and anchors may at worst multiply the size a few times;
/// and at most a maximum, which bounds time and memory for huge patterns.
const NODE_BUDGET_BASE: usize = 10_000;
const NODE_BUDGET_PER_BYTE: usize = 16;
const NODE_BUDGET_MAX: usize = 2_000_000;

/// The strings the pattern matches as a search, anchors resolved (also the language tree
/// [`crate::char_automaton`] builds its automata from).
pub(crate) fn search_language(pattern: &str) -> Result<Node, PatternError> {
    let hir = EcmaParser::new(pattern).parse()?;
    let budget = NODE_BUDGET_BASE
        .saturating_add(pattern.len().saturating_mul(NODE_BUDGET_PER_BYTE))
        .min(NODE_BUDGET_MAX);
    let mut resolver = AnchorResolver::new(budget);
    let language = resolver.search(&hir)?;
    resolver.checked_depth(language)
}

fn syntax(message: impl Into<String>, offset: usize) -> PatternError {
    PatternError::Syntax {
        message: message.into(),
        offset,
    }
}

fn unsupported(feature: impl Into<String>, offset: usize) -> PatternError {
    PatternError::Unsupported {
        feature: feature.into(),
        offset,
    }
}

mod anchors;
mod syntax;

pub(crate) use anchors::Node;
use anchors::*;
use syntax::*;

// ---------------------------------------------------------------------------------------
// Node → lengths and expressions.
// ---------------------------------------------------------------------------------------

/// The least and greatest length in code points, `None` when nothing matches.
fn char_lengths(node: &Node) -> Option<(u64, Option<u64>)> {
    grail_syntax::stack::deep(|| match node {
        Node::Nothing => None,
        Node::Empty => Some((0, Some(0))),
        Node::Text(text) => {
            let length = text.chars().count() as u64;
            Some((length, Some(length)))
        }
        Node::Set(_) => Some((1, Some(1))),
        Node::Seq(items, _) => items
            .iter()
            .try_fold((0u64, Some(0u64)), |(min, max), item| {
                let (item_min, item_max) = char_lengths(item)?;
                let max = match (max, item_max) {
                    (Some(max), Some(item_max)) => max.checked_add(item_max),
                    _ => None,
                };
                Some((min.saturating_add(item_min), max))
            }),
        Node::Alt(items, _) => {
            items
                .iter()
                .filter_map(char_lengths)
                .reduce(|(min, max), (item_min, item_max)| {
                    let max = match (max, item_max) {
                        (Some(max), Some(item_max)) => Some(max.max(item_max)),
                        _ => None,
                    };
                    (min.min(item_min), max)
                })
        }
        Node::Repeat(item, min, max, _) => {
            let Some((item_min, item_max)) = char_lengths(item) else {
                return (*min == 0).then_some((0, Some(0)));
            };
            let most = match (item_max, max) {
                (Some(0), _) => Some(0),
                (Some(item_max), Some(max)) => item_max.checked_mul(u64::from(*max)),
                _ => None,
            };
            Some((item_min.saturating_mul(u64::from(*min)), most))
        }
    })
}

/// The expression over the canonical JSON encoding of the node's strings.
fn encode(node: &Node) -> Expr {
    grail_syntax::stack::deep(|| match node {
        Node::Nothing => Expr::Chars(CharSet::new([], false)),
        Node::Empty => Expr::Empty,
        Node::Text(text) => {
            let mut parts = Vec::new();
            for character in text.chars() {
                push_into_sequence(&mut parts, json_text::encoded_char(character));
            }
            finish_sequence(parts)
        }
        Node::Set(set) => json_text::encoded_set(set),
        Node::Seq(items, _) => {
            let mut parts = Vec::new();
            for item in items {
                push_into_sequence(&mut parts, encode(item));
            }
            finish_sequence(parts)
        }
        Node::Alt(items, _) => {
            let mut choices = Vec::with_capacity(items.len());
            for item in items {
                match encode(item) {
                    Expr::Choice(inner) => choices.extend(inner),
                    other => choices.push(other),
                }
            }
            Expr::Choice(choices)
        }
        Node::Repeat(item, min, max, _) => Expr::Repeat(Box::new(encode(item)), *min, *max),
    })
}

/// Appends to a sequence, flattening sequences and merging neighbouring literals.
fn push_into_sequence(parts: &mut Vec<Expr>, expr: Expr) {
    match expr {
        Expr::Empty => {}
        Expr::Literal(text) if text.is_empty() => {}
        Expr::Sequence(inner) => {
            for part in inner {
                push_into_sequence(parts, part);
            }
        }
        Expr::Literal(text) => match parts.last_mut() {
            Some(Expr::Literal(previous)) => previous.to_mut().push_str(&text),
            _ => parts.push(Expr::Literal(text)),
        },
        other => parts.push(other),
    }
}

fn finish_sequence(mut parts: Vec<Expr>) -> Expr {
    match parts.len() {
        0 => Expr::Empty,
        1 => parts.pop().unwrap_or(Expr::Empty),
        _ => Expr::Sequence(parts),
    }
}

#[cfg(test)]
mod tests;
