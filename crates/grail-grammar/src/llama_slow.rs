//! Where llama.cpp's matcher slows down exponentially: a model of its stack expansion.
//!
//! llama.cpp matches with a set of stacks (`llama_grammar_advance_stack`): the top of a
//! stack is the next element to match; a rule reference on top is replaced, once per
//! alternative of the rule, by the rest of the caller's alternative (when there is one)
//! and the start of that alternative. Stacks are kept distinct, not shared. When a rule
//! is nested inside itself after some opening text (`term ::= "(" expr ")"`) and the way
//! down from the nested call to that opening text can go through several alternatives
//! that each leave something different on the stack (`expr ::= term "?" | term "*" |
//! term`), every nesting level multiplies the stacks: k ways per level give k^n stacks
//! after n opening characters, and the matcher's time grows with them.
//!
//! The model builds llama.cpp's rule table (groups and repetitions as its parser
//! generates them, long repetition chains shortened), then, from each reference to a
//! recursive rule, expands stacks exactly as llama.cpp does and follows each resulting
//! stack through the text it must read (terminals, and calls of rules that cannot lead
//! back) up to the next reference to a rule of the same recursive group, "nested": what
//! is left below stays on the stack. That gives a graph over references, each edge
//! labelled with the text read and counted in distinct stacks. The model reports a
//! cycle of that graph along which the stacks multiply: a reference with several ways
//! forward on the same text (an edge to k ≥ 2 distinct stacks, or several edges of one
//! text), when the frames left on the way differ in more than their number (when they
//! are all the same frame, or nothing, llama.cpp's set of stacks merges them into one
//! per depth: `root ::= "a" root "b" | "a" root |` grows linearly, not exponentially).
//! Bounded: the rule table by an element budget (nested repetitions multiply copies; past
//! it, nothing is reported), each expansion and the whole model by work budgets (past
//! them, the stacks found so far stand for the rest: every one of them is real, so a
//! multiplication found among them is one, its factor a lower bound).

use std::collections::{HashMap, HashSet};

use grail_syntax::Span;
use grail_syntax::ast::{self, TermKind};
use grail_syntax::escape::{write_class, write_literal};

use crate::finding::{Finding, FindingKind};
use crate::graph::strongly_connected_components;

/// Copies of a repeated item and links of a repetition chain kept in the model (llama.cpp
/// writes `x{m,n}` as m copies and a chain of n-m rules; a few show the same stacks).
const REPETITION_CAP: u64 = 3;

/// Stacks with the same top an expansion keeps (past it, it counts on without keeping
/// them: a shared start multiplied through a chain of rules, as an expression's precedence
/// levels each written with one alternative per operator, makes thousands of stacks, and
/// those of one top are what the model compares).
const STACKS_PER_TOP: usize = 64;

/// Stack operations one expansion may make; past it, it keeps what it found.
const WORK_PER_EXPANSION: usize = 20_000;

/// Stack operations for the whole grammar; past it, references not yet expanded are left
/// out (what was found is still reported, as lower bounds).
const WORK_BUDGET: usize = 400_000;

/// Deepest stack an expansion may build (a deeper one is left recursion, which llama.cpp
/// refuses or loops on, reported elsewhere).
const MAX_STACK_DEPTH: usize = 256;

/// Elements the model's rule table may hold (copies of repeated items multiply: `x{3}{3}`
/// is nine copies of `x`); past it, nothing is reported.
const TABLE_BUDGET: usize = 1_000_000;

/// Elements of text read between two nested references, at most.
const MAX_OPENER: usize = 64;

/// Longest written content of a generated rule in an opener (see `Table::content`).
const MAX_CONTENT: usize = 120;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Element {
    /// A character, class, `.` or token: an index into the terminal texts.
    Terminal(u32),
    /// A rule reference, and where it is written.
    Call { rule: u32, span: Span },
}

/// A position in the table: (rule, alternative, index of the element).
type Position = (u32, u32, u32);

struct TableRule {
    alternatives: Vec<Vec<Element>>,
    /// The named rule this rule is, or was generated for (a group or repetition).
    owner: u32,
}

struct Table {
    rules: Vec<TableRule>,
    /// The named rules' names, by index (the first rules of the table).
    names: Vec<String>,
    terminals: Vec<String>,
    terminal_ids: HashMap<String, u32>,
    ids: HashMap<String, u32>,
    /// Elements copied for repetitions so far (against [`TABLE_BUDGET`]).
    repeated: usize,
}

