//! The incremental matcher: an Earley-style parser over the compiled graph, one step per
//! input byte (or special token).
//!
//! State is a set of items, each a position in the graph (a consuming node), the frame of
//! the rule call it belongs to, and the bytes of a character begun so far. A frame is an
//! Earley origin: the call of one rule at one input position, shared by every caller that
//! made that call there (callers are kept as links to their return nodes and frames). So
//! the callers form a graph-structured stack, not one stack per parse: a grammar as
//! ambiguous as `root ::= "a" root "b" | "a" root |` costs O(n) items per step and O(n²)
//! overall, where copying stacks costs exponential time.
//!
//! Frames and links live in arenas that only grow during a step and are truncated on
//! rollback (a step's callers are complete when the step ends), so rollback restores the
//! earlier state exactly. With a history limit, older steps are dropped and unreachable
//! frames are compacted away, so memory follows the live parse, not the input length.

use std::sync::Arc;

use crate::automaton::grammar::CompiledGrammar;
use crate::automaton::step_cache::{
    DEAD, NEVER_CACHEABLE, NO_STATE, NOT_CACHEABLE, StateId, StepCache, UNKNOWN,
};
use crate::error::{AcceptError, LimitExceeded};
use crate::graph::records::{Frame, Item, Link, NO_LINK};
use crate::graph::utf8::{Partial, Step};
use crate::graph::{
    GrammarGraph, NO_CARRIER, Node, NodeId, edge_contains, edge_intersects, edge_matches,
};
use crate::parse::item_set::ItemSet;
use crate::parse::step_description::{
    describe_step, frames_in_order, move_single_item, own_renewal_slots, renewal_slots,
    transition_template,
};

mod memory;
pub(crate) use memory::vec_bytes;
mod regular_transition;

/// The record of one step: where its items are and how big the arenas were after it.
#[derive(Debug, Clone, Copy)]
struct StepRecord {
    items_start: u32,
    items_end: u32,
    frames_len: u32,
    links_len: u32,
    accepting: bool,
    /// Bytes consumed since the start (or the last reset).
    offset: u64,
    /// The cached state of this step's items, or `NO_STATE` when they were not described
    /// (too many frames, or the cache is full).
    state: StateId,
    /// The input's character begun so far (`Partial::NONE` between characters). Items in
    /// the middle of it may carry a representative of the same shape instead (see
    /// [`canonical_partial`]), so what they may complete it with is read from here.
    partial: Partial,
}

/// Reusable buffers for computing a step.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scratch {
    seen: ItemSet,
    worklist: Vec<Item>,
    kernel: Vec<Item>,
    carried: Vec<Item>,
    /// For each rule, the generation and frame of its call at the current step.
    rule_calls: Vec<(u64, u32)>,
    /// The tail jumps met in the step being closed, resolved once its worklist is empty
    /// (see [`resolve_tail_jumps`]): (rule, the return the call continued at, frame).
    pub(crate) tail_jumps: Vec<(u32, NodeId, u32)>,
    generation: u64,
    /// The input's character begun after the byte being stepped (for the record
    /// `close_step` pushes; taken, so it is `NONE` unless set before each step).
    step_partial: Partial,
    /// The (node, partial, slot) triples of the step being closed, to intern as a state.
    pub(crate) state_items: Vec<(NodeId, Partial, u8)>,
    /// The key describing the step being closed.
    pub(crate) key: Vec<u32>,
    /// The frames of the step being closed, by slot.
    pub(crate) slot_frames: Vec<u32>,
    /// The frames of the step a byte is taken from, by slot.
    pub(crate) source_frames: Vec<u32>,
    /// The items of a transition learned without a step (`learn_regular_transition`).
    regular_items: Vec<Item>,
    /// The key of the state a mask is looked up by, and its frames by slot (reused: a
    /// mask served from the cache allocates nothing).
    mask_key: Vec<u32>,
    mask_key_slots: Vec<u32>,
    /// Learning a walk's transition: returns to callers outside the source step's frames
    /// are left out and noted in `escaped` (see `Parser::learn_inner_transition`).
    inner_only: bool,
    /// The source slots whose frames returned to callers outside (bit per slot).
    escaped: u64,
}

impl Scratch {
    /// The escapes of the transition being recorded (0 unless learning for a walk).
    pub(crate) fn escaped(&self) -> u64 {
        if self.inner_only { self.escaped } else { 0 }
    }
}

/// The byte-level parser over a [`CompiledGrammar`]: its parse state and history, the
/// learned store's automaton it steps through, and its working buffers. The token layer
/// ([`crate::Matcher`]) holds one and adds the vocabulary and what masks need.
///
/// Cloning copies the state, so a clone evolves independently (and shares the learned
/// store).
#[derive(Debug, Clone)]
pub(crate) struct Parser {
    grammar: CompiledGrammar,
    frames: Vec<Frame>,
    links: Vec<Link>,
    items: Vec<Item>,
    steps: Vec<StepRecord>,
    history_limit: Option<usize>,
    scratch: Scratch,
    cache: Arc<StepCache>,
    /// Steps dropped from the front of the history so far.
    steps_dropped: u64,
}

