//! Finite automata over Unicode code points, for the set operations on string languages
//! that grammars cannot do directly.
//!
//! # What for
//!
//! A grammar can take the union of two languages and concatenate them, but not their
//! intersection, their difference or the complement of one. JSON Schema asks for all
//! three on strings: `patternProperties` (keys matching one pattern but no declared name,
//! keys matching several patterns, keys matching none), `propertyNames`, `not: {pattern}`,
//! two `pattern`s on one string (`allOf`) and a `pattern` beside `minLength`/`maxLength`.
//! [`CharDfa`] is a deterministic automaton for such a language: built from a pattern
//! (through the language tree of [`crate::pattern`], search semantics and anchors already
//! resolved), from a list of strings or from length bounds; combined by complement,
//! intersection, union and difference; asked whether it is empty or matches a string; and
//! written back as a right-linear grammar over the canonical JSON encoding of its
//! characters ([`CharDfa::to_expr`]).
//!
//! # Why hand-written
//!
//! `regex-automata` builds DFAs over bytes (UTF-8), and has no complement, intersection or
//! difference of DFAs. A byte DFA could only be turned back into a grammar over characters
//! by reassembling multi-byte sequences, and its transitions would be split along UTF-8
//! boundaries instead of along the character ranges a grammar writes as one class. What is
//! needed is small and textbook (a Thompson NFA, the subset construction, the product
//! construction, Hopcroft's minimization), so it is written here over code points: each
//! state's transitions become one character class per target state.
//!
//! # How
//!
//! - The alphabet is the Unicode scalar values (code points but the surrogates, which are
//!   no characters and are never accepted), numbered without the surrogate gap. Each
//!   automaton partitions them into *classes*: sets of ranges (not single code points) that
//!   every state treats alike, so `[a-z]`, `.` or `\p{L}` cost one column of the transition
//!   table whatever their size.
//! - A pattern's language tree becomes a Thompson NFA (counted repetitions `{m,n}` copied
//!   out), then a DFA by the subset construction over the NFA's classes, then the minimal
//!   DFA (Hopcroft), whose classes are merged where every state treats them alike and whose
//!   states and classes are numbered canonically. Equal languages therefore give equal
//!   automata (`==` compares languages), and every operation's result is minimal.
//! - When the subset construction outgrows a limit though the minimal DFA may be small
//!   (a search for `a[ab]{20}` has 22 minimal states, but the subsets remember every `a`
//!   of the last 20 characters), Brzozowski's construction is tried instead: determinize
//!   the reversed NFA, reverse that DFA and determinize again, which builds only the
//!   minimal DFA's states.
//! - Intersection, union and difference are the product construction over the common
//!   refinement of both alphabets; the complement completes the automaton with a sink
//!   state and flips acceptance.
//!
//! # Limits
//!
//! Every construction stops with [`AutomatonError::TooLarge`] rather than grow past
//! [`STATE_LIMIT`] DFA states, [`NFA_STATE_LIMIT`] NFA states or [`CELL_LIMIT`] cells of
//! transition table (states × classes: an automaton over many classes may have fewer
//! states; a literal of a thousand distinct characters is too large), and with
//! [`AutomatonError::TooComplex`] after [`WORK_LIMIT`] elementary steps of one subset
//! construction, so hostile patterns (`^(a|b)*a(a|b){20}$` needs two million states)
//! fail fast: at most three subset constructions run per pattern or list of strings.
//! A product stops at the state limit too. Minimization takes time proportional to the
//! table's cells times the logarithm of its states, which the cell limit bounds.
//! Counted repetitions cost states: `^.{0,5000}$` has 5001, `{m,n}` with `n` past the
//! state limit is too large, and so is [`CharDfa::lengths`] with such bounds.

// The emitters start using this module in a following change; until then only its tests do.
#![cfg_attr(
    not(test),
    expect(dead_code, reason = "the schema emitters do not use the automata yet")
)]

use std::collections::{BTreeMap, HashMap};

use grail_grammar::{BuildError, CharSet, Expr, GrammarBuilder, RuleId};

use crate::json_text;
use crate::pattern::{self, Node, PatternError};

/// Most states a deterministic automaton may have.
pub(crate) const STATE_LIMIT: usize = 20_000;

/// Most states of the nondeterministic automaton built from a pattern or a list of strings
/// (a few per character of the pattern, counted repetitions copied out).
pub(crate) const NFA_STATE_LIMIT: usize = 100_000;

/// Most cells of a transition table (states × character classes).
pub(crate) const CELL_LIMIT: usize = 2_000_000;

/// Most elementary steps of building one automaton from a pattern or strings (NFA
/// construction, alphabet refinement, subset construction).
pub(crate) const WORK_LIMIT: u64 = 20_000_000;

/// No transition: the string is rejected whatever follows.
const NO_STATE: u32 = u32::MAX;

/// The first surrogate code point (U+D800); surrogates are no characters.
const SURROGATE_FIRST: u32 = 0xD800;

/// The last surrogate code point (U+DFFF).
const SURROGATE_LAST: u32 = 0xDFFF;

/// How many surrogate code points there are.
const SURROGATE_COUNT: u32 = SURROGATE_LAST - SURROGATE_FIRST + 1;

/// How many Unicode scalar values there are: the alphabet, numbered `0..ALPHABET_SIZE`
/// without the surrogate gap.
const ALPHABET_SIZE: u32 = 0x11_0000 - SURROGATE_COUNT;