impl Table {
    fn element(&self, (rule, alternative, index): Position) -> Option<Element> {
        self.rules[rule as usize].alternatives[alternative as usize]
            .get(index as usize)
            .copied()
    }

    fn terminal(&mut self, text: String) -> Element {
        let next = self.terminals.len() as u32;
        let id = *self.terminal_ids.entry(text.clone()).or_insert(next);
        if id == next {
            self.terminals.push(text);
        }
        Element::Terminal(id)
    }

    fn new_rule(&mut self, owner: u32) -> u32 {
        self.rules.push(TableRule {
            alternatives: Vec::new(),
            owner,
        });
        (self.rules.len() - 1) as u32
    }

    /// Builds the elements of `alternatives`; `None` when a name is undefined.
    fn alternatives(
        &mut self,
        alternatives: &ast::Alternatives,
        owner: u32,
        source: &str,
    ) -> Option<Vec<Vec<Element>>> {
        alternatives
            .sequences
            .iter()
            .map(|sequence| {
                let mut elements = Vec::new();
                for term in &sequence.terms {
                    self.term(term, &mut elements, owner, source)?;
                }
                Some(elements)
            })
            .collect()
    }

    fn term(
        &mut self,
        term: &ast::Term,
        out: &mut Vec<Element>,
        owner: u32,
        source: &str,
    ) -> Option<()> {
        grail_syntax::stack::deep(|| {
            match &term.kind {
                TermKind::Literal(characters) => {
                    for &character in characters {
                        let mut text = String::new();
                        write_literal(&mut text, &[character]);
                        let element = self.terminal(text);
                        out.push(element);
                    }
                }
                TermKind::Class(class) if class.items.is_empty() => {}
                TermKind::Class(class) => {
                    let mut text = String::new();
                    write_class(&mut text, class);
                    let element = self.terminal(text);
                    out.push(element);
                }
                TermKind::Any => {
                    let element = self.terminal(".".to_string());
                    out.push(element);
                }
                TermKind::Token(_) => {
                    let text = source.get(term.span.range()).unwrap_or("<token>");
                    let element = self.terminal(text.to_string());
                    out.push(element);
                }
                TermKind::RuleRef(name) => {
                    let rule = *self.ids.get(&name.text)?;
                    out.push(Element::Call {
                        rule,
                        span: name.span,
                    });
                }
                TermKind::Group(alternatives) => {
                    let rule = self.new_rule(owner);
                    let body = self.alternatives(alternatives, owner, source)?;
                    self.rules[rule as usize].alternatives = body;
                    out.push(Element::Call {
                        rule,
                        span: term.span,
                    });
                }
                TermKind::Repeat(inner, quantifier) => {
                    let start = out.len();
                    self.term(inner, out, owner, source)?;
                    let item: Vec<Element> = out[start..].to_vec();
                    out.truncate(start);
                    if item.is_empty() || quantifier.max.is_some_and(|max| max < quantifier.min) {
                        return Some(());
                    }
                    let copies = quantifier.min.min(REPETITION_CAP);
                    let links = match quantifier.max {
                        None => 1,
                        Some(max) => (max - quantifier.min).min(REPETITION_CAP),
                    };
                    // Each copy and link holds the item: nested repetitions multiply.
                    self.repeated = self
                        .repeated
                        .saturating_add(item.len().saturating_mul((copies + links) as usize + 1));
                    if self.repeated > TABLE_BUDGET {
                        return None;
                    }
                    for _ in 0..copies {
                        out.extend_from_slice(&item);
                    }
                    let mut last: Option<u32> = None;
                    for link in 0..links {
                        let rule = self.new_rule(owner);
                        let mut step = item.clone();
                        let next = match quantifier.max {
                            None => Some(rule),
                            Some(_) if link > 0 => last,
                            Some(_) => None,
                        };
                        if let Some(next) = next {
                            step.push(Element::Call {
                                rule: next,
                                span: term.span,
                            });
                        }
                        self.rules[rule as usize].alternatives = vec![step, Vec::new()];
                        last = Some(rule);
                    }
                    if let Some(last) = last {
                        out.push(Element::Call {
                            rule: last,
                            span: term.span,
                        });
                    }
                }
            }
            Some(())
        })
    }

