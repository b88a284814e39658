//! A model of how llama.cpp's parser expands a grammar into its internal rules, to give
//! its exact verdict: the repetition limits and rule budget, undefined rules as its
//! rule table sees them, the left recursion its check refuses, and the left recursion
//! its check misses but its matcher then loops on.
//!
//! llama.cpp (`src/llama-grammar.cpp`, release b11434) numbers symbols as it meets them
//! (a rule's name when first seen as a definition or a reference, then one generated
//! rule per group and per optional repetition step) and keeps its rules in a table
//! indexed by that number. It rewrites `S{m,n}` into m copies of `S` followed by a chain
//! of n-m rules `S' ::= S S'' |`, and refuses a repetition when the number of generated
//! rules inside the repeated item times its bound is over 2000. A rule defined twice
//! keeps its number, its second body replaces the first, and the rules the first body
//! generated stay in the table. After parsing it refuses the grammar when a number below
//! the table's size was never defined ("Undefined rule"), or when any rule in the table
//! refers past it ("Undefined rule identifier"); a reference repeated zero times
//! (`foo{0}`) is deleted before that check, but a group repeated zero times stays in the
//! table with whatever it refers to.
//!
//! Its left-recursion check walks every rule in the table and counts a rule as possibly
//! empty only when one of its alternatives is literally empty, so `("a" |)*` is refused
//! while `("a"?)*` is accepted. Left recursion it misses is harmless when every call on
//! the cycle is the last element of its alternative (its stack expansion keeps a set of
//! stacks already seen, so the cycle ends where it started), or when the matcher never
//! expands the cycle; otherwise each time round the cycle leaves what follows the call on
//! the stack, and the expansion grows until memory runs out.
//!
//! The model keeps one copy of the repeated item and one rule per repetition chain (all
//! rules of a chain behave alike for these checks), so its size stays linear in the
//! source, and counts the symbol numbers the chain would use.

use std::collections::{HashMap, VecDeque};

use grail_syntax::Span;
use grail_syntax::ast::{self, QuantifierStyle, TermKind};

use crate::charset::CharSet;
use crate::finding::{Finding, FindingKind};
use crate::graph::{cycle_through, strongly_connected_components};

/// llama.cpp's `MAX_REPETITION_THRESHOLD`.
pub const LLAMA_REPETITION_THRESHOLD: u64 = 2000;

/// The maximum llama.cpp uses internally for "no maximum": `{0,18446744073709551615}` is
/// read as `{0,}` there.
pub const LLAMA_NO_MAXIMUM: u64 = u64::MAX;

/// What the model found: budget and limit findings, and the left-recursive cycles.
#[derive(Debug, Clone, Default)]
pub struct LlamaCppModel {
    /// Repetition limit, rule budget and undefined-rule findings, in source order.
    pub findings: Vec<Finding>,
    /// Left-recursive cycles llama.cpp's check detects (it refuses the grammar).
    pub cycles: Vec<LlamaCycle>,
    /// Left-recursive cycles the check misses and the matcher loops on forever (each time
    /// round, something stays on its stack), reachable from the root.
    pub looping_cycles: Vec<LlamaCycle>,
}

