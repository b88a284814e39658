//! A lazily built DFA over the parse, as far as it stays near the top of the call graph.
//!
//! A step's items live in a few frames (rule calls); numbering those frames in the order
//! the items meet them ("slots"), the item set plus, for each slot, its callers inside the
//! slots (return node, caller slot) and whether it has others describe everything the next
//! byte can do, as long as that byte's closure returns only to callers inside the slots.
//! Rule calls are fine: the frames they create and their callers are part of the
//! transition. Such descriptions are interned as states, and the transitions found are
//! remembered with the frames to create and a map from the target's slots to the source's
//! (and the new frames): the next time, a byte costs one table lookup, a few new frames
//! and a copy of a few items. Transitions that return outside the slots are computed in
//! full and recorded as "not cacheable"; token-mask walks learn them again without those
//! returns, as transitions that carry the slots that escaped (real steps never use
//! those). States are interned with the bytes no item can take already dead, and ASCII
//! bytes that the same items take share one learned transition.
//!
//! The cache also keeps, per state, which bytes loop back to it, and the token-trie walks
//! remembered per state and trie range (`table_walk.rs`). One cache serves every matcher
//! of a (grammar, vocabulary) pair, on any thread (`learned.rs`): what one matcher learns
//! the others use from their next byte. Readers take no lock: states, transitions and
//! their summaries are append-only records and atomic tables (`shared_chunks.rs`),
//! written before the table entry that leads to them. Interning a state takes a lock
//! (the index of state descriptions), as does remembering a walk (readers of walks share
//! a read lock). Facts learned later about a state (its ASCII classes, its loop bytes,
//! whether its counted view loops) only grow or are set once. Two threads may learn the
//! same transition at once: both record it, as two results describing the same step, and
//! either stays in the table. The cache is capped in size; past the caps, new states and
//! walks are simply not cached (and a full cache is replaced for new matchers, see
//! `learned.rs`).

use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};

use grail_vocab::{or_words, set_ids};
use rustc_hash::FxHashMap;

use crate::automaton::shared_chunks::{AppendOnly, SharedWords};
use crate::automaton::transition_table::TransitionTable;
use crate::graph::loop_items::widest_loop_item_class;
use crate::graph::utf8::{Partial, Step};
use crate::graph::{GrammarGraph, Node, NodeId};
use crate::graph::{edge_intersects, edge_matches};

/// A state id, a transition result index, or one of the markers below.
pub(crate) type StateId = u32;

/// The slot that stands for a caller outside the state's frames.
pub(crate) const OUTSIDE: u32 = u32::MAX;

/// No transition recorded yet.
pub(crate) const UNKNOWN: StateId = u32::MAX;
/// The transition returns to a caller outside the state, or does not fit a template:
/// compute it in full (walks learn it again without those returns).
pub(crate) const NOT_CACHEABLE: StateId = u32::MAX - 1;
/// No item survives the byte.
pub(crate) const DEAD: StateId = u32::MAX - 2;
/// Not cacheable even for walks (learned leaving out outside returns, it still did not
/// fit a template): compute it in full.
pub(crate) const NEVER_CACHEABLE: StateId = u32::MAX - 4;
/// The step has no state (too many frames to describe, or the cache is full).
pub(crate) const NO_STATE: StateId = u32::MAX - 3;

/// Most states cached per matcher family: 256 transitions of 4 bytes each, so about
/// 16 MB at the cap.
const MAX_STATES: usize = 16_384;

/// States whose descriptions the index makes room for when it first needs any: an open
/// object's first key step learns about 200 (Github_easy o57450: 186), and a cold
/// document of a schema with many keys a thousand or two (Github_hard o33027: 2,331).
/// A map that doubled from one state rehashed everything inside a mask, past 64 KB into
/// memory new to the process (a transparent huge page fault of hundreds of µs).
/// (The per-state records and the transition table grow by chunks: `shared_chunks.rs`.)
const INITIAL_STATES: usize = 8192;

/// Most transitions recorded per cache (about 64 per state at the state cap); past it a
/// transition is computed in full each time.
const MAX_RESULTS: usize = MAX_STATES * 64;

/// Summaries per chunk of their table (64 KB).
const SUMMARIES_PER_CHUNK: usize = 16 << 10;

/// The key the parser's `describe_step` (parse/step_description.rs) gives a step with no
/// items that is not accepting: the dead end's.
const EMPTY_STEP_KEY: [u32; 2] = [0, 0];

/// Most bytes of remembered trie walks per cache.
const MAX_WALK_BYTES: usize = 64 << 20;