    /// The rules each rule refers to.
    fn calls(&self) -> Vec<Vec<u32>> {
        self.rules
            .iter()
            .map(|rule| {
                let mut targets: Vec<u32> = rule
                    .alternatives
                    .iter()
                    .flatten()
                    .filter_map(|element| match element {
                        Element::Call { rule, .. } => Some(*rule),
                        Element::Terminal(_) => None,
                    })
                    .collect();
                targets.sort_unstable();
                targets.dedup();
                targets
            })
            .collect()
    }

    /// llama.cpp's expansion of the stack `[start]` (a reference on top, unknown frames
    /// below): the stacks with a terminal on top, distinct, at most [`STACKS_PER_TOP`] of
    /// each top, all of them when the work limits allow (otherwise those found: each is
    /// one llama.cpp makes, so what the model finds from them holds). `None` for left
    /// recursion (too deep a stack).
    fn expand(&self, start: Position, work: &mut usize) -> Option<Vec<Vec<Position>>> {
        let mut todo: Vec<Vec<Position>> = vec![vec![start]];
        let mut seen: rustc_hash::FxHashSet<Vec<Position>> = rustc_hash::FxHashSet::default();
        let mut stacks = Vec::new();
        let mut per_top: rustc_hash::FxHashMap<Position, usize> = rustc_hash::FxHashMap::default();
        let mut own_work = 0usize;
        while let Some(stack) = todo.pop() {
            *work += 1;
            own_work += 1;
            if *work > WORK_BUDGET || own_work > WORK_PER_EXPANSION {
                break;
            }
            if !seen.insert(stack.clone()) {
                continue;
            }
            // An empty stack has returned below the start: not a nested path.
            let Some(&top) = stack.last() else {
                continue;
            };
            match self.element(top) {
                Some(Element::Terminal(_)) => {
                    let kept = per_top.entry(top).or_default();
                    if *kept < STACKS_PER_TOP {
                        *kept += 1;
                        stacks.push(stack);
                    }
                }
                Some(Element::Call { rule, .. }) => {
                    let mut base = stack[..stack.len() - 1].to_vec();
                    let next = (top.0, top.1, top.2 + 1);
                    if self.element(next).is_some() {
                        base.push(next);
                    }
                    if base.len() >= MAX_STACK_DEPTH {
                        return None;
                    }
                    for (alternative, elements) in
                        self.rules[rule as usize].alternatives.iter().enumerate()
                    {
                        let mut expanded = base.clone();
                        if !elements.is_empty() {
                            expanded.push((rule, alternative as u32, 0));
                        }
                        todo.push(expanded);
                    }
                }
                None => {}
            }
        }
        Some(stacks)
    }

    /// Follows `stack` (a terminal on top) through what it must read up to the next
    /// reference to a rule of `component`: the text read, the frames left below, and
    /// that reference. `None` when the stack returns below its start first.
    fn next_nested_reference(
        &self,
        stack: &[Position],
        component_of: &[u32],
        component: u32,
    ) -> Option<(Vec<String>, Vec<Position>, Position)> {
        let mut frames = stack.to_vec();
        let mut position = frames.pop()?;
        let mut text = Vec::new();
        loop {
            match self.element(position) {
                Some(Element::Terminal(terminal)) => {
                    text.push(self.terminals[terminal as usize].clone());
                    position.2 += 1;
                }
                Some(Element::Call { rule, .. }) if component_of[rule as usize] == component => {
                    return Some((text, frames, position));
                }
                Some(Element::Call { rule, .. }) => {
                    text.push(self.content(rule));
                    position.2 += 1;
                }
                None => position = frames.pop()?,
            }
            if text.len() > MAX_OPENER {
                return None;
            }
        }
    }

    /// What a call of `rule` reads, as text that is equal for calls that read alike: a
    /// named rule's name; a generated rule (a group or repetition) written out from its
    /// elements (`s?`, `("," s? cp)*`), so that two rules' groups of the same content (the
    /// `S?` after `"("` in XML's `choice` and `seq`) read the same opener. Past a size, or
    /// inside itself other than as a repetition's tail, it is [`Table::label`] (unique).
    fn content(&self, rule: u32) -> String {
        let mut out = String::new();
        let mut open = Vec::new();
        if self.write_content(rule, &mut out, &mut open) && out.len() <= MAX_CONTENT {
            out
        } else {
            self.label(rule)
        }
    }

