//! Token-trie walks along the step cache's table.
//!
//! From a step-cache state, walking the trie needs the DFA table, not matcher steps: one
//! lookup per node (`table_walk`), whole subtrees at once where every byte below loops,
//! characters past ASCII by UTF-8 validity where every such character loops. Where a byte
//! calls a rule (new frames that do not just renew the state's calls) the walk records a
//! frontier node; where frames of the state return to callers outside it, an escape node.
//! What depends on the state alone is remembered per state and trie range
//! (`walk_remembered`); a mask then costs a bitmask OR, one real step per frontier group
//! (with the walk behind it), and one return step per escape group with one lookup per
//! distinct next byte (`walk_escapes.rs`). Slot maps follow each path, so recorded groups
//! know which of the start's frames their state's slots stand for.

use std::sync::Arc;

use grail_vocab::{VocabularyIndex, or_words, set_ids};

use crate::automaton::step_cache::{
    DEAD, EscapeGroup, FrontierGroup, NEVER_CACHEABLE, NOT_CACHEABLE, PureWalk, StateId, UNKNOWN,
    WalkTokens,
};
use crate::graph::utf8::{Partial, Step};
use crate::tokens::literal_run::LiteralRunEnd;
use crate::tokens::matcher::Matcher;
use crate::tokens::walk_buffers::WalkBuffers;
use crate::tokens::walk_escapes::EscapeNodes;

/// Most ASCII bytes of a loop's class that may lead elsewhere from a state that the
/// class's other bytes take into the loop, for the loop's slice to serve that state:
/// every printable byte. Their subtrees are walked whole either way, so the slice saves
/// the walk of the other bytes' subtrees however many there are (the key start of an
/// open object with 40 properties, Github_hard o33027: 10.2 M → 5.5 M instructions; the
/// cap was 12).
const MAX_SLICE_EXCEPTIONS: usize = 96;

/// How a walk from a state starts with a loop slice: the slice, the state that loops, and
/// the root children (trie positions) of the class's bytes that do not enter the loop
/// from the state (their subtrees are walked whole, their tokens taken out of the slice).
struct SliceStart {
    slice: Arc<grail_vocab::LoopSlice>,
    looping: StateId,
    excepted: Vec<usize>,
    /// The bytes of `excepted` (bit per byte).
    excepted_bytes: u128,
}

/// A range of trie nodes to walk, `first..end` in the node array (a subtree's
/// descendants, a child with its subtree, or the whole trie), from a state at trie depth
/// `base_depth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TrieRange {
    pub(crate) first: usize,
    pub(crate) end: usize,
    pub(crate) base_depth: u32,
}

impl TrieRange {
    /// The nodes below the node at `position`, walked from the state after it.
    pub(crate) fn below(trie: &grail_vocab::TokenTrie, position: usize) -> TrieRange {
        let node = &trie.nodes()[position];
        TrieRange {
            first: position + 1,
            end: position + node.subtree_len as usize,
            base_depth: node.depth,
        }
    }

    /// The node at `position` and the nodes below it, walked from the state before it.
    pub(crate) fn with(trie: &grail_vocab::TokenTrie, position: usize) -> TrieRange {
        let node = &trie.nodes()[position];
        TrieRange {
            first: position,
            end: position + node.subtree_len as usize,
            base_depth: node.depth - 1,
        }
    }

    /// The whole trie (below its root).
    pub(crate) fn all(trie: &grail_vocab::TokenTrie) -> TrieRange {
        TrieRange::below(trie, 0)
    }

    /// How many nodes the range holds.
    pub(crate) fn len(self) -> usize {
        self.end - self.first
    }
}

/// Loop classes with fewer ASCII bytes than this (and no characters past ASCII) are
/// walked without a slice: few tokens are made only of them.
const LOOP_SLICE_MIN_ASCII_BYTES: u32 = 32;

/// Subtrees at least this big are checked for bytes that all loop on the walk's state
/// (smaller ones are cheaper to walk than to check).
const BULK_MIN_SUBTREE: u32 = 16;

/// A state is checked for whole subtrees at its first this many big subtrees in a walk,
/// and after that while at least one check in `BULK_MIN_HIT_RATE` succeeds, else at one
/// big subtree in `BULK_PROBE_EVERY` (so a state whose odds change with the part of the
/// trie gets back to checking): in states where tokens mix bytes that loop with bytes
/// that do not (code), checks almost always fail, and each costs a cache miss on the
/// trie's bytes-below table.
const BULK_TRIAL_CHECKS: u32 = 32;
const BULK_MIN_HIT_RATE: u32 = 16;
const BULK_PROBE_EVERY: u32 = 8;

