//! Compiling the grammar IR into the matcher's form: one flat graph of nodes (`graph/`).
//!
//! Every rule becomes a small automaton inside one node array. Consuming nodes (a code
//! point, a class, any character, a token) and calls point at the node that follows;
//! `Split` fans out to alternatives and loop exits; each rule ends in its `Return` node.
//! Sequences are compiled back to front, so a node's successor always exists before it.
//! After building, nodes that can never reach their rule's end (empty classes, calls to
//! rules with no finite derivation) are marked unproductive and the matcher never enters
//! them: every item it holds can be completed, so "some item is alive" means "viable".

use grail_grammar::{Grammar, RuleId, ScalarSet, SymbolKind, TokenReference};

use crate::compile::counted::{
    TWIN_MIN_COPIES, bounded_repetition_of, countable_nodes, json_unit_starts, optional_chain,
    same_node_shape, same_shape,
};
use crate::compile::inline::{INLINE_MAX_DEPTH, node_estimate, rule_sizes};
use crate::compile::prepare::Prepared;
use crate::error::CompileError;
use crate::graph::counted::CountedCopy;
use crate::graph::loop_items::LoopingNodes;
use crate::graph::{CompiledRule, GrammarGraph, NO_CARRIER, Node, NodeId, TokenSet};
use crate::limits::EngineLimits;

mod copies;
pub(crate) mod counted;
pub(crate) mod inline;
pub(crate) mod prepare;
use copies::Copies;

/// Resolves a token's text (`think` in `<think>`) to its id in the vocabulary.
pub type TokenResolver<'r> = dyn Fn(&str) -> Option<u32> + 'r;

/// Options for [`crate::CompiledGrammar::compile`].
#[derive(Default)]
pub struct CompileOptions<'a> {
    /// Size limits.
    pub limits: EngineLimits,
    /// Resolves a token written by text (`<think>`) to its id; without a vocabulary,
    /// such tokens are a compile error.
    pub resolve_token_text: Option<&'a TokenResolver<'a>>,
}

/// Compiles a grammar the way [`prepare`] left it into its graph.
pub(crate) fn compile_graph(
    prepared: &Prepared<'_>,
    options: &CompileOptions<'_>,
) -> Result<GrammarGraph, CompileError> {
    let grammar = &*prepared.grammar;
    let (references, inline, node_estimate) = match &prepared.analysis {
        Some(analysis) => (
            std::borrow::Cow::Borrowed(&analysis.references),
            analysis.inline.clone(),
            analysis.node_estimate,
        ),
        None => {
            let references = grail_grammar::analysis::references(grammar);
            let (inline, sizes) = rule_sizes(grammar, &prepared.calls_only, &references);
            let estimate = node_estimate(&inline, &sizes);
            (std::borrow::Cow::Owned(references), inline, estimate)
        }
    };
    let mut builder = GraphBuilder {
        grammar,
        options,
        inline,
        inline_depth: 0,
        needed: vec![false; grammar.rules.len()],
        queue: Vec::new(),
        nodes: Vec::with_capacity(node_estimate.min(options.limits.max_nodes)),
        split_targets: Vec::new(),
        classes: Vec::new(),
        class_negated: Vec::new(),
        class_listed: Vec::new(),
        class_index: rustc_hash::FxHashMap::default(),
        class_at_address: rustc_hash::FxHashMap::default(),
        token_sets: Vec::new(),
        counted: Vec::new(),
        not_chains: rustc_hash::FxHashSet::default(),
        inline_copies: rustc_hash::FxHashMap::default(),
        shared_nodes: rustc_hash::FxHashMap::default(),
        shared_loops: rustc_hash::FxHashMap::default(),
        repetition_depth: 0,
    };
    // Only rules that are called (not inlined) get their own automaton: the root,
    // then whatever the compiled rules call.
    let never = builder.split(&[])?;
    let mut starts = vec![never; grammar.rules.len()];
    builder.need(grammar.root.0);
    // One end for every rule: what follows a rule's last symbol is the same return
    // whichever rule it is, so equal tails of different rules can be one automaton.
    let end = builder.push(Node::Return)?;
    while let Some(rule) = builder.queue.pop() {
        starts[rule as usize] =
            builder.alternatives(&grammar.rules[rule as usize].alternatives, end)?;
    }
    let rules: Vec<CompiledRule> = grammar
        .rules
        .iter()
        .zip(starts)
        .map(|(rule, start)| CompiledRule {
            name: rule.name.clone(),
            start,
        })
        .collect();
    let tail_jumps_first = builder.split_targets.len() as u32;
    let tail_jumps = elide_tail_calls(
        &mut builder.nodes,
        &mut builder.split_targets,
        &rules,
        &builder.counted,
    );
    let class_all_non_ascii: Vec<Option<bool>> =
        builder.classes.iter().map(all_non_ascii).collect();
    let character_carriers = character_carriers(&mut builder, &class_all_non_ascii)?;
    let productive = if every_symbol_productive(grammar, &references) {
        // Every node can reach its rule's end but the empty split that stands for
        // the rules not compiled, which nothing calls.
        builder
            .nodes
            .iter()
            .map(|node| !matches!(node, Node::Split { count: 0, .. }))
            .collect()
    } else {
        productive_nodes(
            &builder.nodes,
            &builder.split_targets,
            &rules,
            &builder.classes,
        )
    };
    let countable_nodes = countable_nodes(&builder.counted, builder.nodes.len());
    let looping_nodes = LoopingNodes::new(builder.nodes.len());
    Ok(GrammarGraph {
        nodes: builder.nodes,
        split_targets: builder.split_targets,
        class_ascii: builder.classes.iter().map(ascii_bitmap).collect(),
        class_lead_bytes: builder.classes.iter().map(lead_bytes).collect(),
        class_all_non_ascii,
        character_carriers,
        classes: builder.classes,
        class_negated: builder.class_negated,
        class_listed: builder.class_listed,
        token_sets: builder.token_sets,
        rules,
        root: grammar.root.0,
        tail_jumps_first,
        tail_jumps,
        productive,
        counted: builder.counted,
        countable_nodes,
        looping_nodes,
        limits: options.limits,
    })
}