/// A state: its items as (node, partial character, frame slot), whether the grammar may
/// end there, and what was learned of it.
#[derive(Debug)]
pub(crate) struct StateData {
    pub(crate) items: Box<[(NodeId, Partial, u8)]>,
    pub(crate) accepting: bool,
    /// The ASCII bytes split by which items take them: bytes in one class make the same
    /// step (the same items move on), so a transition learned for one holds for all.
    /// Worked out when the state's first ASCII transition is recorded (a quarter to a
    /// third of the states a cold mask learns are only ever reached, never left).
    ascii_classes: OnceLock<Box<[u128]>>,
    /// Some item takes a byte past ASCII.
    pub(crate) takes_non_ascii: bool,
    /// The widest class an item loops on at a character boundary (`loop_items.rs`): every
    /// run of its whole characters is viable from the state. Empty when none loops.
    pub(crate) loop_item_class: u128,
    /// It starts a literal run ([`starts_literal_run`]): walks go down such runs without
    /// learning a state per character (`matcher/literal_run.rs`).
    literal_start: bool,
    /// Its view as a twin loop with a count, if it has one (set as it is interned).
    counted_view: OnceLock<CountedView>,
    /// Whether the view's bytes loop on its twin: 0 not checked yet, 1 no, 2 yes.
    counted_view_loops: AtomicU8,
    /// What is known of the bytes that take it back to itself ([`LoopFacts`], each
    /// `u128` as two words), only ever added to.
    loop_facts: [AtomicU64; 6],
}

/// What is known of the bytes that take a state back to itself ([`grail_vocab::byte_bit`]
/// bits): those that do, those that do not, and those of the first kind whose transition
/// also returns to callers outside the state.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LoopFacts {
    pub(crate) loops: u128,
    pub(crate) breaks: u128,
    pub(crate) escaping: u128,
}

/// A remembered transition: the target state; the rule calls it makes (new frames, and
/// their callers in creation order); and for each target slot, the slot holding the same
/// frame, where slots past the source's count are the new frames.
#[derive(Debug, Clone)]
pub(crate) struct Transition {
    pub(crate) target: StateId,
    /// Learned for walks only: the source slots whose frames returned to callers outside
    /// the state, returns the target leaves out (bit per slot; 0 for full transitions).
    pub(crate) escapes: u64,
    pub(crate) slot_map: Box<[u8]>,
    /// How many frames the transition creates.
    pub(crate) new_frames: u8,
    /// Every slot stays where it was (the target has the source's slots, in order).
    pub(crate) keeps_slots: bool,
    /// The target has items or may end (walks that stop there accept the token).
    pub(crate) target_viable: bool,
    /// Caller links to add, in creation order: (new frame index, return node, caller slot).
    pub(crate) new_links: Box<[(u8, NodeId, u8)]>,
    /// For a transition that makes frames only to renew frames it drops: for each target
    /// slot, the source slot whose frame it stands for (see
    /// `step_description::renewal_slots`); walks go on through it.
    pub(crate) renewal: Option<Box<[u8]>>,
}

/// What walks need of most transitions, packed: the target (low bits), whether it is
/// viable, whether the transition is plain — it creates no frame, keeps every slot in
/// place and returns to no caller outside the state — and whether the target has a
/// counted view or starts a literal run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TransitionSummary(u32);

impl TransitionSummary {
    const PLAIN: u32 = 1 << 31;
    const VIABLE: u32 = 1 << 30;
    const COUNTED: u32 = 1 << 29;
    const LITERAL: u32 = 1 << 28;

    fn of(
        transition: &Transition,
        target_counted: bool,
        target_literal: bool,
    ) -> TransitionSummary {
        let plain = transition.new_frames == 0 && transition.keeps_slots && transition.escapes == 0;
        let flag = |set: bool, bit: u32| if set { bit } else { 0 };
        TransitionSummary(
            transition.target
                | flag(plain, Self::PLAIN)
                | flag(transition.target_viable, Self::VIABLE)
                | flag(target_counted, Self::COUNTED)
                | flag(target_literal, Self::LITERAL),
        )
    }

    /// No new frame, every slot in place, no return to a caller outside.
    pub(crate) fn is_plain(self) -> bool {
        self.0 & Self::PLAIN != 0
    }

    pub(crate) fn target(self) -> StateId {
        self.0 & !(Self::PLAIN | Self::VIABLE | Self::COUNTED | Self::LITERAL)
    }

    /// The target starts a literal run ([`StepCache::starts_literal_run`]).
    pub(crate) fn target_literal(self) -> bool {
        self.0 & Self::LITERAL != 0
    }

    /// The target has a [`CountedView`].
    pub(crate) fn target_counted(self) -> bool {
        self.0 & Self::COUNTED != 0
    }

    pub(crate) fn target_viable(self) -> bool {
        self.0 & Self::VIABLE != 0
    }
}