/// Why an automaton could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AutomatonError {
    /// The automaton would need more states than allowed: `states` is how many it had
    /// when the construction stopped, `limit` the most allowed ([`STATE_LIMIT`], or less
    /// when the alphabet has many classes, see [`CELL_LIMIT`]; [`NFA_STATE_LIMIT`] for the
    /// nondeterministic automaton of a pattern).
    #[error("the automaton needs more than {limit} states (it had {states} when stopped)")]
    TooLarge {
        /// States when the construction stopped.
        states: usize,
        /// The most allowed.
        limit: usize,
    },
    /// Building the automaton takes more than [`WORK_LIMIT`] steps.
    #[error("building the automaton takes more than {limit} steps")]
    TooComplex {
        /// The most steps allowed.
        limit: u64,
    },
    /// The pattern has no exact language (syntax error, unsupported feature, too large).
    #[error(transparent)]
    Pattern(#[from] PatternError),
}

// ---------------------------------------------------------------------------------------
// The alphabet: scalar values without the surrogate gap, partitioned into classes.
// ---------------------------------------------------------------------------------------

/// The alphabet index of a code point; `None` for surrogates and beyond U+10FFFF.
fn scalar_index(code_point: u32) -> Option<u32> {
    match code_point {
        0..SURROGATE_FIRST => Some(code_point),
        SURROGATE_FIRST..=SURROGATE_LAST => None,
        _ if code_point <= grail_grammar::charset::MAX_CODE_POINT => {
            Some(code_point - SURROGATE_COUNT)
        }
        _ => None,
    }
}

/// The code point of an alphabet index.
fn code_point_of(index: u32) -> u32 {
    if index < SURROGATE_FIRST {
        index
    } else {
        index + SURROGATE_COUNT
    }
}

/// Sorts inclusive ranges and merges those that overlap or touch.
fn merged_ranges(mut ranges: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    ranges.sort_unstable();
    let mut merged: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
    for (first, last) in ranges {
        match merged.last_mut() {
            Some(previous) if first <= previous.1.saturating_add(1) => {
                previous.1 = previous.1.max(last)
            }
            _ => merged.push((first, last)),
        }
    }
    merged
}

/// The alphabet indexes of a set's characters (surrogates left out), as merged ranges.
fn index_ranges(set: &CharSet) -> Vec<(u32, u32)> {
    let mut ranges = Vec::new();
    for (first, last) in set.members() {
        if first < SURROGATE_FIRST {
            ranges.push((first, last.min(SURROGATE_FIRST - 1)));
        }
        if last > SURROGATE_LAST {
            let low = first.max(SURROGATE_LAST + 1);
            ranges.push((low - SURROGATE_COUNT, last - SURROGATE_COUNT));
        }
    }
    merged_ranges(ranges)
}

/// The code-point ranges of merged alphabet-index ranges.
fn code_point_ranges(index_ranges: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut ranges = Vec::with_capacity(index_ranges.len() + 1);
    for &(first, last) in index_ranges {
        if first < SURROGATE_FIRST && last >= SURROGATE_FIRST {
            ranges.push((first, SURROGATE_FIRST - 1));
            ranges.push((SURROGATE_LAST + 1, code_point_of(last)));
        } else {
            ranges.push((code_point_of(first), code_point_of(last)));
        }
    }
    ranges
}

/// A partition of the alphabet into classes: intervals of alphabet indexes, each with the
/// class it belongs to. A class may hold many intervals.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Alphabet {
    /// The first alphabet index of each interval, ascending from 0.
    starts: Vec<u32>,
    /// The class of each interval.
    classes: Vec<u32>,
    /// How many classes there are (`0..count`, each holding at least one interval).
    count: usize,
}

impl Alphabet {
    /// The whole alphabet as one class.
    fn single() -> Alphabet {
        Alphabet {
            starts: vec![0],
            classes: vec![0],
            count: 1,
        }
    }

    /// The alphabet index one past the end of interval `interval`.
    fn interval_end(&self, interval: usize) -> u32 {
        self.starts
            .get(interval + 1)
            .copied()
            .unwrap_or(ALPHABET_SIZE)
    }

    /// The class of an alphabet index.
    fn class_of(&self, index: u32) -> usize {
        let interval = self
            .starts
            .partition_point(|&start| start <= index)
            .saturating_sub(1);
        self.classes
            .get(interval)
            .map_or(0, |&class| class as usize)
    }

    /// The alphabet-index ranges of each class.
    fn class_ranges(&self) -> Vec<Vec<(u32, u32)>> {
        let mut ranges = vec![Vec::new(); self.count];
        for (interval, (&start, &class)) in self.starts.iter().zip(&self.classes).enumerate() {
            if let Some(class_ranges) = ranges.get_mut(class as usize) {
                class_ranges.push((start, self.interval_end(interval) - 1));
            }
        }
        ranges
    }

    /// The coarsest partition that tells apart the members and non-members of each set
    /// (merged alphabet-index ranges), and the classes each set is made of.
    fn from_sets(
        sets: &[Vec<(u32, u32)>],
        budget: &mut Budget,
    ) -> Result<(Alphabet, Vec<Vec<u32>>), AutomatonError> {
        let mut starts = vec![0u32];
        for set in sets {
            budget.charge(set.len())?;
            for &(first, last) in set {
                starts.push(first);
                if last + 1 < ALPHABET_SIZE {
                    starts.push(last + 1);
                }
            }
        }
        starts.sort_unstable();
        starts.dedup();
        budget.charge(starts.len())?;
        // Refine: the intervals of each set take new classes, one per class they had, so
        // two intervals share a class exactly when no set tells them apart.
        let mut classes = vec![0u32; starts.len()];
        let mut next_class = 1u32;
        let intervals_of = |&(first, last): &(u32, u32)| {
            let begin = starts.partition_point(|&start| start < first);
            let end = starts.partition_point(|&start| start <= last);
            begin..end
        };
        for set in sets {
            let mut renamed: HashMap<u32, u32> = HashMap::new();
            for range in set {
                let intervals = intervals_of(range);
                budget.charge(intervals.len())?;
                for interval in intervals {
                    let old = classes[interval];
                    let new = *renamed.entry(old).or_insert_with(|| {
                        next_class += 1;
                        next_class - 1
                    });
                    classes[interval] = new;
                }
            }
        }
        // Number the classes densely, in order of first appearance.
        let mut dense: HashMap<u32, u32> = HashMap::new();
        for class in &mut classes {
            let next = dense.len() as u32;
            *class = *dense.entry(*class).or_insert(next);
        }
        let mut set_classes = Vec::with_capacity(sets.len());
        for set in sets {
            let mut members = Vec::new();
            for range in set {
                let intervals = intervals_of(range);
                budget.charge(intervals.len())?;
                members.extend(intervals.map(|interval| classes[interval]));
            }
            members.sort_unstable();
            members.dedup();
            set_classes.push(members);
        }
        let alphabet = Alphabet {
            count: dense.len(),
            starts,
            classes,
        };
        Ok((alphabet, set_classes))
    }