impl Parser {
    /// A parser at the start of `grammar`, stepping through `cache` (the learned store's
    /// automaton for its vocabulary).
    pub(crate) fn new(grammar: &CompiledGrammar, cache: Arc<StepCache>) -> Parser {
        let mut parser = Parser {
            grammar: grammar.clone(),
            frames: Vec::new(),
            links: Vec::new(),
            items: Vec::new(),
            steps: Vec::new(),
            history_limit: None,
            cache,
            steps_dropped: 0,
            scratch: Scratch {
                rule_calls: vec![(0, 0); grammar.inner.rules.len()],
                tail_jumps: Vec::new(),
                ..Scratch::default()
            },
        };
        parser.start();
        parser
    }

    /// Keeps at most `steps` steps of history for [`Parser::rollback`] (`None`: all).
    /// With a limit, memory stays proportional to the live parse, not to the input.
    pub fn set_history_limit(&mut self, steps: Option<usize>) {
        self.history_limit = steps;
        self.trim_history();
    }

    /// The most steps kept for rollback, when limited (see [`Parser::set_history_limit`]).
    pub fn history_limit(&self) -> Option<usize> {
        self.history_limit
    }

    fn start(&mut self) {
        let graph = &self.grammar.inner;
        self.frames.push(Frame {
            callers: NO_LINK,
            completed: false,
            is_root: true,
        });
        let root_start = graph.rules[graph.root as usize].start;
        self.scratch.kernel.push(Item {
            node: root_start,
            frame: 0,
            partial: Partial::NONE,
        });
        // The first step cannot exceed limits that matter: a grammar's own size bounds it.
        if self.close_step(0, false, None).is_err() {
            self.items.clear();
            self.steps.push(StepRecord {
                items_start: 0,
                items_end: 0,
                frames_len: self.frames.len() as u32,
                links_len: 0,
                accepting: false,
                offset: 0,
                state: NO_STATE,
                partial: Partial::NONE,
            });
        }
    }

    /// Back to the start of the grammar, as if nothing was accepted.
    pub fn reset(&mut self) {
        self.frames.clear();
        self.links.clear();
        self.items.clear();
        self.steps.clear();
        self.steps_dropped = 0;
        self.scratch.kernel.clear();
        self.start();
    }

    /// A copy that evolves independently (for beam search and speculative decoding).
    /// Costs a copy of the state, which is bounded by the history limit.
    pub fn fork(&self) -> Parser {
        self.clone()
    }

    /// The compiled grammar this matcher runs.
    pub fn grammar(&self) -> &CompiledGrammar {
        &self.grammar
    }

    /// True when the input so far is a complete match: the grammar may end here.
    pub fn is_accepting(&self) -> bool {
        self.current().accepting
    }

    /// True when some continuation of the input so far (possibly none) is a match.
    pub fn is_viable(&self) -> bool {
        self.current().accepting || !self.current_items().is_empty()
    }

    /// Bytes accepted since the start.
    pub fn offset(&self) -> u64 {
        self.current().offset
    }

    /// How many steps can be rolled back (one per byte, or per special token).
    pub fn history_len(&self) -> usize {
        self.steps.len() - 1
    }

    /// True when the input ends inside a multi-byte character.
    pub fn in_partial_character(&self) -> bool {
        self.current_items()
            .iter()
            .any(|item| !item.partial.is_none())
    }

    /// Undoes the last `steps` steps (bytes, or special tokens). Returns false, changing
    /// nothing, when fewer steps are in the history.
    pub fn rollback(&mut self, steps: usize) -> bool {
        if steps > self.history_len() {
            return false;
        }
        self.steps.truncate(self.steps.len() - steps);
        let current = *self.current();
        self.items.truncate(current.items_end as usize);
        self.frames.truncate(current.frames_len as usize);
        self.links.truncate(current.links_len as usize);
        true
    }

    /// Accepts one character.
    pub fn accept_char(&mut self, character: char) -> Result<(), AcceptError> {
        let mut buffer = [0; 4];
        self.accept_bytes(character.encode_utf8(&mut buffer).as_bytes())
    }

    /// Accepts bytes one at a time. On rejection the matcher stays after the longest
    /// accepted prefix, and the error says how many bytes of `bytes` that was.
    pub fn accept_bytes(&mut self, bytes: &[u8]) -> Result<(), AcceptError> {
        for (consumed, &byte) in bytes.iter().enumerate() {
            match self.step_byte(byte) {
                Ok(true) => {}
                Ok(false) => return Err(AcceptError::Rejected { consumed }),
                Err(limit) => return Err(AcceptError::Limit { limit, consumed }),
            }
            self.trim_history();
        }
        Ok(())
    }

