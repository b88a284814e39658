//! Lowering: from the syntax tree to the checked IR, resolving names and decoding classes.

use std::collections::HashMap;

use grail_syntax::Span;
use grail_syntax::ast::{self, Alternatives, TermKind, TokenRef};

use crate::charset::{CharSet, MAX_CODE_POINT};
use crate::class_ranges::reversed_range;
use crate::finding::{Finding, FindingKind};
use crate::ir::{
    Grammar, Repetition, Rule, RuleId, Sequence, Symbol, SymbolKind, Token, TokenReference,
};
use crate::limits::Limits;
use crate::llama_cpp::LLAMA_NO_MAXIMUM;

/// The result of lowering: the IR when there were no errors, and every finding.
#[derive(Debug, Clone)]
pub struct Lowered {
    /// The IR; `None` when an error (undefined rule, missing root, bad repetition) was found.
    pub grammar: Option<Grammar>,
    /// Findings from lowering, in source order.
    pub findings: Vec<Finding>,
}

/// Lowers a syntax tree whose start rule is `root`. `source` is the text it was parsed
/// from (or `""` when unknown), for spelling findings as the author wrote them.
pub fn lower(source: &str, syntax: &ast::Grammar, root: &str, limits: &Limits) -> Lowered {
    let mut lowering = Lowering {
        source,
        ids: HashMap::new(),
        findings: Vec::new(),
        undefined: HashMap::new(),
        undefined_dropped: HashMap::new(),
        dropped_depth: 0,
        has_errors: false,
        limits,
    };
    let kept = lowering.collect_definitions(syntax);
    if kept.len() > limits.max_rules {
        lowering.error(Finding::new(
            FindingKind::TooManyRules {
                count: kept.len(),
                limit: limits.max_rules,
            },
            Span::empty_at(0),
        ));
        return lowering.finish(None);
    }
    let rules: Vec<Rule> = kept
        .iter()
        .map(|definition| Rule {
            name: definition.name.text.clone(),
            alternatives: lowering.alternatives(&definition.body),
            span: definition.name.span,
        })
        .collect();
    lowering.report_undefined();
    let root_id = match lowering.ids.get(root) {
        Some(&id) => Some(id),
        None => {
            let suggestion = closest_name(root, rules.iter().map(|rule| rule.name.as_str()));
            lowering.error(Finding::new(
                FindingKind::RootMissing {
                    root: root.to_string(),
                    suggestion,
                },
                Span::empty_at(0),
            ));
            None
        }
    };
    let grammar = root_id
        .filter(|_| !lowering.has_errors)
        .map(|root| Grammar { rules, root });
    lowering.finish(grammar)
}

/// The defined name closest to `name` by edit distance, if it is close enough to be a typo.
pub fn closest_name<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    let allowed = (name.chars().count() / 3).max(1);
    candidates
        .filter(|candidate| candidate.len().abs_diff(name.len()) <= allowed)
        .map(|candidate| (strsim::levenshtein(name, candidate), candidate))
        .filter(|&(distance, _)| distance > 0 && distance <= allowed)
        .min()
        .map(|(_, candidate)| candidate.to_string())
}

struct UndefinedUse {
    first: Span,
    uses: usize,
}

struct Lowering<'a> {
    source: &'a str,
    ids: HashMap<String, RuleId>,
    findings: Vec<Finding>,
    undefined: HashMap<String, UndefinedUse>,
    /// Undefined names used only inside repetitions of zero (`foo{0}`), which drop them.
    undefined_dropped: HashMap<String, Span>,
    /// How many repetitions of zero enclose the term being lowered.
    dropped_depth: u32,
    has_errors: bool,
    limits: &'a Limits,
}

