//! Building grammars as data. JSON Schema and tool-call generators use this instead of
//! concatenating strings: names are made valid for llama.cpp, references are checked,
//! and only rules reachable from the root are kept.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::hash::BuildHasher;

use rustc_hash::{FxBuildHasher, FxHashMap as HashMap, FxHashSet as HashSet};

use crate::charset::CharSet;
use crate::ir::{
    Grammar, Repetition, Rule, RuleId, Sequence, Symbol, SymbolKind, Token, TokenReference,
};

/// An expression to define a rule with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// The empty string.
    Empty,
    /// A literal string (the empty string when empty); fixed text is borrowed.
    Literal(Cow<'static, str>),
    /// One character from a set.
    Chars(CharSet),
    /// Any one character.
    Any,
    /// A reference to a rule of the same builder.
    Rule(RuleId),
    /// One whole token.
    Token(Token),
    /// Expressions one after another.
    Sequence(Vec<Expr>),
    /// One of several expressions; with none, nothing matches.
    Choice(Vec<Expr>),
    /// `expr{min,max}`; `max` of `None` is unbounded.
    Repeat(Box<Expr>, u32, Option<u32>),
}

impl Expr {
    /// A literal string: a `&'static str` is kept as it is, a `String` owned.
    pub fn literal(text: impl Into<Cow<'static, str>>) -> Expr {
        Expr::Literal(text.into())
    }

    /// One character in the inclusive ranges.
    pub fn chars(ranges: impl IntoIterator<Item = (char, char)>) -> Expr {
        Expr::Chars(CharSet::new(
            ranges
                .into_iter()
                .map(|(first, last)| (first as u32, last as u32)),
            false,
        ))
    }

    /// One character outside the inclusive ranges.
    pub fn chars_except(ranges: impl IntoIterator<Item = (char, char)>) -> Expr {
        Expr::Chars(CharSet::new(
            ranges
                .into_iter()
                .map(|(first, last)| (first as u32, last as u32)),
            true,
        ))
    }

    /// A token by id (`<[id]>`).
    pub fn token_id(id: u32) -> Expr {
        Expr::Token(Token {
            reference: TokenReference::Id(id),
            negated: false,
        })
    }

    /// Expressions one after another.
    pub fn sequence(items: impl IntoIterator<Item = Expr>) -> Expr {
        Expr::Sequence(items.into_iter().collect())
    }

    /// One of several expressions.
    pub fn choice(items: impl IntoIterator<Item = Expr>) -> Expr {
        Expr::Choice(items.into_iter().collect())
    }

    /// `self?`
    pub fn optional(self) -> Expr {
        Expr::Repeat(Box::new(self), 0, Some(1))
    }

    /// `self*`
    pub fn zero_or_more(self) -> Expr {
        Expr::Repeat(Box::new(self), 0, None)
    }

    /// `self+`
    pub fn one_or_more(self) -> Expr {
        Expr::Repeat(Box::new(self), 1, None)
    }

    /// `self{min,max}`
    pub fn repeat(self, min: u32, max: Option<u32>) -> Expr {
        Expr::Repeat(Box::new(self), min, max)
    }
}

/// Why a built grammar is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A rule reachable from the root was declared but never defined.
    #[error("rule `{name}` is declared but not defined")]
    RuleUndefined {
        /// The rule's name.
        name: String,
    },
    /// `define` was called twice for one rule.
    #[error("rule `{name}` is defined twice")]
    RuleDefinedTwice {
        /// The rule's name.
        name: String,
    },
    /// A repetition whose minimum is above its maximum.
    #[error("repetition {{{min},{max}}} in rule `{rule}` has its minimum above its maximum")]
    RepetitionBoundsReversed {
        /// The rule holding it.
        rule: String,
        /// The minimum.
        min: u32,
        /// The maximum.
        max: u32,
    },
    /// A rule id from another builder.
    #[error("rule id {id} does not belong to this builder")]
    ForeignRule {
        /// The id.
        id: u32,
    },
}

/// Each ASCII byte as it stays in a rule name: letters, digits and `-` as themselves,
/// anything else `-`.
const NAME_BYTE: [u8; 128] = {
    let mut table = [b'-'; 128];
    let mut byte = 0;
    while byte < 128 {
        if (byte as u8).is_ascii_alphanumeric() {
            table[byte] = byte as u8;
        }
        byte += 1;
    }
    table
};