    /// The common refinement of two partitions, and for each of its classes the pair of
    /// classes (this one's, the other's) it lies in.
    fn joint(&self, other: &Alphabet) -> (Alphabet, Vec<(u32, u32)>) {
        let mut starts = Vec::new();
        let mut classes = Vec::new();
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        let mut ids: HashMap<(u32, u32), u32> = HashMap::new();
        let (mut left, mut right, mut position) = (0usize, 0usize, 0u32);
        while let (Some(&left_class), Some(&right_class)) =
            (self.classes.get(left), other.classes.get(right))
        {
            let pair = (left_class, right_class);
            let id = *ids.entry(pair).or_insert_with(|| {
                pairs.push(pair);
                (pairs.len() - 1) as u32
            });
            if classes.last() != Some(&id) {
                starts.push(position);
                classes.push(id);
            }
            let (left_end, right_end) = (self.interval_end(left), other.interval_end(right));
            position = left_end.min(right_end);
            if position >= ALPHABET_SIZE {
                break;
            }
            if left_end == position {
                left += 1;
            }
            if right_end == position {
                right += 1;
            }
        }
        let alphabet = Alphabet {
            starts,
            classes,
            count: pairs.len(),
        };
        (alphabet, pairs)
    }
}

/// The most states an automaton over `classes` classes may have.
fn state_limit(classes: usize) -> usize {
    STATE_LIMIT.min(CELL_LIMIT / classes.max(1))
}

/// Steps left for one construction.
struct Budget {
    remaining: u64,
}

impl Budget {
    /// A budget of [`WORK_LIMIT`] steps.
    fn new() -> Budget {
        Budget {
            remaining: WORK_LIMIT,
        }
    }

