//! `multipleOf` as automata: remainders of the value modulo the step, multiplied with
//! the range's automaton and minimized, written back as one rule per state.

use super::*;

// ---------------------------------------------------------------------------------------
// multipleOf automata
// ---------------------------------------------------------------------------------------

/// The characters of number texts without exponent, as automaton symbols.
pub(super) const ALPHABET: [char; 12] =
    ['-', '.', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9'];

/// A set of [`ALPHABET`] symbols, one bit each.
pub(super) type Symbols = u16;

pub(super) fn symbols_of(set: &CharSet) -> Symbols {
    ALPHABET
        .iter()
        .enumerate()
        .filter(|&(_, &character)| set.contains(character as u32))
        .fold(0, |symbols, (index, _)| symbols | (1 << index))
}

/// A nondeterministic automaton built from a rule-free expression (Thompson's
/// construction).
#[derive(Default)]
pub(super) struct Nfa {
    pub(super) edges: Vec<Vec<(Symbols, usize)>>,
    pub(super) epsilons: Vec<Vec<usize>>,
}

impl Nfa {
    const MAX_STATES: usize = 200_000;

    pub(super) fn state(&mut self) -> Result<usize, NumericError> {
        if self.edges.len() >= Nfa::MAX_STATES {
            return Err(NumericError::TooLarge(format!(
                "the range automaton exceeds {} states",
                Nfa::MAX_STATES
            )));
        }
        self.edges.push(Vec::new());
        self.epsilons.push(Vec::new());
        Ok(self.edges.len() - 1)
    }

    /// Adds `expr` starting at `from`; returns its end state.
    pub(super) fn add(&mut self, expr: &Expr, from: usize) -> Result<usize, NumericError> {
        grail_syntax::stack::deep(|| self.add_here(expr, from))
    }

    pub(super) fn add_here(&mut self, expr: &Expr, from: usize) -> Result<usize, NumericError> {
        match expr {
            Expr::Empty => Ok(from),
            Expr::Literal(text) => {
                let mut current = from;
                for character in text.chars() {
                    let next = self.state()?;
                    let symbols = symbols_of(&CharSet::single(character as u32));
                    if symbols != 0 {
                        self.edges[current].push((symbols, next));
                    }
                    current = next;
                }
                Ok(current)
            }
            Expr::Chars(set) => {
                let next = self.state()?;
                let symbols = symbols_of(set);
                if symbols != 0 {
                    self.edges[from].push((symbols, next));
                }
                Ok(next)
            }
            Expr::Any => {
                let next = self.state()?;
                self.edges[from].push(((1 << ALPHABET.len()) - 1, next));
                Ok(next)
            }
            Expr::Sequence(items) => {
                let mut current = from;
                for item in items {
                    current = self.add(item, current)?;
                }
                Ok(current)
            }
            Expr::Choice(items) => {
                let end = self.state()?;
                for item in items {
                    let start = self.state()?;
                    self.epsilons[from].push(start);
                    let item_end = self.add(item, start)?;
                    self.epsilons[item_end].push(end);
                }
                Ok(end)
            }
            Expr::Repeat(item, min, max) => {
                let mut current = from;
                for _ in 0..*min {
                    let start = self.state()?;
                    self.epsilons[current].push(start);
                    current = self.add(item, start)?;
                }
                match max {
                    None => {
                        let hub = self.state()?;
                        self.epsilons[current].push(hub);
                        let start = self.state()?;
                        self.epsilons[hub].push(start);
                        let item_end = self.add(item, start)?;
                        self.epsilons[item_end].push(hub);
                        Ok(hub)
                    }
                    Some(max) => {
                        let end = self.state()?;
                        self.epsilons[current].push(end);
                        for _ in *min..*max {
                            let start = self.state()?;
                            self.epsilons[current].push(start);
                            current = self.add(item, start)?;
                            self.epsilons[current].push(end);
                        }
                        Ok(end)
                    }
                }
            }
            Expr::Rule(_) | Expr::Token(_) => Err(NumericError::Unsupported(
                "internal: a range expression refers to a rule".to_string(),
            )),
        }
    }

    /// The states reachable from `states` by empty moves, sorted.
    pub(super) fn closure(&self, states: &mut Vec<usize>) {
        let mut index = 0;
        while index < states.len() {
            let state = states[index];
            for &next in &self.epsilons[state] {
                if !states.contains(&next) {
                    states.push(next);
                }
            }
            index += 1;
        }
        states.sort_unstable();
    }
}

/// A deterministic automaton over [`ALPHABET`]; state 0 is the start.
#[derive(Debug, Clone)]
pub(super) struct Automaton {
    pub(super) transitions: Vec<[Option<usize>; ALPHABET.len()]>,
    pub(super) accepting: Vec<bool>,
}

impl Residue {
    /// The state after reading `symbol`. A state is (remainder, phase): phase 0 in the
    /// integer part, `1 + k` after `k` fraction digits (counted up to the places).
    pub(super) fn step(&self, (remainder, phase): (u64, u64), symbol: usize) -> Option<(u64, u64)> {
        match ALPHABET[symbol] {
            '-' => Some((remainder, phase)),
            '.' => (phase == 0).then_some((remainder, 1)),
            digit => {
                let digit = u64::from(digit as u8 - b'0');
                if phase == 0 {
                    Some(((remainder * 10 + digit) % self.modulus, 0))
                } else if phase - 1 < self.fraction_places {
                    Some(((remainder * 10 + digit) % self.modulus, phase + 1))
                } else {
                    (digit == 0).then_some((remainder, phase))
                }
            }
        }
    }

    /// True when a text ending in this state is a multiple: the digits read, padded
    /// with zeros to the fraction places, are a multiple of the modulus.
    pub(super) fn accepts(&self, (remainder, phase): (u64, u64)) -> bool {
        let read = phase.saturating_sub(1);
        let mut scaled = remainder;
        let mut padding = self.fraction_places.saturating_sub(read);
        while padding > 0 && scaled != 0 {
            scaled = scaled * 10 % self.modulus;
            padding -= 1;
        }
        scaled == 0
    }
}

impl Automaton {
    /// The range language intersected with the remainder automaton, minimized; `None`
    /// when empty.
    pub(super) fn product(
        range: &Expr,
        residue: Residue,
    ) -> Result<Option<Automaton>, NumericError> {
        let residue_states = u128::from(residue.modulus)
            .saturating_mul(u128::from(residue.fraction_places.saturating_add(2)));
        if residue_states > MAX_AUTOMATON_STATES as u128 {
            return Err(NumericError::TooLarge(format!(
                "a remainder automaton of {residue_states} states (limit \
                 {MAX_AUTOMATON_STATES})"
            )));
        }
        let mut nfa = Nfa::default();
        let start = nfa.state()?;
        let end = nfa.add(range, start)?;
        let mut initial = vec![start];
        nfa.closure(&mut initial);
        type Key = (Vec<usize>, (u64, u64));
        let mut index: HashMap<Key, usize> = HashMap::new();
        let mut keys: Vec<Key> = vec![(initial, (0, 0))];
        index.insert(keys[0].clone(), 0);
        let mut automaton = Automaton {
            transitions: Vec::new(),
            accepting: Vec::new(),
        };
        let mut current = 0;
        while current < keys.len() {
            let (set, residue_state) = keys[current].clone();
            let mut row = [None; ALPHABET.len()];
            for (symbol, target) in row.iter_mut().enumerate() {
                let Some(next_residue) = residue.step(residue_state, symbol) else {
                    continue;
                };
                let mut next_set: Vec<usize> = Vec::new();
                for &state in &set {
                    for &(symbols, next) in &nfa.edges[state] {
                        if symbols & (1 << symbol) != 0 && !next_set.contains(&next) {
                            next_set.push(next);
                        }
                    }
                }
                if next_set.is_empty() {
                    continue;
                }
                nfa.closure(&mut next_set);
                let key = (next_set, next_residue);
                let id = match index.get(&key) {
                    Some(&id) => id,
                    None => {
                        if keys.len() >= MAX_AUTOMATON_STATES {
                            return Err(NumericError::TooLarge(format!(
                                "the range × multipleOf automaton exceeds \
                                 {MAX_AUTOMATON_STATES} states"
                            )));
                        }
                        index.insert(key.clone(), keys.len());
                        keys.push(key);
                        keys.len() - 1
                    }
                };
                *target = Some(id);
            }
            automaton.transitions.push(row);
            automaton
                .accepting
                .push(set.binary_search(&end).is_ok() && residue.accepts(residue_state));
            current += 1;
        }
        let Some(minimal) = automaton.trimmed().map(|trimmed| trimmed.minimized()) else {
            return Ok(None);
        };
        let alternatives: usize = minimal
            .transitions
            .iter()
            .map(|row| {
                let mut targets: Vec<usize> = row.iter().flatten().copied().collect();
                targets.sort_unstable();
                targets.dedup();
                targets.len()
            })
            .sum();
        if alternatives > MAX_AUTOMATON_ALTERNATIVES {
            return Err(NumericError::TooLarge(format!(
                "the range × multipleOf automaton needs {alternatives} alternatives in {} \
                 rules (limit {MAX_AUTOMATON_ALTERNATIVES})",
                minimal.accepting.len()
            )));
        }
        Ok(Some(minimal))
    }

    /// Without the moves into states from which nothing is accepted; `None` when the
    /// start is such a state.
    pub(super) fn trimmed(mut self) -> Option<Automaton> {
        let count = self.accepting.len();
        let mut predecessors: Vec<Vec<usize>> = vec![Vec::new(); count];
        for (state, row) in self.transitions.iter().enumerate() {
            for &target in row.iter().flatten() {
                predecessors[target].push(state);
            }
        }
        let mut live = self.accepting.clone();
        let mut queue: Vec<usize> = (0..count).filter(|&state| live[state]).collect();
        while let Some(state) = queue.pop() {
            for &previous in &predecessors[state] {
                if !live[previous] {
                    live[previous] = true;
                    queue.push(previous);
                }
            }
        }
        if !live.first().copied().unwrap_or(false) {
            return None;
        }
        for row in &mut self.transitions {
            for target in row.iter_mut() {
                if target.is_some_and(|target| !live[target]) {
                    *target = None;
                }
            }
        }
        Some(self)
    }

    /// The minimal equivalent automaton (Moore's partition refinement), reachable states
    /// only, numbered breadth first from the start.
    pub(super) fn minimized(&self) -> Automaton {
        let count = self.accepting.len();
        let mut class: Vec<usize> = self
            .accepting
            .iter()
            .map(|&accepting| usize::from(accepting))
            .collect();
        let mut class_count = 0;
        loop {
            type Signature = (usize, [Option<usize>; ALPHABET.len()]);
            let mut signatures: HashMap<Signature, usize> = HashMap::new();
            let mut next_class = vec![0; count];
            for (state, slot) in next_class.iter_mut().enumerate() {
                let row = self.transitions[state].map(|target| target.map(|target| class[target]));
                let fresh = signatures.len();
                *slot = *signatures.entry((class[state], row)).or_insert(fresh);
            }
            let new_count = signatures.len();
            class = next_class;
            if new_count == class_count {
                break;
            }
            class_count = new_count;
        }
        let mut order: Vec<Option<usize>> = vec![None; class_count.max(1)];
        let mut representatives: Vec<usize> = vec![0];
        order[class[0]] = Some(0);
        let mut next = 0;
        while next < representatives.len() {
            let state = representatives[next];
            for &target in self.transitions[state].iter().flatten() {
                if order[class[target]].is_none() {
                    order[class[target]] = Some(representatives.len());
                    representatives.push(target);
                }
            }
            next += 1;
        }
        Automaton {
            transitions: representatives
                .iter()
                .map(|&state| {
                    self.transitions[state]
                        .map(|target| target.and_then(|target| order[class[target]]))
                })
                .collect(),
            accepting: representatives
                .iter()
                .map(|&state| self.accepting[state])
                .collect(),
        }
    }

    /// The automaton as rules: one per state entered from more than one place, the
    /// others written inline where they are entered.
    pub(super) fn emit(&self, builder: &mut GrammarBuilder) -> Result<Expr, NumericError> {
        let count = self.accepting.len();
        let mut references = vec![0usize; count];
        for row in &self.transitions {
            let mut targets: Vec<usize> = row.iter().flatten().copied().collect();
            targets.sort_unstable();
            targets.dedup();
            for target in targets {
                references[target] += 1;
            }
        }
        let mut rules: Vec<Option<RuleId>> = vec![None; count];
        for (state, rule) in rules.iter_mut().enumerate() {
            let sink = self.transitions[state].iter().all(Option::is_none);
            let entered_once = state != 0 && references[state] == 1;
            let unreferenced_start = state == 0 && references[0] == 0;
            if !(sink || entered_once || unreferenced_start) {
                *rule = Some(builder.declare("multiple-of"));
            }
        }
        for (state, rule) in rules.iter().enumerate() {
            if let Some(rule) = rule {
                builder.define(*rule, self.state_expr(state, &rules))?;
            }
        }
        Ok(match rules[0] {
            Some(rule) => Expr::Rule(rule),
            None => self.state_expr(0, &rules),
        })
    }

    /// What a text may continue with from `state`.
    pub(super) fn state_expr(&self, state: usize, rules: &[Option<RuleId>]) -> Expr {
        grail_syntax::stack::deep(|| {
            let mut targets: Vec<(usize, Symbols)> = Vec::new();
            for (symbol, target) in self.transitions[state].iter().enumerate() {
                if let Some(target) = *target {
                    match targets.iter_mut().find(|(existing, _)| *existing == target) {
                        Some((_, symbols)) => *symbols |= 1 << symbol,
                        None => targets.push((target, 1 << symbol)),
                    }
                }
            }
            let mut parts = Vec::new();
            if self.accepting[state] {
                parts.push(Expr::Empty);
            }
            for (target, symbols) in targets {
                let after = match rules[target] {
                    Some(rule) => Expr::Rule(rule),
                    None => self.state_expr(target, rules),
                };
                parts.push(seq([symbol_class(symbols), after]));
            }
            choice(parts).unwrap_or(Expr::Empty)
        })
    }
}

/// The characters of a symbol set as a class (a literal for one character).
pub(super) fn symbol_class(symbols: Symbols) -> Expr {
    let characters: Vec<char> = ALPHABET
        .iter()
        .enumerate()
        .filter(|&(index, _)| symbols & (1 << index) != 0)
        .map(|(_, &character)| character)
        .collect();
    match characters.as_slice() {
        [single] => Expr::literal(single.to_string()),
        _ => Expr::Chars(CharSet::new(
            characters
                .iter()
                .map(|&character| (character as u32, character as u32)),
            false,
        )),
    }
}