/// A left-recursive cycle in llama.cpp's expansion of the grammar.
#[derive(Debug, Clone)]
pub struct LlamaCycle {
    /// Names of the grammar's own rules on the cycle.
    pub named_rules: Vec<String>,
    /// The cycle, described for a message: `a -> (repetition) -> a`.
    pub description: String,
    /// For a detected cycle, where its first generated rule (group or repetition) is
    /// written, or its first named rule's name; for a looping cycle, the call that
    /// leaves something on the stack.
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Element {
    /// A character, class, `.` or token; `satisfiable` is false for classes no character
    /// is in (`[z-a]`) and literal code points no text holds (`"\uD800"`).
    Terminal { satisfiable: bool },
    /// A rule reference; `followed` when another element comes after it in the expanded
    /// rule (set for collapsed copies of a repetition, and for every element but the
    /// last once a sequence is complete).
    Reference {
        rule: u32,
        followed: bool,
        span: Span,
    },
}

#[derive(Debug, Clone)]
struct ModelRule {
    label: RuleLabel,
    alternatives: Vec<Vec<Element>>,
}

#[derive(Debug, Clone)]
enum RuleLabel {
    Named(String, Span),
    Group(Span),
    Repetition(Span),
}

/// A rule name as llama.cpp's symbol table holds it.
struct NamedSymbol {
    /// llama.cpp's symbol number.
    id: u64,
    /// Index of its model rule.
    rule: u32,
    defined: bool,
    first_use: Span,
}

struct Builder {
    rules: Vec<ModelRule>,
    named: HashMap<String, NamedSymbol>,
    /// llama.cpp's `symbol_ids.size()`.
    symbol_count: u64,
    /// One past the largest symbol number with a rule: llama.cpp's `rules.size()`.
    table_size: u64,
    findings: Vec<Finding>,
}

/// Runs the model over a syntax tree (every definition, duplicates included), with
/// `root` as the start rule.
pub fn model(grammar: &ast::Grammar, root: &str) -> LlamaCppModel {
    let mut builder = Builder {
        rules: Vec::new(),
        named: HashMap::new(),
        symbol_count: 0,
        table_size: 0,
        findings: Vec::new(),
    };
    for rule in &grammar.rules {
        let index = builder.named_rule(&rule.name.text, rule.name.span);
        let alternatives = builder.alternatives(&rule.body);
        builder.rules[index as usize].alternatives = alternatives;
        builder.rules[index as usize].label =
            RuleLabel::Named(rule.name.text.clone(), rule.name.span);
        let symbol = builder
            .named
            .get_mut(&rule.name.text)
            .expect("named_rule registered it");
        symbol.defined = true;
        let id = symbol.id;
        builder.define(id, 1);
    }
    builder.undefined_rules();
    let cycles = builder.detected_cycles();
    let root_rule = builder.named.get(root).map(|symbol| symbol.rule);
    let looping_cycles = match root_rule {
        Some(root_rule) if cycles.is_empty() => builder.looping_cycles(root_rule),
        _ => Vec::new(),
    };
    builder.findings.sort_by_key(|finding| finding.span.start);
    LlamaCppModel {
        findings: builder.findings,
        cycles,
        looping_cycles,
    }
}

impl Builder {
    /// The model rule of a name, numbering it when first seen.
    fn named_rule(&mut self, name: &str, span: Span) -> u32 {
        if let Some(symbol) = self.named.get(name) {
            return symbol.rule;
        }
        let rule = self.new_rule(RuleLabel::Named(name.to_string(), span));
        self.named.insert(
            name.to_string(),
            NamedSymbol {
                id: self.symbol_count,
                rule,
                defined: false,
                first_use: span,
            },
        );
        self.symbol_count += 1;
        rule
    }

    fn new_rule(&mut self, label: RuleLabel) -> u32 {
        self.rules.push(ModelRule {
            label,
            alternatives: Vec::new(),
        });
        (self.rules.len() - 1) as u32
    }

    /// Records that symbols `first..first + count` have rules (llama.cpp's `add_rule`).
    fn define(&mut self, first: u64, count: u64) {
        if count > 0 {
            self.table_size = self.table_size.max(first + count);
        }
    }

    fn alternatives(&mut self, alternatives: &ast::Alternatives) -> Vec<Vec<Element>> {
        alternatives
            .sequences
            .iter()
            .map(|sequence| {
                let mut elements = Vec::new();
                let mut repeated_rules = 1u64;
                for term in &sequence.terms {
                    self.term(term, &mut elements, &mut repeated_rules);
                }
                if let Some((_, rest)) = elements.split_last_mut() {
                    for element in rest {
                        if let Element::Reference { followed, .. } = element {
                            *followed = true;
                        }
                    }
                }
                elements
            })
            .collect()
    }