    /// Writes a call of `rule` as [`Table::content`] does; false when it cannot.
    fn write_content(&self, rule: u32, out: &mut String, open: &mut Vec<u32>) -> bool {
        if (rule as usize) < self.names.len() {
            out.push_str(&self.names[rule as usize]);
            return true;
        }
        if open.contains(&rule) || out.len() > MAX_CONTENT {
            return false;
        }
        open.push(rule);
        let alternatives = &self.rules[rule as usize].alternatives;
        let written = match alternatives.as_slice() {
            // A repetition's link: the item then itself, or nothing.
            [item, empty]
                if empty.is_empty()
                    && matches!(item.last(), Some(&Element::Call { rule: last, .. }) if last == rule) =>
            {
                self.write_sequence(&item[..item.len() - 1], out, open) && {
                    out.push('*');
                    true
                }
            }
            [item, empty] if empty.is_empty() => {
                self.write_sequence(item, out, open) && {
                    out.push('?');
                    true
                }
            }
            _ => {
                out.push('(');
                let mut ok = true;
                for (index, sequence) in alternatives.iter().enumerate() {
                    if index > 0 {
                        out.push_str(" | ");
                    }
                    ok &= self.write_elements(sequence, out, open);
                }
                out.push(')');
                ok
            }
        };
        open.pop();
        written
    }

    /// Writes a sequence as one item: in parentheses when it has several elements.
    fn write_sequence(&self, sequence: &[Element], out: &mut String, open: &mut Vec<u32>) -> bool {
        if sequence.len() == 1 {
            return self.write_elements(sequence, out, open);
        }
        out.push('(');
        let ok = self.write_elements(sequence, out, open);
        out.push(')');
        ok
    }

