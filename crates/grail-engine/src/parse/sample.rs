//! Random strings of a grammar's language, for grammar authors (`grail sample`) and for
//! property tests.
//!
//! The sampler walks the compiled graph directly, choosing uniformly among the branches
//! that still fit in the length budget. Each node knows the cheapest way to finish its
//! rule (fewest characters, then fewest nodes), so when the budget runs out, or after
//! too many steps, the walk takes cheapest branches, which always terminates.

use grail_grammar::ScalarSet;
use rand::Rng;

use crate::automaton::grammar::CompiledGrammar;
use crate::graph::{Node, NodeId};

/// A piece of sampled output: text, or one whole token (from `<[id]>` elements).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Text.
    Text(String),
    /// A token id.
    Token(u32),
}

/// The cost of finishing: characters, then nodes visited.
type Cost = (u32, u32);

const UNREACHABLE: Cost = (u32::MAX, u32::MAX);

/// Generates random strings of a grammar's language.
#[derive(Debug, Clone)]
pub struct Sampler {
    grammar: CompiledGrammar,
    /// `finish[node]`: the cheapest cost from the node to its rule's end.
    finish: Vec<Cost>,
}

fn plus(a: Cost, b: Cost) -> Cost {
    (a.0.saturating_add(b.0), a.1.saturating_add(b.1))
}

impl Sampler {
    /// Prepares a sampler (a fixed-point pass over the graph).
    pub fn new(grammar: &CompiledGrammar) -> Sampler {
        let graph = &grammar.inner;
        let mut finish = vec![UNREACHABLE; graph.nodes.len()];
        // Relax until nothing changes. Successors are usually built before their nodes,
        // so one pass in index order settles sequences; calls and loops need a few more.
        let max_passes = graph.rules.len() + 16;
        for _ in 0..max_passes {
            let mut changed = false;
            for index in 0..graph.nodes.len() {
                if !graph.productive[index] {
                    continue;
                }
                let cost = match graph.nodes[index] {
                    Node::Return => (0, 0),
                    Node::Char { next, .. }
                    | Node::Class { next, .. }
                    | Node::Any { next }
                    | Node::Token { next, .. } => plus((1, 1), finish[next as usize]),
                    Node::Call { rule, next } => plus(
                        (0, 1),
                        plus(
                            finish[graph.rules[rule as usize].start as usize],
                            finish[next as usize],
                        ),
                    ),
                    Node::Split { first, count } => plus(
                        (0, 1),
                        graph
                            .targets(first, count)
                            .iter()
                            .map(|&target| finish[target as usize])
                            .min()
                            .unwrap_or(UNREACHABLE),
                    ),
                };
                if cost < finish[index] {
                    finish[index] = cost;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        Sampler {
            grammar: grammar.clone(),
            finish,
        }
    }

    /// One random string of at most about `max_chars` characters (longer only when the
    /// grammar's shortest completion needs it). `None` when the grammar matches nothing.
    pub fn sample(&self, rng: &mut impl Rng, max_chars: usize) -> Option<Vec<Segment>> {
        let graph = &self.grammar.inner;
        let root_start = graph.rules[graph.root as usize].start;
        if self.finish[root_start as usize] == UNREACHABLE {
            return None;
        }
        let max_chars = max_chars as u64;
        let soft_step_limit = 64 * max_chars + 10_000;
        let hard_step_limit = soft_step_limit + 10_000_000;
        let mut output = Output::default();
        let mut continuations: Vec<NodeId> = Vec::new();
        let mut pending_chars: u64 = 0;
        let mut emitted: u64 = 0;
        let mut node = root_start;
        for step in 0..hard_step_limit {
            let cheapest_only = step > soft_step_limit;
            match graph.nodes[node as usize] {
                Node::Return => match continuations.pop() {
                    None => return Some(output.finish()),
                    Some(next) => {
                        pending_chars -= u64::from(self.finish[next as usize].0);
                        node = next;
                    }
                },
                Node::Char { code_point, next } => {
                    output.push_char(code_point);
                    emitted += 1;
                    node = next;
                }
                Node::Class { set, next } => {
                    let class = &graph.classes[set as usize];
                    let printable = class.intersection(&ScalarSet::from_ranges([(0x20, 0x7E)]));
                    let pool = if !printable.is_empty() && rng.random_ratio(3, 4) {
                        &printable
                    } else {
                        class
                    };
                    let code_point = pool.nth(rng.random_range(0..pool.len()))?;
                    output.push_char(code_point);
                    emitted += 1;
                    node = next;
                }
                Node::Any { next } => {
                    let code_point = if rng.random_ratio(3, 4) {
                        rng.random_range(0x20..=0x7E)
                    } else {
                        ScalarSet::all().nth(rng.random_range(0..0x10F800))?
                    };
                    output.push_char(code_point);
                    emitted += 1;
                    node = next;
                }
                Node::Token { set, next } => {
                    let token_set = &graph.token_sets[set as usize];
                    let id = if token_set.negated {
                        let bound = token_set
                            .ids
                            .last()
                            .map_or(16, |&last| last.saturating_add(16));
                        loop {
                            let candidate = rng.random_range(0..=bound);
                            if token_set.matches(candidate) {
                                break candidate;
                            }
                        }
                    } else {
                        token_set.ids[rng.random_range(0..token_set.ids.len())]
                    };
                    output.push_token(id);
                    emitted += 1;
                    node = next;
                }
                Node::Call { rule, next } => {
                    continuations.push(next);
                    pending_chars += u64::from(self.finish[next as usize].0);
                    node = graph.rules[rule as usize].start;
                }
                Node::Split { first, count } => {
                    let targets = graph.targets(first, count);
                    let budget = max_chars.saturating_sub(emitted + pending_chars);
                    let cheapest = *targets
                        .iter()
                        .min_by_key(|&&target| self.finish[target as usize])
                        .expect("a productive split has a productive target");
                    node = if cheapest_only {
                        cheapest
                    } else {
                        let fitting: Vec<NodeId> = targets
                            .iter()
                            .copied()
                            .filter(|&target| {
                                u64::from(self.finish[target as usize].0) <= budget
                                    && self.finish[target as usize] != UNREACHABLE
                            })
                            .collect();
                        if fitting.is_empty() {
                            cheapest
                        } else {
                            fitting[rng.random_range(0..fitting.len())]
                        }
                    };
                }
            }
        }
        None
    }
}

/// Sampled output being built.
#[derive(Default)]
struct Output {
    segments: Vec<Segment>,
    text: String,
}

impl Output {
    fn push_char(&mut self, code_point: u32) {
        if let Some(character) = char::from_u32(code_point) {
            self.text.push(character);
        }
    }

    fn push_token(&mut self, id: u32) {
        if !self.text.is_empty() {
            self.segments
                .push(Segment::Text(std::mem::take(&mut self.text)));
        }
        self.segments.push(Segment::Token(id));
    }

    fn finish(mut self) -> Vec<Segment> {
        if !self.text.is_empty() || self.segments.is_empty() {
            self.segments.push(Segment::Text(self.text));
        }
        self.segments
    }
}