/// The walk of the token trie from one state, as far as it stays inside pure
/// transitions: the tokens it accepts there, and where it had to stop.
#[derive(Debug)]
pub(crate) struct PureWalk {
    /// Tokens whose every byte is a pure transition ending in a live state.
    pub(crate) tokens: WalkTokens,
    /// Trie nodes whose byte leaves the pure region, grouped by the state before it and
    /// the byte: each group needs one real step at mask time.
    pub(crate) frontier: Vec<FrontierGroup>,
    /// Trie nodes where frames of the start returned to callers outside the state.
    pub(crate) escapes: Vec<EscapeGroup>,
}

/// The tokens a walk accepted: a whole mask's words, or (for a few) their ids, or a loop
/// slice (shared by the vocabulary's users) and the ids the walk added to it.
#[derive(Debug)]
pub(crate) enum WalkTokens {
    Words(Box<[u32]>),
    Ids(Box<[u32]>),
    Slice(Arc<grail_vocab::LoopSlice>, Box<[u32]>),
}

impl WalkTokens {
    /// The tokens of a walk that started with `slice` (if any) and added `ids`, in a
    /// mask of `mask_words` words.
    pub(crate) fn new(
        slice: Option<Arc<grail_vocab::LoopSlice>>,
        ids: Vec<u32>,
        mask_words: usize,
    ) -> WalkTokens {
        match slice {
            Some(slice) => WalkTokens::Slice(slice, ids.into_boxed_slice()),
            None => WalkTokens::from_ids(ids, mask_words),
        }
    }

    /// The tokens `ids` (of a mask of `mask_words` words), kept as ids when they are few
    /// (see [`WalkTokens::take_from`]).
    pub(crate) fn from_ids(ids: Vec<u32>, mask_words: usize) -> WalkTokens {
        if ids.len() <= mask_words {
            return WalkTokens::Ids(ids.into_boxed_slice());
        }
        let mut words = vec![0u32; mask_words];
        set_ids(&mut words, &ids);
        WalkTokens::Words(words.into_boxed_slice())
    }

    /// Sets these tokens in a mask's words.
    pub(crate) fn apply(&self, words: &mut [u32]) {
        match self {
            WalkTokens::Words(own) => or_words(words, own),
            WalkTokens::Ids(ids) => set_ids(words, ids),
            WalkTokens::Slice(slice, ids) => {
                or_words(words, slice.words());
                set_ids(words, ids);
            }
        }
    }

    fn bytes(&self) -> usize {
        match self {
            WalkTokens::Words(words) | WalkTokens::Ids(words) => words.len() * 4,
            // The slice belongs to the vocabulary.
            WalkTokens::Slice(_, ids) => ids.len() * 4,
        }
    }
}

impl PureWalk {
    /// About how much memory the walk holds.
    pub(crate) fn bytes(&self) -> usize {
        let frontier: usize = self
            .frontier
            .iter()
            .map(|group| group.nodes.len() * 4 + group.slots.len() + 48)
            .sum();
        let escapes: usize = self
            .escapes
            .iter()
            .map(|group| {
                group.tokens.bytes() + group.children.len() * 4 + group.child_runs.len() * 8 + 96
            })
            .sum();
        self.tokens.bytes() + frontier + escapes + 64
    }
}

/// Trie nodes where frames of the walk's start returned to callers outside the state
/// the walk was in: the walk goes on below them from those callers, at mask time.
#[derive(Debug)]
pub(crate) struct EscapeGroup {
    /// The start's slots whose frames returned (bit per slot).
    pub(crate) returning: u64,
    /// The start's slots the state held (their callers were walked already).
    pub(crate) inside: u64,
    /// The tokens ending at the group's nodes (taken when the callers' step is viable).
    pub(crate) tokens: WalkTokens,
    /// The children of the group's nodes (positions), ordered by byte, so a byte the callers
    /// refuse costs one lookup for all of them.
    children: Vec<u32>,
    /// Each byte that has children, with the end of its run in `children`.
    child_runs: Vec<(u8, u32)>,
}

