//! A model of how llama.cpp's parser expands a grammar into its internal rules, to
//! reproduce the checks that refuse grammars there: the repetition limits, the rule
//! budget, and left recursion as llama.cpp detects it.
//!
//! llama.cpp (`src/llama-grammar.cpp`) numbers symbols as it meets them (a rule's name
//! when first seen as a definition or a reference, then one generated rule per group and
//! per optional repetition step), rewrites `S{m,n}` into m copies of `S` followed by a
//! chain of n-m rules `S' ::= S S'' |`, and refuses a repetition when the number of
//! generated rules inside the repeated item times its bound reaches 2000. Its
//! left-recursion check only counts a rule as possibly empty when one of its
//! alternatives is literally empty, so `("a" |)*` is refused (the repetition rule
//! `S' ::= S S' |` starts with an empty-able group) while `("a"?)*` is accepted.
//!
//! The model keeps one copy of the repeated item and one rule per repetition (all rules
//! of a chain behave alike for these checks), so its size stays linear in the source.

use std::collections::HashMap;

use grail_syntax::Span;
use grail_syntax::ast::{self, QuantifierStyle, TermKind};

use crate::finding::{Finding, FindingKind};
use crate::graph::{cycle_through, strongly_connected_components};

/// llama.cpp's `MAX_REPETITION_THRESHOLD`.
pub const LLAMA_REPETITION_THRESHOLD: u64 = 2000;

/// What the model found: budget and limit findings, and llama.cpp's left-recursion cycles.
#[derive(Debug, Clone, Default)]
pub struct LlamaCppModel {
    /// Repetition limit and rule budget findings, in source order.
    pub findings: Vec<Finding>,
    /// Left-recursive cycles llama.cpp detects, as lists of model rules.
    pub cycles: Vec<LlamaCycle>,
}

/// A left-recursive cycle in llama.cpp's expansion of the grammar.
#[derive(Debug, Clone)]
pub struct LlamaCycle {
    /// Names of the grammar's own rules on the cycle.
    pub named_rules: Vec<String>,
    /// The cycle, described for a message: `a -> (repetition) -> a`.
    pub description: String,
    /// Where the cycle's first generated rule (group or repetition) is written, or the
    /// first named rule's name.
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Element {
    Terminal,
    Reference(u32),
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

struct Builder {
    rules: Vec<ModelRule>,
    named: HashMap<String, u32>,
    /// llama.cpp's `symbol_ids.size()`.
    symbol_count: u64,
    findings: Vec<Finding>,
}

/// Runs the model over a syntax tree whose every reference is defined.
pub fn model(grammar: &ast::Grammar) -> LlamaCppModel {
    let mut builder = Builder {
        rules: Vec::new(),
        named: HashMap::new(),
        symbol_count: 0,
        findings: Vec::new(),
    };
    for rule in &grammar.rules {
        let id = builder.named_rule(&rule.name.text, rule.name.span);
        let alternatives = builder.alternatives(&rule.body);
        builder.rules[id as usize].alternatives = alternatives;
        builder.rules[id as usize].label = RuleLabel::Named(rule.name.text.clone(), rule.name.span);
    }
    let cycles = builder.cycles();
    LlamaCppModel {
        findings: builder.findings,
        cycles,
    }
}

impl Builder {
    fn named_rule(&mut self, name: &str, span: Span) -> u32 {
        if let Some(&id) = self.named.get(name) {
            return id;
        }
        self.symbol_count += 1;
        let id = self.new_rule(RuleLabel::Named(name.to_string(), span));
        self.named.insert(name.to_string(), id);
        id
    }

    fn new_rule(&mut self, label: RuleLabel) -> u32 {
        self.rules.push(ModelRule {
            label,
            alternatives: Vec::new(),
        });
        (self.rules.len() - 1) as u32
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
                elements
            })
            .collect()
    }

    /// Appends the elements of `term`; `repeated_rules` is llama.cpp's `n_prev_rules`.
    fn term(&mut self, term: &ast::Term, elements: &mut Vec<Element>, repeated_rules: &mut u64) {
        grail_syntax::stack::deep(|| match &term.kind {
            TermKind::Literal(characters) => {
                if !characters.is_empty() {
                    elements.push(Element::Terminal);
                }
                *repeated_rules = 1;
            }
            TermKind::Class(class) => {
                if !class.items.is_empty() {
                    elements.push(Element::Terminal);
                }
                *repeated_rules = 1;
            }
            TermKind::Any | TermKind::Token(_) => {
                elements.push(Element::Terminal);
                *repeated_rules = 1;
            }
            TermKind::RuleRef(name) => {
                let id = self.named_rule(&name.text, name.span);
                elements.push(Element::Reference(id));
                *repeated_rules = 1;
            }
            TermKind::Group(alternatives) => {
                let count_before = self.symbol_count;
                self.symbol_count += 1;
                let id = self.new_rule(RuleLabel::Group(term.span));
                let body = self.alternatives(alternatives);
                self.rules[id as usize].alternatives = body;
                *repeated_rules = (self.symbol_count - count_before).max(1);
                elements.push(Element::Reference(id));
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
            if let Some(written) = max
                && written > LLAMA_REPETITION_THRESHOLD
            {
                self.findings.push(Finding::new(
                    FindingKind::LlamaRepetitionMaximum { min, max: written },
                    quantifier.span,
                ));
                max = None;
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
        if repeated_rules.saturating_mul(times) >= LLAMA_REPETITION_THRESHOLD {
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
        if min == 0 {
            elements.truncate(start);
        }
        let optional_steps = max.map_or(1, |max| max - min);
        if optional_steps > 0 {
            self.symbol_count += optional_steps;
            let id = self.new_rule(RuleLabel::Repetition(span));
            let mut step = repeated;
            if max.is_none() {
                step.push(Element::Reference(id));
            }
            self.rules[id as usize].alternatives = vec![step, Vec::new()];
            elements.push(Element::Reference(id));
        }
        *repeated_rules = repeated_rules.saturating_mul(times);
    }

    /// llama.cpp's left-recursion check: a rule may be empty only when one of its
    /// alternatives has no elements.
    fn cycles(&self) -> Vec<LlamaCycle> {
        let may_be_empty: Vec<bool> = self
            .rules
            .iter()
            .map(|rule| rule.alternatives.iter().any(Vec::is_empty))
            .collect();
        let edges: Vec<Vec<u32>> = self
            .rules
            .iter()
            .map(|rule| {
                let mut edges = Vec::new();
                for alternative in &rule.alternatives {
                    for element in alternative {
                        match *element {
                            Element::Reference(id) => {
                                edges.push(id);
                                if !may_be_empty[id as usize] {
                                    break;
                                }
                            }
                            Element::Terminal => break,
                        }
                    }
                }
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
                let named_rules = cycle
                    .iter()
                    .filter_map(|&id| match &self.rules[id as usize].label {
                        RuleLabel::Named(name, _) => Some(name.clone()),
                        _ => None,
                    })
                    .collect();
                let description = cycle
                    .iter()
                    .map(|&id| match &self.rules[id as usize].label {
                        RuleLabel::Named(name, _) => name.clone(),
                        RuleLabel::Group(_) => "(group)".to_string(),
                        RuleLabel::Repetition(_) => "(repetition)".to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(" -> ");
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
                    named_rules,
                    description,
                    span,
                }
            })
            .collect()
    }
}