    fn write_elements(&self, sequence: &[Element], out: &mut String, open: &mut Vec<u32>) -> bool {
        for (index, element) in sequence.iter().enumerate() {
            if index > 0 {
                out.push(' ');
            }
            match *element {
                Element::Terminal(terminal) => out.push_str(&self.terminals[terminal as usize]),
                Element::Call { rule, .. } => {
                    if !self.write_content(rule, out, open) {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// A rule's name, or `(…in name)` for a generated one.
    fn label(&self, rule: u32) -> String {
        let owner = self.rules[rule as usize].owner;
        if (rule as usize) < self.names.len() {
            self.names[rule as usize].clone()
        } else {
            format!("(#{rule} in {})", self.names[owner as usize])
        }
    }
}

/// An edge of the graph over references: from a reference, the text read, and the
/// distinct frame lists left below the next nested reference.
struct Edge {
    text: Vec<String>,
    target: usize,
    frames: HashSet<Vec<Position>>,
}

/// Finds the shapes that make llama.cpp's matcher slow down exponentially (see the
/// module documentation): one `llama-slow` finding per group of nested references.
/// `syntax` must have every referenced rule defined (otherwise nothing is reported).
pub fn slow_nesting(syntax: &ast::Grammar, source: &str) -> Vec<Finding> {
    let Some(table) = build_table(syntax, source) else {
        return Vec::new();
    };
    let calls = table.calls();
    let rule_components = strongly_connected_components(&calls);
    let mut component_of = vec![0u32; table.rules.len()];
    let mut recursive = vec![false; table.rules.len()];
    for (index, component) in rule_components.iter().enumerate() {
        let cyclic = component.len() > 1 || calls[component[0] as usize].contains(&component[0]);
        for &rule in component {
            component_of[rule as usize] = index as u32;
            recursive[rule as usize] = cyclic;
        }
    }
    // The references to recursive rules: the nodes.
    let mut references: Vec<(Position, u32, Span)> = Vec::new();
    for (rule, body) in table.rules.iter().enumerate() {
        for (alternative, elements) in body.alternatives.iter().enumerate() {
            for (index, element) in elements.iter().enumerate() {
                if let Element::Call { rule: callee, span } = *element
                    && recursive[callee as usize]
                {
                    references.push((
                        (rule as u32, alternative as u32, index as u32),
                        callee,
                        span,
                    ));
                }
            }
        }
    }
    let node_of: HashMap<Position, usize> = references
        .iter()
        .enumerate()
        .map(|(node, &(position, _, _))| (position, node))
        .collect();
    let mut work = 0usize;
    let mut edges: Vec<Vec<Edge>> = Vec::with_capacity(references.len());
    for &(position, callee, _) in &references {
        let expanded = if work > WORK_BUDGET {
            None
        } else {
            table.expand(position, &mut work)
        };
        let Some(stacks) = expanded else {
            edges.push(Vec::new());
            continue;
        };
        let mut out: Vec<Edge> = Vec::new();
        for stack in stacks {
            let Some((text, frames, next)) =
                table.next_nested_reference(&stack, &component_of, component_of[callee as usize])
            else {
                continue;
            };
            let Some(&target) = node_of.get(&next) else {
                continue;
            };
            match out
                .iter_mut()
                .find(|edge| edge.target == target && edge.text == text)
            {
                Some(edge) => {
                    edge.frames.insert(frames);
                }
                None => out.push(Edge {
                    text,
                    target,
                    frames: HashSet::from([frames]),
                }),
            }
        }
        edges.push(out);
    }
    let graph: Vec<Vec<u32>> = edges
        .iter()
        .map(|out| out.iter().map(|edge| edge.target as u32).collect())
        .collect();
    let mut findings = Vec::new();
    for component in strongly_connected_components(&graph) {
        let members: HashSet<usize> = component.iter().map(|&node| node as usize).collect();
        let inside = |node: usize| {
            edges[node]
                .iter()
                .filter(|edge| members.contains(&edge.target))
                .collect::<Vec<_>>()
        };
        // Stacks multiply when a reference has several ways forward on the same text
        // (an edge to several frame lists, or several edges of one text) and the frames
        // left on the way differ in more than their count: frame lists that all repeat
        // one list (`b`, `b b`) merge into one stack per depth, growing only linearly.
        let mut lists: Vec<&Vec<Position>> = Vec::new();
        for &node in &members {
            for edge in inside(node) {
                lists.extend(edge.frames.iter().filter(|frames| !frames.is_empty()));
            }
        }
        lists.sort();
        lists.dedup();
        // Two words commute exactly when both repeat one word (Lyndon and Schützenberger),
        // so all lists commute pairwise when each repeats the first one's primitive root:
        // linear, where comparing every pair was quadratic in thousands of lists.
        let distinct_words = lists.first().is_some_and(|first| {
            let root = primitive_root(first);
            lists.iter().any(|list| {
                !list.len().is_multiple_of(root.len())
                    || list.chunks(root.len()).any(|chunk| chunk != root)
            })
        });
        if !distinct_words {
            continue;
        }
        // The rules whose alternatives the stacks of one text from one reference differ
        // in (the frames some of them left and others not).
        let differing_rules = |node: usize, text: &Vec<String>| -> Vec<u32> {
            let lists: Vec<&Vec<Position>> = inside(node)
                .into_iter()
                .filter(|other| &other.text == text)
                .flat_map(|other| other.frames.iter())
                .collect();
            let mut rules: Vec<u32> = lists
                .iter()
                .flat_map(|frames| frames.iter())
                .filter(|position| !lists.iter().all(|frames| frames.contains(position)))
                .map(|position| table.rules[position.0 as usize].owner)
                .collect();
            rules.sort_unstable();
            rules.dedup();
            rules
        };
        // The strongest multiplier: the stacks one text leads to from one reference. A
        // text that leads into one rule through a chain of rules that differ (the chain
        // alone multiplies) comes first: it shows the cause without a second one beside.
        let mut best: Option<((bool, u64), usize, &Edge)> = None;
        let mut sorted: Vec<usize> = members.iter().copied().collect();
        sorted.sort_unstable();
        for &node in &sorted {
            let inner = inside(node);
            for edge in &inner {
                let same: Vec<&&Edge> = inner
                    .iter()
                    .filter(|other| other.text == edge.text)
                    .collect();
                let factor: u64 = same.iter().map(|other| other.frames.len() as u64).sum();
                if factor < 2 {
                    continue;
                }
                let one_target = same.iter().all(|other| other.target == edge.target);
                let key = (
                    one_target && differing_rules(node, &edge.text).len() >= 2,
                    factor,
                );
                if best.is_none_or(|(best_key, ..)| key > best_key) {
                    best = Some((key, node, edge));
                }
            }
        }
        let Some(((_, factor), node, edge)) = best else {
            continue;
        };
        // The rules whose alternatives start alike: those the text leads into.
        let mut through: Vec<String> = inside(node)
            .iter()
            .filter(|other| other.text == edge.text)
            .map(|other| {
                let (position, _, _) = references[other.target];
                table.names[table.rules[position.0 as usize].owner as usize].clone()
            })
            .collect();
        through.sort();
        through.dedup();
        if through.len() < 2 {
            through.clear();
        }
        // The rules the stacks differ in, beyond those the text leads into: a chain of
        // rules that each start several alternatives alike (an expression's precedence
        // levels).
        let chain: Vec<String> = differing_rules(node, &edge.text)
            .iter()
            .map(|&rule| table.names[rule as usize].clone())
            .filter(|name| !through.contains(name))
            .collect();
        let chain = if chain.len() >= 2 { chain } else { Vec::new() };
        let (target_position, callee, span) = references[edge.target];
        let nesting = table.names[table.rules[target_position.0 as usize].owner as usize].clone();
        let callee_name = table.names[table.rules[callee as usize].owner as usize].clone();
        let written = |name: &str| {
            syntax
                .rules
                .iter()
                .rev()
                .find(|rule| rule.name.text == name)
                .and_then(|rule| factored(rule, source))
        };
        let rewrite = if chain.is_empty() {
            written(&callee_name).or_else(|| written(&nesting))
        } else {
            // The last rule of the chain that can be rewritten (the innermost level, a
            // short one to show).
            chain.iter().rev().find_map(|name| written(name))
        };
        let through = if chain.is_empty() {
            through
        } else {
            Vec::new()
        };
        findings.push(Finding::new(
            FindingKind::LlamaSlow {
                nesting,
                callee: callee_name,
                opener: edge.text.join(" "),
                factor,
                rewrite: if through.is_empty() { rewrite } else { None },
                through,
                chain,
            },
            span,
        ));
    }
    findings.sort_by_key(|finding| finding.span.start);
    findings
}

/// The shortest word whose repetition is `word` (`word` itself when none is shorter).
fn primitive_root(word: &[Position]) -> &[Position] {
    (1..word.len())
        .filter(|&period| word.len().is_multiple_of(period))
        .find(|&period| word.chunks(period).all(|chunk| chunk == &word[..period]))
        .map_or(word, |period| &word[..period])
}

/// llama.cpp's rule table for the kept (last) definitions; `None` with an undefined name.
fn build_table(syntax: &ast::Grammar, source: &str) -> Option<Table> {
    let mut kept: Vec<&ast::Rule> = Vec::new();
    let mut index_of: HashMap<&str, usize> = HashMap::new();
    for rule in &syntax.rules {
        match index_of.get(rule.name.text.as_str()) {
            Some(&index) => kept[index] = rule,
            None => {
                index_of.insert(&rule.name.text, kept.len());
                kept.push(rule);
            }
        }
    }
    let mut table = Table {
        rules: Vec::new(),
        names: kept.iter().map(|rule| rule.name.text.clone()).collect(),
        terminals: Vec::new(),
        terminal_ids: HashMap::new(),
        repeated: 0,
        ids: kept
            .iter()
            .enumerate()
            .map(|(index, rule)| (rule.name.text.clone(), index as u32))
            .collect(),
    };
    for index in 0..kept.len() {
        table.new_rule(index as u32);
    }
    for (index, rule) in kept.iter().enumerate() {
        let body = table.alternatives(&rule.body, index as u32, source)?;
        table.rules[index].alternatives = body;
    }
    Some(table)
}

/// Longest rewrite offered as help; longer ones are described instead.
const MAX_REWRITE: usize = 160;

/// `rule` with its alternatives that start alike written once, the rest chosen after
/// (`expr ::= term ("?" | "*" | "+")?`), as the author wrote the terms.
fn factored(rule: &ast::Rule, source: &str) -> Option<String> {
    let alternatives: Vec<Vec<&str>> = rule
        .body
        .sequences
        .iter()
        .map(|sequence| {
            sequence
                .terms
                .iter()
                .map(|term| source.get(term.span.range()).unwrap_or(""))
                .collect()
        })
        .collect();
    // The largest group of alternatives with the same first term.
    let mut best: Option<(usize, Vec<usize>)> = None;
    for (index, alternative) in alternatives.iter().enumerate() {
        let Some(first) = alternative.first() else {
            continue;
        };
        let group: Vec<usize> = (0..alternatives.len())
            .filter(|&other| alternatives[other].first() == Some(first))
            .collect();
        if group.len() >= 2
            && best
                .as_ref()
                .is_none_or(|(_, best)| group.len() > best.len())
        {
            best = Some((index, group));
        }
    }
    let (_, group) = best?;
    let mut common = alternatives[group[0]].len();
    for &member in &group[1..] {
        common = common.min(
            alternatives[group[0]]
                .iter()
                .zip(&alternatives[member])
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    let prefix = alternatives[group[0]][..common].join(" ");
    let mut rests: Vec<String> = Vec::new();
    let mut optional = false;
    for &member in &group {
        let rest = alternatives[member][common..].join(" ");
        if rest.is_empty() {
            optional = true;
        } else if !rests.contains(&rest) {
            rests.push(rest);
        }
    }
    let choice = match (rests.len(), optional) {
        (0, _) => String::new(),
        (1, true) if !rests[0].contains(' ') => format!(" {}?", rests[0]),
        (_, true) => format!(" ({})?", rests.join(" | ")),
        (_, false) => format!(" ({})", rests.join(" | ")),
    };
    let mut written: Vec<String> = Vec::new();
    for (index, alternative) in alternatives.iter().enumerate() {
        if index == group[0] {
            written.push(format!("{prefix}{choice}"));
        } else if !group.contains(&index) {
            written.push(alternative.join(" "));
        }
    }
    let rewrite = format!("{} ::= {}", rule.name.text, written.join(" | "));
    (rewrite.chars().count() <= MAX_REWRITE).then_some(rewrite)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow(source: &str) -> Vec<String> {
        let parsed = grail_syntax::parse(source);
        assert!(parsed.is_ok(), "{source}");
        slow_nesting(&parsed.grammar, source)
            .into_iter()
            .map(|finding| format!("{} / {}", finding.kind, finding.kind.help().unwrap()))
            .collect()
    }

    #[test]
    fn shared_recursive_prefixes_are_slow() {
        let found = slow(
            "root ::= expr\nexpr ::= term \"?\" | term \"*\" | term \"+\" | term\nterm ::= \"(\" expr \")\" | \"y\"\n",
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("at least 4-fold"), "{found:?}");
        assert!(
            found[0].contains(r#"expr ::= term ("?" | "*" | "+")?"#),
            "{found:?}"
        );
        let found = slow("root ::= r\nr ::= \"(\" r \")\" | \"(\" r \"]\" | \"x\"\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains(r#"r ::= "(" r (")" | "]") | "x""#),
            "{found:?}"
        );
    }

    #[test]
    fn stacked_repetitions_stay_within_the_table_budget() {
        // Each `{3}` triples the copies: 3^20 copies of "ab" if the table were built
        // whole. The model gives up (reports nothing) instead of building it.
        let source = format!("root ::= \"ab\"{} | \"(\" root \")\"\n", "{3}".repeat(20));
        let start = std::time::Instant::now();
        assert!(slow(&source).is_empty());
        assert!(start.elapsed().as_secs() < 30, "{:?}", start.elapsed());
    }

    #[test]
    fn factored_and_tail_recursive_grammars_are_not_slow() {
        for source in [
            "root ::= expr\nexpr ::= term (\"?\" | \"*\" | \"+\")?\nterm ::= \"(\" expr \")\" | \"y\"\n",
            "root ::= r\nr ::= \"(\" r | \"(\" r | \"x\"\n",
            "root ::= list\nlist ::= item list | item\nitem ::= \"x\"\n",
            "root ::= value\nvalue ::= \"[\" ws (value (\",\" ws value)*)? \"]\" ws | \"1\" ws\nws ::= [ \\t\\n]*\n",
            "root ::= \"a\" root \"b\" | \"a\" root |\n",
        ] {
            assert!(slow(source).is_empty(), "{source}: {:?}", slow(source));
        }
    }
}