    /// Advances by one byte as a new step; false (and no change) when no item accepts it.
    /// Uses the step cache when the current items form a cached state.
    pub(crate) fn step_byte(&mut self, byte: u8) -> Result<bool, LimitExceeded> {
        let current = *self.current();
        let input_partial = character_begun(current.partial, byte);
        let mut transition_from = None;
        if current.state < NO_STATE {
            match self.cache.transition(current.state, byte) {
                DEAD => return Ok(false),
                NOT_CACHEABLE | NEVER_CACHEABLE => {}
                UNKNOWN => {
                    let items =
                        &self.items[current.items_start as usize..current.items_end as usize];
                    frames_in_order(items, &mut self.scratch.source_frames);
                    transition_from = Some((current.state, byte));
                }
                // Learned for walks: the returns it leaves out need the real callers.
                result if self.cache.result(result).escapes != 0 => {}
                result => {
                    let limits = self.grammar.inner.limits;
                    let state_size = self.items.len() + self.frames.len() + self.links.len();
                    if state_size > limits.max_state_items {
                        return Err(LimitExceeded::StateSize {
                            limit: limits.max_state_items,
                        });
                    }
                    let items =
                        &self.items[current.items_start as usize..current.items_end as usize];
                    frames_in_order(items, &mut self.scratch.source_frames);
                    let transition = self.cache.result(result);
                    // The rule calls the transition makes: new frames, then their callers.
                    let slots = &mut self.scratch.source_frames;
                    for _ in 0..transition.new_frames {
                        slots.push(self.frames.len() as u32);
                        self.frames.push(Frame {
                            callers: NO_LINK,
                            completed: false,
                            is_root: false,
                        });
                    }
                    let first_new = slots.len() - usize::from(transition.new_frames);
                    for &(callee, next, caller) in transition.new_links.iter() {
                        let callee = slots[first_new + usize::from(callee)] as usize;
                        self.links.push(Link {
                            next,
                            frame: slots[usize::from(caller)],
                            older: self.frames[callee].callers,
                        });
                        self.frames[callee].callers = (self.links.len() - 1) as u32;
                    }
                    let target = self.cache.state(transition.target);
                    let items_start = self.items.len() as u32;
                    self.items
                        .extend(target.items.iter().map(|&(node, partial, slot)| Item {
                            node,
                            frame: slots[transition.slot_map[slot as usize] as usize],
                            partial,
                        }));
                    self.steps.push(StepRecord {
                        items_start,
                        items_end: self.items.len() as u32,
                        frames_len: self.frames.len() as u32,
                        links_len: self.links.len() as u32,
                        accepting: target.accepting,
                        offset: current.offset + 1,
                        state: transition.target,
                        partial: input_partial,
                    });
                    return Ok(true);
                }
            }
        }
        self.scan_byte(byte);
        if self.scratch.kernel.is_empty() && self.scratch.carried.is_empty() {
            if let Some((state, byte)) = transition_from {
                self.cache
                    .record_marker(&self.grammar.inner, state, byte, DEAD);
            }
            return Ok(false);
        }
        self.scratch.step_partial = input_partial;
        self.close_step(1, false, transition_from)?;
        Ok(true)
    }

    /// Accepts one whole token: token elements (`<[id]>`, `!<[id]>`) match its id, and the
    /// rest of the grammar matches its text. `text` is `None` for special tokens, which
    /// only token elements match. All or nothing: on rejection nothing changes.
    pub fn accept_token_piece(&mut self, id: u32, text: Option<&[u8]>) -> Result<(), AcceptError> {
        let before = self.steps.len();
        let graph: &GrammarGraph = &self.grammar.inner;
        let mut by_id: Vec<Item> = Vec::new();
        for item in self.current_items() {
            if let Node::Token { set, next } = graph.nodes[item.node as usize]
                && item.partial.is_none()
                && graph.token_sets[set as usize].matches(id)
            {
                by_id.push(Item {
                    node: next,
                    frame: item.frame,
                    partial: Partial::NONE,
                });
            }
        }
        let result = match text {
            Some(text) => self.token_text_path(text, &by_id),
            None if by_id.is_empty() => Err(AcceptError::Rejected { consumed: 0 }),
            None => {
                self.scratch.carried.clear();
                self.scratch.kernel.clear();
                self.scratch.kernel.extend_from_slice(&by_id);
                self.close_step(0, false, None)
                    .map_err(|limit| AcceptError::Limit { limit, consumed: 0 })
            }
        };
        match result {
            Ok(()) => {
                self.trim_history();
                Ok(())
            }
            Err(error) => {
                self.rollback(self.steps.len() - before);
                Err(match error {
                    AcceptError::Limit { limit, .. } => AcceptError::Limit { limit, consumed: 0 },
                    AcceptError::Rejected { .. } => AcceptError::Rejected { consumed: 0 },
                })
            }
        }
    }

    /// The text path of a token, one step per byte, with the id path's items joining at
    /// the last step.
    fn token_text_path(&mut self, text: &[u8], by_id: &[Item]) -> Result<(), AcceptError> {
        let rejected = AcceptError::Rejected { consumed: 0 };
        let limit = |limit| AcceptError::Limit { limit, consumed: 0 };
        if text.is_empty() {
            // The text path stays where it is; the id path joins it.
            let carried: Vec<Item> = self.current_items().to_vec();
            let accepting = self.is_accepting();
            self.scratch.kernel.clear();
            self.scratch.kernel.extend_from_slice(by_id);
            self.scratch.carried = carried;
            if self.scratch.kernel.is_empty() && self.scratch.carried.is_empty() && !accepting {
                return Err(rejected);
            }
            return self.close_step(0, accepting, None).map_err(limit);
        }
        let start = self.steps.len();
        let (last, leading) = text.split_last().expect("text is not empty");
        let mut alive = true;
        for &byte in leading {
            if !self.step_byte(byte).map_err(limit)? {
                alive = false;
                break;
            }
        }
        if alive {
            self.scan_byte(*last);
            alive = !(self.scratch.kernel.is_empty() && self.scratch.carried.is_empty());
        }
        if !alive {
            // The text path is dead: only the id path can continue.
            self.rollback(self.steps.len() - start);
            if by_id.is_empty() {
                return Err(rejected);
            }
            self.scratch.carried.clear();
            self.scratch.kernel.clear();
            self.scratch.kernel.extend_from_slice(by_id);
            return self
                .close_step(text.len() as u64, false, None)
                .map_err(limit);
        }
        self.scratch.kernel.extend_from_slice(by_id);
        self.close_step(1, false, None).map_err(limit)
    }