    /// Appends the elements of `term`; `repeated_rules` is llama.cpp's `n_prev_rules`.
    fn term(&mut self, term: &ast::Term, elements: &mut Vec<Element>, repeated_rules: &mut u64) {
        grail_syntax::stack::deep(|| match &term.kind {
            TermKind::Literal(characters) => {
                for &code_point in characters {
                    let satisfiable = char::from_u32(code_point).is_some();
                    elements.push(Element::Terminal { satisfiable });
                }
                *repeated_rules = 1;
            }
            TermKind::Class(class) => {
                if !class.items.is_empty() {
                    let set = CharSet::new(
                        class.items.iter().map(|item| (item.first, item.last)),
                        class.negated,
                    );
                    elements.push(Element::Terminal {
                        satisfiable: !set.matches_nothing(),
                    });
                }
                *repeated_rules = 1;
            }
            TermKind::Any | TermKind::Token(_) => {
                elements.push(Element::Terminal { satisfiable: true });
                *repeated_rules = 1;
            }
            TermKind::RuleRef(name) => {
                let rule = self.named_rule(&name.text, name.span);
                elements.push(Element::Reference {
                    rule,
                    followed: false,
                    span: name.span,
                });
                *repeated_rules = 1;
            }
            TermKind::Group(alternatives) => {
                let count_before = self.symbol_count;
                let id = self.symbol_count;
                self.symbol_count += 1;
                let rule = self.new_rule(RuleLabel::Group(term.span));
                let body = self.alternatives(alternatives);
                self.rules[rule as usize].alternatives = body;
                self.define(id, 1);
                *repeated_rules = (self.symbol_count - count_before).max(1);
                elements.push(Element::Reference {
                    rule,
                    followed: false,
                    span: term.span,
                });
            }
            TermKind::Repeat(inner, quantifier) => {
                let start = elements.len();
                self.term(inner, elements, repeated_rules);
                self.repetition(quantifier, term.span, start, elements, repeated_rules);
            }
        })
    }

    fn repetition(
        &mut self,
        quantifier: &ast::Quantifier,
        span: Span,
        start: usize,
        elements: &mut Vec<Element>,
        repeated_rules: &mut u64,
    ) {
        let min = quantifier.min;
        let mut max = quantifier.max;
        if quantifier.style == QuantifierStyle::Braces {
            if min > LLAMA_REPETITION_THRESHOLD {
                self.findings.push(Finding::new(
                    FindingKind::LlamaRepetitionMinimum { min },
                    quantifier.span,
                ));
                return;
            }
            match max {
                Some(LLAMA_NO_MAXIMUM) => max = None,
                Some(written) if written > LLAMA_REPETITION_THRESHOLD => {
                    self.findings.push(Finding::new(
                        FindingKind::LlamaRepetitionMaximum { min, max: written },
                        quantifier.span,
                    ));
                    max = None;
                }
                _ => {}
            }
        }
        if max.is_some_and(|max| max < min) {
            return; // Refused by Grail in both targets (`repetition-bounds-reversed`).
        }
        let times = match max {
            Some(max) if max > 0 => max,
            _ if min > 0 => min,
            _ => 1,
        };
        if repeated_rules.saturating_mul(times) > LLAMA_REPETITION_THRESHOLD {
            self.findings.push(Finding::new(
                FindingKind::LlamaRuleBudget {
                    rules: *repeated_rules,
                    times,
                },
                quantifier.span,
            ));
            return;
        }
        let repeated: Vec<Element> = elements[start..].to_vec();
        if repeated.is_empty() {
            return; // Repeating nothing: refused by both (`expecting preceding item`).
        }
        if min == 0 {
            elements.truncate(start);
        } else if min >= 2 {
            // The one copy kept stands for `min` copies in a row.
            if let Some(Element::Reference { followed, .. }) = elements.last_mut() {
                *followed = true;
            }
        }
        let optional_steps = max.map_or(1, |max| max - min);
        if optional_steps > 0 {
            let first_id = self.symbol_count;
            self.symbol_count += optional_steps;
            self.define(first_id, optional_steps);
            let rule = self.new_rule(RuleLabel::Repetition(span));
            let mut step = repeated;
            if max.is_none() {
                step.push(Element::Reference {
                    rule,
                    followed: false,
                    span,
                });
            }
            // In `S'(k) ::= S S'(k-1) |`, S is followed by the next rule of the chain,
            // except in the last one; an unbounded `S' ::= S S' |` refers to itself.
            let followed = max.is_none() || optional_steps >= 2;
            let last = step.len() - 1 - usize::from(max.is_none());
            if let Element::Reference { followed: f, .. } = &mut step[last] {
                *f = followed;
            }
            self.rules[rule as usize].alternatives = vec![step, Vec::new()];
            elements.push(Element::Reference {
                rule,
                followed: false,
                span,
            });
        }
        *repeated_rules = repeated_rules.saturating_mul(times);
    }