    /// Spends `steps`, or fails when they are not left.
    fn charge(&mut self, steps: usize) -> Result<(), AutomatonError> {
        let steps = steps as u64;
        if steps > self.remaining {
            self.remaining = 0;
            return Err(AutomatonError::TooComplex { limit: WORK_LIMIT });
        }
        self.remaining -= steps;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Nondeterministic automata (Thompson's construction).
// ---------------------------------------------------------------------------------------

/// A nondeterministic automaton with empty moves, one start and one accepting state.
///
/// Built from a language tree so that no construct adds a move into the state it starts from and every
/// construct ends in a state with no moves of its own (or, for the empty string, in the
/// state it started from): alternatives can then share their start and a construct can
/// follow another from its end.
struct Nfa {
    /// The empty moves of each state.
    empty_moves: Vec<Vec<u32>>,
    /// The character moves of each state: (set, target).
    moves: Vec<Vec<(u32, u32)>>,
    /// The sets of characters moves are on, as merged alphabet-index ranges.
    sets: Vec<Vec<(u32, u32)>>,
    /// Each set's number.
    set_ids: HashMap<Vec<(u32, u32)>, u32>,
    /// The start state.
    start: u32,
    /// The accepting state.
    accept: u32,
}

impl Nfa {
    /// The automaton with only its start state, 0.
    fn new() -> Nfa {
        Nfa {
            empty_moves: vec![Vec::new()],
            moves: vec![Vec::new()],
            sets: Vec::new(),
            set_ids: HashMap::new(),
            start: 0,
            accept: 0,
        }
    }

    /// The automaton of the reversed strings: every move turned around, start and
    /// accepting state swapped.
    fn reversed(&self, budget: &mut Budget) -> Result<Nfa, AutomatonError> {
        let count = self.moves.len();
        let mut empty_moves = vec![Vec::new(); count];
        let mut moves = vec![Vec::new(); count];
        for (from, (from_empty, from_moves)) in self.empty_moves.iter().zip(&self.moves).enumerate()
        {
            budget.charge(1 + from_empty.len() + from_moves.len())?;
            for &to in from_empty {
                empty_moves[to as usize].push(from as u32);
            }
            for &(set, to) in from_moves {
                moves[to as usize].push((set, from as u32));
            }
        }
        Ok(Nfa {
            empty_moves,
            moves,
            sets: self.sets.clone(),
            set_ids: self.set_ids.clone(),
            start: self.accept,
            accept: self.start,
        })
    }

    /// The minimal DFA of the automaton's strings.
    ///
    /// The subset construction can need far more states than the minimal DFA: a search
    /// for `a[ab]{20}` remembers every `a` of the last 20 characters, though only the
    /// first matters. When it reaches a limit, Brzozowski's construction is tried: the
    /// DFA of the reversed strings, reversed and determinized again, which yields the
    /// minimal DFA's states only (and for the reversed search, `[ab]{20}a`, the first DFA
    /// is small too). Each of the (at most three) subset constructions has its own budget.
    fn minimal_dfa(&self) -> Result<CharDfa, AutomatonError> {
        let forward_error = match self.determinize(&mut Budget::new()) {
            Ok(automaton) => return Ok(automaton),
            Err(error) => error,
        };
        let mut budget = Budget::new();
        let Ok(reversed) = self
            .reversed(&mut budget)
            .and_then(|reversed| reversed.determinize(&mut budget))
        else {
            return Err(forward_error);
        };
        reversed.reversed_nfa().determinize(&mut Budget::new())
    }

    /// The automaton of a language tree.
    fn from_node(node: &Node, budget: &mut Budget) -> Result<Nfa, AutomatonError> {
        let mut nfa = Nfa::new();
        nfa.accept = nfa.build(node, 0, budget)?;
        Ok(nfa)
    }

    /// The automaton of exactly these strings (a tree of them, each from the start).
    fn from_strings(strings: &[&str], budget: &mut Budget) -> Result<Nfa, AutomatonError> {
        let mut nfa = Nfa::new();
        nfa.accept = nfa.add_state()?;
        for text in strings {
            let end = nfa.text(text, 0, budget)?;
            nfa.empty_moves[end as usize].push(nfa.accept);
        }
        Ok(nfa)
    }

    /// A new state without moves.
    fn add_state(&mut self) -> Result<u32, AutomatonError> {
        let count = self.moves.len();
        if count >= NFA_STATE_LIMIT {
            return Err(AutomatonError::TooLarge {
                states: count,
                limit: NFA_STATE_LIMIT,
            });
        }
        self.empty_moves.push(Vec::new());
        self.moves.push(Vec::new());
        Ok(count as u32)
    }

    /// A move from `from` to `to` on the characters of `ranges` (merged alphabet-index
    /// ranges, not empty).
    fn add_move(&mut self, from: u32, ranges: Vec<(u32, u32)>, to: u32) {
        let next_id = self.sets.len() as u32;
        let set = match self.set_ids.get(&ranges) {
            Some(&id) => id,
            None => {
                self.sets.push(ranges.clone());
                self.set_ids.insert(ranges, next_id);
                next_id
            }
        };
        self.moves[from as usize].push((set, to));
    }

    /// The characters of `text` one after another from `start`; returns the end state.
    fn text(&mut self, text: &str, start: u32, budget: &mut Budget) -> Result<u32, AutomatonError> {
        let mut current = start;
        for character in text.chars() {
            budget.charge(1)?;
            let next = self.add_state()?;
            if let Some(index) = scalar_index(character as u32) {
                self.add_move(current, vec![(index, index)], next);
            }
            current = next;
        }
        Ok(current)
    }

    /// The strings of `node` from `start`; returns the end state.
    fn build(
        &mut self,
        node: &Node,
        start: u32,
        budget: &mut Budget,
    ) -> Result<u32, AutomatonError> {
        budget.charge(1)?;
        grail_syntax::stack::deep(|| match node {
            Node::Nothing => self.add_state(),
            Node::Empty => Ok(start),
            Node::Text(text) => self.text(text, start, budget),
            Node::Set(set) => {
                let end = self.add_state()?;
                let ranges = index_ranges(set);
                budget.charge(ranges.len())?;
                if !ranges.is_empty() {
                    self.add_move(start, ranges, end);
                }
                Ok(end)
            }
            Node::Seq(items, _) => {
                let mut current = start;
                for item in items {
                    current = self.build(item, current, budget)?;
                }
                Ok(current)
            }
            Node::Alt(items, _) => {
                let end = self.add_state()?;
                for item in items {
                    let item_end = self.build(item, start, budget)?;
                    self.empty_moves[item_end as usize].push(end);
                }
                Ok(end)
            }
            Node::Repeat(item, min, max, _) => {
                let mut current = start;
                for _ in 0..*min {
                    current = self.build(item, current, budget)?;
                }
                let end = self.add_state()?;
                match max {
                    // A loop through a fresh state, so nothing moves back into `current`.
                    None => {
                        let loop_state = self.add_state()?;
                        self.empty_moves[current as usize].push(loop_state);
                        let body_end = self.build(item, loop_state, budget)?;
                        self.empty_moves[body_end as usize].push(loop_state);
                        self.empty_moves[loop_state as usize].push(end);
                    }
                    // Each optional copy may be the last.
                    Some(max) => {
                        for _ in *min..*max {
                            self.empty_moves[current as usize].push(end);
                            current = self.build(item, current, budget)?;
                        }
                        self.empty_moves[current as usize].push(end);
                    }
                }
                Ok(end)
            }
        })
    }

    /// True for the states a subset is told apart by: those with character moves and the
    /// accepting state.
    fn is_important(&self, state: u32) -> bool {
        state == self.accept || !self.moves[state as usize].is_empty()
    }

    /// The important states reachable from `seeds` by empty moves, sorted.
    fn closure(
        &self,
        seeds: &[u32],
        scratch: &mut ClosureScratch,
        budget: &mut Budget,
    ) -> Result<Vec<u32>, AutomatonError> {
        scratch.generation += 1;
        let generation = scratch.generation;
        let mut important = Vec::new();
        scratch.stack.clear();
        for &seed in seeds {
            if scratch.seen[seed as usize] != generation {
                scratch.seen[seed as usize] = generation;
                scratch.stack.push(seed);
            }
        }
        while let Some(state) = scratch.stack.pop() {
            let empty_moves = &self.empty_moves[state as usize];
            budget.charge(1 + empty_moves.len())?;
            if self.is_important(state) {
                important.push(state);
            }
            for &next in empty_moves {
                if scratch.seen[next as usize] != generation {
                    scratch.seen[next as usize] = generation;
                    scratch.stack.push(next);
                }
            }
        }
        important.sort_unstable();
        Ok(important)
    }

    /// The equivalent minimal DFA (subset construction over the NFA's classes).
    fn determinize(&self, budget: &mut Budget) -> Result<CharDfa, AutomatonError> {
        let (alphabet, set_classes) = Alphabet::from_sets(&self.sets, budget)?;
        let classes = alphabet.count;
        let limit = state_limit(classes);
        let mut scratch = ClosureScratch {
            seen: vec![0; self.moves.len()],
            generation: 0,
            stack: Vec::new(),
        };
        let start = self.closure(&[self.start], &mut scratch, budget)?;
        let mut numbering = StateNumbering::new(limit);
        numbering.number(start)?;
        let mut table: Vec<u32> = Vec::new();
        let mut accepting: Vec<bool> = Vec::new();
        let mut targets_by_class: Vec<Vec<u32>> = vec![Vec::new(); classes];
        let mut touched: Vec<usize> = Vec::new();
        let mut row_cache: HashMap<Vec<u32>, u32> = HashMap::new();
        let mut state = 0;
        while let Some(subset) = numbering.keys.get(state).cloned() {
            accepting.push(subset.binary_search(&self.accept).is_ok());
            for &member in &subset {
                for &(set, target) in &self.moves[member as usize] {
                    let set_classes = &set_classes[set as usize];
                    budget.charge(set_classes.len())?;
                    for &class in set_classes {
                        let targets = &mut targets_by_class[class as usize];
                        if targets.is_empty() {
                            touched.push(class as usize);
                        }
                        targets.push(target);
                    }
                }
            }
            let row = table.len();
            table.resize(row + classes, NO_STATE);
            row_cache.clear();
            touched.sort_unstable();
            for class in touched.drain(..) {
                let mut targets = std::mem::take(&mut targets_by_class[class]);
                targets.sort_unstable();
                targets.dedup();
                let next = match row_cache.get(&targets) {
                    Some(&next) => next,
                    None => {
                        let subset = self.closure(&targets, &mut scratch, budget)?;
                        let next = if subset.is_empty() {
                            NO_STATE
                        } else {
                            numbering.number(subset)?
                        };
                        row_cache.insert(targets, next);
                        next
                    }
                };
                table[row + class] = next;
            }
            state += 1;
        }
        Ok(CharDfa::minimal(alphabet, table, accepting))
    }
}

/// Reusable memory of [`Nfa::closure`].
struct ClosureScratch {
    /// The generation each state was last seen in.
    seen: Vec<u32>,
    /// The current generation.
    generation: u32,
    /// States to visit.
    stack: Vec<u32>,
}

/// Numbers the states of a DFA under construction by what they stand for, in order of
/// discovery, up to a limit.
struct StateNumbering<K> {
    /// Each key's number.
    ids: HashMap<K, u32>,
    /// The keys by number.
    keys: Vec<K>,
    /// The most states allowed.
    limit: usize,
}

impl<K: std::hash::Hash + Eq + Clone> StateNumbering<K> {
    /// No states yet.
    fn new(limit: usize) -> StateNumbering<K> {
        StateNumbering {
            ids: HashMap::new(),
            keys: Vec::new(),
            limit,
        }
    }

    /// The number of the state `key` stands for, numbering it when new.
    fn number(&mut self, key: K) -> Result<u32, AutomatonError> {
        if let Some(&id) = self.ids.get(&key) {
            return Ok(id);
        }
        if self.keys.len() >= self.limit {
            return Err(AutomatonError::TooLarge {
                states: self.keys.len(),
                limit: self.limit,
            });
        }
        let id = self.keys.len() as u32;
        self.ids.insert(key.clone(), id);
        self.keys.push(key);
        Ok(id)
    }
}

// ---------------------------------------------------------------------------------------
// Minimization (Hopcroft).
// ---------------------------------------------------------------------------------------

/// A partition of states into blocks, each block a slice of `elements` whose first
/// `marked` elements are marked.
struct Partition {
    /// The states, block by block.
    elements: Vec<u32>,
    /// Where each state is in `elements`.
    position: Vec<u32>,
    /// The block of each state.
    block_of: Vec<u32>,
    /// Where each block begins in `elements`.
    begin: Vec<u32>,
    /// Where each block ends in `elements` (exclusive).
    end: Vec<u32>,
    /// How many of each block's elements are marked.
    marked: Vec<u32>,
}

impl Partition {
    /// The states `0..count` in two blocks: those `in_first` and the others (one block when
    /// either is empty).
    fn new(count: usize, in_first: impl Fn(usize) -> bool) -> Partition {
        let mut elements: Vec<u32> = (0..count as u32)
            .filter(|&state| in_first(state as usize))
            .collect();
        let first_size = elements.len() as u32;
        elements.extend((0..count as u32).filter(|&state| !in_first(state as usize)));
        let mut partition = Partition {
            position: vec![0; count],
            block_of: vec![0; count],
            elements,
            begin: Vec::new(),
            end: Vec::new(),
            marked: Vec::new(),
        };
        for (position, &state) in partition.elements.iter().enumerate() {
            partition.position[state as usize] = position as u32;
        }
        for (begin, end) in [(0, first_size), (first_size, count as u32)] {
            if begin < end {
                let block = partition.begin.len() as u32;
                partition.begin.push(begin);
                partition.end.push(end);
                partition.marked.push(0);
                for position in begin..end {
                    let state = partition.elements[position as usize];
                    partition.block_of[state as usize] = block;
                }
            }
        }
        partition
    }

    /// How many blocks there are.
    fn block_count(&self) -> usize {
        self.begin.len()
    }

    /// The states of a block.
    fn block(&self, block: usize) -> &[u32] {
        &self.elements[self.begin[block] as usize..self.end[block] as usize]
    }

    /// Marks a state (at most once between splits); returns true when it is the first
    /// mark in its block.
    fn mark(&mut self, state: u32) -> bool {
        let block = self.block_of[state as usize] as usize;
        let position = self.position[state as usize];
        let target = self.begin[block] + self.marked[block];
        if position < target {
            return false;
        }
        let other = self.elements[target as usize];
        self.elements.swap(position as usize, target as usize);
        self.position[other as usize] = position;
        self.position[state as usize] = target;
        self.marked[block] += 1;
        self.marked[block] == 1
    }

    /// Splits the marked states of a block off into a new block, unless all or none are
    /// marked; returns the new block. Clears the marks.
    fn split(&mut self, block: usize) -> Option<usize> {
        let marked = std::mem::replace(&mut self.marked[block], 0);
        let begin = self.begin[block];
        if marked == 0 || begin + marked == self.end[block] {
            return None;
        }
        let new_block = self.begin.len();
        self.begin.push(begin);
        self.end.push(begin + marked);
        self.marked.push(0);
        self.begin[block] = begin + marked;
        for position in begin..begin + marked {
            let state = self.elements[position as usize];
            self.block_of[state as usize] = new_block as u32;
        }
        Some(new_block)
    }
}

// ---------------------------------------------------------------------------------------
// The deterministic automaton.
// ---------------------------------------------------------------------------------------

/// A deterministic automaton over code points: states with transitions on classes of
/// code points (sets of ranges, never single code points one by one), accepting states.
///
/// Always minimal and trimmed (every state is reachable and can reach an accepting state;
/// only the empty language's one state cannot), with states and classes numbered
/// canonically: two automata are equal exactly when their languages are. State 0 is the
/// start. Surrogates are never accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CharDfa {
    /// The classes of characters.
    alphabet: Alphabet,
    /// `table[state * classes + class]`: the next state, or [`NO_STATE`].
    table: Vec<u32>,
    /// Whether each state accepts.
    accepting: Vec<bool>,
}

/// How two languages are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Combination {
    /// Strings in both.
    Intersection,
    /// Strings in either.
    Union,
    /// Strings in the first but not the second.
    Difference,
}

impl Combination {
    /// Whether a pair of states accepts, given whether each does.
    fn accepts(self, left: bool, right: bool) -> bool {
        match self {
            Combination::Intersection => left && right,
            Combination::Union => left || right,
            Combination::Difference => left && !right,
        }
    }

