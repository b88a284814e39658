//! Rewrites of the IR before compiling, so that a bounded repetition costs work in
//! proportion to the copies a parse can be in, not to the bound written.
//!
//! The compiler unrolls `X{m,n}` into copies (see `compile.rs`). Two shapes make that
//! expensive where llama.cpp is cheap:
//!
//! - **A repeated item that can be empty.** Every copy of `X{0,99999}` with `X ::= "a" |
//!   "y"?` can be crossed without input, so each step's closure walks through all the
//!   copies after the current one. Since X can be empty, `X{m,n}` matches exactly what
//!   `X⁺{0,n}` does, where X⁺ is X without its empty match: a copy used empty can always
//!   be dropped. X⁺ is built by the usual construction (a nullable sequence `a b c` is
//!   `a⁺ b c | b⁺ c | c⁺`; a rule that can be empty gets a non-empty twin rule), and where
//!   the construction would be too big, X itself is kept in its place, which is still
//!   exact (only slower).
//! - **A big item repeated many times** (`("a"{0,5000}){0,5000}`, which llama.cpp reads
//!   as `("a"*)*`): its copies would exceed the node limit, so the item becomes a rule of
//!   its own, compiled once, and each copy calls it.
//!
//! Both rewrites keep the language exactly; new rules are appended after the grammar's
//! own, so rule ids of the input stay valid.

use std::borrow::Cow;

use grail_grammar::analysis::{nullable_rules, references, sequence_is_nullable};
use grail_grammar::{Grammar, Repetition, Rule, Sequence, Symbol, SymbolKind};
use rustc_hash::FxHashMap;

use crate::compile::inline::{node_estimate, rule_sizes};

/// A repetition whose item can be empty is rewritten when it is unrolled into at least
/// this many copies.
const MIN_COPIES_TO_REWRITE: u64 = 2;

/// Largest item (in symbols, nested ones included) rewritten without its empty match;
/// the construction copies the tail of each nullable sequence, so it is quadratic.
const MAX_NONEMPTY_SYMBOLS: usize = 1024;

/// A repeated item is compiled once as a rule of its own when its unrolled copies would
/// take more than this many nodes...
const HOIST_MIN_TOTAL_NODES: u64 = 1 << 20;

/// ...and the item itself takes at least this many.
const HOIST_MIN_ITEM_NODES: u64 = 4;

/// A grammar ready to compile.
pub(crate) struct Prepared<'g> {
    /// The input grammar, or its rewritten copy (its own rules first, then new ones).
    pub(crate) grammar: Cow<'g, Grammar>,
    /// `calls_only[rule]`: the rule must stay a call (a hoisted repeated item).
    pub(crate) calls_only: Vec<bool>,
    /// The grammar's references and inlinable rules, when already computed for it (the
    /// rewrite looked at them and left the grammar as it was).
    pub(crate) analysis: Option<Analysis>,
}

/// What compiling needs to know about the rules of a grammar.
pub(crate) struct Analysis {
    /// `references[rule]`: the rules it refers to (`grail_grammar::analysis::references`).
    pub(crate) references: Vec<Vec<u32>>,
    /// `inline[rule]`: compiled at its call sites (`crate::inline`).
    pub(crate) inline: Vec<bool>,
    /// About how many nodes the compiled graph takes (`crate::compile::inline::node_estimate`).
    pub(crate) node_estimate: usize,
}

