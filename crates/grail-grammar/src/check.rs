//! `check`: parse, lower and analyse a grammar, collecting every diagnostic.

use grail_syntax::{Diagnostic, Severity, Span, SyntaxError, parse_with_limits};

use crate::analysis::{
    left_recursive_cycles, nullable_rules, productive_rules, reachable_rules, references,
};
use crate::class_ranges::suspicious_ranges;
use crate::finding::{Finding, FindingKind, LlamaLeftRecursion, Target};
use crate::graph::strongly_connected_components;
use crate::ir::Grammar;
use crate::limits::Limits;
use crate::lints::optional_chains;
use crate::llama_cpp::{LlamaCppModel, LlamaCycle, model};
use crate::llama_slow::slow_nesting;
use crate::lower::lower;

/// How to check a grammar.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The engine the grammar must work in.
    pub target: Target,
    /// The start rule's name. Default: `root`.
    pub root: String,
    /// Size and complexity limits.
    pub limits: Limits,
}

impl Default for CheckOptions {
    fn default() -> CheckOptions {
        CheckOptions {
            target: Target::default(),
            root: "root".to_string(),
            limits: Limits::default(),
        }
    }
}

/// Everything `check` learned about a grammar.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// The checked IR, when the grammar has no syntax or resolution errors.
    pub grammar: Option<Grammar>,
    /// Diagnostics in source order (errors, warnings and notes), at most
    /// [`Limits::max_diagnostics`] of them plus a note counting the rest.
    pub diagnostics: Vec<Diagnostic>,
    /// How many errors were found, including any not listed.
    pub error_count: usize,
}

impl CheckReport {
    /// True when no diagnostic is an error.
    pub fn is_ok(&self) -> bool {
        self.error_count == 0
    }
}