    /// Steps taken since the start, dropped ones included.
    pub(crate) fn steps_dropped(&self) -> u64 {
        self.steps_dropped
    }

    /// The number of steps taken since the start, dropped ones included.
    pub(crate) fn absolute_step_count(&self) -> u64 {
        self.steps_dropped + self.steps.len() as u64
    }

    /// Writes a description of everything the future depends on: the accepting flag, the
    /// current items and, through their frames, every caller up to the root, with frames
    /// numbered in the order met (so equal parse states from different histories give
    /// equal keys). False when the description would exceed `max_len` words.
    pub(crate) fn state_key(
        &self,
        key: &mut Vec<u32>,
        slots: &mut Vec<u32>,
        max_len: usize,
    ) -> bool {
        self.state_key_of(
            self.current_items(),
            self.current().accepting,
            key,
            slots,
            max_len,
        )
    }

    /// The buffers a mask's state key is built in (see [`Parser::give_back_key_buffers`]).
    pub(crate) fn take_key_buffers(&mut self) -> (Vec<u32>, Vec<u32>) {
        (
            std::mem::take(&mut self.scratch.mask_key),
            std::mem::take(&mut self.scratch.mask_key_slots),
        )
    }

    /// Keeps the buffers [`Parser::take_key_buffers`] gave, for the next mask.
    pub(crate) fn give_back_key_buffers(&mut self, (key, slots): (Vec<u32>, Vec<u32>)) {
        self.scratch.mask_key = key;
        self.scratch.mask_key_slots = slots;
    }

    /// [`Parser::state_key`] of a step that would hold `items` (with the current
    /// frames), accepting or not.
    pub(crate) fn state_key_of(
        &self,
        items: &[Item],
        accepting: bool,
        key: &mut Vec<u32>,
        slots: &mut Vec<u32>,
        max_len: usize,
    ) -> bool {
        key.clear();
        key.push(u32::from(accepting));
        key.push(items.len() as u32);
        slots.clear();
        let slot_of = |frame: u32, slots: &mut Vec<u32>| -> u32 {
            match slots.iter().position(|&known| known == frame) {
                Some(slot) => slot as u32,
                None => {
                    slots.push(frame);
                    (slots.len() - 1) as u32
                }
            }
        };
        for item in items {
            let slot = slot_of(item.frame, slots);
            key.extend([item.node, item.partial.to_bits(), slot]);
        }
        let mut next_slot = 0;
        while next_slot < slots.len() {
            if key.len() > max_len || slots.len() > 256 {
                return false;
            }
            let frame = self.frames[slots[next_slot] as usize];
            key.push(u32::MAX - u32::from(frame.is_root));
            let mut link = frame.callers;
            while link != NO_LINK {
                let caller = self.links[link as usize];
                let slot = slot_of(caller.frame, slots);
                key.extend([caller.next, slot]);
                link = caller.older;
            }
            next_slot += 1;
        }
        key.len() <= max_len
    }

    /// The cached state of the current step, with its frames by slot.
    pub(crate) fn current_state(&self, frames: &mut Vec<u32>) -> Option<StateId> {
        let current = self.current();
        if current.state >= NO_STATE || current.items_end == current.items_start {
            return None;
        }
        frames_in_order(self.current_items(), frames);
        Some(current.state)
    }

    /// The step cache, shared by the grammar's matchers.
    pub(crate) fn step_cache(&self) -> &StepCache {
        &self.cache
    }

    /// Describes the state of the one item of `start` (a state that starts a literal
    /// run, its slot standing for `frame`) for a walk down the run
    /// (`tokens/literal_run.rs`): the item's node, or `None` when the run is not taken
    /// (a limit near, or the cache without room for the run's states).
    pub(crate) fn begin_literal_run(&mut self, start: StateId, frame: u32) -> Option<NodeId> {
        let graph = &self.grammar.inner;
        // The bound the regular way checks when it learns one item from one item
        // (`learn_regular_transition`): within it, every state of the run is learned
        // that way; past it, the general way decides.
        let state_size = self.items.len() + 2 + self.frames.len() + self.links.len();
        // Room for the run's last state (and a twin it may have, see `graph/counted.rs`)
        // and the dead end.
        if state_size > graph.limits.max_state_items || !self.cache.has_room_for(3) {
            return None;
        }
        let (node, _, _) = self.cache.state(start).items[0];
        // The key of the start's item with no accepting flag: the run's states have the
        // same frame and one item, so their keys differ from it in the node alone.
        let item = Item {
            node,
            frame,
            partial: Partial::NONE,
        };
        describe_step(&[item], false, &self.frames, &self.links, &mut self.scratch).then_some(node)
    }

    /// The state of the run's item moved to `node` (the run described by
    /// [`Parser::begin_literal_run`]) and the dead end (a state every byte kills);
    /// `None` when the cache is full.
    pub(crate) fn end_literal_run(&mut self, node: NodeId) -> Option<(StateId, StateId)> {
        move_single_item(&mut self.scratch, node);
        let graph = &self.grammar.inner;
        let last = self
            .cache
            .intern(graph, &self.scratch.key, &self.scratch.state_items, false);
        let dead_end = self.cache.dead_end(graph);
        (last != NO_STATE && dead_end != NO_STATE).then_some((last, dead_end))
    }

