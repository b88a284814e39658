//! The copies of a bounded repetition, laid out once and then copied.
//!
//! `X{0,255}` is 255 nested copies of `X` (and a twin, see `counted.rs`), each before a
//! different continuation. Compiling `X` again for every copy walks its symbol tree,
//! looks up its classes and inlines its rules 255 times over; every copy comes out node
//! for node the same, only placed further on. So the first copy is compiled, and when it
//! can be moved (its edges stay inside it or go to its continuation; it records no
//! counted copies and no token sets of its own) the others are that copy's nodes and
//! split targets shifted to their place, with edges to the first copy's continuation
//! sent to theirs: the same graph, without the walk (measured: see docs/performance.md,
//! 2026-11-29 afternoon).

use std::ops::Range;

use super::GraphBuilder;
use crate::error::CompileError;
use crate::graph::{Node, NodeId};

/// A compiled copy that later copies are relocated from.
#[derive(Debug, Clone)]
pub(super) struct CopyTemplate {
    /// Its nodes.
    nodes: Range<usize>,
    /// The split targets of its splits.
    split_targets: Range<usize>,
    /// Where it is entered.
    start: NodeId,
    /// Where it continues (edges there go to each copy's own continuation).
    next: NodeId,
}

/// What is known of the first copy of a repetition.
#[derive(Debug, Clone, Default)]
pub(super) enum Copies {
    /// No copy compiled yet.
    #[default]
    First,
    /// The first copy, which can be relocated.
    Relocatable(CopyTemplate),
    /// The first copy cannot be relocated: every copy is compiled.
    Compiled,
}

impl GraphBuilder<'_, '_> {
    /// One copy of `symbol` before `next`: compiled the first time, then relocated from
    /// the first copy when it can be (see the module doc).
    pub(super) fn repetition_copy(
        &mut self,
        symbol: &grail_grammar::Symbol,
        next: NodeId,
        copies: &mut Copies,
    ) -> Result<NodeId, CompileError> {
        match copies {
            Copies::Relocatable(template) => self.relocate(template, next),
            Copies::Compiled => self.symbol(symbol, next),
            Copies::First => {
                let nodes_first = self.nodes.len();
                let targets_first = self.split_targets.len();
                let counted_before = self.counted.len();
                let token_sets_before = self.token_sets.len();
                let start = self.symbol(symbol, next)?;
                let template = CopyTemplate {
                    nodes: nodes_first..self.nodes.len(),
                    split_targets: targets_first..self.split_targets.len(),
                    start,
                    next,
                };
                let records_nothing = self.counted.len() == counted_before
                    && self.token_sets.len() == token_sets_before;
                *copies = if records_nothing
                    && self.can_relocate(&template)
                    && !test_hooks::compiles_every_copy()
                {
                    Copies::Relocatable(template)
                } else {
                    Copies::Compiled
                };
                Ok(start)
            }
        }
    }

    /// Whether `template` is entered inside itself and every edge of it stays inside
    /// or goes to its continuation, its splits' targets all its own.
    fn can_relocate(&self, template: &CopyTemplate) -> bool {
        let nodes = &template.nodes;
        let leads_inside_or_on =
            |target: NodeId| target == template.next || nodes.contains(&(target as usize));
        if nodes.is_empty() || !nodes.contains(&(template.start as usize)) {
            return false;
        }
        let nodes_move = self.nodes[nodes.clone()].iter().all(|node| match *node {
            Node::Char { next, .. }
            | Node::Class { next, .. }
            | Node::Any { next }
            | Node::Call { next, .. } => leads_inside_or_on(next),
            Node::Split { first, count } => {
                let targets = first as usize..(first + count) as usize;
                targets.start >= template.split_targets.start
                    && targets.end <= template.split_targets.end
            }
            Node::Token { .. } | Node::Return => false,
        });
        nodes_move
            && self.split_targets[template.split_targets.clone()]
                .iter()
                .all(|&target| leads_inside_or_on(target))
    }