/// Whole-subtree checks of one state in one walk.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct BulkOdds {
    checks: u32,
    hits: u32,
    skipped: u32,
}

impl BulkOdds {
    /// Whether to check the next big subtree (counted as a check, or as skipped).
    fn check_next(&mut self) -> bool {
        let check = self.checks < BULK_TRIAL_CHECKS
            || self.hits * BULK_MIN_HIT_RATE >= self.checks
            || self.skipped % BULK_PROBE_EVERY == BULK_PROBE_EVERY - 1;
        if check {
            self.checks += 1;
        } else {
            self.skipped += 1;
        }
        check
    }
}

/// Slot maps met along trie paths (for each slot of a state, a slot of the walk's start),
/// interned so paths share them, with their compositions remembered. Map 0 is the
/// identity (most walks never meet another, and then allocate nothing).
struct SlotMaps {
    slots: usize,
    /// Maps 1, 2, ….
    maps: Vec<Box<[u8]>>,
    index: rustc_hash::FxHashMap<Box<[u8]>, u32>,
    composed: rustc_hash::FxHashMap<(u32, u32), u32>,
}

/// The identity map, as long as any state's slots.
const IDENTITY: [u8; 256] = {
    let mut identity = [0u8; 256];
    let mut slot = 0;
    while slot < 256 {
        identity[slot] = slot as u8;
        slot += 1;
    }
    identity
};

impl SlotMaps {
    /// Starts with the identity map over `slots` slots (index 0).
    fn new(slots: usize) -> SlotMaps {
        // A map equal to the identity may get a second id, which is harmless.
        SlotMaps {
            slots,
            maps: Vec::new(),
            index: Default::default(),
            composed: Default::default(),
        }
    }

    fn get(&self, map: u32) -> &[u8] {
        match map {
            0 => &IDENTITY[..self.slots],
            _ => &self.maps[map as usize - 1],
        }
    }

    /// The map of a transition's target: its slot k holds the start slot that the
    /// parent's slot `step[k]` holds.
    /// (Transitions that keep every slot in place keep the parent's map: the caller
    /// checks `Transition::keeps_slots` first.)
    fn compose(&mut self, parent: u32, result: u32, step: &[u8]) -> u32 {
        if let Some(&known) = self.composed.get(&(parent, result)) {
            return known;
        }
        let parent_map = self.get(parent);
        let child: Box<[u8]> = step.iter().map(|&slot| parent_map[slot as usize]).collect();
        let id = match self.index.get(&child) {
            Some(&known) => known,
            None => {
                let id = self.maps.len() as u32 + 1;
                self.maps.push(child.clone());
                self.index.insert(child, id);
                id
            }
        };
        self.composed.insert((parent, result), id);
        id
    }
}