    /// True when a pair can never accept, given which of its states are dead.
    fn hopeless(self, left_dead: bool, right_dead: bool) -> bool {
        match self {
            Combination::Intersection => left_dead || right_dead,
            Combination::Union => left_dead && right_dead,
            Combination::Difference => left_dead,
        }
    }
}

impl CharDfa {
    /// The strings of a pattern (search semantics, as [`pattern::pattern_expr`] means it).
    pub fn from_pattern(pattern: &str) -> Result<CharDfa, AutomatonError> {
        let language = pattern::search_language(pattern)?;
        Nfa::from_node(&language, &mut Budget::new())?.minimal_dfa()
    }

    /// Exactly these strings.
    pub fn from_strings(strings: &[&str]) -> Result<CharDfa, AutomatonError> {
        Nfa::from_strings(strings, &mut Budget::new())?.minimal_dfa()
    }

    /// All strings.
    pub fn everything() -> CharDfa {
        CharDfa {
            alphabet: Alphabet::single(),
            table: vec![0],
            accepting: vec![true],
        }
    }

    /// No string.
    pub fn nothing() -> CharDfa {
        CharDfa {
            alphabet: Alphabet::single(),
            table: vec![NO_STATE],
            accepting: vec![false],
        }
    }

    /// The strings of `min` to `max` characters (code points), any characters; `None`
    /// for no maximum. Takes `max + 1` states (`min + 1` without a maximum).
    pub fn lengths(min: u64, max: Option<u64>) -> Result<CharDfa, AutomatonError> {
        if max.is_some_and(|max| max < min) {
            return Ok(CharDfa::nothing());
        }
        let last = max.unwrap_or(min);
        let limit = state_limit(1);
        if last >= limit as u64 {
            return Err(AutomatonError::TooLarge {
                states: usize::try_from(last.saturating_add(1)).unwrap_or(usize::MAX),
                limit,
            });
        }
        let last = last as u32;
        let table: Vec<u32> = (0..=last)
            .map(|state| match max {
                None if state == last => last,
                _ if state == last => NO_STATE,
                _ => state + 1,
            })
            .collect();
        let accepting = (0..=last).map(|state| u64::from(state) >= min).collect();
        Ok(CharDfa::minimal(Alphabet::single(), table, accepting))
    }