impl EscapeGroup {
    /// The group of escape `nodes` (positions in `trie`, in walk order), with their
    /// tokens gathered (for masks of `mask_words` words) and their children sorted by
    /// byte (a counting sort: groups can hold tens of thousands of nodes).
    pub(crate) fn new(
        returning: u64,
        inside: u64,
        nodes: impl Iterator<Item = u32> + Clone,
        trie: &grail_vocab::TokenTrie,
        mask_words: usize,
    ) -> EscapeGroup {
        let trie_nodes = trie.nodes();
        let ids = nodes
            .clone()
            .flat_map(|position| trie.tokens_at(&trie_nodes[position as usize]))
            .copied()
            .collect();
        let each_child = |visit: &mut dyn FnMut(usize)| {
            for position in nodes.clone() {
                let position = position as usize;
                let end = position + trie_nodes[position].subtree_len as usize;
                let mut child = position + 1;
                while child < end {
                    visit(child);
                    child += trie_nodes[child].subtree_len as usize;
                }
            }
        };
        let mut run_ends = [0u32; 256];
        // The bytes seen, so the runs are laid out without a pass over all 256 (most
        // groups are walked once, and small).
        let mut seen = [0u64; 4];
        each_child(&mut |child| {
            let byte = usize::from(trie_nodes[child].byte);
            run_ends[byte] += 1;
            seen[byte / 64] |= 1 << (byte % 64);
        });
        let mut total = 0;
        let mut child_runs = Vec::new();
        for (quarter, mut bits) in seen.into_iter().enumerate() {
            while bits != 0 {
                let byte = quarter * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let count = run_ends[byte];
                total += count;
                child_runs.push((byte as u8, total));
                // From here on: where the next child of this byte goes.
                run_ends[byte] = total - count;
            }
        }
        let mut children = vec![0u32; total as usize];
        each_child(&mut |child| {
            let next = &mut run_ends[usize::from(trie_nodes[child].byte)];
            children[*next as usize] = child as u32;
            *next += 1;
        });
        EscapeGroup {
            returning,
            inside,
            tokens: WalkTokens::from_ids(ids, mask_words),
            children,
            child_runs,
        }
    }

    /// Each byte with the children (positions) entered by it.
    pub(crate) fn children_by_byte(&self) -> impl Iterator<Item = (u8, &[u32])> {
        let mut start = 0;
        self.child_runs.iter().map(move |&(byte, end)| {
            let run = &self.children[start as usize..end as usize];
            start = end;
            (byte, run)
        })
    }
}

/// Trie nodes entered by the same byte from the same state.
#[derive(Debug)]
pub(crate) struct FrontierGroup {
    pub(crate) state: StateId,
    /// For each slot of `state`, the slot of the walk's start state with the same frame.
    pub(crate) slots: Box<[u8]>,
    pub(crate) byte: u8,
    /// Positions in the trie's node array.
    pub(crate) nodes: Vec<u32>,
}

/// A state one of whose items sits in a copy of a bounded repetition of one ASCII class
/// (JSON's `[ \t]{0,20}`, a number's `[0-9]{0,15}`), seen as the repetition's twin loop
/// with a count (see `counted.rs`): a walk steps through the loop's one state, counting
/// the class's bytes down from `remaining`, rather than learning one state per copy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CountedView {
    /// The same state with that item moved to the twin loop.
    pub(crate) twin: StateId,
    /// How many more bytes of the class the copies take.
    pub(crate) remaining: u32,
    /// The class, as [`grail_vocab::byte_bit`] bits (ASCII only).
    pub(crate) class: u128,
    /// Whether every byte of the class is known to take `twin` back to itself along the
    /// table (plain, renewing its calls or returning to callers outside: what the count
    /// relies on); `None` until checked.
    pub(crate) loops: Option<bool>,
}

/// Interned states and the transitions between them, shared by threads (see the module
/// doc).
#[derive(Debug)]
pub(crate) struct StepCache {
    states: AppendOnly<StateData>,
    /// Per state and byte: a marker, or an index into `results`.
    transitions: TransitionTable,
    results: AppendOnly<Transition>,
    /// The summary of each of `results`, dense so walks stay in cache.
    summaries: SharedWords,
    /// Remembered walks by start state and trie range (first and end node).
    walks: RwLock<FxHashMap<(StateId, u32, u32), Arc<PureWalk>>>,
    walk_bytes: AtomicUsize,
    /// What interning a state writes under one lock.
    writer: Mutex<Writer>,
}

/// The part of the cache written under its lock.
#[derive(Debug, Default)]
struct Writer {
    /// States by their description.
    index: FxHashMap<Box<[u32]>, StateId>,
    /// The state with no items that cannot end: every byte is dead from it. Made when a
    /// walk first needs it, to stand for the positions inside a literal run.
    dead_end: Option<StateId>,
}

impl Default for StepCache {
    fn default() -> StepCache {
        StepCache {
            states: AppendOnly::with_capacity(MAX_STATES),
            transitions: TransitionTable::with_capacity(MAX_STATES),
            results: AppendOnly::with_capacity(MAX_RESULTS),
            summaries: SharedWords::with_capacity(MAX_RESULTS, SUMMARIES_PER_CHUNK, 0),
            walks: RwLock::default(),
            walk_bytes: AtomicUsize::new(0),
            writer: Mutex::default(),
        }
    }
}

impl StepCache {
    /// How many states are interned.
    #[cfg(test)]
    pub(crate) fn state_count(&self) -> usize {
        self.states.len()
    }

    /// Bytes of remembered trie walks.
    pub(crate) fn walk_bytes(&self) -> usize {
        self.walk_bytes.load(Ordering::Relaxed)
    }