impl Matcher {
    /// The tokens of the trie nodes of `range` allowed from the cached `state` (its slots
    /// standing for `frames`), set in `words`: the part
    /// of the walk that depends on the state alone is remembered per state and range
    /// (computed on first use); what depends on the callers (frontier groups, escapes)
    /// is walked each time, one real step per group.
    pub(crate) fn walk_remembered(
        &mut self,
        index: &VocabularyIndex,
        words: &mut [u32],
        state: StateId,
        frames: &[u32],
        range: TrieRange,
    ) {
        let key = (range.first as u32, range.end as u32);
        let walk = match self.parser.step_cache().walk(state, key.0, key.1) {
            Some(walk) => walk,
            None => {
                let slice = self.loop_slice_for(index, state, frames, range);
                let mut ids = match &slice {
                    // The slice less the tokens under the excepted bytes (walked below, which
                    // adds those they accept): the walk sets its tokens in these words at
                    // once (the excepted subtrees of a key start accept thousands, which a
                    // list would gather, growing, and then set).
                    Some(start) if !start.excepted.is_empty() => {
                        let trie = index.trie();
                        let mut words = start.slice.words().to_vec();
                        for &root_child in &start.excepted {
                            for &id in trie.subtree_tokens(root_child) {
                                words[id as usize / 32] &= !(1 << (id % 32));
                            }
                        }
                        TokenIds::in_words(words)
                    }
                    _ => TokenIds::new(words.len()),
                };
                let (frontier, escapes) = match &slice {
                    // The slice's tokens at once, and the walk only where tokens leave it:
                    // from the state at the root, from the loop below it; the subtrees of
                    // the bytes that do not enter the loop are walked whole from the state.
                    Some(start) => {
                        let trie = index.trie();
                        let exit_range = |exit: &grail_vocab::ExitNode| TrieRange {
                            first: exit.position as usize,
                            end: exit.end as usize,
                            base_depth: exit.depth - 1,
                        };
                        // Exits below an excepted byte are walked with its subtree; the
                        // rest from the state at the root, from the loop below it. An exit
                        // whose byte is dead from the state it is walked from (a line break
                        // in a JSON string: most exits) has nothing to walk.
                        let excepted = |exit: &grail_vocab::ExitNode| {
                            exit.first_byte < 0x80
                                && start.excepted_bytes >> exit.first_byte & 1 == 1
                        };
                        let from_root = |exit: &grail_vocab::ExitNode| {
                            exit.depth == 1 || start.looping == state
                        };
                        let cache = self.parser.step_cache();
                        // The first list sized for every exit at most (slices have
                        // thousands: growing it by pushes copied it over and over); the
                        // deeper ones are the live exits alone (a JSON string's: a few
                        // hundred).
                        let exits = start.slice.exits().len();
                        let mut first = Vec::with_capacity(exits + start.excepted.len());
                        let mut deeper = Vec::new();
                        for (byte, group) in start.slice.exits_by_byte() {
                            let live_at_root = cache.transition(state, byte) != DEAD;
                            let live_in_loop = cache.transition(start.looping, byte) != DEAD;
                            if !live_at_root && !live_in_loop {
                                continue;
                            }
                            for exit in group.iter().filter(|&exit| !excepted(exit)) {
                                if from_root(exit) {
                                    if live_at_root {
                                        first.push(exit_range(exit));
                                    }
                                } else if live_in_loop {
                                    deeper.push(exit_range(exit));
                                }
                            }
                        }
                        first.extend(
                            start
                                .excepted
                                .iter()
                                .map(|&root_child| TrieRange::with(trie, root_child)),
                        );
                        let mask_words = words.len();
                        let (mut frontier, mut escapes) =
                            self.record_walk(index, &mut ids, state, frames, &first, mask_words);
                        if !deeper.is_empty() {
                            let (more_frontier, more_escapes) = self.record_walk(
                                index,
                                &mut ids,
                                start.looping,
                                frames,
                                &deeper,
                                mask_words,
                            );
                            frontier.extend(more_frontier);
                            escapes.extend(more_escapes);
                        }
                        (frontier, escapes)
                    }
                    None => self.record_walk(index, &mut ids, state, frames, &[range], words.len()),
                };
                let tokens = match slice {
                    // Its words hold the slice's tokens already.
                    Some(start) if !start.excepted.is_empty() => ids.into_walk_tokens(None),
                    Some(start) => ids.into_walk_tokens(Some(start.slice)),
                    None => ids.into_walk_tokens(None),
                };
                let walk = Arc::new(PureWalk {
                    tokens,
                    frontier,
                    escapes,
                });
                self.parser
                    .step_cache()
                    .remember_walk(state, key.0, key.1, walk.clone());
                walk
            }
        };
        walk.tokens.apply(words);
        self.walk_frontier(index, words, frames, &walk.frontier);
        self.resolve_escapes(index, words, frames, &walk.escapes);
    }

    /// The loop slice a walk of `range` from `state` may start with, and the state that
    /// loops: for a walk of the whole trie from a state that loops on many bytes without
    /// returning to a caller (inside a string or a comment), the slice of those bytes;
    /// or from a state that the bytes of such a loop take into it, slots in place (the
    /// first character of a string that must have one), except at most
    /// [`MAX_SLICE_EXCEPTIONS`] ASCII bytes that go elsewhere (a key that must not be one
    /// of some names: their first letters lead into a trie of the names).
    fn loop_slice_for(
        &mut self,
        index: &VocabularyIndex,
        state: StateId,
        frames: &[u32],
        range: TrieRange,
    ) -> Option<SliceStart> {
        if range != TrieRange::all(index.trie()) {
            return None;
        }
        let big = |class: u128| {
            (class & !(1 << 127)).count_ones() >= LOOP_SLICE_MIN_ASCII_BYTES || class >> 127 == 1
        };
        // A slice's tokens are taken at once, but each exit is walked from the loop's
        // state: where an item loops on more bytes than the state does (a searched
        // pattern's free run, whose needle's letters move the state on), the walk from
        // the root takes more at once (subtrees by that item) than a slice would.
        let wider_item = |matcher: &Matcher, looping: StateId, class: u128| {
            let item_class = matcher.parser.step_cache().state(looping).loop_item_class;
            item_class & class == class && item_class != class
        };
        let class = self.closed_loop_class(state, frames, LOOP_SLICE_MIN_ASCII_BYTES);
        if big(class) && wider_item(self, state, class) {
            return None;
        }
        if big(class) {
            return Some(SliceStart {
                slice: index.loop_slice(class)?,
                looping: state,
                excepted: Vec::new(),
                excepted_bytes: 0,
            });
        }
        // A loop entered by some byte of the loop (the first of a few bytes tried that
        // enters one: letters are in most loops, and a few of them may lead elsewhere).
        let (looping, class) = [b'a', b'e', b'x', b'0', b' ']
            .into_iter()
            .find_map(|byte| {
                let looping = self
                    .step_to_state(state, frames, byte)
                    .filter(|&looping| looping != state)?;
                let class = self.closed_loop_class(looping, frames, LOOP_SLICE_MIN_ASCII_BYTES);
                big(class).then_some((looping, class))
            })?;
        if wider_item(self, looping, class) {
            return None;
        }
        let exceptions = self.bytes_not_entering(state, frames, looping, class)?;
        if exceptions.count_ones() as usize > MAX_SLICE_EXCEPTIONS || exceptions & 1 != 0 {
            return None;
        }
        let trie = index.trie();
        let mut excepted = Vec::new();
        let mut excepted_bytes = 0u128;
        let mut position = 1;
        while position < trie.nodes().len() {
            let node = &trie.nodes()[position];
            if exceptions & grail_vocab::byte_bit(node.byte) != 0 && node.byte < 0x80 {
                excepted.push(position);
                excepted_bytes |= 1 << node.byte;
            }
            position += node.subtree_len as usize;
        }
        Some(SliceStart {
            slice: index.loop_slice(class)?,
            looping,
            excepted,
            excepted_bytes,
        })
    }

