//! Nondeterministic automata from patterns (Thompson's construction), and the subset
//! construction's state numbering.

use super::*;

// ---------------------------------------------------------------------------------------
// Nondeterministic automata (Thompson's construction).
// ---------------------------------------------------------------------------------------

/// A nondeterministic automaton with empty moves, one start and one accepting state.
///
/// Built from a language tree so that no construct adds a move into the state it starts from and every
/// construct ends in a state with no moves of its own (or, for the empty string, in the
/// state it started from): alternatives can then share their start and a construct can
/// follow another from its end.
pub(super) struct Nfa {
    /// The empty moves of each state.
    pub(super) empty_moves: Vec<Vec<u32>>,
    /// The character moves of each state: (set, target).
    pub(super) moves: Vec<Vec<(u32, u32)>>,
    /// The sets of characters moves are on, as merged alphabet-index ranges.
    pub(super) sets: Vec<Vec<(u32, u32)>>,
    /// Each set's number.
    pub(super) set_ids: HashMap<Vec<(u32, u32)>, u32>,
    /// The start state.
    pub(super) start: u32,
    /// The accepting state.
    pub(super) accept: u32,
}

impl Nfa {
    /// The automaton with only its start state, 0.
    pub(super) fn new() -> Nfa {
        Nfa {
            empty_moves: vec![Vec::new()],
            moves: vec![Vec::new()],
            sets: Vec::new(),
            set_ids: HashMap::default(),
            start: 0,
            accept: 0,
        }
    }

    /// The automaton of the reversed strings: every move turned around, start and
    /// accepting state swapped.
    pub(super) fn reversed(&self, budget: &mut Budget) -> Result<Nfa, AutomatonError> {
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
    pub(super) fn minimal_dfa(&self) -> Result<CharDfa, AutomatonError> {
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
    pub(super) fn from_node(node: &Node, budget: &mut Budget) -> Result<Nfa, AutomatonError> {
        let mut nfa = Nfa::new();
        nfa.accept = nfa.build(node, 0, budget)?;
        Ok(nfa)
    }

    /// The automaton of exactly these strings (a tree of them, each from the start).
    pub(super) fn from_strings(
        strings: &[&str],
        budget: &mut Budget,
    ) -> Result<Nfa, AutomatonError> {
        let mut nfa = Nfa::new();
        nfa.accept = nfa.add_state()?;
        for text in strings {
            let end = nfa.text(text, 0, budget)?;
            nfa.empty_moves[end as usize].push(nfa.accept);
        }
        Ok(nfa)
    }

    /// A new state without moves.
    pub(super) fn add_state(&mut self) -> Result<u32, AutomatonError> {
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
    pub(super) fn add_move(&mut self, from: u32, ranges: Vec<(u32, u32)>, to: u32) {
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
    pub(super) fn text(
        &mut self,
        text: &str,
        start: u32,
        budget: &mut Budget,
    ) -> Result<u32, AutomatonError> {
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
    pub(super) fn build(
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
    pub(super) fn is_important(&self, state: u32) -> bool {
        state == self.accept || !self.moves[state as usize].is_empty()
    }

    /// The important states reachable from `seeds` by empty moves, sorted.
    pub(super) fn closure(
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
    pub(super) fn determinize(&self, budget: &mut Budget) -> Result<CharDfa, AutomatonError> {
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
        let mut row_cache: HashMap<Vec<u32>, u32> = HashMap::default();
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
pub(super) struct ClosureScratch {
    /// The generation each state was last seen in.
    pub(super) seen: Vec<u32>,
    /// The current generation.
    pub(super) generation: u32,
    /// States to visit.
    pub(super) stack: Vec<u32>,
}

/// Numbers the states of a DFA under construction by what they stand for, in order of
/// discovery, up to a limit.
pub(super) struct StateNumbering<K> {
    /// Each key's number.
    pub(super) ids: HashMap<K, u32>,
    /// The keys by number.
    pub(super) keys: Vec<K>,
    /// The most states allowed.
    pub(super) limit: usize,
}

impl<K: std::hash::Hash + Eq + Clone> StateNumbering<K> {
    /// No states yet.
    pub(super) fn new(limit: usize) -> StateNumbering<K> {
        StateNumbering {
            ids: HashMap::default(),
            keys: Vec::new(),
            limit,
        }
    }

    /// The number of the state `key` stands for, numbering it when new.
    pub(super) fn number(&mut self, key: K) -> Result<u32, AutomatonError> {
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
