//! The GBNF syntax tree. Every node carries the byte span it was parsed from.
//!
//! The tree keeps what the author wrote (rule order, duplicate definitions, groups, the
//! quantifier spelling) so the formatter can print it back; meaning is assigned later,
//! by lowering to the grammar IR in `grail-grammar`.

use crate::span::Span;

/// A parsed grammar file: its rules in source order and every comment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Grammar {
    /// Rule definitions in source order, duplicates included.
    pub rules: Vec<Rule>,
    /// Every `#` comment, in source order (the span covers `#` up to the end of the line).
    pub comments: Vec<Span>,
}

/// One rule definition: `name ::= alternatives`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The rule's name.
    pub name: Name,
    /// The right-hand side.
    pub body: Alternatives,
    /// From the first byte of the name to the end of the body.
    pub span: Span,
}

/// A rule name, as defined or referenced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name {
    /// The name's text: ASCII letters, digits and `-`.
    pub text: String,
    /// Where it is written.
    pub span: Span,
}

/// Alternatives separated by `|`; there is always at least one (possibly empty) sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alternatives {
    /// The alternatives in source order.
    pub sequences: Vec<Sequence>,
    /// The whole list.
    pub span: Span,
}

/// Terms matched one after another; an empty sequence matches the empty string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sequence {
    /// The terms in order.
    pub terms: Vec<Term>,
    /// The terms' extent; zero-width where the sequence is empty.
    pub span: Span,
}

/// One element of a sequence, possibly with quantifiers applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// What the term is.
    pub kind: TermKind,
    /// Its extent, quantifiers included.
    pub span: Span,
}

/// The kinds of term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TermKind {
    /// A string literal `"..."`: its code points after escapes are decoded. May be empty.
    Literal(Vec<u32>),
    /// A character class `[...]` or `[^...]`.
    Class(CharClass),
    /// `.`: any single code point.
    Any,
    /// A reference to a rule by name.
    RuleRef(Name),
    /// A parenthesised group `( ... )`.
    Group(Alternatives),
    /// A token element: `<[id]>`, `<text>`, `!<[id]>` or `!<text>`.
    Token(TokenElement),
    /// A term followed by a quantifier. Stacked quantifiers nest: in `"a"*?` the
    /// outer term holds `?` and its inner term holds `*`.
    Repeat(Box<Term>, Quantifier),
}

/// A character class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CharClass {
    /// True for `[^...]`.
    pub negated: bool,
    /// Single characters and ranges, as written.
    pub items: Vec<ClassItem>,
}

/// One member of a character class: a single code point (`first == last`, `is_range == false`)
/// or an inclusive range `first-last` as written (possibly reversed, then matching nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassItem {
    /// The first (or only) code point.
    pub first: u32,
    /// The last code point of a range; equal to `first` for a single character.
    pub last: u32,
    /// True when written as a range `a-z`.
    pub is_range: bool,
    /// Where the item is written.
    pub span: Span,
}

/// A token element, which matches one whole token of the model's vocabulary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenElement {
    /// True for `!<...>`: any single token except this one.
    pub negated: bool,
    /// Which token.
    pub token: TokenRef,
}

/// How a token element names its token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenRef {
    /// `<[id]>`: by id.
    Id(u32),
    /// `<text>`: by its text, angle brackets included (for example `<think>`); the
    /// vocabulary must turn it into exactly one token.
    Text(String),
}

/// A repetition quantifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantifier {
    /// Minimum number of repetitions.
    pub min: u64,
    /// Maximum number of repetitions, `None` for unbounded.
    pub max: Option<u64>,
    /// How it was written.
    pub style: QuantifierStyle,
    /// Where it is written.
    pub span: Span,
}

/// The spelling of a quantifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantifierStyle {
    /// `*`
    Star,
    /// `+`
    Plus,
    /// `?`
    Question,
    /// `{m}`, `{m,}` or `{m,n}`.
    Braces,
}

impl Grammar {
    /// Text of a comment span in `source`, without the leading `#` and trailing whitespace.
    pub fn comment_text(source: &str, comment: Span) -> &str {
        source[comment.range()]
            .strip_prefix('#')
            .unwrap_or("")
            .trim_end()
    }
}

/// Dropping a term never recurses: nested terms are moved to a list first, so grammars
/// nested thousands deep are freed on any stack.
impl Drop for Term {
    fn drop(&mut self) {
        let mut pending: Vec<Term> = Vec::new();
        take_nested_terms(&mut self.kind, &mut pending);
        while let Some(mut term) = pending.pop() {
            take_nested_terms(&mut term.kind, &mut pending);
        }
    }
}

/// Moves the terms nested in `kind` to `pending`, leaving `kind` shallow.
fn take_nested_terms(kind: &mut TermKind, pending: &mut Vec<Term>) {
    match kind {
        TermKind::Group(alternatives) => {
            for sequence in &mut alternatives.sequences {
                pending.append(&mut sequence.terms);
            }
        }
        TermKind::Repeat(inner, _) => {
            let placeholder = Term {
                kind: TermKind::Any,
                span: Span::default(),
            };
            pending.push(std::mem::replace(&mut **inner, placeholder));
        }
        _ => {}
    }
}