/// Rewrites `grammar` where its repetitions need it (see the module docs).
pub(crate) fn prepare(grammar: &Grammar) -> Prepared<'_> {
    let unrolls = grammar
        .rules
        .iter()
        .flat_map(|rule| rule.alternatives.iter().flatten())
        .any(has_unrolled_repetition);
    if !unrolls {
        return Prepared {
            grammar: Cow::Borrowed(grammar),
            calls_only: vec![false; grammar.rules.len()],
            analysis: None,
        };
    }
    let references = references(grammar);
    let (inline, sizes) = rule_sizes(grammar, &[], &references);
    let node_estimate = node_estimate(&inline, &sizes);
    let mut rewriter = Rewriter {
        rules: Vec::new(),
        nullable: nullable_rules(grammar, &references),
        sizes: inline
            .iter()
            .zip(sizes)
            .map(|(&inline, size)| if inline { size } else { 1 })
            .collect(),
        nonempty_rules: FxHashMap::default(),
        pending: Vec::new(),
        calls_only: vec![false; grammar.rules.len()],
        changed: false,
    };
    // Most grammars (a schema's `[ \t]{0,20}`) unroll only items that are neither empty
    // nor big: seen without copying the grammar.
    let rewrites = grammar
        .rules
        .iter()
        .flat_map(|rule| rule.alternatives.iter().flatten())
        .any(|symbol| rewriter.would_rewrite(symbol));
    if !rewrites {
        return Prepared {
            grammar: Cow::Borrowed(grammar),
            calls_only: vec![false; grammar.rules.len()],
            analysis: Some(Analysis {
                references,
                inline,
                node_estimate,
            }),
        };
    }
    rewriter.rules = grammar.rules.clone();
    for rule in 0..grammar.rules.len() {
        let alternatives = std::mem::take(&mut rewriter.rules[rule].alternatives);
        rewriter.rules[rule].alternatives = alternatives
            .into_iter()
            .map(|sequence| rewriter.sequence(sequence))
            .collect();
    }
    while let Some((source, target)) = rewriter.pending.pop() {
        let alternatives = rewriter.rules[source as usize].alternatives.clone();
        let mut body = Vec::new();
        for sequence in &alternatives {
            body.extend(rewriter.nonempty_sequence(sequence));
        }
        rewriter.rules[target as usize].alternatives = body
            .into_iter()
            .map(|sequence| rewriter.sequence(sequence))
            .collect();
    }
    if !rewriter.changed {
        return Prepared {
            grammar: Cow::Borrowed(grammar),
            calls_only: vec![false; grammar.rules.len()],
            analysis: Some(Analysis {
                references,
                inline,
                node_estimate,
            }),
        };
    }
    Prepared {
        grammar: Cow::Owned(Grammar {
            rules: rewriter.rules,
            root: grammar.root,
        }),
        calls_only: rewriter.calls_only,
        analysis: None,
    }
}

/// Whether a repetition inside `symbol` is unrolled into two copies or more.
fn has_unrolled_repetition(symbol: &Symbol) -> bool {
    grail_syntax::stack::deep(|| match &symbol.kind {
        SymbolKind::Group(sequences) => sequences.iter().flatten().any(has_unrolled_repetition),
        SymbolKind::Repeat(repetition) => {
            copies(repetition) >= MIN_COPIES_TO_REWRITE
                || has_unrolled_repetition(&repetition.symbol)
        }
        _ => false,
    })
}

/// How many copies of the item the compiler builds (a loop's body counts once).
fn copies(repetition: &Repetition) -> u64 {
    let min = u64::from(repetition.min);
    match repetition.max {
        Some(max) => u64::from(max).max(min),
        None => min + 1,
    }
}

struct Rewriter {
    rules: Vec<Rule>,
    nullable: Vec<bool>,
    /// Estimated compiled size of each rule at a call site (1 for a call).
    sizes: Vec<u64>,
    /// The non-empty twin of each nullable rule made so far.
    nonempty_rules: FxHashMap<u32, u32>,
    /// Twins whose bodies are still to build: (rule, twin).
    pending: Vec<(u32, u32)>,
    calls_only: Vec<bool>,
    /// Whether any repetition was rewritten.
    changed: bool,
}

impl Rewriter {
    fn sequence(&mut self, sequence: Sequence) -> Sequence {
        sequence
            .into_iter()
            .map(|symbol| self.symbol(symbol))
            .collect()
    }