impl Lowering<'_> {
    /// Picks the kept (last) definition of every name, in source order of the kept
    /// definitions, and reports duplicates.
    fn collect_definitions<'s>(&mut self, syntax: &'s ast::Grammar) -> Vec<&'s ast::Rule> {
        let mut definitions: HashMap<&str, Vec<&ast::Rule>> = HashMap::new();
        for rule in &syntax.rules {
            definitions.entry(&rule.name.text).or_default().push(rule);
        }
        let mut kept: Vec<&ast::Rule> = definitions
            .values()
            .map(|all| *all.last().expect("at least one definition"))
            .collect();
        kept.sort_by_key(|rule| rule.span.start);
        for (index, rule) in kept.iter().enumerate() {
            self.ids
                .insert(rule.name.text.clone(), RuleId(index as u32));
            let all = &definitions[rule.name.text.as_str()];
            if all.len() > 1 {
                let mut finding = Finding::new(
                    FindingKind::RuleDuplicate {
                        name: rule.name.text.clone(),
                    },
                    rule.name.span,
                );
                for earlier in &all[..all.len() - 1] {
                    finding =
                        finding.with_related(earlier.name.span, "also defined here (ignored)");
                }
                self.findings.push(finding);
                // An ignored body is still read by llama.cpp: reversed bounds there make
                // its parser loop, so they are errors wherever they are.
                for earlier in &all[..all.len() - 1] {
                    self.check_ignored_bounds(&earlier.body);
                }
            }
        }
        kept
    }

    fn alternatives(&mut self, alternatives: &Alternatives) -> Vec<Sequence> {
        alternatives
            .sequences
            .iter()
            .map(|sequence| {
                sequence
                    .terms
                    .iter()
                    .flat_map(|term| self.term(term))
                    .collect()
            })
            .collect()
    }

    /// Lowers one term to zero or more symbols (an empty literal lowers to none).
    fn term(&mut self, term: &ast::Term) -> Vec<Symbol> {
        grail_syntax::stack::deep(|| {
            let symbol = |kind| Symbol {
                kind,
                span: term.span,
            };
            match &term.kind {
                TermKind::Literal(characters) => self.literal(characters, term.span),
                TermKind::Class(class) => self.class(class, term.span).into_iter().collect(),
                TermKind::Any => vec![symbol(SymbolKind::Any)],
                TermKind::RuleRef(name) => match self.ids.get(&name.text) {
                    Some(&id) => vec![symbol(SymbolKind::Rule(id))],
                    None if self.dropped_depth > 0 => {
                        self.undefined_dropped
                            .entry(name.text.clone())
                            .or_insert(name.span);
                        Vec::new()
                    }
                    None => {
                        self.has_errors = true;
                        self.undefined
                            .entry(name.text.clone())
                            .and_modify(|undefined| undefined.uses += 1)
                            .or_insert(UndefinedUse {
                                first: name.span,
                                uses: 1,
                            });
                        Vec::new()
                    }
                },
                TermKind::Group(alternatives) => {
                    vec![symbol(SymbolKind::Group(self.alternatives(alternatives)))]
                }
                TermKind::Token(token) => vec![symbol(SymbolKind::Token(Token {
                    negated: token.negated,
                    reference: match &token.token {
                        TokenRef::Id(id) => TokenReference::Id(*id),
                        TokenRef::Text(text) => TokenReference::Text(text.clone()),
                    },
                }))],
                TermKind::Repeat(inner, quantifier) => {
                    let Some(max) = self.check_repetition(quantifier) else {
                        self.term(inner);
                        return Vec::new();
                    };
                    if max == Some(0) {
                        // `x{0}` matches only the empty string: nothing to keep, and an
                        // undefined rule used only here is a warning, not an error.
                        self.dropped_depth += 1;
                        self.term(inner);
                        self.dropped_depth -= 1;
                        return Vec::new();
                    }
                    let mut inner_symbols = self.term(inner);
                    let repeated = if inner_symbols.len() == 1 {
                        inner_symbols.pop().expect("one symbol")
                    } else {
                        Symbol {
                            kind: SymbolKind::Group(vec![inner_symbols]),
                            span: inner.span,
                        }
                    };
                    vec![symbol(SymbolKind::Repeat(Box::new(Repetition {
                        symbol: repeated,
                        min: quantifier.min as u32,
                        max: max.map(|max| max as u32),
                    })))]
                }
            }
        })
    }

    /// Reports reversed or oversized bounds; returns the maximum to use (`None` for
    /// unbounded) when the repetition is usable.
    fn check_repetition(&mut self, quantifier: &ast::Quantifier) -> Option<Option<u64>> {
        let mut max = quantifier.max;
        if max == Some(LLAMA_NO_MAXIMUM) {
            self.findings.push(Finding::new(
                FindingKind::RepetitionNoMaximum {
                    min: quantifier.min,
                },
                quantifier.span,
            ));
            max = None;
        }
        if let Some(max) = max
            && max < quantifier.min
        {
            self.error(Finding::new(
                FindingKind::RepetitionBoundsReversed {
                    min: quantifier.min,
                    max,
                },
                quantifier.span,
            ));
            return None;
        }
        let limit = self.limits.max_repetition_count;
        if quantifier.min > limit {
            self.error(Finding::new(
                FindingKind::RepetitionTooLarge {
                    count: quantifier.min,
                    limit,
                },
                quantifier.span,
            ));
            return None;
        }
        if let Some(written) = max
            && written > limit
        {
            self.findings.push(Finding::new(
                FindingKind::RepetitionMaximumAboveLimit {
                    max: written,
                    limit,
                },
                quantifier.span,
            ));
            max = None;
        }
        Some(max)
    }

    /// Reports reversed bounds in a definition that a later one replaces.
    fn check_ignored_bounds(&mut self, alternatives: &Alternatives) {
        for term in alternatives
            .sequences
            .iter()
            .flat_map(|sequence| &sequence.terms)
        {
            self.check_ignored_term(term);
        }
    }

    fn check_ignored_term(&mut self, term: &ast::Term) {
        grail_syntax::stack::deep(|| match &term.kind {
            TermKind::Group(alternatives) => self.check_ignored_bounds(alternatives),
            TermKind::Repeat(inner, quantifier) => {
                self.check_ignored_term(inner);
                if let Some(max) = quantifier.max
                    && max < quantifier.min
                {
                    self.error(Finding::new(
                        FindingKind::RepetitionBoundsReversed {
                            min: quantifier.min,
                            max,
                        },
                        quantifier.span,
                    ));
                }
            }
            _ => {}
        })
    }

    /// A literal becomes one `Literal` symbol; code points no text contains become empty
    /// character sets (which match nothing), with a warning.
    fn literal(&mut self, characters: &[u32], span: Span) -> Vec<Symbol> {
        let mut symbols = Vec::new();
        let mut text = String::new();
        for &code_point in characters {
            match char::from_u32(code_point) {
                Some(character) => text.push(character),
                None => {
                    self.findings.push(Finding::new(
                        FindingKind::CodePointInvalid { code_point },
                        span,
                    ));
                    if !text.is_empty() {
                        symbols.push(Symbol {
                            kind: SymbolKind::Literal(std::mem::take(&mut text).into()),
                            span,
                        });
                    }
                    symbols.push(Symbol {
                        kind: SymbolKind::Chars(CharSet::new([], false)),
                        span,
                    });
                }
            }
        }
        if !text.is_empty() {
            symbols.push(Symbol {
                kind: SymbolKind::Literal(text.into()),
                span,
            });
        }
        symbols
    }

    fn class(&mut self, class: &ast::CharClass, span: Span) -> Option<Symbol> {
        if class.items.is_empty() {
            self.findings.push(Finding::new(
                FindingKind::ClassEmpty {
                    negated: class.negated,
                },
                span,
            ));
            return None;
        }
        for (index, item) in class.items.iter().enumerate() {
            if item.first > item.last {
                self.findings
                    .push(reversed_range(class, span, index, Some(self.source)));
            }
            for code_point in [item.first, item.last] {
                let beyond_unicode = code_point > MAX_CODE_POINT;
                let lone_surrogate = !item.is_range && (0xD800..=0xDFFF).contains(&code_point);
                if beyond_unicode && !item.is_range || lone_surrogate {
                    self.findings.push(Finding::new(
                        FindingKind::CodePointInvalid { code_point },
                        item.span,
                    ));
                    break;
                }
            }
        }
        let set = CharSet::new(
            class.items.iter().map(|item| (item.first, item.last)),
            class.negated,
        );
        Some(Symbol {
            kind: SymbolKind::Chars(set),
            span,
        })
    }

    fn report_undefined(&mut self) {
        let mut dropped: Vec<(String, Span)> = self
            .undefined_dropped
            .drain()
            .filter(|(name, _)| !self.undefined.contains_key(name))
            .collect();
        dropped.sort_by_key(|(_, span)| span.start);
        for (name, span) in dropped {
            self.findings.push(Finding::new(
                FindingKind::RuleUndefinedUnused { name },
                span,
            ));
        }
        let mut undefined: Vec<(String, UndefinedUse)> = self.undefined.drain().collect();
        undefined.sort_by_key(|(_, undefined)| undefined.first.start);
        for (name, uses) in undefined {
            let suggestion = closest_name(&name, self.ids.keys().map(String::as_str));
            let mut finding =
                Finding::new(FindingKind::RuleUndefined { name, suggestion }, uses.first);
            if uses.uses > 1 {
                finding = finding.with_related(
                    uses.first,
                    format!("used {} times; this is the first", uses.uses),
                );
            }
            self.findings.push(finding);
        }
    }

    fn error(&mut self, finding: Finding) {
        self.has_errors = true;
        self.findings.push(finding);
    }

    fn finish(mut self, grammar: Option<Grammar>) -> Lowered {
        self.findings.sort_by_key(|finding| finding.span.start);
        Lowered {
            grammar,
            findings: self.findings,
        }
    }
}