    /// The current items split by frame (one rule call each), when they span several.
    /// Apart, each call's items make a state that depends on the rule and where it
    /// stands, not on who called it, so the walks of the items of a rule are shared by
    /// every place it is called from (and the callers' items are walked on their own).
    pub(crate) fn items_by_frame(&self) -> Option<Vec<Vec<Item>>> {
        let items = self.current_items();
        let first = items.first()?.frame;
        if items.iter().all(|item| item.frame == first) {
            return None;
        }
        let mut parts: Vec<Vec<Item>> = Vec::new();
        let mut frames: Vec<u32> = Vec::new();
        for &item in items {
            match frames.iter().position(|&frame| frame == item.frame) {
                Some(part) => parts[part].push(item),
                None => {
                    frames.push(item.frame);
                    parts.push(vec![item]);
                }
            }
        }
        Some(parts)
    }

    /// Pushes a step holding `items` (some of the current ones), interned as a cached
    /// state when it fits, for walking them apart (always rolled back).
    pub(crate) fn push_items_step(&mut self, items: &[Item]) {
        self.push_items_step_accepting(items, false);
    }

    /// Pushes a step holding `items` (in canonical order), accepting or not.
    pub(crate) fn push_items_step_accepting(&mut self, items: &[Item], accepting: bool) {
        let current = *self.current();
        let items_start = self.items.len() as u32;
        self.items.extend_from_slice(items);
        let graph: &GrammarGraph = &self.grammar.inner;
        let described = describe_step(
            items,
            accepting,
            &self.frames,
            &self.links,
            &mut self.scratch,
        );
        let state = if described {
            self.cache.intern(
                graph,
                &self.scratch.key,
                &self.scratch.state_items,
                accepting,
            )
        } else {
            NO_STATE
        };
        self.steps.push(StepRecord {
            items_start,
            items_end: self.items.len() as u32,
            accepting,
            state,
            ..current
        });
    }

    /// Pushes a step holding the items of a cached state, its slots standing for
    /// `frames`, as if the input had led there (used by mask walks, always rolled back).
    pub(crate) fn push_state_step(&mut self, state: StateId, frames: &[u32]) {
        let current = *self.current();
        let items_start = self.items.len() as u32;
        let data = self.cache.state(state);
        self.items
            .extend(data.items.iter().map(|&(node, partial, slot)| Item {
                node,
                frame: frames[slot as usize],
                partial,
            }));
        self.steps.push(StepRecord {
            items_start,
            items_end: self.items.len() as u32,
            accepting: data.accepting,
            state,
            ..current
        });
    }

    /// Learns the transition of `state` (its slots standing for `frames`) on `byte` as
    /// walks use it: returns to callers outside the state are left out and recorded as
    /// the transition's escapes (the slots whose frames returned), so the transition
    /// depends on the state alone. Returns what the cache then holds for it.
    pub(crate) fn learn_inner_transition(
        &mut self,
        state: StateId,
        frames: &[u32],
        byte: u8,
    ) -> u32 {
        self.learn_inner_transition_by(state, frames, byte, true)
    }

    /// [`Parser::learn_inner_transition`], where `regular_first` says whether a closure
    /// inside one rule call's automaton is learned without a step
    /// (`regular_transition.rs`; false only to check that both ways learn the same).
    fn learn_inner_transition_by(
        &mut self,
        state: StateId,
        frames: &[u32],
        byte: u8,
        regular_first: bool,
    ) -> u32 {
        self.scan_state_byte(state, frames, byte);
        if self.scratch.kernel.is_empty() && self.scratch.carried.is_empty() {
            self.cache
                .record_marker(&self.grammar.inner, state, byte, DEAD);
            return self.cache.transition(state, byte);
        }
        if regular_first && self.learn_regular_transition(state, frames, byte) {
            return self.cache.transition(state, byte);
        }
        self.push_state_step(state, frames);
        self.scratch.source_frames.clear();
        self.scratch.source_frames.extend_from_slice(frames);
        self.scratch.step_partial = character_begun(self.current().partial, byte);
        self.scratch.inner_only = true;
        self.scratch.escaped = 0;
        let stepped = self.close_step(1, false, Some((state, byte))).is_ok();
        self.scratch.inner_only = false;
        if stepped {
            self.rollback(1);
        }
        self.rollback(1);
        self.cache.transition(state, byte)
    }

    /// Pushes the step where the frames `returning` have just returned to their callers
    /// outside the frames `inside` (the continuation a walk's escape stands for): the
    /// callers' items, closed. False, pushing nothing, when that hits a limit; otherwise
    /// the caller rolls it back.
    pub(crate) fn push_return_step(&mut self, returning: &[u32], inside: &[u32]) -> bool {
        self.scratch.kernel.clear();
        self.scratch.carried.clear();
        let mut accepting = false;
        for &frame in returning {
            let frame = self.frames[frame as usize];
            accepting |= frame.is_root;
            let mut link = frame.callers;
            while link != NO_LINK {
                let caller = self.links[link as usize];
                link = caller.older;
                if !inside.contains(&caller.frame) {
                    self.scratch.kernel.push(Item {
                        node: caller.next,
                        frame: caller.frame,
                        partial: Partial::NONE,
                    });
                }
            }
        }
        self.close_step(0, accepting, None).is_ok()
    }

    /// Records the end of generation: a step where nothing more can come but the end.
    pub(crate) fn end_generation(&mut self) {
        let current = *self.current();
        let items_start = self.items.len() as u32;
        self.steps.push(StepRecord {
            items_start,
            items_end: items_start,
            accepting: true,
            state: NO_STATE,
            ..current
        });
    }

    /// The input's character begun so far at the current step.
    pub(crate) fn input_partial(&self) -> Partial {
        self.current().partial
    }

