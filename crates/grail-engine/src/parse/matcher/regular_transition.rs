//! Learning a walk's transition without a step, when its closure stays inside one rule
//! call's automaton (split nodes only: no rule call, no return).
//!
//! Most transitions a cold mask learns are such: the next letter of a key trie, a string
//! character, a digit. The general way (`Parser::learn_inner_transition`) pushes the
//! source state as a step, closes the byte's kernel with frames and caller links, and
//! rolls both back; here the target's items come straight from the state's items, and
//! the state key, interning and the recorded transition are the same as that way's (the
//! same helpers, on the same items in the same order), so states and masks are too.
//! A tail jump (`elide_tail_calls`) stays a jump here only where `close_step` keeps it
//! one: no call is made, so only a second frame jumping to the same rule changes it.

use crate::automaton::step_cache::{NEVER_CACHEABLE, NO_STATE, StateId};
use crate::graph::records::Item;
use crate::graph::{GrammarGraph, Node};
use crate::parse::matcher::{Parser, add};
use crate::parse::step_description::{describe_step, transition_template};

impl Parser {
    /// Learns the transition of `state` (its slots standing for `frames`) on the byte
    /// whose kernel and carried items `scan_state_byte` left in the scratch, when its
    /// closure needs no rule call and no return. False, recording nothing and leaving the
    /// kernel and carried items as they were, when it does (or a limit is near): the
    /// general way learns it then.
    pub(crate) fn learn_regular_transition(
        &mut self,
        state: StateId,
        frames: &[u32],
        byte: u8,
    ) -> bool {
        let graph: &GrammarGraph = &self.grammar.inner;
        let limits = graph.limits;
        let scratch = &mut self.scratch;
        scratch.seen.clear(graph.nodes.len());
        scratch.worklist.clear();
        scratch.regular_items.clear();
        scratch.tail_jumps.clear();
        for &item in &scratch.carried {
            if scratch.seen.insert(item) {
                scratch.regular_items.push(item);
            }
        }
        for &item in &scratch.kernel {
            if graph.is_productive(item.node) && scratch.seen.insert(item) {
                scratch.worklist.push(item);
            }
        }
        while let Some(item) = scratch.worklist.pop() {
            match graph.nodes[item.node as usize] {
                Node::Char { .. } | Node::Class { .. } | Node::Any { .. } | Node::Token { .. } => {
                    scratch.regular_items.push(item);
                }
                Node::Split { first, count } => {
                    if let Some((rule, _)) = graph.tail_jump(first) {
                        // `close_step` makes the call when two frames jump to one rule.
                        if scratch
                            .tail_jumps
                            .iter()
                            .any(|&(other, _, frame)| other == rule && frame != item.frame)
                        {
                            return false;
                        }
                        scratch.tail_jumps.push((rule, 0, item.frame));
                    }
                    for &target in graph.targets(first, count) {
                        add(graph, scratch, target, item.frame);
                    }
                }
                Node::Call { .. } | Node::Return => return false,
            }
            if scratch.seen.len() > limits.max_items_per_step {
                return false;
            }
        }
        // As `close_step` counts it, the source state's items pushed as a step included.
        let source_items = self.cache.state(state).items.len();
        let state_size = self.items.len()
            + source_items
            + scratch.regular_items.len()
            + self.frames.len()
            + self.links.len();
        if state_size > limits.max_state_items {
            return false;
        }
        // As `close_step` orders a step's items and describes it: no frame made, no
        // return, so not accepting, and the frames and links are the source's.
        let mut items = std::mem::take(&mut scratch.regular_items);
        items.sort_unstable_by_key(|item: &Item| (item.node, item.partial.to_bits(), item.frame));
        let described = describe_step(&items, false, &self.frames, &self.links, scratch);
        scratch.regular_items = items;
        let cache = &*self.cache;
        let target = if described {
            cache.intern(graph, &scratch.key, &scratch.state_items, false)
        } else {
            NO_STATE
        };
        scratch.source_frames.clear();
        scratch.source_frames.extend_from_slice(frames);
        scratch.inner_only = true;
        scratch.escaped = 0;
        let transition = (target != NO_STATE)
            .then(|| {
                transition_template(
                    target,
                    false,
                    self.frames.len(),
                    self.links.len(),
                    &self.frames,
                    &self.links,
                    scratch,
                )
            })
            .flatten();
        scratch.inner_only = false;
        match transition {
            Some(transition) => cache.record(graph, state, byte, transition),
            None => cache.record_marker(graph, state, byte, NEVER_CACHEABLE),
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use crate::CompiledGrammar;
    use crate::Matcher;
    use crate::automaton::step_cache::{DEAD, NEVER_CACHEABLE, NOT_CACHEABLE, StateId, UNKNOWN};

    /// What a matcher of `source`, compiled afresh (matchers of one compiled grammar share
    /// what they learn), learns exploring every byte from the state after `prefix`,
    /// breadth first over at most `max_states` states: per (state, byte) the recorded
    /// entry (a marker, or the transition with its target's items), and how many
    /// transitions the regular way took.
    fn explore(
        source: &str,
        prefix: &str,
        regular_first: bool,
        max_states: usize,
    ) -> (Vec<String>, usize) {
        let grammar = CompiledGrammar::from_gbnf(source).expect("the grammar compiles");
        let mut matcher = Matcher::new(&grammar);
        matcher.accept_str(prefix).expect("the prefix matches");
        let mut frames = Vec::new();
        let start = matcher
            .parser
            .current_state(&mut frames)
            .expect("the prefix's step is a cached state");
        let mut learned = Vec::new();
        let mut regular = 0;
        let mut queue = VecDeque::from([start]);
        let mut seen = vec![start];
        while let Some(state) = queue.pop_front() {
            for byte in 0..=255u8 {
                if matcher.parser.step_cache().transition(state, byte) != UNKNOWN {
                    continue;
                }
                if regular_first {
                    matcher.parser.scan_state_byte(state, &frames, byte);
                    let has_items = !matcher.parser.scratch.kernel.is_empty()
                        || !matcher.parser.scratch.carried.is_empty();
                    if has_items
                        && matcher
                            .parser
                            .learn_regular_transition(state, &frames, byte)
                    {
                        regular += 1;
                    }
                }
                let entry = match matcher.parser.step_cache().transition(state, byte) {
                    UNKNOWN => matcher
                        .parser
                        .learn_inner_transition_by(state, &frames, byte, false),
                    known => known,
                };
                let described = match entry {
                    DEAD | NOT_CACHEABLE | NEVER_CACHEABLE | UNKNOWN => format!("marker {entry}"),
                    result => {
                        let transition = matcher.parser.step_cache().result(result).clone();
                        let target: StateId = transition.target;
                        let data = matcher.parser.step_cache().state(target);
                        let summary = (data.items.clone(), data.accepting);
                        // Only transitions that keep the slots in place are followed (the
                        // frames stand for the same slots there).
                        if transition.keeps_slots
                            && transition.escapes == 0
                            && transition.new_frames == 0
                            && !seen.contains(&target)
                            && seen.len() < max_states
                        {
                            seen.push(target);
                            queue.push_back(target);
                        }
                        format!("{transition:?} -> {summary:?}")
                    }
                };
                learned.push(format!("{state} {byte}: {described}"));
            }
        }
        (learned, regular)
    }

    #[test]
    fn transitions_learned_without_a_step_are_those_a_step_learns() {
        // A key that is one of some names or any other string (its trie and the free run
        // beside it, as JSON Schema's declared and additional properties make), then a
        // rule call (which the general way learns: it makes a frame).
        let source = concat!(
            r#"root ::= "{\"" ("name" | "names" | "size" | "séance" | ([a-z] | "é" | "\\" ["\\n])+) "\": " number "}""#,
            "\n",
            r#"number ::= [0-9]+ | "-" [0-9]+"#,
        );
        let (by_step, none_regular) = explore(source, "{\"", false, 40);
        let (regular_first, regular) = explore(source, "{\"", true, 40);
        assert_eq!(none_regular, 0);
        assert!(regular >= 20, "only {regular} transitions were regular");
        assert!(regular < regular_first.len());
        assert_eq!(by_step, regular_first);
    }
}