    /// The strings not in this language.
    pub fn complement(&self) -> CharDfa {
        let sink = self.accepting.len() as u32;
        let mut table: Vec<u32> = self
            .table
            .iter()
            .map(|&next| if next == NO_STATE { sink } else { next })
            .collect();
        table.extend(std::iter::repeat_n(sink, self.alphabet.count));
        let mut accepting: Vec<bool> = self.accepting.iter().map(|&accepts| !accepts).collect();
        accepting.push(true);
        CharDfa::minimal(self.alphabet.clone(), table, accepting)
    }

    /// The strings in both languages.
    pub fn intersection(&self, other: &CharDfa) -> Result<CharDfa, AutomatonError> {
        self.combine(other, Combination::Intersection)
    }

    /// The strings in either language.
    pub fn union(&self, other: &CharDfa) -> Result<CharDfa, AutomatonError> {
        self.combine(other, Combination::Union)
    }

    /// The strings in this language but not in `other`.
    pub fn difference(&self, other: &CharDfa) -> Result<CharDfa, AutomatonError> {
        self.combine(other, Combination::Difference)
    }

    /// True when no string is in the language.
    pub fn is_empty(&self) -> bool {
        !self.accepting.contains(&true)
    }

    /// True when every string is in the language.
    pub fn is_everything(&self) -> bool {
        *self == CharDfa::everything()
    }

    /// True when `text` is in the language.
    pub fn matches(&self, text: &str) -> bool {
        let mut state = 0u32;
        for character in text.chars() {
            let Some(index) = scalar_index(character as u32) else {
                return false;
            };
            state = self.next(state, self.alphabet.class_of(index) as u32);
            if state == NO_STATE {
                return false;
            }
        }
        self.accepts(state)
    }

    /// How many states the automaton has (at least one).
    pub fn state_count(&self) -> usize {
        self.accepting.len()
    }

    /// How many classes of characters its transitions tell apart.
    pub fn class_count(&self) -> usize {
        self.alphabet.count
    }