    /// Walks on below frontier groups (their states' slots standing for slots of the
    /// walk's start, which stand for `frames`): one real step per group, then every
    /// group node's tokens and subtree from there.
    fn walk_frontier(
        &mut self,
        index: &VocabularyIndex,
        words: &mut [u32],
        frames: &[u32],
        groups: &[FrontierGroup],
    ) {
        let mut group_frames = Vec::new();
        let mut ranges = Vec::new();
        for group in groups {
            group_frames.clear();
            group_frames.extend(group.slots.iter().map(|&slot| frames[slot as usize]));
            let step = (group.state, &group_frames[..], group.byte);
            self.walk_frontier_group(index, words, step, group.nodes.iter().copied(), &mut ranges);
        }
    }

    /// One frontier group: the real step on `byte` from `state` (its slots standing for
    /// the frames given), then the tokens and subtree of each of `nodes` from there.
    /// (`ranges` is scratch space.)
    fn walk_frontier_group(
        &mut self,
        index: &VocabularyIndex,
        words: &mut [u32],
        (state, frames, byte): (StateId, &[u32], u8),
        nodes: impl Iterator<Item = u32>,
        ranges: &mut Vec<TrieRange>,
    ) {
        let trie = index.trie();
        self.parser.push_state_step(state, frames);
        if matches!(self.parser.step_byte(byte), Ok(true)) {
            ranges.clear();
            for position in nodes {
                let position = position as usize;
                set_ids(words, trie.tokens_at(&trie.nodes()[position]));
                ranges.push(TrieRange::below(trie, position));
            }
            self.walk_ranges(index, words, ranges);
            self.parser.rollback(1);
        }
        self.parser.rollback(1);
    }

    /// Walks the trie nodes of `ranges` (each from its own base depth) from the cached
    /// `state` (its slots standing for `frames`) along the step cache's table (see
    /// [`Matcher::walk_table_nodes`]), setting the tokens accepted in `words`, then walks
    /// on at once from its frontier nodes (a real step per group) and escape nodes (a
    /// return step per group).
    pub(crate) fn table_walk(
        &mut self,
        index: &VocabularyIndex,
        words: &mut [u32],
        state: StateId,
        frames: &[u32],
        ranges: &[TrieRange],
    ) {
        let mut maps = SlotMaps::new(frames.len());
        let mut buffers = self.walk_buffers.take();
        self.walk_table_nodes(index, words, state, frames, ranges, &mut maps, &mut buffers);
        let WalkBuffers {
            frontier_nodes,
            escape_keys,
            escape_nodes,
            other_frames: group_frames,
            ranges: group_ranges,
            ..
        } = &mut buffers;
        for run in frontier_nodes.chunk_by(|a, b| a.0 == b.0 && a.1 == b.1 && a.2 == b.2) {
            let (state, byte, map, _) = run[0];
            group_frames.clear();
            group_frames.extend(maps.get(map).iter().map(|&slot| frames[slot as usize]));
            let run_nodes = run.iter().map(|&(.., position)| position);
            let step = (state, &group_frames[..], byte);
            self.walk_frontier_group(index, words, step, run_nodes, group_ranges);
        }
        for run in escape_nodes.chunk_by(|a, b| a.0 == b.0) {
            let (returning, inside) = escape_keys[run[0].0 as usize];
            let run_nodes = EscapeNodes::Found(run);
            self.walk_escape(index, words, frames, (returning, inside), run_nodes);
        }
        self.walk_buffers.give_back(buffers);
    }