    fn symbol(&mut self, symbol: Symbol) -> Symbol {
        grail_syntax::stack::deep(move || {
            let mut symbol = symbol;
            let span = symbol.span;
            let kind = match std::mem::replace(&mut symbol.kind, SymbolKind::Any) {
                SymbolKind::Group(sequences) => SymbolKind::Group(
                    sequences
                        .into_iter()
                        .map(|sequence| self.sequence(sequence))
                        .collect(),
                ),
                SymbolKind::Repeat(repetition) => {
                    let Repetition { symbol, min, max } = *repetition;
                    let mut repetition = Repetition {
                        symbol: self.symbol(symbol),
                        min,
                        max,
                    };
                    if copies(&repetition) >= MIN_COPIES_TO_REWRITE
                        && self.is_nullable(&repetition.symbol)
                        && symbol_count(&repetition.symbol) <= MAX_NONEMPTY_SYMBOLS
                    {
                        self.changed = true;
                        match self.nonempty(&repetition.symbol) {
                            // Only the empty string: `X{m,n}` is the empty string.
                            None => return Symbol::new(SymbolKind::Group(vec![Vec::new()])),
                            Some(nonempty) => {
                                repetition = Repetition {
                                    symbol: nonempty,
                                    min: 0,
                                    max,
                                };
                            }
                        }
                    }
                    self.hoist_if_big(&mut repetition);
                    SymbolKind::Repeat(Box::new(repetition))
                }
                other => other,
            };
            Symbol { kind, span }
        })
    }

    /// Whether [`Rewriter::symbol`] would change `symbol` (read only: the rewrite's own
    /// tests, on the symbol as written, which the rewrite keeps when nothing inside it
    /// changes).
    fn would_rewrite(&self, symbol: &Symbol) -> bool {
        grail_syntax::stack::deep(|| match &symbol.kind {
            SymbolKind::Group(sequences) => sequences
                .iter()
                .flatten()
                .any(|inner| self.would_rewrite(inner)),
            SymbolKind::Repeat(repetition) => {
                self.would_rewrite(&repetition.symbol)
                    || copies(repetition) >= MIN_COPIES_TO_REWRITE
                        && self.is_nullable(&repetition.symbol)
                        && symbol_count(&repetition.symbol) <= MAX_NONEMPTY_SYMBOLS
                    || self.is_big(repetition)
            }
            _ => false,
        })
    }

    /// Whether a repetition's copies would be too many nodes (its item is then hoisted).
    fn is_big(&self, repetition: &Repetition) -> bool {
        // One copy (`?`, `*`) duplicates nothing; and measuring every optional's item
        // again at each level of nested optionals (converters write `maxLength` so) was
        // quadratic.
        if copies(repetition) <= 1 {
            return false;
        }
        let item_size = self.size(&repetition.symbol);
        item_size >= HOIST_MIN_ITEM_NODES
            && item_size.saturating_mul(copies(repetition)) > HOIST_MIN_TOTAL_NODES
    }

    /// Makes the item of a repetition a rule of its own when its copies would be too
    /// many nodes.
    fn hoist_if_big(&mut self, repetition: &mut Repetition) {
        if !self.is_big(repetition) {
            return;
        }
        self.changed = true;
        let item = std::mem::replace(&mut repetition.symbol, Symbol::new(SymbolKind::Any));
        let span = item.span;
        let nullable = self.is_nullable(&item);
        let alternatives = match item.kind.clone() {
            SymbolKind::Group(sequences) => sequences,
            _ => vec![vec![item]],
        };
        let rule = self.new_rule("(repeated item)", alternatives, nullable);
        self.calls_only[rule as usize] = true;
        repetition.symbol = Symbol {
            kind: SymbolKind::Rule(grail_grammar::RuleId(rule)),
            span,
        };
    }

    fn new_rule(&mut self, name: &str, alternatives: Vec<Sequence>, nullable: bool) -> u32 {
        let id = self.rules.len() as u32;
        self.rules.push(Rule {
            name: name.to_string(),
            alternatives,
            span: Default::default(),
        });
        self.nullable.push(nullable);
        self.sizes.push(1);
        self.calls_only.push(false);
        id
    }