    /// The strings as a grammar over their canonical JSON encoding (between the quotes,
    /// see [`json_text::encoded_set`]): one rule per state, right-linear
    /// (`state ::= encoded(class) next | ... | ""`), declared in `builder` with names made
    /// from `name`; returns the expression of the start state. Transitions to one target
    /// make one class; a state that accepts and has no transitions is written as nothing
    /// after the character leading to it. The empty language gives `Expr::Chars` of the
    /// empty set (as [`pattern::pattern_expr`] does), the language of the empty string
    /// `Expr::Empty`.
    pub fn to_expr(&self, builder: &mut GrammarBuilder, name: &str) -> Result<Expr, BuildError> {
        if self.is_empty() {
            return Ok(Expr::Chars(CharSet::new([], false)));
        }
        let class_ranges = self.alphabet.class_ranges();
        let rules: Vec<Option<RuleId>> = (0..self.state_count())
            .map(|state| {
                let is_end =
                    self.accepting[state] && self.row(state).iter().all(|&next| next == NO_STATE);
                match (is_end, state) {
                    (true, _) => None,
                    (false, 0) => Some(builder.declare(name)),
                    (false, _) => Some(builder.declare(&format!("{name}-{state}"))),
                }
            })
            .collect();
        let Some(start) = rules[0] else {
            return Ok(Expr::Empty);
        };
        for (state, rule) in rules.iter().enumerate() {
            if let Some(rule) = *rule {
                builder.define(rule, self.state_expr(state, &rules, &class_ranges))?;
            }
        }
        Ok(Expr::Rule(start))
    }

    /// The body of a state's rule.
    fn state_expr(
        &self,
        state: usize,
        rules: &[Option<RuleId>],
        class_ranges: &[Vec<(u32, u32)>],
    ) -> Expr {
        let mut ranges_by_target: BTreeMap<u32, Vec<(u32, u32)>> = BTreeMap::new();
        for (class, &next) in self.row(state).iter().enumerate() {
            if next != NO_STATE {
                ranges_by_target
                    .entry(next)
                    .or_default()
                    .extend_from_slice(&class_ranges[class]);
            }
        }
        let mut alternatives: Vec<Expr> = ranges_by_target
            .into_iter()
            .map(|(next, ranges)| {
                let ranges = code_point_ranges(&merged_ranges(ranges));
                let single = match ranges[..] {
                    [(first, last)] if first == last => char::from_u32(first),
                    _ => None,
                };
                let characters = match single {
                    Some(character) => json_text::encoded_char(character),
                    None => json_text::encoded_set(&CharSet::new(ranges, false)),
                };
                match rules[next as usize] {
                    Some(rule) => Expr::sequence([characters, Expr::Rule(rule)]),
                    None => characters,
                }
            })
            .collect();
        if self.accepting[state] {
            alternatives.push(Expr::Empty);
        }
        match alternatives.len() {
            1 => alternatives.pop().unwrap_or(Expr::Empty),
            _ => Expr::Choice(alternatives),
        }
    }

    /// The transitions of a state, by class.
    fn row(&self, state: usize) -> &[u32] {
        let classes = self.alphabet.count;
        &self.table[state * classes..(state + 1) * classes]
    }

    /// The state after `state` on a character of `class` ([`NO_STATE`] stays there).
    fn next(&self, state: u32, class: u32) -> u32 {
        if state == NO_STATE {
            return NO_STATE;
        }
        let cell = state as usize * self.alphabet.count + class as usize;
        self.table.get(cell).copied().unwrap_or(NO_STATE)
    }

    /// Whether `state` accepts ([`NO_STATE`] does not).
    fn accepts(&self, state: u32) -> bool {
        self.accepting.get(state as usize).copied().unwrap_or(false)
    }

    /// The automaton of the reversed strings, nondeterministic: every transition turned
    /// around, from a new start with empty moves to the accepting states, accepting at
    /// this automaton's start.
    fn reversed_nfa(&self) -> Nfa {
        let count = self.state_count();
        let new_start = count as u32;
        let mut nfa = Nfa {
            empty_moves: vec![Vec::new(); count + 1],
            moves: vec![Vec::new(); count + 1],
            sets: self.alphabet.class_ranges(),
            set_ids: HashMap::new(),
            start: new_start,
            accept: 0,
        };
        for state in 0..count {
            if self.accepting[state] {
                nfa.empty_moves[count].push(state as u32);
            }
            for (class, &next) in self.row(state).iter().enumerate() {
                if next != NO_STATE {
                    nfa.moves[next as usize].push((class as u32, state as u32));
                }
            }
        }
        nfa
    }

    /// The product automaton of two, minimized.
    fn combine(
        &self,
        other: &CharDfa,
        combination: Combination,
    ) -> Result<CharDfa, AutomatonError> {
        let (alphabet, pairs) = self.alphabet.joint(&other.alphabet);
        let classes = alphabet.count;
        let mut numbering = StateNumbering::new(state_limit(classes));
        numbering.number((0u32, 0u32))?;
        let mut table: Vec<u32> = Vec::new();
        let mut accepting: Vec<bool> = Vec::new();
        let mut state = 0;
        while let Some(&(left, right)) = numbering.keys.get(state) {
            accepting.push(combination.accepts(self.accepts(left), other.accepts(right)));
            for &(left_class, right_class) in &pairs {
                let next = (self.next(left, left_class), other.next(right, right_class));
                let id = if combination.hopeless(next.0 == NO_STATE, next.1 == NO_STATE) {
                    NO_STATE
                } else {
                    numbering.number(next)?
                };
                table.push(id);
            }
            state += 1;
        }
        Ok(CharDfa::minimal(alphabet, table, accepting))
    }