    /// Walks the trie nodes of `ranges` from the cached `state` as
    /// [`Matcher::table_walk`] does, adding the tokens accepted to `ids`, and returns its
    /// frontier and escape nodes as groups (for a walk remembered per state).
    pub(crate) fn record_walk(
        &mut self,
        index: &VocabularyIndex,
        ids: &mut TokenIds,
        state: StateId,
        frames: &[u32],
        ranges: &[TrieRange],
        mask_words: usize,
    ) -> (Vec<FrontierGroup>, Vec<EscapeGroup>) {
        let trie = index.trie();
        let mut maps = SlotMaps::new(frames.len());
        let mut buffers = self.walk_buffers.take();
        self.walk_table_nodes(index, ids, state, frames, ranges, &mut maps, &mut buffers);
        let frontier = buffers
            .frontier_nodes
            .chunk_by(|a, b| a.0 == b.0 && a.1 == b.1 && a.2 == b.2)
            .map(|run| {
                let (state, byte, map, _) = run[0];
                FrontierGroup {
                    state,
                    slots: maps.get(map).into(),
                    byte,
                    nodes: run.iter().map(|&(.., position)| position).collect(),
                }
            })
            .collect();
        let mut escapes: Vec<EscapeGroup> = buffers
            .escape_nodes
            .chunk_by(|a, b| a.0 == b.0)
            .map(|run| {
                let (returning, inside) = buffers.escape_keys[run[0].0 as usize];
                let run_nodes = run.iter().map(|&(_, position)| position);
                EscapeGroup::new(returning, inside, run_nodes, trie, mask_words)
            })
            .collect();
        escapes.sort_by_key(|group| (group.returning, group.inside));
        self.walk_buffers.give_back(buffers);
        (frontier, escapes)
    }