    /// Whether the cache is (nearly) full: it interns no more states, or its walks
    /// take seven eighths of their room.
    pub(crate) fn is_full(&self) -> bool {
        !self.states.has_room_for(1) || self.walk_bytes() >= MAX_WALK_BYTES / 8 * 7
    }

    fn lock_writer(&self) -> MutexGuard<'_, Writer> {
        // The writer's maps stay consistent when a thread panics between its writes (an
        // index entry is inserted after its state is whole).
        self.writer
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// The state described by `key`, interning it (with its items) if there is room.
    pub(crate) fn intern(
        &self,
        graph: &GrammarGraph,
        key: &[u32],
        items: &[(NodeId, Partial, u8)],
        accepting: bool,
    ) -> StateId {
        let mut writer = self.lock_writer();
        self.intern_locked(&mut writer, graph, key, items, accepting)
    }

    fn intern_locked(
        &self,
        writer: &mut Writer,
        graph: &GrammarGraph,
        key: &[u32],
        items: &[(NodeId, Partial, u8)],
        accepting: bool,
    ) -> StateId {
        if let Some(&state) = writer.index.get(key) {
            return state;
        }
        if !self.states.has_room_for(1) {
            return NO_STATE;
        }
        if writer.index.len() == writer.index.capacity() {
            // Room for the states a document learns (see `INITIAL_STATES`).
            writer.index.reserve(writer.index.len().max(INITIAL_STATES));
        }
        // Bytes no item can take are dead from the start: walks never step to learn them.
        let live = live_bytes(graph, items);
        let data = StateData {
            items: items.into(),
            accepting,
            ascii_classes: OnceLock::new(),
            takes_non_ascii: live[2] != 0 || live[3] != 0,
            loop_item_class: widest_loop_item_class(graph, items),
            literal_start: starts_literal_run(graph, items),
            counted_view: OnceLock::new(),
            counted_view_loops: AtomicU8::new(0),
            loop_facts: Default::default(),
        };
        // States are pushed under the lock alone, so their ids follow one another.
        let Ok(index) = self.states.push(data) else {
            return NO_STATE;
        };
        let state = index as StateId;
        self.transitions.write_row(state, &live);
        writer.index.insert(key.into(), state);
        if let Some(twin) = crate::graph::counted::counted_twin_of(graph, key, items) {
            let state_twin = self.intern_locked(writer, graph, &twin.key, &twin.items, accepting);
            if state_twin != NO_STATE {
                let _ = self.states[index].counted_view.set(CountedView {
                    twin: state_twin,
                    remaining: twin.remaining,
                    class: twin.class,
                    loops: None,
                });
            }
        }
        state
    }

    /// Whether there is room for `count` more states.
    pub(crate) fn has_room_for(&self, count: usize) -> bool {
        self.states.has_room_for(count)
    }

    /// Whether `state` starts a literal run ([`starts_literal_run`]).
    pub(crate) fn starts_literal_run(&self, state: StateId) -> bool {
        self.states[state as usize].literal_start
    }

    /// The state with no items that cannot end (every byte dead from it), interned on
    /// first need; `NO_STATE` when the cache is full.
    pub(crate) fn dead_end(&self, graph: &GrammarGraph) -> StateId {
        let mut writer = self.lock_writer();
        if let Some(state) = writer.dead_end {
            return state;
        }
        let state = self.intern_locked(&mut writer, graph, &EMPTY_STEP_KEY, &[], false);
        if state != NO_STATE {
            writer.dead_end = Some(state);
        }
        state
    }

    /// The view of `state` as a twin loop with a count, if it has one.
    pub(crate) fn counted_view(&self, state: StateId) -> Option<CountedView> {
        let data = &self.states[state as usize];
        let view = data.counted_view.get()?;
        let loops = match data.counted_view_loops.load(Ordering::Acquire) {
            0 => None,
            1 => Some(false),
            _ => Some(true),
        };
        Some(CountedView { loops, ..*view })
    }

    /// Records whether the bytes of `state`'s counted view loop on its twin.
    pub(crate) fn set_counted_view_loops(&self, state: StateId, loops: bool) {
        self.states[state as usize]
            .counted_view_loops
            .store(1 + u8::from(loops), Ordering::Release);
    }

    /// The recorded transition from `state` on `byte`: a marker, or an index for
    /// [`StepCache::result`].
    #[inline]
    pub(crate) fn transition(&self, state: StateId, byte: u8) -> u32 {
        self.transitions.get(state, byte)
    }

    /// A transition found by [`StepCache::transition`].
    pub(crate) fn result(&self, index: u32) -> &Transition {
        &self.results[index as usize]
    }

    /// The summary of a transition found by [`StepCache::transition`].
    #[inline]
    pub(crate) fn summary(&self, index: u32) -> TransitionSummary {
        TransitionSummary(self.summaries.get(index as usize))
    }