    /// llama.cpp's check that every rule is defined: names numbered below the table's
    /// size without a definition, and references from any rule of the table past it.
    fn undefined_rules(&mut self) {
        let mut referenced = vec![false; self.rules.len()];
        for rule in &self.rules {
            for alternative in &rule.alternatives {
                for element in alternative {
                    if let Element::Reference { rule, .. } = element {
                        referenced[*rule as usize] = true;
                    }
                }
            }
        }
        let mut undefined: Vec<(&String, &NamedSymbol)> = self
            .named
            .iter()
            .filter(|(_, symbol)| {
                !symbol.defined && (symbol.id < self.table_size || referenced[symbol.rule as usize])
            })
            .collect();
        undefined.sort_by_key(|(_, symbol)| symbol.id);
        let findings: Vec<Finding> = undefined
            .into_iter()
            .map(|(name, symbol)| {
                Finding::new(
                    FindingKind::LlamaRuleUndefined { name: name.clone() },
                    symbol.first_use,
                )
            })
            .collect();
        self.findings.extend(findings);
    }

    fn label_of(&self, rule: u32) -> String {
        match &self.rules[rule as usize].label {
            RuleLabel::Named(name, _) => name.clone(),
            RuleLabel::Group(_) => "(group)".to_string(),
            RuleLabel::Repetition(_) => "(repetition)".to_string(),
        }
    }

    fn named_on(&self, cycle: &[u32]) -> Vec<String> {
        cycle
            .iter()
            .filter_map(|&id| match &self.rules[id as usize].label {
                RuleLabel::Named(name, _) => Some(name.clone()),
                _ => None,
            })
            .collect()
    }

    fn describe(&self, cycle: &[u32]) -> String {
        cycle
            .iter()
            .map(|&id| self.label_of(id))
            .collect::<Vec<_>>()
            .join(" -> ")
    }

    /// llama.cpp's left-recursion check: a rule may be empty only when one of its
    /// alternatives has no elements.
    fn detected_cycles(&self) -> Vec<LlamaCycle> {
        let may_be_empty: Vec<bool> = self
            .rules
            .iter()
            .map(|rule| rule.alternatives.iter().any(Vec::is_empty))
            .collect();
        let edges: Vec<Vec<u32>> = self
            .rules
            .iter()
            .map(|rule| {
                let mut edges: Vec<u32> = self
                    .left_calls(rule, &may_be_empty)
                    .map(|(target, _, _)| target)
                    .collect();
                edges.sort_unstable();
                edges.dedup();
                edges
            })
            .collect();
        strongly_connected_components(&edges)
            .into_iter()
            .filter(|component| {
                component.len() > 1 || edges[component[0] as usize].contains(&component[0])
            })
            .map(|component| {
                let start = *component.iter().min().expect("non-empty");
                let cycle = cycle_through(&edges, &component, start);
                let span = cycle
                    .iter()
                    .find_map(|&id| match &self.rules[id as usize].label {
                        RuleLabel::Repetition(span) | RuleLabel::Group(span) => Some(*span),
                        RuleLabel::Named(..) => None,
                    })
                    .or_else(|| match &self.rules[start as usize].label {
                        RuleLabel::Named(_, span) => Some(*span),
                        _ => None,
                    })
                    .unwrap_or_default();
                LlamaCycle {
                    named_rules: self.named_on(&cycle),
                    description: self.describe(&cycle),
                    span,
                }
            })
            .collect()
    }