    /// Walks the trie nodes of `ranges` (each from its own base depth) from the cached
    /// `state` (its slots standing for `frames`) along the step cache's table: one lookup
    /// per node, whole subtrees at once where their bytes loop, UTF-8 by validity alone
    /// where every character loops. Tokens accepted go to `sink`. Where a byte calls a
    /// rule (or does not fit the cache), the node is a frontier node; where frames of the
    /// state return to callers outside it, an escape node: both are left in `buffers`,
    /// sorted (frontier nodes by state, byte and slot map; escape nodes by group; each in
    /// trie order), their slot maps in `maps`.
    #[allow(clippy::too_many_arguments)]
    fn walk_table_nodes<S: TokenSink + ?Sized>(
        &mut self,
        index: &VocabularyIndex,
        sink: &mut S,
        state: StateId,
        frames: &[u32],
        ranges: &[TrieRange],
        maps: &mut SlotMaps,
        buffers: &mut WalkBuffers,
    ) {
        let trie = index.trie();
        let nodes = trie.nodes();
        let WalkBuffers {
            path,
            frontier_nodes,
            escape_keys,
            escape_nodes,
            frames: learn_frames,
            bulk_odds,
            ..
        } = buffers;
        // The last (slot map, escapes) seen and its escape group, since runs of nodes
        // share them.
        let mut last_escape: Option<(u32, u64, u32)> = None;
        // The state (and slot map to the start) after each depth of the current path, and
        // the character begun there when the path is inside one in a state where every
        // character past ASCII loops (walked by UTF-8 validity alone, see below).
        path.push(match self.uniform_character_start(state, frames) {
            Some((completed, partial)) => (completed, 0, partial, UNCOUNTED),
            None => (state, 0, Partial::NONE, UNCOUNTED),
        });
        for &TrieRange {
            first,
            end,
            base_depth,
        } in ranges
        {
            let mut position = first;
            while position < end {
                let node = &nodes[position];
                path.truncate((node.depth - base_depth) as usize);
                let (parent, map, partial, count) =
                    *path.last().expect("the start state is on the path");
                // Inside a character every item takes whatever it is; where every character
                // past ASCII loops, any such character goes. Either way their bytes need no
                // steps: any valid UTF-8 prefix stays live, and a whole character comes back
                // to `parent`.
                let by_validity = !partial.is_none()
                    || (node.byte >= 0x80
                        && match self.parser.step_cache().loop_bytes(parent) {
                            facts if facts.loops >> 127 == 1 => true,
                            facts if facts.breaks >> 127 == 1 => false,
                            _ => {
                                learn_frames.clear();
                                learn_frames.extend(
                                    maps.get(map).iter().map(|&slot| frames[slot as usize]),
                                );
                                self.loops_on(parent, learn_frames, 1 << 127)
                            }
                        });
                if by_validity {
                    let next = match partial.push(node.byte) {
                        Step::Invalid => {
                            position += node.subtree_len as usize;
                            continue;
                        }
                        Step::Complete(_) => Partial::NONE,
                        Step::Incomplete(next) => next,
                    };
                    sink.add(trie.tokens_at(node));
                    // A big subtree that is valid UTF-8 from here and whose bytes all loop
                    // on the state the characters come back to: taken whole.
                    if node.subtree_len >= BULK_MIN_SUBTREE
                        && count == UNCOUNTED
                        && bulk_odds.entry(parent).or_default().check_next()
                    {
                        let valid = match next.expected() {
                            None => trie.valid_utf8_below(position),
                            Some((remaining, low, high)) => {
                                trie.valid_utf8_below_inside(position, remaining, low, high)
                            }
                        };
                        learn_frames.clear();
                        learn_frames
                            .extend(maps.get(map).iter().map(|&slot| frames[slot as usize]));
                        if valid && self.loops_on(parent, learn_frames, trie.bytes_below(position))
                        {
                            bulk_odds.entry(parent).or_default().hits += 1;
                            sink.add(trie.subtree_tokens(position));
                            position += node.subtree_len as usize;
                            continue;
                        }
                    }
                    path.push((parent, map, next, count));
                    position += 1;
                    continue;
                }
                let mut transition = self.parser.step_cache().transition(parent, node.byte);
                if transition == UNKNOWN || transition == NOT_CACHEABLE {
                    learn_frames.clear();
                    learn_frames.extend(maps.get(map).iter().map(|&slot| frames[slot as usize]));
                    transition =
                        self.parser
                            .learn_inner_transition(parent, learn_frames, node.byte);
                }
                // At the bound of a repetition walked through its twin loop (see
                // `CountedView`), the bytes of its class (those that take the twin back to
                // itself) are refused, returns to callers included.
                let refused_at_bound = count == 0
                    && !matches!(transition, DEAD | NOT_CACHEABLE | NEVER_CACHEABLE | UNKNOWN)
                    && self.parser.step_cache().summary(transition).target() == parent;
                if transition == DEAD || refused_at_bound {
                    position += node.subtree_len as usize;
                    continue;
                }
                // Most transitions are plain (see `TransitionSummary`): their summary, in a
                // dense table, is all the walk needs.
                let plain = match transition {
                    NOT_CACHEABLE | NEVER_CACHEABLE | UNKNOWN => None,
                    result => {
                        Some(self.parser.step_cache().summary(result)).filter(|s| s.is_plain())
                    }
                };
                let (target, target_viable, child) = match plain {
                    Some(summary) => (summary.target(), summary.target_viable(), map),
                    None => {
                        let leaves = match transition {
                            NOT_CACHEABLE | NEVER_CACHEABLE | UNKNOWN => true,
                            // Rule calls make frames, which only real steps have (unless
                            // they only renew the state's own calls, see below).
                            result => {
                                let step = self.parser.step_cache().result(result);
                                step.new_frames > 0 && step.renewal.is_none()
                            }
                        };
                        if leaves {
                            frontier_nodes.push((parent, node.byte, map, position as u32));
                            position += node.subtree_len as usize;
                            continue;
                        }
                        let step = self.parser.step_cache().result(transition);
                        if step.escapes != 0 {
                            // Frames returned to callers outside the state: the walk also
                            // goes on from those callers, below this node (see
                            // `resolve_escapes`).
                            let group = match last_escape {
                                Some((last_map, last_bits, group))
                                    if last_map == map && last_bits == step.escapes =>
                                {
                                    group
                                }
                                _ => {
                                    let slots = maps.get(map);
                                    let to_start = |bits: u64| {
                                        (0..slots.len())
                                            .filter(|&slot| bits >> slot & 1 == 1)
                                            .fold(0u64, |start, slot| start | 1 << slots[slot])
                                    };
                                    let key = (to_start(step.escapes), to_start(u64::MAX));
                                    let known = escape_keys.iter().position(|known| *known == key);
                                    let group = match known {
                                        Some(group) => group,
                                        None => {
                                            escape_keys.push(key);
                                            escape_keys.len() - 1
                                        }
                                    } as u32;
                                    last_escape = Some((map, step.escapes, group));
                                    group
                                }
                            };
                            escape_nodes.push((group, position as u32));
                        }
                        let step = self.parser.step_cache().result(transition);
                        let child = match &step.renewal {
                            // Renewed frames stand for the frames they renew.
                            Some(renewal) => maps.compose(map, transition, renewal),
                            None if step.keeps_slots => map,
                            None => maps.compose(map, transition, &step.slot_map),
                        };
                        (step.target, step.target_viable, child)
                    }
                };
                // Bounded repetitions of one class (see `CountedView`): in the twin loop a
                // byte of the class takes one more copy (none left: refused above);
                // entering the copies enters the twin with the copies left as the count
                // (where enough tokens go on below to repay checking the twin once).
                let (target, count) = if count != UNCOUNTED && target == parent {
                    (target, count - 1)
                } else if node.subtree_len >= COUNTED_MIN_SUBTREE
                    && plain.map_or_else(
                        || self.parser.step_cache().counted_view(target).is_some(),
                        |summary| summary.target_counted(),
                    )
                {
                    learn_frames.clear();
                    learn_frames.extend(maps.get(child).iter().map(|&slot| frames[slot as usize]));
                    self.counted_walk_view(target, learn_frames)
                        .unwrap_or((target, UNCOUNTED))
                } else {
                    (target, UNCOUNTED)
                };
                if target_viable {
                    sink.add(trie.tokens_at(node));
                }
                // A literal run (a key name, an enum value): followed down the trie
                // without a state per character (`matcher/literal_run.rs`).
                if node.subtree_len > 1
                    && count == UNCOUNTED
                    && plain.map_or_else(
                        || self.parser.step_cache().starts_literal_run(target),
                        |summary| summary.target_literal(),
                    )
                {
                    learn_frames.clear();
                    learn_frames.extend(maps.get(child).iter().map(|&slot| frames[slot as usize]));
                    match self.walk_literal_run(trie, sink, target, learn_frames, position) {
                        LiteralRunEnd::NotTaken => {}
                        LiteralRunEnd::Walked => {
                            position += node.subtree_len as usize;
                            continue;
                        }
                        LiteralRunEnd::Resume { at, last, dead_end } => {
                            // One path entry per depth down to `at`: the start, the dead
                            // end between (children off the run), the run's last state.
                            path.push((target, child, Partial::NONE, UNCOUNTED));
                            for _ in node.depth + 1..nodes[at].depth {
                                path.push((dead_end, child, Partial::NONE, UNCOUNTED));
                            }
                            path.push((last, child, Partial::NONE, UNCOUNTED));
                            position = at + 1;
                            continue;
                        }
                    }
                }
                // A subtree whose bytes an item of the target loops on (`loop_items.rs`),
                // however small: every token in it is accepted, without visiting its nodes
                // (checked in a few instructions, where a walk costs tens per node).
                if node.subtree_len > 1 && count == UNCOUNTED {
                    let class = self.parser.step_cache().state(target).loop_item_class;
                    if class != 0
                        && let Some(below) = trie.bytes_below_within(position, class)
                        && (below >> 127 == 0 || trie.valid_utf8_below(position))
                    {
                        sink.add(trie.subtree_tokens(position));
                        position += node.subtree_len as usize;
                        continue;
                    }
                }
                // A big subtree whose bytes all loop on the target: every token in it is
                // accepted, without visiting its nodes.
                if node.subtree_len >= BULK_MIN_SUBTREE
                    && count == UNCOUNTED
                    && bulk_odds.entry(target).or_default().check_next()
                {
                    learn_frames.clear();
                    learn_frames.extend(maps.get(child).iter().map(|&slot| frames[slot as usize]));
                    if let Some(tokens) = self.taken_whole(trie, position, target, learn_frames) {
                        bulk_odds.entry(target).or_default().hits += 1;
                        sink.add(tokens);
                        position += node.subtree_len as usize;
                        continue;
                    }
                }
                path.push((target, child, Partial::NONE, count));
                position += 1;
            }
        }
        // Frontier nodes grouped by (state, byte, slot map), escape nodes by group: each
        // in trie order.
        // (Stable sorts: walks meet nodes in runs already in order, one run per range or
        // group of a slice's exits, and a stable sort merges runs where an unstable one
        // sorts afresh. Every entry differs, so both give the same order.)
        frontier_nodes.sort();
        escape_nodes.sort();
    }
}