    fn current(&self) -> &StepRecord {
        self.steps.last().expect("the first step always exists")
    }

    /// The consuming items of the current step.
    pub(crate) fn current_items(&self) -> &[Item] {
        let current = self.steps.last().expect("the first step always exists");
        &self.items[current.items_start as usize..current.items_end as usize]
    }

    pub(crate) fn graph(&self) -> &GrammarGraph {
        &self.grammar.inner
    }

    /// Fills `scratch.kernel` (items that completed a character and moved on) and
    /// `scratch.carried` (items in the middle of a character) from the current items.
    fn scan_byte(&mut self, byte: u8) {
        let current = self.steps.last().expect("the first step always exists");
        let items = &self.items[current.items_start as usize..current.items_end as usize];
        scan_items(
            &self.grammar.inner,
            items.iter().copied(),
            byte,
            &mut self.scratch,
        );
    }

    /// As [`Parser::scan_byte`], from the items of a cached state, its slots standing for
    /// `frames`, without pushing it as a step.
    fn scan_state_byte(&mut self, state: StateId, frames: &[u32], byte: u8) {
        let items = self
            .cache
            .state(state)
            .items
            .iter()
            .map(|&(node, partial, slot)| Item {
                node,
                frame: frames[slot as usize],
                partial,
            });
        scan_items(&self.grammar.inner, items, byte, &mut self.scratch);
    }

    /// Closes `scratch.kernel` under prediction and completion and records the new step,
    /// with `scratch.carried` items added as they are.
    /// `transition_from` is the cached state and byte this step starts from, when the
    /// transition is not known yet (its frames by slot are in `scratch.source_frames`):
    /// it is recorded once the step is computed.
    fn close_step(
        &mut self,
        bytes: u64,
        accepting_already: bool,
        transition_from: Option<(StateId, u8)>,
    ) -> Result<(), LimitExceeded> {
        let graph: &GrammarGraph = &self.grammar.inner;
        let limits = graph.limits;
        let frames_before = self.frames.len();
        let links_before = self.links.len();
        let items_start = self.items.len();
        let offset = self.steps.last().map_or(0, |step| step.offset) + bytes;
        let scratch = &mut self.scratch;
        scratch.generation += 1;
        let generation = scratch.generation;
        scratch.seen.clear(graph.nodes.len());
        scratch.worklist.clear();
        let mut accepting = accepting_already;
        // Whether the closure returned to a caller outside the source step's frames (and
        // the frames it created): then the transition depends on more than the source
        // state.
        let mut leaves_state = false;
        for item in scratch.carried.drain(..) {
            if scratch.seen.insert(item) {
                self.items.push(item);
            }
        }
        for &item in &scratch.kernel {
            if graph.is_productive(item.node) && scratch.seen.insert(item) {
                scratch.worklist.push(item);
            }
        }
        scratch.kernel.clear();
        let mut outcome = Ok(());
        scratch.tail_jumps.clear();
        loop {
            let Some(item) = scratch.worklist.pop() else {
                if scratch.tail_jumps.is_empty() {
                    break;
                }
                resolve_tail_jumps(graph, scratch, &mut self.frames, &mut self.links);
                continue;
            };
            match graph.nodes[item.node as usize] {
                Node::Char { .. } | Node::Class { .. } | Node::Any { .. } | Node::Token { .. } => {
                    self.items.push(item);
                }
                Node::Split { first, count } => match graph.tail_jump(first) {
                    Some((rule, end)) => scratch.tail_jumps.push((rule, end, item.frame)),
                    None => {
                        for &target in graph.targets(first, count) {
                            add(graph, scratch, target, item.frame);
                        }
                    }
                },
                Node::Call { rule, next } => {
                    let (called_at, existing) = scratch.rule_calls[rule as usize];
                    let callee = if called_at == generation {
                        existing
                    } else {
                        open_call(graph, scratch, &mut self.frames, rule)
                    };
                    let callee_frame = &mut self.frames[callee as usize];
                    self.links.push(Link {
                        next,
                        frame: item.frame,
                        older: callee_frame.callers,
                    });
                    callee_frame.callers = (self.links.len() - 1) as u32;
                    if callee_frame.completed {
                        add(graph, scratch, next, item.frame);
                    }
                }
                Node::Return => {
                    let frame = &mut self.frames[item.frame as usize];
                    frame.completed = true;
                    accepting |= frame.is_root;
                    let mut link = frame.callers;
                    while link != NO_LINK {
                        let caller = self.links[link as usize];
                        link = caller.older;
                        if transition_from.is_some()
                            && (caller.frame as usize) < frames_before
                            && !scratch.source_frames.contains(&caller.frame)
                        {
                            let slot = scratch
                                .source_frames
                                .iter()
                                .position(|&frame| frame == item.frame);
                            match slot {
                                Some(slot) if scratch.inner_only => {
                                    scratch.escaped |= 1 << slot;
                                    continue;
                                }
                                _ => leaves_state = true,
                            }
                        }
                        add(graph, scratch, caller.next, caller.frame);
                    }
                }
            }
            if scratch.seen.len() > limits.max_items_per_step {
                outcome = Err(LimitExceeded::ItemsPerStep {
                    limit: limits.max_items_per_step,
                });
                break;
            }
        }
        let state_size = self.items.len() + self.frames.len() + self.links.len();
        if outcome.is_ok() && state_size > limits.max_state_items {
            outcome = Err(LimitExceeded::StateSize {
                limit: limits.max_state_items,
            });
        }
        if let Err(error) = outcome {
            self.items.truncate(items_start);
            self.frames.truncate(frames_before);
            self.links.truncate(links_before);
            return Err(error);
        }
        // Items in one order whatever the closure's order, so a step's state (and a
        // mask's state key) depends on its items alone: an identifier's loop otherwise
        // alternates between two orders of the same items, and walks see two states.
        self.items[items_start..]
            .sort_unstable_by_key(|item| (item.node, item.partial.to_bits(), item.frame));
        // Intern the new step as a cached state, and remember the transition when it
        // stayed inside the source state.
        let described = describe_step(
            &self.items[items_start..],
            accepting,
            &self.frames,
            &self.links,
            scratch,
        );
        let cache = &*self.cache;
        let state = if described {
            cache.intern(graph, &scratch.key, &scratch.state_items, accepting)
        } else {
            NO_STATE
        };
        if let Some((from, byte)) = transition_from {
            let transition = (!leaves_state && state != NO_STATE && !accepting_already)
                .then(|| {
                    transition_template(
                        state,
                        accepting,
                        frames_before,
                        links_before,
                        &self.frames,
                        &self.links,
                        scratch,
                    )
                })
                .flatten();
            match transition {
                Some(mut transition) => {
                    if transition.new_frames > 0 {
                        let source = self.steps.last().expect("a step precedes every step");
                        let source_items =
                            &self.items[source.items_start as usize..source.items_end as usize];
                        transition.renewal = own_renewal_slots(&transition, from).or_else(|| {
                            renewal_slots(
                                &transition,
                                source_items,
                                &self.items[items_start..],
                                &self.frames,
                                &self.links,
                                scratch,
                            )
                        });
                    }
                    cache.record(graph, from, byte, transition)
                }
                None if scratch.inner_only => {
                    cache.record_marker(graph, from, byte, NEVER_CACHEABLE)
                }
                None => cache.record_marker(graph, from, byte, NOT_CACHEABLE),
            }
        }
        self.steps.push(StepRecord {
            items_start: items_start as u32,
            items_end: self.items.len() as u32,
            frames_len: self.frames.len() as u32,
            links_len: self.links.len() as u32,
            accepting,
            offset,
            state,
            partial: std::mem::take(&mut self.scratch.step_partial),
        });
        Ok(())
    }