    fn is_nullable(&self, symbol: &Symbol) -> bool {
        grail_grammar::analysis::symbol_is_nullable(symbol, &self.nullable)
    }

    /// Estimated compiled size of a symbol, in nodes.
    fn size(&self, symbol: &Symbol) -> u64 {
        grail_syntax::stack::deep(|| match &symbol.kind {
            SymbolKind::Literal(text) => text.chars().count() as u64,
            SymbolKind::Chars(_) | SymbolKind::Any | SymbolKind::Token(_) => 1,
            SymbolKind::Rule(rule) => self.sizes[rule.index()],
            SymbolKind::Group(sequences) => sequences
                .iter()
                .flatten()
                .map(|inner| self.size(inner))
                .fold(1, u64::saturating_add),
            SymbolKind::Repeat(repetition) => self
                .size(&repetition.symbol)
                .saturating_add(1)
                .saturating_mul(copies(repetition)),
        })
    }

    /// The symbol without its empty match: `None` when it matches only the empty string,
    /// otherwise a symbol matching every non-empty string it matches (and possibly, where
    /// the construction would be too big, the empty string too).
    fn nonempty(&mut self, symbol: &Symbol) -> Option<Symbol> {
        grail_syntax::stack::deep(|| {
            let kind = match &symbol.kind {
                SymbolKind::Literal(text) if text.is_empty() => return None,
                SymbolKind::Literal(_)
                | SymbolKind::Chars(_)
                | SymbolKind::Any
                | SymbolKind::Token(_) => return Some(symbol.clone()),
                SymbolKind::Rule(rule) if self.nullable[rule.index()] => {
                    SymbolKind::Rule(grail_grammar::RuleId(self.nonempty_rule(rule.0)))
                }
                SymbolKind::Rule(_) => return Some(symbol.clone()),
                SymbolKind::Group(sequences) => {
                    let mut alternatives = Vec::new();
                    for sequence in sequences {
                        alternatives.extend(self.nonempty_sequence(sequence));
                    }
                    if alternatives.is_empty() {
                        return None;
                    }
                    SymbolKind::Group(alternatives)
                }
                SymbolKind::Repeat(repetition) => {
                    if repetition.max == Some(0) {
                        return None;
                    }
                    let item = if self.is_nullable(&repetition.symbol) {
                        self.nonempty(&repetition.symbol)?
                    } else if repetition.min == 0 {
                        repetition.symbol.clone()
                    } else {
                        return Some(symbol.clone());
                    };
                    SymbolKind::Repeat(Box::new(Repetition {
                        symbol: item,
                        min: 1,
                        max: repetition.max,
                    }))
                }
            };
            Some(Symbol {
                kind,
                span: symbol.span,
            })
        })
    }

    /// A sequence without its empty match, as alternatives: for each position, the
    /// symbol there non-empty after empty symbols, then the rest as written.
    fn nonempty_sequence(&mut self, sequence: &Sequence) -> Vec<Sequence> {
        if !sequence_is_nullable(sequence, &self.nullable) {
            return vec![sequence.clone()];
        }
        let mut alternatives = Vec::new();
        for (index, symbol) in sequence.iter().enumerate() {
            if let Some(first) = self.nonempty(symbol) {
                let mut alternative = Vec::with_capacity(sequence.len() - index);
                alternative.push(first);
                alternative.extend(sequence[index + 1..].iter().cloned());
                alternatives.push(alternative);
            }
        }
        alternatives
    }