/// A character set compiled: one character, or a class by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum ClassNode {
    Char(u32),
    Class(u32),
}

struct GraphBuilder<'a, 'o> {
    grammar: &'a Grammar,
    options: &'a CompileOptions<'o>,
    /// Rules compiled in place of a call.
    inline: Vec<bool>,
    /// How many inlined rules enclose the symbol being compiled.
    inline_depth: u32,
    /// Rules that are called, so need an automaton of their own.
    needed: Vec<bool>,
    queue: Vec<u32>,
    nodes: Vec<Node>,
    split_targets: Vec<NodeId>,
    classes: Vec<ScalarSet>,
    class_negated: Vec<bool>,
    class_listed: Vec<ScalarSet>,
    /// Each distinct class written, with its index in `classes`.
    class_index: rustc_hash::FxHashMap<grail_grammar::CharSet, u32>,
    /// What each character set of the grammar compiled to, by its address (the grammar
    /// is borrowed for the whole compile, so addresses are stable).
    class_at_address: rustc_hash::FxHashMap<usize, ClassNode>,
    token_sets: Vec<TokenSet>,
    counted: Vec<CountedCopy>,
    /// Nested optionals found not to be chains of one symbol (see `optional_chain`).
    not_chains: rustc_hash::FxHashSet<usize>,
    /// Where an inlined rule's copy starts, by rule and continuation: a rule inlined
    /// again before the same continuation (a key trie's shared tails, all ending where
    /// the trie ends) is the same automaton, so its first copy serves, and its states
    /// are learned once.
    inline_copies: rustc_hash::FxHashMap<(u32, NodeId), NodeId>,
    /// How many repetitions enclose the symbol being compiled: no inlined copy is shared
    /// there (a copy of `X` shared by `X{9}`'s last copy and the loop of `X*` after it
    /// undid the counting of its copies: one schema's mask inside a `minLength` string
    /// 0.6 M → 40 M instructions).
    repetition_depth: u32,
    /// Consuming and calling nodes built outside repetitions, by what they are: a node
    /// equal to one built before (the same symbol before the same continuation) is that
    /// node, so equal tails of different rules (a key trie's `canonical-char* "\""`
    /// after each of its excluded first characters) are one automaton and their states
    /// are learned once.
    shared_nodes: rustc_hash::FxHashMap<Node, NodeId>,
    /// Loops `X*` built outside repetitions, by what `X` is (a rule, or a character set's
    /// node) and their continuation (see `shared_nodes`).
    shared_loops: rustc_hash::FxHashMap<(LoopBody, NodeId), NodeId>,
}

/// What a shareable loop repeats (see `GraphBuilder::shared_loops`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum LoopBody {
    Rule(u32),
    Class(ClassNode),
}

impl GraphBuilder<'_, '_> {
    fn need(&mut self, rule: u32) {
        if !std::mem::replace(&mut self.needed[rule as usize], true) {
            self.queue.push(rule);
        }
    }

    fn push(&mut self, node: Node) -> Result<NodeId, CompileError> {
        let shareable = self.repetition_depth == 0
            && matches!(
                node,
                Node::Char { .. } | Node::Class { .. } | Node::Any { .. } | Node::Call { .. }
            );
        if let Some(&shared) = shareable.then(|| self.shared_nodes.get(&node)).flatten() {
            return Ok(shared);
        }
        let id = self.push_new(node)?;
        if shareable {
            self.shared_nodes.insert(node, id);
        }
        Ok(id)
    }

    /// Appends `node` (see [`GraphBuilder::push`]).
    fn push_new(&mut self, node: Node) -> Result<NodeId, CompileError> {
        if self.nodes.len() >= self.options.limits.max_nodes {
            return Err(CompileError::TooLarge {
                limit: self.options.limits.max_nodes,
            });
        }
        self.nodes.push(node);
        Ok((self.nodes.len() - 1) as NodeId)
    }

    fn split(&mut self, targets: &[NodeId]) -> Result<NodeId, CompileError> {
        if let [only] = targets {
            return Ok(*only);
        }
        let first = self.split_targets.len() as u32;
        self.split_targets.extend_from_slice(targets);
        self.push(Node::Split {
            first,
            count: targets.len() as u32,
        })
    }

    fn alternatives(
        &mut self,
        alternatives: &[grail_grammar::Sequence],
        next: NodeId,
    ) -> Result<NodeId, CompileError> {
        if let [only] = alternatives {
            return self.sequence(only, next);
        }
        let mut starts = Vec::with_capacity(alternatives.len());
        // Alternatives that compile to the same node are one target: looked for in the
        // list while it is short, in a set when it is long (enums and key tries have
        // thousands of alternatives).
        let mut seen = rustc_hash::FxHashSet::default();
        for sequence in alternatives {
            let start = self.sequence(sequence, next)?;
            let new = if starts.len() < 16 {
                !starts.contains(&start)
            } else {
                if seen.is_empty() {
                    seen.extend(starts.iter().copied());
                }
                seen.insert(start)
            };
            if new {
                starts.push(start);
            }
        }
        if starts.is_empty() {
            // A rule with no alternatives cannot be written in GBNF; the builder may make
            // one, and it matches nothing.
            return self.split(&[]);
        }
        self.split(&starts)
    }