    /// Drops history beyond the limit and compacts frames and links no longer reachable.
    /// Runs in batches, so its cost is amortized over many steps.
    pub(crate) fn trim_history(&mut self) {
        let Some(limit) = self.history_limit else {
            return;
        };
        let keep = limit + 1;
        if self.steps.len() <= keep + keep.max(64) {
            return;
        }
        self.drop_oldest_steps(self.steps.len() - keep);
    }

    /// Drops the oldest `drop` steps (fewer than there are), the tokens starting there,
    /// and the frames and links no kept step reaches.
    pub(crate) fn drop_oldest_steps(&mut self, drop: usize) {
        let items_base = self.steps[drop].items_start as usize;
        self.steps.drain(..drop);
        self.steps_dropped += drop as u64;
        self.items.drain(..items_base);
        for step in &mut self.steps {
            step.items_start -= items_base as u32;
            step.items_end -= items_base as u32;
        }
        self.compact();
    }

    /// Removes frames and links unreachable from the kept items, keeping order, and
    /// renumbers everything that points at them.
    fn compact(&mut self) {
        let mut live_frames = vec![false; self.frames.len()];
        let mut live_links = vec![false; self.links.len()];
        let mut stack: Vec<u32> = self.items.iter().map(|item| item.frame).collect();
        stack.push(0);
        while let Some(frame) = stack.pop() {
            if std::mem::replace(&mut live_frames[frame as usize], true) {
                continue;
            }
            let mut link = self.frames[frame as usize].callers;
            while link != NO_LINK {
                live_links[link as usize] = true;
                let caller = self.links[link as usize];
                if !live_frames[caller.frame as usize] {
                    stack.push(caller.frame);
                }
                link = caller.older;
            }
        }
        let frame_index = prefix_counts(&live_frames);
        let link_index = prefix_counts(&live_links);
        let remap_link = |link: u32| {
            if link == NO_LINK {
                NO_LINK
            } else {
                link_index[link as usize]
            }
        };
        let mut live = live_frames.iter();
        self.frames.retain_mut(|frame| {
            frame.callers = remap_link(frame.callers);
            *live.next().expect("one flag per frame")
        });
        let mut live = live_links.iter();
        self.links.retain_mut(|link| {
            link.frame = frame_index[link.frame as usize];
            link.older = remap_link(link.older);
            *live.next().expect("one flag per link")
        });
        for item in &mut self.items {
            item.frame = frame_index[item.frame as usize];
        }
        for step in &mut self.steps {
            step.frames_len = frame_index[step.frames_len as usize];
            step.links_len = link_index[step.links_len as usize];
        }
        // Frame 0 stays the root frame: it is live and first.
    }
}

/// `counts[i]`: how many of `live[..i]` are true (so the new index of a live entry `i`).
fn prefix_counts(live: &[bool]) -> Vec<u32> {
    let mut counts = Vec::with_capacity(live.len() + 1);
    let mut count = 0u32;
    for &alive in live {
        counts.push(count);
        count += u32::from(alive);
    }
    counts.push(count);
    counts
}