    /// The calls of `rule` its expansion makes without consuming input: each alternative's
    /// references up to the first element that cannot be empty, as (target, followed,
    /// span).
    fn left_calls<'r>(
        &self,
        rule: &'r ModelRule,
        empty: &'r [bool],
    ) -> impl Iterator<Item = (u32, bool, Span)> + 'r {
        rule.alternatives.iter().flat_map(move |alternative| {
            let mut open = true;
            alternative.iter().filter_map(move |element| {
                if !open {
                    return None;
                }
                match *element {
                    Element::Reference {
                        rule,
                        followed,
                        span,
                    } => {
                        open = empty[rule as usize];
                        Some((rule, followed, span))
                    }
                    Element::Terminal { .. } => {
                        open = false;
                        None
                    }
                }
            })
        })
    }

    /// The left-recursive cycles llama.cpp's matcher expands from `root` and never
    /// finishes: a cycle through a call that something follows. Rules that can really
    /// be empty (not only literally) are crossed, as its stack expansion does.
    fn looping_cycles(&self, root: u32) -> Vec<LlamaCycle> {
        let nullable = self.least_fixpoint(|element, values| match element {
            Element::Terminal { .. } => false,
            Element::Reference { rule, .. } => values[rule as usize],
        });
        let completes = self.least_fixpoint(|element, values| match element {
            Element::Terminal { satisfiable } => satisfiable,
            Element::Reference { rule, .. } => values[rule as usize],
        });
        let expanded = self.expanded_from(root, &completes);
        let calls: Vec<Vec<(u32, bool, Span)>> = self
            .rules
            .iter()
            .map(|rule| self.left_calls(rule, &nullable).collect())
            .collect();
        let edges: Vec<Vec<u32>> = calls
            .iter()
            .map(|calls| {
                let mut edges: Vec<u32> = calls.iter().map(|&(target, _, _)| target).collect();
                edges.sort_unstable();
                edges.dedup();
                edges
            })
            .collect();
        let mut component_of = vec![usize::MAX; self.rules.len()];
        let components = strongly_connected_components(&edges);
        for (index, component) in components.iter().enumerate() {
            for &rule in component {
                component_of[rule as usize] = index;
            }
        }
        let mut cycles = Vec::new();
        for component in &components {
            if !component.iter().any(|&rule| expanded[rule as usize]) {
                continue;
            }
            let growing_call = component.iter().find_map(|&rule| {
                calls[rule as usize]
                    .iter()
                    .find(|&&(target, followed, _)| {
                        followed && component_of[target as usize] == component_of[rule as usize]
                    })
                    .map(|&(_, _, span)| (rule, span))
            });
            if let Some((rule, span)) = growing_call {
                let cycle = cycle_through(&edges, component, rule);
                cycles.push(LlamaCycle {
                    named_rules: self.named_on(&cycle),
                    description: self.describe(&cycle),
                    span,
                });
            }
        }
        cycles.sort_by_key(|cycle| cycle.span.start);
        cycles
    }

    /// A per-rule property that holds when some alternative has every element holding:
    /// a least fixpoint, one strongly connected component at a time, callees first.
    fn least_fixpoint(&self, holds: impl Fn(Element, &[bool]) -> bool) -> Vec<bool> {
        let references: Vec<Vec<u32>> = self
            .rules
            .iter()
            .map(|rule| {
                let mut targets: Vec<u32> = rule
                    .alternatives
                    .iter()
                    .flatten()
                    .filter_map(|element| match element {
                        Element::Reference { rule, .. } => Some(*rule),
                        Element::Terminal { .. } => None,
                    })
                    .collect();
                targets.sort_unstable();
                targets.dedup();
                targets
            })
            .collect();
        let mut values = vec![false; self.rules.len()];
        for component in strongly_connected_components(&references) {
            loop {
                let mut changed = false;
                for &index in &component {
                    let rule = &self.rules[index as usize];
                    if !values[index as usize]
                        && rule.alternatives.iter().any(|alternative| {
                            alternative.iter().all(|&element| holds(element, &values))
                        })
                    {
                        values[index as usize] = true;
                        changed = true;
                    }
                }
                if !changed || component.len() == 1 {
                    break;
                }
            }
        }
        values
    }

    /// The rules llama.cpp's matcher expands, starting at `root`: a reference is
    /// expanded once every element before it in its alternative can be matched whole.
    fn expanded_from(&self, root: u32, completes: &[bool]) -> Vec<bool> {
        let mut expanded = vec![false; self.rules.len()];
        expanded[root as usize] = true;
        let mut queue = VecDeque::from([root]);
        while let Some(rule) = queue.pop_front() {
            for alternative in &self.rules[rule as usize].alternatives {
                for element in alternative {
                    match *element {
                        Element::Reference { rule, .. } => {
                            if !std::mem::replace(&mut expanded[rule as usize], true) {
                                queue.push_back(rule);
                            }
                            if !completes[rule as usize] {
                                break;
                            }
                        }
                        Element::Terminal { satisfiable } => {
                            if !satisfiable {
                                break;
                            }
                        }
                    }
                }
            }
        }
        expanded
    }
}