    /// A copy of `template` before `next`, placed after the nodes so far.
    fn relocate(&mut self, template: &CopyTemplate, next: NodeId) -> Result<NodeId, CompileError> {
        test_hooks::note_relocation();
        let len = template.nodes.len();
        if self.nodes.len() + len > self.options.limits.max_nodes {
            return Err(CompileError::TooLarge {
                limit: self.options.limits.max_nodes,
            });
        }
        let (old_first, new_first) = (template.nodes.start as NodeId, self.nodes.len() as NodeId);
        let relocated = |target: NodeId| {
            if target == template.next {
                next
            } else {
                target - old_first + new_first
            }
        };
        let old_targets = template.split_targets.start as u32;
        let new_targets = self.split_targets.len() as u32;
        self.split_targets.reserve(template.split_targets.len());
        for index in template.split_targets.clone() {
            let target = relocated(self.split_targets[index]);
            self.split_targets.push(target);
        }
        self.nodes.reserve(len);
        for index in template.nodes.clone() {
            let node = match self.nodes[index] {
                Node::Char { code_point, next } => Node::Char {
                    code_point,
                    next: relocated(next),
                },
                Node::Class { set, next } => Node::Class {
                    set,
                    next: relocated(next),
                },
                Node::Any { next } => Node::Any {
                    next: relocated(next),
                },
                Node::Call { rule, next } => Node::Call {
                    rule,
                    next: relocated(next),
                },
                Node::Split { first, count } => Node::Split {
                    first: first - old_targets + new_targets,
                    count,
                },
                // `can_relocate` lets neither through.
                node @ (Node::Token { .. } | Node::Return) => node,
            };
            self.nodes.push(node);
        }
        Ok(relocated(template.start))
    }
}

/// What the tests below observe and switch; nothing outside tests.
#[cfg(not(test))]
mod test_hooks {
    /// Outside tests, copies are relocated wherever they can be.
    pub(super) fn compiles_every_copy() -> bool {
        false
    }

    /// Counted by the tests only.
    pub(super) fn note_relocation() {}
}

#[cfg(test)]
use tests as test_hooks;

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use crate::CompiledGrammar;

    thread_local! {
        /// Set by the tests to compile every copy, for the graph to compare with.
        static COMPILE_EVERY_COPY: Cell<bool> = const { Cell::new(false) };
        /// Copies relocated on this thread.
        static RELOCATED: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn compiles_every_copy() -> bool {
        COMPILE_EVERY_COPY.get()
    }

    pub(super) fn note_relocation() {
        RELOCATED.set(RELOCATED.get() + 1);
    }

    /// The graph of `gbnf` as text (nodes, split targets, counted copies, classes),
    /// with copies relocated or each compiled.
    fn graph(gbnf: &str, relocate: bool) -> String {
        RELOCATED.set(0);
        COMPILE_EVERY_COPY.set(!relocate);
        let compiled = CompiledGrammar::from_gbnf(gbnf);
        COMPILE_EVERY_COPY.set(false);
        let graph = &compiled
            .unwrap_or_else(|error| panic!("{gbnf}: {error:?}"))
            .inner;
        format!(
            "{:?}\n{:?}\n{:?}\n{:?}",
            graph.nodes, graph.split_targets, graph.counted, graph.classes
        )
    }

    #[test]
    fn relocated_copies_make_the_graph_that_compiling_each_copy_makes() {
        // Each grammar, and whether its copies are relocated.
        let grammars = [
            // JSON string characters with escapes (the twin's case), optional copies.
            (
                r#"root ::= "\"" char{0,40} "\""
char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4})"#,
                true,
            ),
            // Mandatory and optional copies, a twin.
            (r#"root ::= [a-z]{5,60} "." "#, true),
            // Copies that call a rule and loop inside.
            (
                r#"root ::= ("a" [0-9]* item){0,30}
item ::= "x" | "y" root?"#,
                true,
            ),
            // Few copies (no twin), a group of alternatives.
            (r#"root ::= ("ab" | "c" | [d-f]+){1,3}"#, true),
            // Copies holding a counted repetition of their own: compiled each time (the
            // inner repetition's copies are relocated).
            (r#"root ::= ("-" [0-9]{0,20}){2,12}"#, true),
            // Copies that cannot move (a token): compiled each time.
            (r#"root ::= (<[7]> "a"){0,20}"#, false),
        ];
        for (gbnf, relocates) in grammars {
            let relocated = graph(gbnf, true);
            assert_eq!(RELOCATED.get() > 0, relocates, "{gbnf}");
            assert_eq!(relocated, graph(gbnf, false), "{gbnf}");
            assert_eq!(RELOCATED.get(), 0);
        }
    }
}