/// Fills `scratch.kernel` with the items that complete a character they accept on
/// `byte` (moved on to their next node) and `scratch.carried` with those still inside one.
fn scan_items(
    graph: &GrammarGraph,
    items: impl Iterator<Item = Item>,
    byte: u8,
    scratch: &mut Scratch,
) {
    scratch.kernel.clear();
    scratch.carried.clear();
    for item in items {
        let node = graph.nodes[item.node as usize];
        let next = match node {
            Node::Char { next, .. } | Node::Class { next, .. } | Node::Any { next } => next,
            _ => continue,
        };
        match item.partial.push(byte) {
            Step::Complete(code_point) => {
                if edge_matches(graph, node, code_point) {
                    scratch.kernel.push(Item {
                        node: next,
                        frame: item.frame,
                        partial: Partial::NONE,
                    });
                }
            }
            Step::Incomplete(partial) => {
                let (low, high) = partial.code_point_range();
                if edge_intersects(graph, node, low, high) {
                    // A class of every character past ASCII hands the item to its carrier.
                    let carried = match graph.character_carriers.get(item.node as usize) {
                        Some(&carrier) if carrier != NO_CARRIER => carrier,
                        _ => item.node,
                    };
                    scratch.carried.push(Item {
                        node: carried,
                        frame: item.frame,
                        partial: canonical_partial(graph, graph.nodes[carried as usize], partial),
                    });
                }
            }
            Step::Invalid => {}
        }
    }
}

/// Resolves the tail jumps met since the worklist last ran dry, rule by rule. A jump
/// is a call whose return would only return its caller (`elide_tail_calls`), so either
/// way matches the same: it jumps, the rule's start entered in the jumping frame, when
/// that frame is the only one to enter the rule at this step, so right recursion stays a
/// loop; otherwise it is made as the call, so the rule is entered once at this step and
/// every caller shares that frame. Jumping there would enter the rule's start in each
/// jumping frame (or beside the frame a call made), and those frames would live on side
/// by side: `root ::= "a" root "b" | "a" root |` kept the start in every older frame and
/// each step's call had one caller per frame, cubic time on `a`ⁿ.
fn resolve_tail_jumps(
    graph: &GrammarGraph,
    scratch: &mut Scratch,
    frames: &mut Vec<Frame>,
    links: &mut Vec<Link>,
) {
    let mut jumps = std::mem::take(&mut scratch.tail_jumps);
    jumps.sort_unstable();
    jumps.dedup();
    let generation = scratch.generation;
    for group in jumps.chunk_by(|one, other| one.0 == other.0) {
        let rule = group[0].0;
        let (called_at, existing) = scratch.rule_calls[rule as usize];
        let callee = if called_at == generation {
            existing
        } else if group.iter().all(|&(_, _, frame)| frame == group[0].2) {
            add(graph, scratch, graph.rules[rule as usize].start, group[0].2);
            continue;
        } else {
            open_call(graph, scratch, frames, rule)
        };
        for &(_, end, caller) in group {
            let callee_frame = &mut frames[callee as usize];
            links.push(Link {
                next: end,
                frame: caller,
                older: callee_frame.callers,
            });
            callee_frame.callers = (links.len() - 1) as u32;
            if callee_frame.completed {
                add(graph, scratch, end, caller);
            }
        }
    }
    jumps.clear();
    scratch.tail_jumps = jumps;
}

/// Adds an item to the step being closed, once, if it can still complete.
/// Calls `rule` at this step: a new frame, remembered as the rule's call of this step,
/// with the rule's start entered in it. Returns the frame.
#[inline]
fn open_call(
    graph: &GrammarGraph,
    scratch: &mut Scratch,
    frames: &mut Vec<Frame>,
    rule: u32,
) -> u32 {
    let frame = frames.len() as u32;
    frames.push(Frame {
        callers: NO_LINK,
        completed: false,
        is_root: false,
    });
    scratch.rule_calls[rule as usize] = (scratch.generation, frame);
    add(graph, scratch, graph.rules[rule as usize].start, frame);
    frame
}

fn add(graph: &GrammarGraph, scratch: &mut Scratch, node: NodeId, frame: u32) {
    let item = Item {
        node,
        frame,
        partial: Partial::NONE,
    };
    if graph.is_productive(node) && scratch.seen.insert(item) {
        scratch.worklist.push(item);
    }
}

/// The input's character begun after `byte`, from the one begun before it.
fn character_begun(before: Partial, byte: u8) -> Partial {
    match before.push(byte) {
        Step::Incomplete(partial) => partial,
        Step::Complete(_) | Step::Invalid => Partial::NONE,
    }
}

/// The partial character an item on `node` carries: when the node takes every character
/// that can complete `partial`, the first representative of its shape
/// ([`Partial::representatives`]: the same bytes still to come, each with the same range)
/// whose completions the node all takes as well. Both then go on exactly alike, byte by
/// byte, so items that differ only in which such character they are in (a lead byte E4 or
/// E5 in a class of every non-ASCII scalar) make one state instead of one per lead byte.
pub(crate) fn canonical_partial(graph: &GrammarGraph, node: Node, partial: Partial) -> Partial {
    let representatives = partial.representatives();
    if representatives.is_empty() {
        return partial;
    }
    let (low, high) = partial.code_point_range();
    if !edge_contains(graph, node, low, high) {
        return partial;
    }
    representatives
        .iter()
        .copied()
        .find(|representative| {
            let (low, high) = representative.code_point_range();
            edge_contains(graph, node, low, high)
        })
        .unwrap_or(partial)
}