/// Parses and checks GBNF text.
pub fn check(source: &str, options: &CheckOptions) -> CheckReport {
    let parsed = parse_with_limits(source, &options.limits.parse);
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    for error in &parsed.errors {
        let mut diagnostic = error.to_diagnostic();
        // llama.cpp reads the grammar as a C string: it stops at a NUL byte and judges
        // what comes before, so for llama.cpp the NUL is a warning.
        if options.target == Target::LlamaCpp && error.kind == SyntaxError::NulByte {
            diagnostic.severity = Severity::Warning;
        }
        diagnostics.push(diagnostic);
    }
    if diagnostics
        .iter()
        .any(|diagnostic| diagnostic.severity == Severity::Error)
    {
        return finish(None, diagnostics, &options.limits);
    }
    let lowered = lower(source, &parsed.grammar, &options.root, &options.limits);
    let mut findings = lowered.findings;
    findings.extend(suspicious_ranges(&parsed.grammar, source));
    let llama = model(&parsed.grammar, &options.root);
    // A name Grail already reports undefined needs no second finding for llama.cpp.
    let undefined: Vec<&str> = findings
        .iter()
        .filter_map(|finding| match &finding.kind {
            FindingKind::RuleUndefined { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    let llama_findings: Vec<Finding> = llama
        .findings
        .iter()
        .filter(|finding| match &finding.kind {
            FindingKind::LlamaRuleUndefined { name } => !undefined.contains(&name.as_str()),
            _ => true,
        })
        .cloned()
        .collect();
    findings.extend(llama_findings);
    if let Some(grammar) = &lowered.grammar {
        findings.extend(analyse(grammar));
        // llama.cpp's stack expansion, modelled where it terminates (no left recursion)
        // and where nesting is possible (some rule refers back to itself).
        if llama.cycles.is_empty() && llama.looping_cycles.is_empty() && is_recursive(grammar) {
            findings.extend(slow_nesting(&parsed.grammar, source));
        }
    }
    findings.extend(left_recursion(lowered.grammar.as_ref(), &llama));
    findings.sort_by_key(|finding| finding.span.start);
    diagnostics.extend(
        findings
            .iter()
            .map(|finding| finding.to_diagnostic(options.target)),
    );
    diagnostics.sort_by_key(|diagnostic| diagnostic.span.start);
    finish(lowered.grammar, diagnostics, &options.limits)
}

/// True when some rule can refer back to itself.
fn is_recursive(grammar: &Grammar) -> bool {
    let references = references(grammar);
    strongly_connected_components(&references)
        .iter()
        .any(|component| {
            component.len() > 1 || references[component[0] as usize].contains(&component[0])
        })
}

/// The analyses that need a resolved grammar.
fn analyse(grammar: &Grammar) -> Vec<Finding> {
    let mut findings = Vec::new();
    let references = references(grammar);
    let root = &grammar.rule(grammar.root).name;

    let mut referenced_by_others = vec![false; grammar.rules.len()];
    for (rule, referenced) in references.iter().enumerate() {
        for &target in referenced {
            if target as usize != rule {
                referenced_by_others[target as usize] = true;
            }
        }
    }
    let reachable = reachable_rules(grammar, &references);
    for id in grammar.rule_ids() {
        let rule = grammar.rule(id);
        if id == grammar.root || reachable[id.index()] {
            continue;
        }
        let kind = if referenced_by_others[id.index()] {
            FindingKind::RuleUnreachable {
                name: rule.name.clone(),
                root: root.clone(),
            }
        } else {
            FindingKind::RuleUnused {
                name: rule.name.clone(),
            }
        };
        findings.push(Finding::new(kind, rule.span));
    }

    let finishes = productive_rules(grammar, &references, true);
    let matches_something = productive_rules(grammar, &references, false);
    for id in grammar.rule_ids() {
        let rule = grammar.rule(id);
        if !finishes[id.index()] {
            findings.push(Finding::new(
                FindingKind::RuleNeverFinishes {
                    name: rule.name.clone(),
                },
                rule.span,
            ));
        } else if !matches_something[id.index()] {
            findings.push(Finding::new(
                FindingKind::LanguageEmpty {
                    name: rule.name.clone(),
                },
                rule.span,
            ));
        }
    }

    findings.extend(optional_chains(grammar));

    findings
}

/// Left recursion: each cycle of the grammar's rules, with what llama.cpp does with it,
/// and the cycles only llama.cpp's expansion of repetitions has.
fn left_recursion(grammar: Option<&Grammar>, llama: &LlamaCppModel) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut names_on_cycles = Vec::new();
    if let Some(grammar) = grammar {
        let references = references(grammar);
        let nullable = nullable_rules(grammar, &references);
        for cycle in left_recursive_cycles(grammar, &nullable) {
            let names: Vec<&str> = cycle
                .rules
                .iter()
                .map(|&id| grammar.rule(id).name.as_str())
                .collect();
            names_on_cycles.extend(names.iter().map(|name| name.to_string()));
            let overlaps = |cycles: &[LlamaCycle]| {
                cycles.iter().any(|llama_cycle| {
                    llama_cycle
                        .named_rules
                        .iter()
                        .any(|name| names.contains(&name.as_str()))
                })
            };
            let verdict = if overlaps(&llama.cycles) {
                LlamaLeftRecursion::Refused
            } else if overlaps(&llama.looping_cycles) {
                LlamaLeftRecursion::Loops
            } else {
                LlamaLeftRecursion::Accepted
            };
            let first = grammar.rule(cycle.rules[0]);
            let mut finding = Finding::new(
                FindingKind::LeftRecursion {
                    name: first.name.clone(),
                    cycle: names.join(" -> "),
                    llama: verdict,
                },
                first.span,
            );
            for &id in &cycle.rules[1..cycle.rules.len() - 1] {
                finding = finding.with_related(grammar.rule(id).span, "on the cycle");
            }
            findings.push(finding);
        }
    }
    let uncovered = |llama_cycle: &&LlamaCycle| {
        !llama_cycle
            .named_rules
            .iter()
            .any(|name| names_on_cycles.contains(name))
    };
    for llama_cycle in llama.cycles.iter().filter(uncovered) {
        findings.push(Finding::new(
            FindingKind::LlamaLeftRecursion {
                cycle: llama_cycle.description.clone(),
            },
            llama_cycle.span,
        ));
    }
    for llama_cycle in llama.looping_cycles.iter().filter(uncovered) {
        findings.push(Finding::new(
            FindingKind::LlamaLeftRecursionLoops {
                cycle: llama_cycle.description.clone(),
            },
            llama_cycle.span,
        ));
    }
    findings
}

fn finish(
    grammar: Option<Grammar>,
    mut diagnostics: Vec<Diagnostic>,
    limits: &Limits,
) -> CheckReport {
    let error_count = diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.severity == Severity::Error)
        .count();
    // Errors first when some must be left out.
    if diagnostics.len() > limits.max_diagnostics {
        diagnostics.sort_by_key(|diagnostic| {
            (
                std::cmp::Reverse(diagnostic.severity),
                diagnostic.span.start,
            )
        });
    }
    if diagnostics.len() > limits.max_diagnostics {
        let hidden = diagnostics.len() - limits.max_diagnostics;
        diagnostics.truncate(limits.max_diagnostics);
        diagnostics.push(Diagnostic::new(
            Severity::Note,
            "diagnostics-truncated",
            format!("{hidden} more diagnostics not shown (Limits::max_diagnostics)"),
            Span::empty_at(0),
        ));
    }
    CheckReport {
        grammar,
        diagnostics,
        error_count,
    }
}