    /// The non-empty twin of a nullable rule, made on first use; its body is built once
    /// the grammar's own rules are rewritten. A rule too big for the construction is its
    /// own twin.
    fn nonempty_rule(&mut self, rule: u32) -> u32 {
        if let Some(&twin) = self.nonempty_rules.get(&rule) {
            return twin;
        }
        let size: usize = self.rules[rule as usize]
            .alternatives
            .iter()
            .flatten()
            .map(symbol_count)
            .sum();
        let twin = if size > MAX_NONEMPTY_SYMBOLS {
            rule
        } else {
            let name = format!("{} (non-empty)", self.rules[rule as usize].name);
            let twin = self.new_rule(&name, Vec::new(), false);
            self.pending.push((rule, twin));
            twin
        };
        self.nonempty_rules.insert(rule, twin);
        twin
    }
}

/// How many symbols `symbol` holds, itself and nested ones.
fn symbol_count(symbol: &Symbol) -> usize {
    grail_syntax::stack::deep(|| match &symbol.kind {
        SymbolKind::Group(sequences) => {
            1 + sequences.iter().flatten().map(symbol_count).sum::<usize>()
        }
        SymbolKind::Repeat(repetition) => 1 + symbol_count(&repetition.symbol),
        _ => 1,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::{CompileOptions, CompiledGrammar, Matcher};

    /// A random term over `a`, `b` and the rules `r0..r{rules}`, with items that can be
    /// empty under every kind of repetition.
    fn term(rules: usize) -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            3 => prop::sample::select(vec!["\"a\"", "\"b\"", "\"ab\"", "\"\""]).prop_map(str::to_string),
            2 => (0..rules).prop_map(|rule| format!("r{rule}")),
        ];
        leaf.prop_recursive(3, 10, 3, |inner| {
            prop_oneof![
                (
                    inner.clone(),
                    prop::sample::select(vec![
                        "*", "+", "?", "{2}", "{0,3}", "{1,3}", "{2,}", "{3,4}"
                    ])
                )
                    .prop_map(|(term, quantifier)| format!("({term}){quantifier}")),
                prop::collection::vec(inner.clone(), 1..3)
                    .prop_map(|terms| format!("({})", terms.join(" "))),
                prop::collection::vec(inner, 2..3)
                    .prop_map(|terms| format!("({} |)", terms.join(" | "))),
            ]
        })
    }

    fn grammar_text() -> impl Strategy<Value = String> {
        (1usize..3).prop_flat_map(|rules| {
            prop::collection::vec(prop::collection::vec(term(rules), 1..3), rules).prop_map(
                |bodies| {
                    let mut text = String::from("root ::= r0\n");
                    for (index, sequence) in bodies.iter().enumerate() {
                        text.push_str(&format!("r{index} ::= {} | \"b\"\n", sequence.join(" ")));
                    }
                    text
                },
            )
        })
    }

    /// Every string over `a`, `b` of at most `length` characters.
    fn strings(length: usize) -> Vec<String> {
        let mut all = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..length {
            last = last
                .iter()
                .flat_map(|prefix| ['a', 'b'].map(|c| format!("{prefix}{c}")))
                .collect();
            all.extend(last.iter().cloned());
        }
        all
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        /// The rewritten grammar matches and continues exactly as the grammar as written.
        #[test]
        fn rewriting_keeps_the_language(text in grammar_text()) {
            let report = grail_grammar::check(&text, &grail_grammar::CheckOptions::default());
            let grammar = report.grammar.expect("generated grammars are valid");
            let options = CompileOptions::default();
            let rewritten = CompiledGrammar::compile_prepared(&prepare(&grammar), &options).unwrap();
            let as_written = Prepared {
                grammar: Cow::Borrowed(&grammar),
                calls_only: vec![false; grammar.rules.len()],
                analysis: None,
            };
            let as_written = CompiledGrammar::compile_prepared(&as_written, &options).unwrap();
            for string in strings(6) {
                let mut left = Matcher::new(&rewritten);
                let mut right = Matcher::new(&as_written);
                let viable = (left.accept_str(&string).is_ok(), right.accept_str(&string).is_ok());
                prop_assert_eq!(viable.0, viable.1, "{} viable on {:?}", text, string);
                prop_assert_eq!(left.is_accepting(), right.is_accepting(), "{} on {:?}", text, string);
            }
        }
    }
}