    /// Records a marker (`DEAD`, `NOT_CACHEABLE`) for a transition.
    pub(crate) fn record_marker(
        &self,
        graph: &GrammarGraph,
        state: StateId,
        byte: u8,
        marker: u32,
    ) {
        self.set_for_class(graph, state, byte, marker);
    }

    /// Sets the transition of `byte` and of every byte not known yet that takes `state`
    /// the same way: ASCII bytes in its class, or bytes past ASCII of the same shape
    /// where which character is written does not matter ([`same_shape_bytes`]).
    fn set_for_class(&self, graph: &GrammarGraph, state: StateId, byte: u8, value: u32) {
        self.transitions.set(state, byte, value);
        let data = &self.states[state as usize];
        if byte >= 0x80 {
            if let Some(bytes) = same_shape_bytes(graph, &data.items, byte) {
                self.transitions.fill_unknown_high(state, bytes, value);
            }
            return;
        }
        let classes = data
            .ascii_classes
            .get_or_init(|| ascii_classes(graph, &data.items));
        let Some(&class) = classes.iter().find(|&&class| class >> byte & 1 == 1) else {
            return;
        };
        self.transitions.fill_unknown_ascii(state, class, value);
    }

    /// The ASCII bytes (bit `byte`) that take `state` the way `byte` does: every item
    /// takes all of them or none. Computed here when no transition of the state has
    /// computed the classes yet.
    pub(crate) fn ascii_class_of(&self, graph: &GrammarGraph, state: StateId, byte: u8) -> u128 {
        let data = &self.states[state as usize];
        let find = |classes: &[u128]| {
            classes
                .iter()
                .copied()
                .find(|class| class >> byte & 1 == 1)
                .unwrap_or(1 << byte)
        };
        match data.ascii_classes.get() {
            Some(classes) => find(classes),
            None => find(&ascii_classes(graph, &data.items)),
        }
    }

    /// Records a cacheable transition (in full each time once the results are full).
    pub(crate) fn record(
        &self,
        graph: &GrammarGraph,
        state: StateId,
        byte: u8,
        transition: Transition,
    ) {
        let target = &self.states[transition.target as usize];
        let summary = TransitionSummary::of(
            &transition,
            target.counted_view.get().is_some(),
            target.literal_start,
        );
        let Ok(index) = self.results.push(transition) else {
            self.set_for_class(graph, state, byte, NEVER_CACHEABLE);
            return;
        };
        // The summary before the entries that lead to it.
        self.summaries.set(index, summary.0);
        self.set_for_class(graph, state, byte, index as u32);
    }

    /// The remembered walk of the trie nodes `first..end` from `state`.
    pub(crate) fn walk(&self, state: StateId, first: u32, end: u32) -> Option<Arc<PureWalk>> {
        self.walks
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
            .get(&(state, first, end))
            .cloned()
    }