    fn sequence(
        &mut self,
        symbols: &[grail_grammar::Symbol],
        next: NodeId,
    ) -> Result<NodeId, CompileError> {
        let mut start = next;
        let mut end = symbols.len();
        while end > 0 {
            let symbol = &symbols[end - 1];
            end -= 1;
            // `X X{m,n}` (as converters write `minLength: 1`) is `X{m+1,n+1}`: one
            // repetition, so its twin covers the first copy too.
            if let Some((repeated, min, max)) = bounded_repetition_of(symbol, &mut self.not_chains)
            {
                let mut before = 0;
                while end > before && same_shape(&symbols[end - 1 - before], repeated) {
                    before += 1;
                }
                if before > 0 {
                    end -= before;
                    let before = before as u32;
                    start = self.bounded_repetition(repeated, min + before, max + before, start)?;
                    continue;
                }
            }
            start = self.symbol(symbol, start)?;
        }
        Ok(start)
    }

    /// What a character set compiles to: one character, or a class (each distinct class
    /// is one entry).
    fn class_node(&mut self, set: &grail_grammar::CharSet) -> ClassNode {
        if let Some(&index) = self.class_index.get(set) {
            return ClassNode::Class(index);
        }
        let scalars = ScalarSet::from_char_set(set);
        if !set.is_negated() && scalars.len() == 1 {
            return ClassNode::Char(scalars.ranges()[0].0);
        }
        let index = self.classes.len() as u32;
        self.class_index.insert(set.clone(), index);
        self.classes.push(scalars);
        self.class_negated.push(set.is_negated());
        self.class_listed
            .push(ScalarSet::from_ranges(set.ranges().iter().copied()));
        ClassNode::Class(index)
    }

    fn symbol(
        &mut self,
        symbol: &grail_grammar::Symbol,
        next: NodeId,
    ) -> Result<NodeId, CompileError> {
        grail_syntax::stack::deep(|| {
            match &symbol.kind {
                SymbolKind::Literal(text) => {
                    let mut start = next;
                    for character in text.chars().rev() {
                        start = self.push(Node::Char {
                            code_point: u32::from(character),
                            next: start,
                        })?;
                    }
                    Ok(start)
                }
                SymbolKind::Chars(set) => {
                    // Inlined rules compile the same set again at each call site: known by
                    // its address, it is not hashed again.
                    let address = set as *const grail_grammar::CharSet as usize;
                    let node = match self.class_at_address.get(&address) {
                        Some(&node) => node,
                        None => {
                            let node = self.class_node(set);
                            self.class_at_address.insert(address, node);
                            node
                        }
                    };
                    self.push(match node {
                        ClassNode::Char(code_point) => Node::Char { code_point, next },
                        ClassNode::Class(index) => Node::Class { set: index, next },
                    })
                }
                SymbolKind::Any => self.push(Node::Any { next }),
                SymbolKind::Rule(RuleId(rule))
                    if self.inline[*rule as usize] && self.inline_depth < INLINE_MAX_DEPTH =>
                {
                    let shared = self.repetition_depth == 0;
                    if let Some(&start) = shared
                        .then(|| self.inline_copies.get(&(*rule, next)))
                        .flatten()
                    {
                        return Ok(start);
                    }
                    self.inline_depth += 1;
                    let grammar = self.grammar;
                    let counted_before = self.counted.len();
                    let start =
                        self.alternatives(&grammar.rules[*rule as usize].alternatives, next)?;
                    self.inline_depth -= 1;
                    // Copies holding counted repetitions stay apart: a counted copy's
                    // twin is found by its layout, one copy per place.
                    if shared && self.counted.len() == counted_before {
                        self.inline_copies.insert((*rule, next), start);
                    }
                    Ok(start)
                }
                SymbolKind::Rule(RuleId(rule)) => {
                    self.need(*rule);
                    self.push(Node::Call { rule: *rule, next })
                }
                SymbolKind::Group(alternatives) => self.alternatives(alternatives, next),
                SymbolKind::Token(token) => {
                    let id = match &token.reference {
                        TokenReference::Id(id) => *id,
                        TokenReference::Text(text) => self
                            .options
                            .resolve_token_text
                            .and_then(|resolve| resolve(text))
                            .ok_or_else(|| CompileError::TokenUnresolved {
                                text: text.clone(),
                                span: symbol.span,
                            })?,
                    };
                    let index = self.token_sets.len() as u32;
                    self.token_sets.push(TokenSet {
                        ids: vec![id],
                        negated: token.negated,
                    });
                    self.push(Node::Token { set: index, next })
                }
                SymbolKind::Repeat(repetition) => {
                    // `(X (X (X)?)?)?` written out is `X{0,3}`.
                    if let Some((repeated, depth)) = optional_chain(symbol, &mut self.not_chains) {
                        return self.bounded_repetition(repeated, 0, depth, next);
                    }
                    self.repetition(repetition, next)
                }
            }
        })
    }

    /// `symbol{min,max}` or `symbol{min,}`.
    fn repetition(
        &mut self,
        repetition: &grail_grammar::Repetition,
        next: NodeId,
    ) -> Result<NodeId, CompileError> {
        if let Some(max) = repetition.max {
            return self.bounded_repetition(&repetition.symbol, repetition.min, max, next);
        }
        let body = match &repetition.symbol.kind {
            SymbolKind::Rule(RuleId(rule)) => Some(LoopBody::Rule(*rule)),
            SymbolKind::Chars(set) => Some(LoopBody::Class(self.class_node(set))),
            _ => None,
        };
        let key = body
            .filter(|_| repetition.min == 0 && self.repetition_depth == 0)
            .map(|body| (body, next));
        if let Some(&start) = key.and_then(|key| self.shared_loops.get(&key)) {
            return Ok(start);
        }
        let counted_before = self.counted.len();
        let start = self.in_repetition(|builder| builder.unbounded_repetition(repetition, next))?;
        if let Some(key) = key.filter(|_| self.counted.len() == counted_before) {
            self.shared_loops.insert(key, start);
        }
        Ok(start)
    }