/// Subtrees at least this big are walked through a repetition's twin loop when they
/// enter its copies (see [`crate::automaton::step_cache::CountedView`]); smaller ones, through the
/// copies (a few states, where checking the twin would cost as much).
const COUNTED_MIN_SUBTREE: u32 = 16;

/// The count of a walk's path outside a bounded repetition's twin loop (see
/// [`crate::automaton::step_cache::CountedView`]).
pub(crate) const UNCOUNTED: u32 = u32::MAX;

impl Matcher {
    /// The twin of `state` and the bytes of its class the copies still take, when a walk
    /// may step through the twin (see [`crate::automaton::step_cache::CountedView`]): checked once
    /// per state, by learning the twin's transitions on the class (with `frames` for the
    /// state's slots), that each goes back to the twin itself along the table.
    fn counted_walk_view(&mut self, state: StateId, frames: &[u32]) -> Option<(StateId, u32)> {
        let view = self.parser.step_cache().counted_view(state)?;
        let loops = match view.loops {
            Some(loops) => loops,
            None => {
                let mut loops = true;
                let mut bytes = view.class;
                while bytes != 0 && loops {
                    let byte = bytes.trailing_zeros() as u8;
                    bytes &= bytes - 1;
                    let mut transition = self.parser.step_cache().transition(view.twin, byte);
                    if transition == UNKNOWN || transition == NOT_CACHEABLE {
                        transition = self.parser.learn_inner_transition(view.twin, frames, byte);
                    }
                    // Back to the twin along the table: plain, or renewing its calls, or
                    // with returns to callers outside (escapes, resolved as anywhere).
                    loops = !matches!(transition, DEAD | NOT_CACHEABLE | NEVER_CACHEABLE | UNKNOWN)
                        && {
                            let step = self.parser.step_cache().result(transition);
                            step.target == view.twin
                                && (step.new_frames == 0 || step.renewal.is_some())
                        };
                }
                self.parser
                    .step_cache()
                    .set_counted_view_loops(state, loops);
                loops
            }
        };
        loops.then_some((view.twin, view.remaining))
    }
}