/// Makes a grammar rule by rule. The root rule is declared up front and named `root`.
///
/// ```
/// use grail_grammar::{Expr, GrammarBuilder};
/// let mut builder = GrammarBuilder::new();
/// let digit = builder.rule("digit_char", Expr::chars([('0', '9')])).unwrap();
/// let root = builder.root();
/// builder.define(root, Expr::Rule(digit).one_or_more()).unwrap();
/// let grammar = builder.build().unwrap();
/// assert_eq!(grail_grammar::print_grammar(&grammar), "root ::= digit-char+\ndigit-char ::= [0-9]\n");
/// ```
#[derive(Debug, Clone)]
pub struct GrammarBuilder {
    names: Vec<String>,
    bodies: Vec<Option<Vec<Sequence>>>,
    /// The names taken, without a second copy of each: per hash of a name, the first rule
    /// with a name of that hash (whose name in `names` is compared).
    taken_by_hash: HashMap<u64, u32>,
    /// Taken names whose hash was already in `taken_by_hash` for another name (rare).
    taken_collided: HashSet<String>,
    /// Per name hint, the suffix to try next (so that thousands of rules with one hint
    /// are named in linear time).
    next_suffix: HashMap<String, u32>,
    /// The rules each defined body refers to, body after body, as they were lowered
    /// (so `build` finds the reachable rules without walking the symbols again).
    references: Vec<u32>,
    /// Per rule, its range of `references` (empty until defined).
    reference_ranges: Vec<(u32, u32)>,
}

impl Default for GrammarBuilder {
    fn default() -> GrammarBuilder {
        GrammarBuilder::new()
    }
}

impl GrammarBuilder {
    /// A builder holding only the (undefined) root rule.
    pub fn new() -> GrammarBuilder {
        // Room for the rules of a typical generated grammar (a tool call, a schema)
        // without regrowing.
        const RULES: usize = 64;
        let mut builder = GrammarBuilder {
            names: Vec::with_capacity(RULES),
            bodies: Vec::with_capacity(RULES),
            taken_by_hash: HashMap::with_capacity_and_hasher(RULES, Default::default()),
            taken_collided: HashSet::default(),
            next_suffix: HashMap::default(),
            references: Vec::new(),
            reference_ranges: Vec::with_capacity(RULES),
        };
        builder.declare("root");
        builder
    }

    /// The root rule.
    pub fn root(&self) -> RuleId {
        RuleId(0)
    }

    /// Declares a rule, to be defined later (for recursion). The name is made valid GBNF
    /// (characters other than ASCII letters, digits and `-` become `-`) and unique (a
    /// numeric suffix is added when taken).
    pub fn declare(&mut self, name_hint: &str) -> RuleId {
        self.declare_owned(name_hint.to_string())
    }