    /// The minimal, canonically numbered automaton of a (possibly partial) DFA whose
    /// start is state 0: Hopcroft's partition refinement with an added dead state, then
    /// the dead block and unreachable blocks dropped, classes every state treats alike
    /// merged, classes numbered by their first character and states breadth first.
    fn minimal(alphabet: Alphabet, table: Vec<u32>, accepting: Vec<bool>) -> CharDfa {
        let classes = alphabet.count;
        let live = accepting.len();
        let dead = live;
        let total = live + 1;
        let target = |state: usize, class: usize| -> usize {
            if state >= live {
                return dead;
            }
            match table.get(state * classes + class) {
                Some(&next) if next != NO_STATE => next as usize,
                _ => dead,
            }
        };
        // Predecessors by (class, state), as offsets into one list.
        let mut offsets = vec![0u32; classes * total + 1];
        for class in 0..classes {
            for state in 0..total {
                offsets[class * total + target(state, class) + 1] += 1;
            }
        }
        for slot in 1..offsets.len() {
            offsets[slot] += offsets[slot - 1];
        }
        let mut fill = offsets.clone();
        let mut predecessors = vec![0u32; classes * total];
        for class in 0..classes {
            for state in 0..total {
                let slot = class * total + target(state, class);
                predecessors[fill[slot] as usize] = state as u32;
                fill[slot] += 1;
            }
        }
        drop(fill);
        let mut partition = Partition::new(total, |state| state < live && accepting[state]);
        let mut pending: Vec<usize> = (0..partition.block_count()).collect();
        let mut is_pending = vec![true; partition.block_count()];
        let mut splitter: Vec<u32> = Vec::new();
        let mut touched: Vec<usize> = Vec::new();
        while let Some(block) = pending.pop() {
            is_pending[block] = false;
            splitter.clear();
            splitter.extend_from_slice(partition.block(block));
            for class in 0..classes {
                for &state in &splitter {
                    let slot = class * total + state as usize;
                    let (from, to) = (offsets[slot] as usize, offsets[slot + 1] as usize);
                    for &predecessor in &predecessors[from..to] {
                        if partition.mark(predecessor) {
                            touched.push(partition.block_of[predecessor as usize] as usize);
                        }
                    }
                }
                for split in touched.drain(..) {
                    let Some(new_block) = partition.split(split) else {
                        continue;
                    };
                    is_pending.push(false);
                    // When the split block is still to be processed, both halves are;
                    // otherwise processing the smaller half is enough (Hopcroft).
                    let to_process = if is_pending[split]
                        || partition.block(new_block).len() <= partition.block(split).len()
                    {
                        new_block
                    } else {
                        split
                    };
                    if !is_pending[to_process] {
                        is_pending[to_process] = true;
                        pending.push(to_process);
                    }
                }
            }
        }
        let block_of = |state: usize| partition.block_of[state] as usize;
        let dead_block = block_of(dead);
        if block_of(0) == dead_block {
            return CharDfa::nothing();
        }
        let representative = |block: usize| partition.block(block)[0] as usize;
        // The live blocks reachable from the start, in any order.
        let mut reached: Vec<usize> = vec![block_of(0)];
        let mut reached_index: HashMap<usize, u32> = HashMap::from([(block_of(0), 0)]);
        let mut index = 0;
        while let Some(&block) = reached.get(index) {
            for class in 0..classes {
                let next = block_of(target(representative(block), class));
                if next != dead_block && !reached_index.contains_key(&next) {
                    reached_index.insert(next, reached.len() as u32);
                    reached.push(next);
                }
            }
            index += 1;
        }
        // Classes whose columns are equal merge; merged classes are numbered by their
        // first character.
        let column = |class: usize| -> Vec<u32> {
            reached
                .iter()
                .map(|&block| {
                    let next = block_of(target(representative(block), class));
                    if next == dead_block {
                        NO_STATE
                    } else {
                        reached_index.get(&next).copied().unwrap_or(NO_STATE)
                    }
                })
                .collect()
        };
        let mut merged_of_class: Vec<Option<u32>> = vec![None; classes];
        let mut merged_by_column: HashMap<Vec<u32>, u32> = HashMap::new();
        let mut class_of_merged: Vec<usize> = Vec::new();
        let mut starts = Vec::new();
        let mut interval_classes: Vec<u32> = Vec::new();
        for (&start, &class) in alphabet.starts.iter().zip(&alphabet.classes) {
            let class = class as usize;
            let merged = match merged_of_class[class] {
                Some(merged) => merged,
                None => {
                    let next = class_of_merged.len() as u32;
                    let merged = *merged_by_column.entry(column(class)).or_insert(next);
                    if merged == next {
                        class_of_merged.push(class);
                    }
                    merged_of_class[class] = Some(merged);
                    merged
                }
            };
            if interval_classes.last() != Some(&merged) {
                starts.push(start);
                interval_classes.push(merged);
            }
        }
        let merged_count = class_of_merged.len();
        // States breadth first from the start, classes in order.
        let mut order: HashMap<usize, u32> = HashMap::from([(block_of(0), 0)]);
        let mut blocks: Vec<usize> = vec![block_of(0)];
        let mut new_table: Vec<u32> = Vec::with_capacity(reached.len() * merged_count);
        let mut index = 0;
        while let Some(&block) = blocks.get(index) {
            for &class in &class_of_merged {
                let next = block_of(target(representative(block), class));
                let id = if next == dead_block {
                    NO_STATE
                } else {
                    let fresh = blocks.len() as u32;
                    let id = *order.entry(next).or_insert(fresh);
                    if id == fresh {
                        blocks.push(next);
                    }
                    id
                };
                new_table.push(id);
            }
            index += 1;
        }
        let new_accepting = blocks
            .iter()
            .map(|&block| accepting[representative(block)])
            .collect();
        CharDfa {
            alphabet: Alphabet {
                starts,
                classes: interval_classes,
                count: merged_count,
            },
            table: new_table,
            accepting: new_accepting,
        }
    }
}

#[cfg(test)]
mod tests;