    /// Remembers a walk, while there is room.
    pub(crate) fn remember_walk(&self, state: StateId, first: u32, end: u32, walk: Arc<PureWalk>) {
        let bytes = walk.bytes();
        let mut walks = self
            .walks
            .write()
            .unwrap_or_else(|poison| poison.into_inner());
        if self.walk_bytes() + bytes <= MAX_WALK_BYTES
            && walks.insert((state, first, end), walk).is_none()
        {
            self.walk_bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// What is known of the bytes that take `state` back to itself (see
    /// `Matcher::loops_on`).
    pub(crate) fn loop_bytes(&self, state: StateId) -> LoopFacts {
        let words = &self.states[state as usize].loop_facts;
        let pair = |low: usize| {
            u128::from(words[low].load(Ordering::Acquire))
                | u128::from(words[low + 1].load(Ordering::Acquire)) << 64
        };
        LoopFacts {
            loops: pair(0),
            breaks: pair(2),
            escaping: pair(4),
        }
    }

    /// Adds to what is known of the bytes that take `state` back to itself.
    pub(crate) fn remember_loop_bytes(&self, state: StateId, facts: LoopFacts) {
        let words = &self.states[state as usize].loop_facts;
        for (low, value) in [(0, facts.loops), (2, facts.breaks), (4, facts.escaping)] {
            words[low].fetch_or(value as u64, Ordering::Release);
            words[low + 1].fetch_or((value >> 64) as u64, Ordering::Release);
        }
    }

    /// A state's items and accepting flag.
    pub(crate) fn state(&self, state: StateId) -> &StateData {
        &self.states[state as usize]
    }
}

/// Whether a state of `items` starts a literal run: it holds one item, at an ASCII
/// character (not inside one) whose next node is another ASCII character that can
/// complete its rule. The byte of its character then takes it to the one item at that
/// next node in the same frame (a plain transition to a viable state), and so on down
/// the run: walks follow such runs through the trie without learning those states.
fn starts_literal_run(graph: &GrammarGraph, items: &[(NodeId, Partial, u8)]) -> bool {
    let &[(node, partial, _)] = items else {
        return false;
    };
    partial.is_none()
        && matches!(
            graph.nodes[node as usize],
            Node::Char { code_point, next } if code_point < 0x80 && continues_literal_run(graph, next)
        )
}

/// Whether `node` goes on with a literal run: an ASCII character that can complete its
/// rule.
pub(crate) fn continues_literal_run(graph: &GrammarGraph, node: NodeId) -> bool {
    matches!(graph.nodes[node as usize], Node::Char { code_point, .. } if code_point < 0x80)
        && graph.is_productive(node)
}

/// The bytes some item can take (complete a character it accepts, or stay inside one it
/// may accept): any other byte kills every item.
fn live_bytes(graph: &GrammarGraph, items: &[(NodeId, Partial, u8)]) -> [u64; 4] {
    let mut live = [0u64; 4];
    for &(node, partial, _) in items {
        let node = graph.nodes[node as usize];
        if partial.is_none() {
            match node {
                Node::Char { code_point, .. } => {
                    let mut buffer = [0u8; 4];
                    let lead = char::from_u32(code_point).map_or(0, |character| {
                        character.encode_utf8(&mut buffer).as_bytes()[0]
                    });
                    live[usize::from(lead / 64)] |= 1 << (lead % 64);
                }
                Node::Class { set, .. } => {
                    for (word, lead) in live.iter_mut().zip(graph.class_lead_bytes[set as usize]) {
                        *word |= lead;
                    }
                }
                Node::Any { .. } => {
                    // ASCII and every valid lead byte (C2..=F4).
                    live[0] = u64::MAX;
                    live[1] = u64::MAX;
                    live[3] |= (u64::MAX << 2) & ((1 << 53) - 1);
                }
                _ => {}
            }
            continue;
        }
        // Whether the item takes every character past ASCII (`Some(true)`), none, or
        // some: only then is each continuation byte's character looked up.
        let non_ascii = match node {
            Node::Any { .. } => Some(true),
            Node::Class { set, .. } => graph.class_all_non_ascii[set as usize],
            Node::Char { .. } => None,
            _ => continue,
        };
        for byte in 0x80..=0xBFu8 {
            let takes = match partial.push(byte) {
                Step::Invalid => false,
                _ if non_ascii.is_some() => non_ascii == Some(true),
                Step::Complete(code_point) => edge_matches(graph, node, code_point),
                Step::Incomplete(next) => {
                    let (low, high) = next.code_point_range();
                    edge_intersects(graph, node, low, high)
                }
            };
            if takes {
                live[2] |= 1 << (byte - 0x80);
            }
        }
    }
    live
}

/// The bytes past ASCII (bit `byte - 0x80`) that take a state with `items` where `byte`
/// does, when every item takes either no character past ASCII or all of them: then
/// which character is written does not matter, only its shape — whether the byte
/// completes it, or which canonical partial it leaves (for a node that takes every
/// character, the matcher's `canonical_partial` is the first of
/// [`Partial::representatives`]) — so one learned transition holds for every byte of
/// that shape (a string's lead bytes C2..=DF, or the last bytes 80..=BF of a character).
/// `None` when some item takes only some such characters, or the items are inside
/// different characters.
fn same_shape_bytes(
    graph: &GrammarGraph,
    items: &[(NodeId, Partial, u8)],
    byte: u8,
) -> Option<u128> {
    let &(_, partial, _) = items.first()?;
    let mut some_takes_all = false;
    for &(node, item_partial, _) in items {
        if item_partial != partial {
            return None;
        }
        some_takes_all |= match graph.nodes[node as usize] {
            Node::Any { .. } => true,
            Node::Class { set, .. } => graph.class_all_non_ascii[set as usize]?,
            Node::Char { code_point, .. } if code_point < 0x80 => false,
            _ => return None,
        };
    }
    if !some_takes_all {
        return None;
    }
    let shape = |byte: u8| match partial.push(byte) {
        Step::Complete(_) => Some(Partial::NONE),
        Step::Incomplete(next) => Some(next.representatives().first().copied().unwrap_or(next)),
        Step::Invalid => None,
    };
    let wanted = shape(byte)?;
    // Completing a character: every continuation byte completes it as well.
    const CONTINUATION_BYTES: u128 = u64::MAX as u128;
    if wanted.is_none() {
        return Some(CONTINUATION_BYTES);
    }
    if partial.is_none() {
        return Some(Partial::lead_bytes_of_shape(byte));
    }
    Some(
        (0x80..=0xBFu8)
            .filter(|&other| shape(other) == Some(wanted))
            .fold(0, |bytes, other| bytes | 1 << (other - 0x80)),
    )
}

/// The ASCII bytes grouped by the set of items that take them (items inside a character
/// take none): partition refinement by each item's ASCII bitmap.
fn ascii_classes(graph: &GrammarGraph, items: &[(NodeId, Partial, u8)]) -> Box<[u128]> {
    // At most one class per ASCII byte: refined on the stack, then copied once to a box of
    // the right size (a vector would grow and then shrink, copying itself each time).
    let mut classes = [0u128; 128];
    classes[0] = u128::MAX;
    let mut count = 1;
    for &(node, partial, _) in items {
        if !partial.is_none() {
            continue;
        }
        let takes: u128 = match graph.nodes[node as usize] {
            Node::Char { code_point, .. } if code_point < 128 => 1 << code_point,
            Node::Class { set, .. } => graph.class_ascii[set as usize],
            Node::Any { .. } => u128::MAX,
            _ => continue,
        };
        if takes == 0 || takes == u128::MAX {
            continue;
        }
        // Refined in place: each class splits into its bytes the item takes (kept where
        // it was) and the rest (appended).
        // The classes made by this item are not split again by it.
        let classes_before = count;
        for index in 0..classes_before {
            let (inside, outside) = (classes[index] & takes, classes[index] & !takes);
            if inside != 0 && outside != 0 {
                classes[index] = inside;
                classes[count] = outside;
                count += 1;
            }
        }
    }
    classes[..count].into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Matcher;
    use crate::tokens::test_support::matcher_after;

    /// The transition `byte` takes from the state after `prefix`, as text: its target's
    /// items and what it does to the frames.
    fn described(matcher: &Matcher, entry: u32) -> String {
        if matches!(entry, DEAD | NOT_CACHEABLE | NEVER_CACHEABLE | UNKNOWN) {
            return format!("marker {entry}");
        }
        let transition = matcher.parser.step_cache().result(entry);
        let target = matcher.parser.step_cache().state(transition.target);
        let mut text = format!("{transition:?}");
        // The target's id depends on the order of learning; its items do not.
        text.push_str(&format!(" -> {:?} {}", target.items, target.accepting));
        text.replace(&format!("target: {}", transition.target), "target")
    }

    /// Learns `learned` from the state after `prefix`, then checks every byte past ASCII
    /// it filled in against that byte learned on its own; returns the bytes filled in.
    fn filled_bytes_match_their_own(source: &str, prefix: &[u8], learned: u8) -> Vec<u8> {
        let (mut matcher, state, frames) = matcher_after(source, prefix);
        matcher
            .parser
            .learn_inner_transition(state, &frames, learned);
        let mut filled = Vec::new();
        for byte in 0x80..=0xFFu8 {
            let entry = matcher.parser.step_cache().transition(state, byte);
            if byte == learned || entry == UNKNOWN || entry == DEAD {
                continue;
            }
            filled.push(byte);
            let (mut alone, alone_state, alone_frames) = matcher_after(source, prefix);
            let own = alone
                .parser
                .learn_inner_transition(alone_state, &alone_frames, byte);
            assert_eq!(
                described(&matcher, entry),
                described(&alone, own),
                "byte {byte:#04X} after learning {learned:#04X}"
            );
        }
        filled
    }

    #[test]
    fn bytes_past_ascii_of_one_shape_share_a_learned_transition() {
        // A string of any characters (but the quote and backslash), with one key beside it.
        let free = r#"root ::= "\"" ("naïve" "\"" | [^"\\n] [^"\\]* "\"")"#;
        let leads: Vec<u8> = (0xC2..=0xDF).filter(|&byte| byte != 0xC3).collect();
        // From inside the string, a two-byte lead byte stands for every other one ...
        assert_eq!(filled_bytes_match_their_own(free, b"\"x", 0xC3), leads);
        // ... a last byte for every continuation byte ...
        let continuations: Vec<u8> = (0x80..=0xBF).filter(|&byte| byte != 0xA9).collect();
        assert_eq!(
            filled_bytes_match_their_own(free, b"\"x\xC3", 0xA9),
            continuations
        );
        // ... and a lead byte whose second byte is narrowed for no other.
        assert_eq!(
            filled_bytes_match_their_own(free, b"\"x", 0xE0),
            Vec::<u8>::new()
        );
        let wide_three: Vec<u8> = (0xE2..=0xEC).chain([0xEE, 0xEF]).collect();
        assert_eq!(filled_bytes_match_their_own(free, b"\"x", 0xE1), wide_three);
        // Where an item takes one character past ASCII (the key's `ï`), each byte is its own.
        assert_eq!(
            filled_bytes_match_their_own(free, b"\"na", 0xC3),
            Vec::<u8>::new()
        );
        // A class of some characters past ASCII: each byte is its own.
        let some = r#"root ::= "\"" [a-zé-ü]* "\"""#;
        assert_eq!(
            filled_bytes_match_their_own(some, b"\"", 0xC3),
            Vec::<u8>::new()
        );
    }
}