    /// [`GrammarBuilder::declare`] with a name hint the builder may keep: an ASCII hint
    /// becomes the name without a copy.
    pub fn declare_owned(&mut self, name_hint: String) -> RuleId {
        let base: String = if name_hint.is_empty() {
            "rule".to_string()
        } else if name_hint.is_ascii() {
            // ASCII for ASCII, in place, by table (names are made for every rule).
            let mut bytes = name_hint.into_bytes();
            for byte in &mut bytes {
                *byte = NAME_BYTE[(*byte & 0x7f) as usize];
            }
            String::from_utf8(bytes).expect("ASCII bytes are UTF-8")
        } else {
            // One allocation: every character becomes at most as many bytes.
            let mut base = String::with_capacity(name_hint.len());
            base.extend(name_hint.chars().map(|character| {
                if character.is_ascii() {
                    NAME_BYTE[character as usize] as char
                } else {
                    '-'
                }
            }));
            base
        };
        let base_hash = FxBuildHasher.hash_one(base.as_str());
        let (name, hash) = if self.is_taken(&base, base_hash) {
            let mut suffix = self.next_suffix.get(&base).copied().unwrap_or(2);
            let name = loop {
                let name = format!("{base}-{suffix}");
                suffix += 1;
                let hash = FxBuildHasher.hash_one(name.as_str());
                if !self.is_taken(&name, hash) {
                    break (name, hash);
                }
            };
            self.next_suffix.insert(base, suffix);
            name
        } else {
            (base, base_hash)
        };
        let id = self.names.len() as u32;
        match self.taken_by_hash.entry(hash) {
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(id);
            }
            std::collections::hash_map::Entry::Occupied(_) => {
                self.taken_collided.insert(name.clone());
            }
        }
        self.names.push(name);
        self.bodies.push(None);
        self.reference_ranges.push((0, 0));
        RuleId(id)
    }

    /// True when a rule already has the name `name`, whose hash is `hash`.
    fn is_taken(&self, name: &str, hash: u64) -> bool {
        match self.taken_by_hash.get(&hash) {
            None => false,
            Some(&first) => {
                self.names[first as usize] == name || self.taken_collided.contains(name)
            }
        }
    }

    /// Defines a declared rule.
    pub fn define(&mut self, id: RuleId, body: Expr) -> Result<(), BuildError> {
        let slot = self
            .bodies
            .get(id.index())
            .ok_or(BuildError::ForeignRule { id: id.0 })?;
        if slot.is_some() {
            return Err(BuildError::RuleDefinedTwice {
                name: self.names[id.index()].clone(),
            });
        }
        let mut references = std::mem::take(&mut self.references);
        let start = references.len();
        let lowered = self.alternatives(id, body, &mut references);
        if lowered.is_err() {
            references.truncate(start);
        }
        let end = references.len();
        self.references = references;
        self.bodies[id.index()] = Some(lowered?);
        self.reference_ranges[id.index()] = (start as u32, end as u32);
        Ok(())
    }

    /// Declares and defines a rule in one step.
    pub fn rule(&mut self, name_hint: &str, body: Expr) -> Result<RuleId, BuildError> {
        let id = self.declare(name_hint);
        self.define(id, body)?;
        Ok(id)
    }

    /// The grammar of the rules reachable from the root, in declaration order.
    pub fn build(self) -> Result<Grammar, BuildError> {
        let GrammarBuilder {
            names,
            bodies,
            references,
            reference_ranges,
            ..
        } = self;
        let defined: Vec<bool> = bodies.iter().map(Option::is_some).collect();
        let rules: Vec<Rule> = names
            .into_iter()
            .zip(bodies)
            .map(|(name, body)| Rule {
                name,
                alternatives: body.unwrap_or_default(),
                span: Default::default(),
            })
            .collect();
        let all = Grammar {
            rules,
            root: RuleId(0),
        };
        let mut keep = vec![false; all.rules.len()];
        keep[0] = true;
        let mut queue = VecDeque::from([0u32]);
        while let Some(rule) = queue.pop_front() {
            if !defined[rule as usize] {
                return Err(BuildError::RuleUndefined {
                    name: all.rules[rule as usize].name.clone(),
                });
            }
            let (start, end) = reference_ranges[rule as usize];
            for &next in &references[start as usize..end as usize] {
                if !keep[next as usize] {
                    keep[next as usize] = true;
                    queue.push_back(next);
                }
            }
        }
        let mut new_ids = vec![u32::MAX; all.rules.len()];
        let mut rules = Vec::new();
        for (old, rule) in all.rules.into_iter().enumerate() {
            if keep[old] {
                new_ids[old] = rules.len() as u32;
                rules.push(rule);
            }
        }
        // Ids only move when a rule was left out.
        if rules.len() < new_ids.len() {
            for rule in &mut rules {
                for sequence in &mut rule.alternatives {
                    for symbol in sequence {
                        renumber(symbol, &new_ids);
                    }
                }
            }
        }
        Ok(Grammar {
            rules,
            root: RuleId(0),
        })
    }

    /// The alternatives of `body`, a body of `rule`; the rules it refers to are added to
    /// `references`.
    fn alternatives(
        &self,
        rule: RuleId,
        body: Expr,
        references: &mut Vec<u32>,
    ) -> Result<Vec<Sequence>, BuildError> {
        match body {
            Expr::Choice(items) if !items.is_empty() => {
                let mut alternatives = Vec::with_capacity(items.len());
                for item in items {
                    alternatives.push(self.sequence(rule, item, references)?);
                }
                Ok(alternatives)
            }
            _ => Ok(vec![self.sequence(rule, body, references)?]),
        }
    }

    fn sequence(
        &self,
        rule: RuleId,
        expr: Expr,
        references: &mut Vec<u32>,
    ) -> Result<Sequence, BuildError> {
        let mut symbols = Vec::new();
        self.push_sequence(rule, expr, &mut symbols, references)?;
        Ok(symbols)
    }

    /// Appends the symbols of `expr` to `symbols`, nested sequences flattened into it.
    fn push_sequence(
        &self,
        rule: RuleId,
        expr: Expr,
        symbols: &mut Sequence,
        references: &mut Vec<u32>,
    ) -> Result<(), BuildError> {
        match expr {
            Expr::Empty => {}
            Expr::Literal(text) if text.is_empty() => {}
            Expr::Sequence(items) => {
                symbols.reserve(items.len());
                for item in items {
                    self.push_sequence(rule, item, symbols, references)?;
                }
            }
            other => symbols.push(self.symbol(rule, other, references)?),
        }
        Ok(())
    }

    fn symbol(
        &self,
        rule: RuleId,
        expr: Expr,
        references: &mut Vec<u32>,
    ) -> Result<Symbol, BuildError> {
        let kind = match expr {
            Expr::Literal(text) => SymbolKind::Literal(text),
            Expr::Chars(set) => SymbolKind::Chars(set),
            Expr::Any => SymbolKind::Any,
            Expr::Rule(id) => {
                if id.index() >= self.names.len() {
                    return Err(BuildError::ForeignRule { id: id.0 });
                }
                references.push(id.0);
                SymbolKind::Rule(id)
            }
            Expr::Token(token) => SymbolKind::Token(token),
            // No alternative: nothing matches (a character no text contains).
            Expr::Choice(items) if items.is_empty() => SymbolKind::Chars(CharSet::new([], false)),
            // Only what nests recurses, so only that checks the stack (most symbols nest
            // nothing).
            Expr::Empty | Expr::Sequence(_) | Expr::Choice(_) => {
                SymbolKind::Group(grail_syntax::stack::deep(move || {
                    self.alternatives(rule, expr, references)
                })?)
            }
            Expr::Repeat(inner, min, max) => {
                if let Some(max) = max
                    && max < min
                {
                    return Err(BuildError::RepetitionBoundsReversed {
                        rule: self.names[rule.index()].clone(),
                        min,
                        max,
                    });
                }
                let inner_sequence =
                    grail_syntax::stack::deep(move || self.sequence(rule, *inner, references))?;
                let symbol = match <[Symbol; 1]>::try_from(inner_sequence) {
                    Ok([single]) => single,
                    Err(symbols) => Symbol::new(SymbolKind::Group(vec![symbols])),
                };
                SymbolKind::Repeat(Box::new(Repetition { symbol, min, max }))
            }
        };
        Ok(Symbol::new(kind))
    }
}