/// Where a walk puts the tokens it accepts.
pub(crate) trait TokenSink {
    /// Adds these tokens.
    fn add(&mut self, ids: &[u32]);
}

/// A mask's words.
impl TokenSink for [u32] {
    #[inline]
    fn add(&mut self, ids: &[u32]) {
        set_ids(self, ids);
    }
}

/// The tokens of a walk to remember: their ids in the order the walk met them while
/// they are no more than a mask has words (most walks accept few tokens, and a list
/// costs less than a mask-sized buffer to scan afterwards), then a mask's words (a key
/// start of an open object accepts most of the vocabulary: its list grew, copying
/// itself, to hundreds of KB, each id then set in words anyway).
#[derive(Debug)]
pub(crate) struct TokenIds {
    ids: Vec<u32>,
    words: Option<Vec<u32>>,
    mask_words: usize,
}

impl TokenIds {
    /// No tokens yet, for masks of `mask_words` words.
    pub(crate) fn new(mask_words: usize) -> TokenIds {
        TokenIds {
            ids: Vec::new(),
            words: None,
            mask_words,
        }
    }

    /// These tokens in `words` (a mask's words) from the start: tokens added are set there.
    pub(crate) fn in_words(words: Vec<u32>) -> TokenIds {
        TokenIds {
            ids: Vec::new(),
            mask_words: words.len(),
            words: Some(words),
        }
    }

    /// Adds `ids` to the list, moving to words once they outnumber a mask's words.
    #[inline(never)]
    fn add_to_list(&mut self, ids: &[u32]) {
        self.ids.extend_from_slice(ids);
        if self.ids.len() > self.mask_words {
            let mut words = vec![0u32; self.mask_words];
            set_ids(&mut words, &self.ids);
            self.ids = Vec::new();
            self.words = Some(words);
        }
    }

    /// These tokens, after those of `slice` (if any), as a remembered walk keeps them.
    pub(crate) fn into_walk_tokens(self, slice: Option<Arc<grail_vocab::LoopSlice>>) -> WalkTokens {
        match (self.words, slice) {
            (None, slice) => WalkTokens::new(slice, self.ids, self.mask_words),
            (Some(words), None) => WalkTokens::Words(words.into_boxed_slice()),
            (Some(mut words), Some(slice)) => {
                or_words(&mut words, slice.words());
                WalkTokens::Words(words.into_boxed_slice())
            }
        }
    }
}

impl TokenSink for TokenIds {
    #[inline(always)]
    fn add(&mut self, ids: &[u32]) {
        // Called at every trie node a walk passes (most hold no token, or one): the
        // words' case inline, the list's out of line.
        match &mut self.words {
            Some(words) => set_ids(words, ids),
            None if ids.is_empty() => {}
            None => self.add_to_list(ids),
        }
    }
}