    /// Builds the nodes of a repetition, where no inlined copy is shared (see
    /// `repetition_depth`).
    fn in_repetition(
        &mut self,
        build: impl FnOnce(&mut Self) -> Result<NodeId, CompileError>,
    ) -> Result<NodeId, CompileError> {
        self.repetition_depth += 1;
        let start = build(self);
        self.repetition_depth -= 1;
        start
    }

    /// `symbol{min,}`: a loop, after `min` copies that read as the loop.
    fn unbounded_repetition(
        &mut self,
        repetition: &grail_grammar::Repetition,
        next: NodeId,
    ) -> Result<NodeId, CompileError> {
        // A loop: the split is made first so the body can point back at it.
        let first = self.split_targets.len() as u32;
        self.split_targets.extend_from_slice(&[0, next]);
        let loop_head = self.push(Node::Split { first, count: 2 })?;
        let body_first = self.nodes.len();
        let body = self.symbol(&repetition.symbol, loop_head)?;
        self.split_targets[first as usize] = body;
        let counted_before = self.counted.len();
        let mut copies = Vec::new();
        let mut start = loop_head;
        for _ in 0..repetition.min {
            let copy_first = self.nodes.len();
            start = self.symbol(&repetition.symbol, start)?;
            copies.push((copy_first, self.nodes.len()));
        }
        // `char{8,}` (a `minLength`): each mandatory copy reads as the loop.
        if repetition.min >= 2 && self.counted.len() == counted_before {
            self.count_minimum_copies(body_first, body, &copies);
        }
        Ok(start)
    }
}

/// Whether `set` holds every scalar past ASCII (`Some(true)`), none (`Some(false)`), or
/// some.
fn all_non_ascii(set: &ScalarSet) -> Option<bool> {
    const NON_ASCII_SCALARS: u64 = 0x10FFFF - 0x80 + 1 - 0x800;
    let held: u64 = set
        .ranges()
        .iter()
        .map(|&(first, last)| {
            let first = first.max(0x80);
            if last < first {
                0
            } else {
                let surrogates = u64::from(last.min(0xDFFF).saturating_sub(first.max(0xD800)) + 1)
                    * u64::from(first <= 0xDFFF && last >= 0xD800);
                u64::from(last - first + 1) - surrogates
            }
        })
        .sum();
    match held {
        0 => Some(false),
        NON_ASCII_SCALARS => Some(true),
        _ => None,
    }
}

/// The bytes that can begin the UTF-8 encoding of a member of `set`.
fn lead_bytes(set: &ScalarSet) -> [u64; 4] {
    let mut bytes = [0u64; 4];
    for byte in 0..=255u8 {
        let (low, high) = match crate::graph::utf8::Partial::NONE.push(byte) {
            crate::graph::utf8::Step::Complete(code_point) => (code_point, code_point),
            crate::graph::utf8::Step::Incomplete(partial) => partial.code_point_range(),
            crate::graph::utf8::Step::Invalid => continue,
        };
        let ranges = set.ranges();
        let index = ranges.partition_point(|&(_, last)| last < low);
        if ranges.get(index).is_some_and(|&(first, _)| first <= high) {
            bytes[usize::from(byte / 64)] |= 1 << (byte % 64);
        }
    }
    bytes
}

impl GraphBuilder<'_, '_> {
    /// `symbol{min,max}`: `max - min` nested optional copies, after `min` plain ones;
    /// with a twin `symbol{min} symbol*` for masks when the optional copies are many (see
    /// `counted.rs`).
    fn bounded_repetition(
        &mut self,
        symbol: &grail_grammar::Symbol,
        min: u32,
        max: u32,
        next: NodeId,
    ) -> Result<NodeId, CompileError> {
        self.in_repetition(|builder| builder.bounded_repetition_copies(symbol, min, max, next))
    }

    /// The copies of `symbol{min,max}` before `next` (see
    /// [`GraphBuilder::bounded_repetition`]).
    fn bounded_repetition_copies(
        &mut self,
        symbol: &grail_grammar::Symbol,
        min: u32,
        max: u32,
        next: NodeId,
    ) -> Result<NodeId, CompileError> {
        let counted_before = self.counted.len();
        // Copies as node ranges, in the order built: back to front, so the first built
        // is the last matched.
        let mut optional: Vec<(usize, usize)> = Vec::new();
        let mut first_entry = next;
        let mut start = next;
        let mut copies = Copies::First;
        for _ in min..max {
            let first = self.nodes.len();
            let body = self.repetition_copy(symbol, start, &mut copies)?;
            if optional.is_empty() {
                first_entry = body;
            }
            optional.push((first, self.nodes.len()));
            start = self.split(&[body, next])?;
        }
        let mut mandatory: Vec<(usize, usize)> = Vec::new();
        for _ in 0..min {
            let first = self.nodes.len();
            start = self.repetition_copy(symbol, start, &mut copies)?;
            mandatory.push((first, self.nodes.len()));
        }
        // Repetitions with twins inside the copies keep theirs (twins do not nest).
        if max - min >= TWIN_MIN_COPIES && self.counted.len() == counted_before {
            self.twin(
                symbol,
                &optional,
                first_entry,
                &mandatory,
                next,
                &mut copies,
            )?;
        }
        Ok(start)
    }