fn renumber(symbol: &mut Symbol, new_ids: &[u32]) {
    match &mut symbol.kind {
        SymbolKind::Rule(id) => id.0 = new_ids[id.index()],
        // Only what nests recurses, so only that checks the stack.
        SymbolKind::Group(sequences) => grail_syntax::stack::deep(|| {
            for sequence in sequences {
                for inner in sequence {
                    renumber(inner, new_ids);
                }
            }
        }),
        SymbolKind::Repeat(repetition) => {
            grail_syntax::stack::deep(|| renumber(&mut repetition.symbol, new_ids))
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names `declare` gives, in order.
    fn declared_names(hints: &[&str]) -> Vec<String> {
        let mut builder = GrammarBuilder::new();
        let ids: Vec<RuleId> = hints.iter().map(|hint| builder.declare(hint)).collect();
        for &id in &ids {
            builder
                .define(id, Expr::literal("x"))
                .expect("each rule is defined once");
        }
        // The root refers to every rule, so the build keeps them all, in order.
        let root = builder.root();
        builder
            .define(root, Expr::sequence(ids.iter().map(|&id| Expr::Rule(id))))
            .expect("the root is defined once");
        let grammar = builder.build().expect("every rule is defined");
        grammar.rules[1..]
            .iter()
            .map(|rule| rule.name.clone())
            .collect()
    }

    #[test]
    fn declared_names_are_valid_gbnf_and_unique() {
        assert_eq!(
            declared_names(&[
                "line-number",
                "line_number",
                "é/ü",
                "",
                "rule",
                "a-2",
                "a",
                "a"
            ]),
            [
                "line-number",
                "line-number-2",
                "---",
                "rule",
                "rule-2",
                "a-2",
                "a",
                "a-3"
            ]
        );
    }

    #[test]
    fn only_rules_reachable_from_the_root_are_kept() {
        let mut builder = GrammarBuilder::new();
        let [unused, in_group, in_repeat, leaf] =
            ["unused", "in-group", "in-repeat", "leaf"].map(|name| builder.declare(name));
        let never_defined = builder.declare("never-defined");
        let root = builder.root();
        builder
            .define(unused, Expr::Rule(never_defined))
            .expect("defined");
        builder
            .define(in_group, Expr::literal("g"))
            .expect("defined");
        builder
            .define(in_repeat, Expr::Rule(leaf))
            .expect("defined");
        builder.define(leaf, Expr::literal("l")).expect("defined");
        let body = Expr::sequence([
            Expr::choice([Expr::Rule(in_group), Expr::literal("x")]),
            Expr::Rule(in_repeat).repeat(0, Some(2)),
        ]);
        builder.define(root, body).expect("defined");
        let grammar = builder
            .build()
            .expect("the unused rule's undefined reference is left out with it");
        assert_eq!(
            crate::print_grammar(&grammar),
            "root ::= (in-group | \"x\") in-repeat{0,2}\nin-group ::= \"g\"\nin-repeat ::= leaf\nleaf ::= \"l\"\n"
        );
    }

    #[test]
    fn a_reachable_rule_must_be_defined() {
        let mut builder = GrammarBuilder::new();
        let missing = builder.declare("missing");
        let root = builder.root();
        builder
            .define(root, Expr::Rule(missing).optional())
            .expect("defined");
        assert_eq!(
            builder.build().unwrap_err(),
            BuildError::RuleUndefined {
                name: "missing".into()
            }
        );
    }
}
