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

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use grail_grammar::{BuildError, CharSet, Expr, GrammarBuilder, RuleId, merge_ranges};

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

mod alphabet;
mod minimize;
mod nfa;

use alphabet::*;
use minimize::*;
use nfa::*;

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
    #[cfg_attr(not(test), expect(dead_code, reason = "only the tests ask"))]
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
    #[cfg_attr(not(test), expect(dead_code, reason = "only the tests ask"))]
    pub fn class_count(&self) -> usize {
        self.alphabet.count
    }

    /// The strings as a grammar over their canonical JSON encoding (between the quotes,
    /// see [`json_text::encoded_set`]), each followed by `end` (the closing quote, or
    /// `Expr::Empty`): one rule per state, right-linear
    /// (`state ::= encoded(class) next | ... | end`), declared in `builder` with names made
    /// from `name`; returns the expression of the start state. Transitions to one target
    /// make one class; a state that accepts and has no transitions is written as `end`
    /// after the character leading to it. The empty language gives `Expr::Chars` of the
    /// empty set (as [`pattern::pattern_expr`] does), the language of the empty string
    /// `end`. Writing `end` inside the rules keeps a looping state from returning to its
    /// caller after every character (the mask engine serves such loops far faster).
    pub fn to_expr(
        &self,
        builder: &mut GrammarBuilder,
        name: &str,
        end: &Expr,
    ) -> Result<Expr, BuildError> {
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
                    (false, _) => Some(builder.declare_owned(format!("{name}-{state}"))),
                }
            })
            .collect();
        let Some(start) = rules[0] else {
            return Ok(end.clone());
        };
        for (state, rule) in rules.iter().enumerate() {
            if let Some(rule) = *rule {
                builder.define(rule, self.state_expr(state, &rules, &class_ranges, end))?;
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
        end: &Expr,
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
        let encoded = |ranges: Vec<(u32, u32)>| {
            let ranges = code_point_ranges(&merge_ranges(ranges));
            let single = match ranges[..] {
                [(first, last)] if first == last => char::from_u32(first),
                _ => None,
            };
            match single {
                Some(character) => json_text::encoded_char(character),
                None => json_text::encoded_set(&CharSet::new(ranges, false)),
            }
        };
        // The characters that stay in this state are a loop inside its rule (`c* (...)`,
        // the same language as `c state | ...`): a loop the mask engine serves with a
        // precomputed slice of the vocabulary, where a call per character could not be.
        let staying = ranges_by_target.remove(&(state as u32)).map(encoded);
        let mut alternatives: Vec<Expr> = ranges_by_target
            .into_iter()
            .map(|(next, ranges)| {
                let characters = encoded(ranges);
                match rules[next as usize] {
                    Some(rule) => Expr::sequence([characters, Expr::Rule(rule)]),
                    None if *end == Expr::Empty => characters,
                    None => Expr::sequence([characters, end.clone()]),
                }
            })
            .collect();
        if self.accepting[state] {
            alternatives.push(end.clone());
        }
        let leaving = match alternatives.len() {
            1 => alternatives.pop().unwrap_or(Expr::Empty),
            _ => Expr::Choice(alternatives),
        };
        match staying {
            Some(staying) => Expr::sequence([staying.zero_or_more(), leaving]),
            None => leaving,
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
            set_ids: HashMap::default(),
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
        let mut reached_index: HashMap<usize, u32> = HashMap::from_iter([(block_of(0), 0)]);
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
        let mut merged_by_column: HashMap<Vec<u32>, u32> = HashMap::default();
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
        let mut order: HashMap<usize, u32> = HashMap::from_iter([(block_of(0), 0)]);
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