    /// Builds `symbol{m} symbol*` before `next` (`m` the mandatory copies) beside the
    /// copies of a bounded repetition (node ranges as built, see
    /// [`GraphBuilder::bounded_repetition`]; the first is entered at `first_entry`) and
    /// records each copy's counterpart in it, when every copy is laid out alike and holds
    /// only characters and splits.
    fn twin(
        &mut self,
        symbol: &grail_grammar::Symbol,
        optional: &[(usize, usize)],
        first_entry: NodeId,
        mandatory: &[(usize, usize)],
        next: NodeId,
        repeated: &mut Copies,
    ) -> Result<(), CompileError> {
        let (first, end) = optional[0];
        let len = end - first;
        let inline_only = self.nodes[first..end].iter().all(|node| {
            matches!(
                node,
                Node::Char { .. } | Node::Class { .. } | Node::Any { .. } | Node::Split { .. }
            )
        });
        let copies = || optional.iter().chain(mandatory);
        if len == 0 || !inline_only || copies().any(|&(a, b)| b - a != len) {
            return Ok(());
        }
        let targets = self.split_targets.len() as u32;
        self.split_targets.extend_from_slice(&[next, next]);
        let head = self.push(Node::Split {
            first: targets,
            count: 2,
        })?;
        let loop_body = self.nodes.len();
        let body = self.repetition_copy(symbol, head, repeated)?;
        self.split_targets[targets as usize] = body;
        let mut twin_start = head;
        let mut twin_mandatory = Vec::new();
        for _ in mandatory {
            twin_mandatory.push(self.nodes.len());
            twin_start = self.repetition_copy(symbol, twin_start, repeated)?;
        }
        let end_of_twin = self.nodes.len();
        let laid_out_alike = end_of_twin - loop_body == len * (1 + mandatory.len())
            && optional
                .iter()
                .all(|&(copy, _)| self.laid_out_alike(copy, loop_body, len))
            && mandatory
                .iter()
                .zip(&twin_mandatory)
                .all(|(&(copy, _), &twin)| self.laid_out_alike(copy, twin, len));
        if !laid_out_alike {
            return Ok(());
        }
        let class_bytes = match self.nodes[first..end] {
            [Node::Class { set, .. }] => Some(byte_bits(&self.classes[set as usize])),
            [Node::Char { code_point, .. }] => Some(byte_bits(&ScalarSet::from_ranges([(
                code_point, code_point,
            )]))),
            _ => None,
        };
        let json_char_starts = json_unit_starts(
            &self.nodes,
            &self.split_targets,
            &self.classes,
            first,
            end,
            first_entry,
        );
        // Copies left from each one to the end, itself included: the optional ones count
        // up as built, the mandatory ones go on from there.
        let remaining = 1u32..;
        for ((&(copy, _), twin), left) in optional
            .iter()
            .zip(std::iter::repeat(loop_body))
            .chain(mandatory.iter().zip(twin_mandatory.iter().copied()))
            .zip(remaining)
        {
            self.counted.push(CountedCopy {
                first: copy as NodeId,
                len: len as u32,
                remaining: left,
                twin: twin as NodeId,
                class_bytes,
                json_char_starts,
                minimum: false,
            });
        }
        Ok(())
    }
}

impl GraphBuilder<'_, '_> {
    /// True when the `len` nodes from `copy` and from `twin` are node for node the same
    /// kind, every edge inside one going to the same place relative to it as in the other
    /// (edges out of them leave both).
    fn laid_out_alike(&self, copy: usize, twin: usize, len: usize) -> bool {
        let leads_alike = |a: NodeId, b: NodeId| {
            let inside = |base: usize, node: NodeId| {
                (node as usize)
                    .checked_sub(base)
                    .filter(|&offset| offset < len)
            };
            inside(copy, a) == inside(twin, b)
        };
        (0..len).all(|offset| {
            let (a, b) = (self.nodes[copy + offset], self.nodes[twin + offset]);
            same_node_shape(a, b)
                && match (a, b) {
                    (Node::Split { first: x, count }, Node::Split { first: y, .. }) => {
                        (0..count as usize).all(|k| {
                            leads_alike(
                                self.split_targets[x as usize + k],
                                self.split_targets[y as usize + k],
                            )
                        })
                    }
                    _ => match (node_next(a), node_next(b)) {
                        (Some(a), Some(b)) => leads_alike(a, b),
                        _ => true,
                    },
                }
        })
    }

    /// Records the mandatory copies of `X{m,}` (node ranges as built) as counted copies
    /// of the loop `X*` (its body at `body_first..body_first + len`, entered at
    /// `body_entry`) when `X` is one JSON string character and every copy is laid out
    /// like the body: a mask in the `k`-th copy from the end is the loop's, less the
    /// tokens that end the string within `k` characters (see `counted.rs`).
    fn count_minimum_copies(
        &mut self,
        body_first: usize,
        body_entry: NodeId,
        copies: &[(usize, usize)],
    ) {
        let Some(&(first, end)) = copies.first() else {
            return;
        };
        let len = end - first;
        let inline_only = self.nodes[body_first..body_first + len].iter().all(|node| {
            matches!(
                node,
                Node::Char { .. } | Node::Class { .. } | Node::Any { .. } | Node::Split { .. }
            )
        });
        if len == 0
            || !inline_only
            || copies.iter().any(|&(a, b)| b - a != len)
            || !copies
                .iter()
                .all(|&(copy, _)| self.laid_out_alike(copy, body_first, len))
        {
            return;
        }
        let Some(starts) = json_unit_starts(
            &self.nodes,
            &self.split_targets,
            &self.classes,
            body_first,
            body_first + len,
            body_entry,
        ) else {
            return;
        };
        // Built back to front: the last built is matched first, with every copy left.
        for (&(copy, _), left) in copies.iter().zip(1u32..) {
            self.counted.push(CountedCopy {
                first: copy as NodeId,
                len: len as u32,
                remaining: left,
                twin: body_first as NodeId,
                class_bytes: None,
                json_char_starts: Some(starts),
                minimum: true,
            });
        }
    }
}

