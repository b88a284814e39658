//! The checked grammar IR: rules by id, alternatives of symbols, character sets as ranges.
//!
//! It is the resolved form of a GBNF file (names bound to ids, escapes decoded, the last
//! of duplicate definitions kept, as llama.cpp does) and the form the builder produces.
//! Repetition stays a node (`x{2,5}` is not unrolled), so later stages choose how to
//! execute it and printing gives back what was written.

use std::borrow::Cow;

use grail_syntax::Span;

use crate::charset::CharSet;

/// Index of a rule in [`Grammar::rules`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleId(pub u32);

impl RuleId {
    /// The index as `usize`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A checked grammar: immutable, `Send + Sync`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grammar {
    /// The rules, in source (or declaration) order.
    pub rules: Vec<Rule>,
    /// The start rule.
    pub root: RuleId,
}

impl Grammar {
    /// The rule with id `id`.
    pub fn rule(&self, id: RuleId) -> &Rule {
        &self.rules[id.index()]
    }

    /// Looks a rule up by name.
    pub fn rule_named(&self, name: &str) -> Option<RuleId> {
        self.rules
            .iter()
            .position(|rule| rule.name == name)
            .map(|index| RuleId(index as u32))
    }

    /// Every rule id.
    pub fn rule_ids(&self) -> impl Iterator<Item = RuleId> + use<> {
        (0..self.rules.len() as u32).map(RuleId)
    }
}

/// A named rule: alternatives of sequences.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The rule's name (valid GBNF).
    pub name: String,
    /// The alternatives; at least one, possibly empty (matching the empty string).
    pub alternatives: Vec<Sequence>,
    /// Where the (kept) definition's name is written; empty for built grammars.
    pub span: Span,
}

/// Symbols matched one after another.
pub type Sequence = Vec<Symbol>;

/// One element of a sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// What it matches.
    pub kind: SymbolKind,
    /// Where it is written; empty for built grammars.
    pub span: Span,
}

impl Symbol {
    /// A symbol without a source location.
    pub fn new(kind: SymbolKind) -> Symbol {
        Symbol {
            kind,
            span: Span::default(),
        }
    }
}

/// The kinds of symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SymbolKind {
    /// A non-empty string of characters (borrowed when fixed text, such as a JSON
    /// brace, so the many small literals of generated grammars allocate nothing).
    Literal(Cow<'static, str>),
    /// One code point from a set.
    Chars(CharSet),
    /// Any one code point (`.`).
    Any,
    /// A reference to a rule.
    Rule(RuleId),
    /// Inline alternatives (a parenthesised group).
    Group(Vec<Sequence>),
    /// One whole token of the vocabulary.
    Token(Token),
    /// A repeated symbol.
    Repeat(Box<Repetition>),
}

/// A token element.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Token {
    /// Which token.
    pub reference: TokenReference,
    /// True for `!<...>`: any one token but this.
    pub negated: bool,
}

/// How a token is named.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TokenReference {
    /// By id.
    Id(u32),
    /// By text, angle brackets included (resolved against a vocabulary later).
    Text(String),
}

/// `symbol{min,max}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repetition {
    /// What is repeated.
    pub symbol: Symbol,
    /// At least this many times.
    pub min: u32,
    /// At most this many times; `None` for unbounded.
    pub max: Option<u32>,
}

/// Dropping a symbol never recurses: nested symbols are moved to a list first, so
/// grammars nested thousands deep are freed on any stack.
impl Drop for Symbol {
    #[inline]
    fn drop(&mut self) {
        // Most symbols nest nothing: nothing to move (checked inline, where the symbol is
        // dropped).
        if matches!(self.kind, SymbolKind::Group(_) | SymbolKind::Repeat(_)) {
            drop_nested_symbols(&mut self.kind);
        }
    }
}

/// Drops the symbols nested in `kind` one by one, without recursion (deeply nested groups
/// would overflow the stack).
#[inline(never)]
fn drop_nested_symbols(kind: &mut SymbolKind) {
    let mut pending: Vec<Symbol> = Vec::new();
    take_nested_symbols(kind, &mut pending);
    while let Some(mut symbol) = pending.pop() {
        take_nested_symbols(&mut symbol.kind, &mut pending);
    }
}

/// Moves the symbols nested in `kind` to `pending`, leaving `kind` shallow.
fn take_nested_symbols(kind: &mut SymbolKind, pending: &mut Vec<Symbol>) {
    match kind {
        SymbolKind::Group(sequences) => {
            for sequence in sequences {
                pending.append(sequence);
            }
        }
        SymbolKind::Repeat(repetition) => {
            let placeholder = Symbol::new(SymbolKind::Any);
            pending.push(std::mem::replace(&mut repetition.symbol, placeholder));
        }
        _ => {}
    }
}