/// Turns every call in tail position (its successor is its rule's `Return`) into a jump
/// to the callee's start, in the caller's frame, as llama.cpp's stacks do (they never push
/// a call's end): the callee returning would only return the caller, so both end the
/// same. Right recursion (`s ::= [a-z] s | "x"`, the automata of unanchored patterns)
/// otherwise makes one frame per byte, each the caller of the next, and every return
/// crosses the whole chain; with jumps the recursion is a loop whose steps repeat. Calls
/// inside counted copies stay calls: a copy keeps its twin's layout.
///
/// Each jump is a one-target split whose target is appended to `split_targets`, in the
/// order of the returned list: (the rule jumped to, the return the call continued at).
/// The matcher still makes the call where a jump would lose the sharing of frames: when
/// the rule is called at the same step anyway, or several frames jump to it there
/// (`Matcher::close_step`; `root ::= "a" root "b" | "a" root |` otherwise keeps the
/// rule's start in every older frame, and each step's call gets one caller per frame).
fn elide_tail_calls(
    nodes: &mut [Node],
    split_targets: &mut Vec<NodeId>,
    rules: &[CompiledRule],
    counted: &[CountedCopy],
) -> Vec<(u32, NodeId)> {
    let mut jumps = Vec::new();
    // Copies are in node order and do not overlap.
    let in_counted_copy = |index: usize| {
        let after = counted.partition_point(|copy| copy.first as usize <= index);
        after > 0 && {
            let copy = counted[after - 1];
            index < copy.first as usize + copy.len as usize
        }
    };
    for index in 0..nodes.len() {
        let Node::Call { rule, next } = nodes[index] else {
            continue;
        };
        if !matches!(nodes[next as usize], Node::Return) || in_counted_copy(index) {
            continue;
        }
        let first = split_targets.len() as u32;
        split_targets.push(rules[rule as usize].start);
        nodes[index] = Node::Split { first, count: 1 };
        jumps.push((rule, next));
    }
    jumps
}

/// For each class node that takes every character past ASCII, an `Any` node before the
/// same continuation, appended: an item inside a character takes the same completions
/// on either, so it is carried by the `Any` node, and such items of different classes
/// before one continuation (a key trie's excluded first characters, each followed by the
/// rest of the string) make one state. Not for nodes of counted copies or their twins,
/// which are read by their layout (`counted.rs`). Empty when no node has a carrier.
fn character_carriers(
    builder: &mut GraphBuilder<'_, '_>,
    class_all_non_ascii: &[Option<bool>],
) -> Result<Vec<NodeId>, CompileError> {
    if !class_all_non_ascii.contains(&Some(true)) {
        return Ok(Vec::new());
    }
    let mut in_copies = vec![false; builder.nodes.len()];
    for copy in &builder.counted {
        for first in [copy.first, copy.twin] {
            let range = first as usize..(first + copy.len) as usize;
            if let Some(nodes) = in_copies.get_mut(range) {
                nodes.fill(true);
            }
        }
    }
    let mut carriers = Vec::new();
    let mut by_next = rustc_hash::FxHashMap::default();
    for (index, in_copy) in in_copies.into_iter().enumerate() {
        let Node::Class { set, next } = builder.nodes[index] else {
            continue;
        };
        if class_all_non_ascii[set as usize] != Some(true) || in_copy {
            continue;
        }
        let carrier = match by_next.get(&next) {
            Some(&carrier) => carrier,
            None => {
                let carrier = builder.push_new(Node::Any { next })?;
                by_next.insert(next, carrier);
                carrier
            }
        };
        carriers.resize(index, NO_CARRIER);
        carriers.push(carrier);
    }
    if !carriers.is_empty() {
        carriers.resize(builder.nodes.len(), NO_CARRIER);
    }
    Ok(carriers)
}

/// Where a consuming node leads.
fn node_next(node: Node) -> Option<NodeId> {
    match node {
        Node::Char { next, .. }
        | Node::Class { next, .. }
        | Node::Any { next }
        | Node::Token { next, .. }
        | Node::Call { next, .. } => Some(next),
        Node::Split { .. } | Node::Return => None,
    }
}

/// A set's members as [`grail_vocab::byte_bit`] bits: its ASCII code points (NUL and DEL
/// sharing bit 0), bit 127 when it has members past ASCII.
fn byte_bits(set: &ScalarSet) -> u128 {
    let ascii = ascii_bitmap(set);
    let del_or_nul = ascii & (1 | 1 << 0x7F) != 0;
    let past_ascii = set.ranges().last().is_some_and(|&(_, last)| last >= 0x80);
    (ascii & !(1 | 1 << 0x7F)) | u128::from(del_or_nul) | u128::from(past_ascii) << 127
}

/// The ASCII members of a set, bit `c` for code point `c`.
fn ascii_bitmap(set: &ScalarSet) -> u128 {
    (0..128u32)
        .filter(|&code_point| set.contains(code_point))
        .fold(0, |bits, code_point| bits | 1 << code_point)
}

/// True when every rule and every symbol written anywhere (each alternative, each
/// repeated item) can match something: then every node compiled from them can reach its
/// rule's `Return`, which is cheaper to see on the IR than on the graph (most grammars).
fn every_symbol_productive(grammar: &Grammar, references: &[Vec<u32>]) -> bool {
    fn productive(symbol: &grail_grammar::Symbol) -> bool {
        grail_syntax::stack::deep(|| match &symbol.kind {
            SymbolKind::Chars(set) => !set.matches_nothing(),
            SymbolKind::Group(alternatives) => {
                !alternatives.is_empty() && alternatives.iter().flatten().all(productive)
            }
            SymbolKind::Repeat(repetition) => productive(&repetition.symbol),
            SymbolKind::Literal(_)
            | SymbolKind::Any
            | SymbolKind::Rule(_)
            | SymbolKind::Token(_) => true,
        })
    }
    grail_grammar::analysis::productive_rules(grammar, references, false)
        .iter()
        .all(|&rule| rule)
        && grammar.rules.iter().all(|rule| {
            !rule.alternatives.is_empty() && rule.alternatives.iter().flatten().all(productive)
        })
}

/// Which nodes can reach their rule's `Return`, consuming only what can be consumed.
/// A worklist over reverse dependencies, linear in the graph size: a `Call` needs both
/// its rule's start and its successor, every other node needs any one successor.
fn productive_nodes(
    nodes: &[Node],
    split_targets: &[NodeId],
    rules: &[CompiledRule],
    classes: &[ScalarSet],
) -> Vec<bool> {
    let count = nodes.len();
    // Reverse edges in compressed form: for each node, who waits on it.
    let mut waiting_count = vec![0u32; count + 1];
    let each_dependency = |visit: &mut dyn FnMut(usize, usize)| {
        for (index, node) in nodes.iter().enumerate() {
            match *node {
                Node::Char { next, .. } | Node::Any { next } | Node::Token { next, .. } => {
                    visit(next as usize, index)
                }
                Node::Class { set, next } => {
                    if !classes[set as usize].is_empty() {
                        visit(next as usize, index)
                    }
                }
                Node::Call { rule, next } => {
                    visit(rules[rule as usize].start as usize, index);
                    visit(next as usize, index);
                }
                Node::Split { first, count } => {
                    for &target in &split_targets[first as usize..(first + count) as usize] {
                        visit(target as usize, index);
                    }
                }
                Node::Return => {}
            }
        }
    };
    each_dependency(&mut |dependency, _| waiting_count[dependency + 1] += 1);
    for index in 1..=count {
        waiting_count[index] += waiting_count[index - 1];
    }
    let offsets = waiting_count;
    let mut fill = offsets.clone();
    let mut waiters = vec![0u32; offsets[count] as usize];
    each_dependency(&mut |dependency, waiter| {
        waiters[fill[dependency] as usize] = waiter as u32;
        fill[dependency] += 1;
    });
    // A call needs two satisfied dependencies (counted twice when both are one node).
    let mut needed: Vec<u8> = nodes
        .iter()
        .map(|node| {
            if matches!(node, Node::Call { .. }) {
                2
            } else {
                1
            }
        })
        .collect();
    let mut productive = vec![false; count];
    let mut worklist: Vec<usize> = Vec::new();
    for (index, node) in nodes.iter().enumerate() {
        if matches!(node, Node::Return) {
            productive[index] = true;
            worklist.push(index);
        }
    }
    while let Some(done) = worklist.pop() {
        for &waiter in &waiters[offsets[done] as usize..offsets[done + 1] as usize] {
            let waiter = waiter as usize;
            if productive[waiter] {
                continue;
            }
            needed[waiter] -= 1;
            if needed[waiter] == 0 {
                productive[waiter] = true;
                worklist.push(waiter);
            }
        }
    }
    productive
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::CompiledGrammar;

    /// A random term over characters, an empty class and the rules `r0..r2`.
    fn term() -> impl Strategy<Value = String> {
        let leaf = prop::sample::select(vec![
            "\"a\"",
            "[b-d]",
            "[^\\x00-\\U0010FFFF]",
            "r0",
            "r1",
            "r2",
            "\"\"",
        ])
        .prop_map(str::to_string);
        leaf.prop_recursive(3, 12, 3, |inner| {
            prop_oneof![
                (
                    inner.clone(),
                    prop::sample::select(vec!["*", "+", "?", "{2}", "{0,3}", "{1,9}"])
                )
                    .prop_map(|(term, quantifier)| format!("({term}){quantifier}")),
                prop::collection::vec(inner.clone(), 1..3)
                    .prop_map(|terms| format!("({})", terms.join(" "))),
                prop::collection::vec(inner, 2..3)
                    .prop_map(|terms| format!("({})", terms.join(" | "))),
            ]
        })
    }

    /// Right recursion is a loop once its tail calls are jumps: a long text keeps a
    /// bounded state under a history limit, where each byte used to make a frame whose
    /// caller was the previous one (a chain no compaction could drop).
    #[test]
    fn right_recursion_keeps_a_bounded_state() {
        let source = "root ::= \"[\" s \"]\"\ns ::= [a-z] s | [a-z] t | \".\"\nt ::= \"-\" s\n";
        let report = grail_grammar::check(source, &grail_grammar::CheckOptions::default());
        let options = CompileOptions {
            limits: EngineLimits {
                max_state_items: 5_000,
                ..EngineLimits::default()
            },
            ..CompileOptions::default()
        };
        let compiled =
            CompiledGrammar::compile(&report.grammar.expect("checks"), &options).expect("compiles");
        let mut matcher = crate::Matcher::new(&compiled);
        matcher.set_history_limit(Some(16));
        matcher.accept_str("[").expect("opening");
        for _ in 0..5_000 {
            matcher.accept_str("ab-").expect("within the state limit");
        }
        matcher.accept_str(".]").expect("the end");
        assert!(matcher.is_accepting());
    }

    fn compile_source(source: &str) -> CompiledGrammar {
        let report = grail_grammar::check(source, &grail_grammar::CheckOptions::default());
        CompiledGrammar::compile(&report.grammar.expect("checks"), &CompileOptions::default())
            .expect("compiles")
    }

    fn accepts(compiled: &CompiledGrammar, text: &str) -> bool {
        let mut matcher = crate::Matcher::new(compiled);
        matcher.accept_str(text).is_ok() && matcher.is_accepting()
    }

    /// A small rule inlined in alternatives that all continue alike is compiled once
    /// (a key trie's tails), and matches as before: outside repetitions and inside the
    /// copies of a long bounded one, which share nothing with the outside.
    #[test]
    fn an_inlined_rule_before_one_continuation_is_compiled_once() {
        let shared =
            compile_source("root ::= (\"a\" t | \"b\" t | \"c\" t) \"!\"\nt ::= [x-z] [0-9]\n");
        let spelled = compile_source(
            "root ::= (\"a\" [x-z] [0-9] | \"b\" [x-z] [0-9] | \"c\" [x-z] [0-9]) \"!\"\n",
        );
        // Written out, the equal tails are one automaton as well (see `shared_nodes`).
        assert_eq!(shared.node_count(), spelled.node_count());
        for (text, expected) in [
            ("ax1!", true),
            ("cz9!", true),
            ("a1!", false),
            ("dx1!", false),
        ] {
            assert_eq!(accepts(&shared, text), expected, "{text}");
        }
        let repeated =
            compile_source("root ::= (\"a\" t | \"b\" t){0,40} (\"a\" t | \"!\")\nt ::= [x-z]+\n");
        let forty = "axbyy".repeat(20);
        for (text, expected) in [
            (format!("{forty}!"), true),
            (format!("{forty}ax"), true),
            (format!("{forty}bx!"), false),
            (format!("{forty}axax"), false),
            ("ab!".to_string(), false),
        ] {
            assert_eq!(accepts(&repeated, &text), expected, "{text}");
        }
    }

    /// Equal tails of different rules (a key trie's excluded first characters, each
    /// followed by the rest of any string) are one automaton: after either rule's first
    /// character, or inside it, the matcher is in one state, learned once.
    #[test]
    fn equal_tails_of_different_rules_are_one_automaton() {
        let source =
            "root ::= \"a\" x | \"b\" y\nx ::= [^a] [0-9]* \"!\"\ny ::= [^b] [0-9]* \"!\"\n";
        let compiled = compile_source(source);
        let state_after = |text: &[u8]| {
            let mut matcher = crate::Matcher::new(&compiled);
            for &byte in text {
                assert!(
                    matches!(matcher.parser.step_byte(byte), Ok(true)),
                    "the text matches"
                );
            }
            matcher
                .parser
                .current_state(&mut Vec::new())
                .expect("a cached state")
        };
        assert_ne!(state_after(b"a"), state_after(b"b"));
        assert_eq!(state_after(b"ac"), state_after(b"bc"));
        assert_eq!(state_after(b"ac1"), state_after(b"bc12"));
        // Inside a character of either first class (each takes every character past
        // ASCII), the item is carried by one node (`character_carriers`): one state too.
        assert_eq!(state_after(b"a\xC3"), state_after(b"b\xC3"));
        assert_eq!(state_after(b"a\xE4\xB8"), state_after(b"b\xE5\x80"));
        for (text, expected) in [
            ("ac1!", true),
            ("ba!", true),
            ("aé1!", true),
            ("b中!", true),
            ("aa1!", false),
            ("bc1", false),
        ] {
            assert_eq!(accepts(&compiled, text), expected, "{text}");
        }
    }

    /// `char{9,}` (a `minLength`) reads its copies as the loop's (counted copies, see
    /// `counted.rs`), the character rule inlined: its first copy, before the loop, is not
    /// the loop's body (shared, the copies were not alike and the counting was lost).
    #[test]
    fn a_minimum_length_counts_its_copies_of_an_inlined_character_rule() {
        let compiled = compile_source(concat!(
            r#"root ::= "\"" char{9,} "\""
"#,
            r#"char ::= [^\x00-\x1F"\\\x7F] | "\\" (["/\\bfnrt] | "u" ([0-9A-CE-Fa-ce-f] [0-9A-Fa-f] [0-9A-Fa-f] [0-9A-Fa-f] | [Dd] [0-7] [0-9A-Fa-f] [0-9A-Fa-f]) | "u" [Dd] [8-9A-Ba-b] [0-9A-Fa-f] [0-9A-Fa-f] "\\u" [Dd] [C-Fc-f] [0-9A-Fa-f] [0-9A-Fa-f])
"#,
        ));
        assert!(!compiled.inner.counted.is_empty());
    }

    proptest! {
        /// Whichever way the productive nodes are found (on the IR when every symbol is
        /// productive, else on the graph), they are the graph's own.
        #[test]
        fn productive_nodes_are_exact(bodies in prop::collection::vec(term(), 3)) {
            let source = format!(
                "root ::= r0 | \"z\" r1\nr0 ::= {}\nr1 ::= {} | \"y\"\nr2 ::= {}\n",
                bodies[0], bodies[1], bodies[2]
            );
            let report = grail_grammar::check(&source, &grail_grammar::CheckOptions::default());
            let Some(grammar) = report.grammar else {
                return Ok(());
            };
            let Ok(compiled) = CompiledGrammar::compile(&grammar, &CompileOptions::default()) else {
                return Ok(());
            };
            let graph = &compiled.inner;
            let exact = productive_nodes(&graph.nodes, &graph.split_targets, &graph.rules, &graph.classes);
            prop_assert_eq!(&graph.productive, &exact, "{}", source);
        }
    }
}
