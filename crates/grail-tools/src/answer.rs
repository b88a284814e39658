//! Where an answer's free text ends and its calls begin: the one definition the grammar
//! ([`crate::tool_call_grammar`]), the lazy grammar's trigger and the validator
//! ([`crate::validate_output`]) are all derived from.
//!
//! With `tool_choice` `auto`, an answer is a triggered grammar: free text until a call
//! starts, then a block of calls as the wire format writes them, then free text again,
//! and so on for as many calls as the request allows (an answer may also start with the
//! calls, and the text after a block may be empty). The text before the first block
//!
//! - never starts with whitespace, nor with a character a call can start with (`{` and
//!   `[` on the JSON wires, the first character of a marked wire's trigger: `[` on
//!   `mistral`, `<` on `hermes`), nor with `<` when a
//!   reasoning block may come first: an answer starting with one of these is read as
//!   calls (or as the reasoning block), and must be one;
//! - never contains a call's start ([`CallStart`]: a marked wire's trigger, such as
//!   `<tool_call>` or `[TOOL_CALLS]`, or a
//!   `{` followed by the name key and its colon, whitespace allowed between, on the JSON
//!   wires). Where the first one appears, the calls begin (on the JSON wires with several
//!   calls, at the `[` just before it when there is one; a bare call object there is
//!   refused, as the calls are a list).
//!
//! The text after a block of calls may start with any character, and never contains a
//! call's start either. Where one appears, the next block begins.
//!
//! The grammar writes the text as an automaton that can never complete a call's start; the
//! validator and the stream run the same automaton over the answer to find where each
//! block of calls begins. As the whole answer is one grammar, the mask is exact at every
//! token: a trigger split across tokens, or a token that ends past a trigger, is read as
//! the characters it writes (llama.cpp's lazy grammars search the decoded text for the
//! trigger and start the grammar there).

use grail_grammar::{CharSet, Expr, GrammarBuilder};

use crate::grammar::{CallOptions, Think};
use crate::wire::THINK_MARKERS;
use crate::wire::{NamePlace, WireFormat};

/// The characters JSON calls whitespace (and the only ones `\s` stands for here).
pub(crate) const JSON_SPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// One element of a call's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// This character.
    Char(char),
    /// One character of these inclusive ranges.
    One(&'static [(char, char)]),
    /// Zero or more characters of these inclusive ranges.
    Many(&'static [(char, char)]),
}

/// JSON whitespace as ranges.
const JSON_SPACE_RANGES: &[(char, char)] = &[(' ', ' '), ('\t', '\t'), ('\n', '\n'), ('\r', '\r')];

/// The characters of a tool's name.
pub(crate) const NAME_RANGES: &[(char, char)] =
    &[('-', '.'), ('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')];

impl Part {
    /// Whether `c` may be read at this part (and where to go: the part after, or here).
    fn reads(self, c: char) -> bool {
        let within = |ranges: &[(char, char)]| {
            ranges
                .iter()
                .any(|&(first, last)| (first..=last).contains(&c))
        };
        match self {
            Part::Char(expected) => expected == c,
            Part::One(ranges) | Part::Many(ranges) => within(ranges),
        }
    }

    /// The characters the part reads.
    fn chars(self) -> Vec<char> {
        match self {
            Part::Char(c) => vec![c],
            Part::One(ranges) | Part::Many(ranges) => ranges
                .iter()
                .flat_map(|&(first, last)| first..=last)
                .collect(),
        }
    }
}

/// What starts a call inside an answer, as an automaton over characters: the text may
/// never complete it. Its first character appears nowhere else in it, so a match starts
/// at the last occurrence of that character before the match ends.
#[derive(Debug, Clone)]
pub(crate) struct CallStart {
    parts: Vec<Part>,
    /// The automaton: `states[s]` is a sorted list of NFA positions; `next[s]` the state
    /// after each character of `alphabet`, then after any other character (last entry);
    /// `None` where a call's start is complete.
    states: Vec<Vec<usize>>,
    next: Vec<Vec<Option<usize>>>,
    alphabet: Vec<char>,
}

impl CallStart {
    /// The start of a call in `options`' wire format.
    pub(crate) fn of(options: &CallOptions) -> CallStart {
        let space = Part::Many(JSON_SPACE_RANGES);
        let parts: Vec<Part> = match options.wire.marked() {
            // A list of calls `[NAME(`: a `[` alone is text.
            Some(marked) if matches!(marked.name, NamePlace::Keywords(_)) => {
                let mut parts: Vec<Part> = marked.trigger.chars().map(Part::Char).collect();
                parts.extend([Part::One(NAME_RANGES), Part::Many(NAME_RANGES)]);
                parts.push(Part::Char('('));
                parts
            }
            Some(marked) => marked.trigger.chars().map(Part::Char).collect(),
            None => {
                let mut parts = vec![Part::Char('{'), space, Part::Char('"')];
                parts.extend(options.wire.name_key().chars().map(Part::Char));
                parts.extend([Part::Char('"'), space, Part::Char(':')]);
                parts
            }
        };
        CallStart::build(parts)
    }

    /// Exactly `text` (no whitespace read loosely): text that avoids it never writes it.
    pub(crate) fn literal(text: &str) -> CallStart {
        CallStart::build(text.chars().map(Part::Char).collect())
    }

    fn build(parts: Vec<Part>) -> CallStart {
        let mut alphabet: Vec<char> = parts.iter().flat_map(|part| part.chars()).collect();
        alphabet.sort_unstable();
        alphabet.dedup();
        // Positions reachable from `positions` without reading (over `Many`).
        let close = |mut positions: Vec<usize>| -> Vec<usize> {
            let mut index = 0;
            while index < positions.len() {
                let at = positions[index];
                if matches!(parts.get(at), Some(Part::Many(_))) && !positions.contains(&(at + 1)) {
                    positions.push(at + 1);
                }
                index += 1;
            }
            positions.sort_unstable();
            positions
        };
        // A match may begin anywhere: position 0 is always in the set.
        let step = |positions: &[usize], c: Option<char>| -> Option<Vec<usize>> {
            let mut next = vec![0];
            for &at in positions {
                let advanced = match (parts.get(at), c) {
                    (Some(Part::Many(ranges)), Some(c)) if Part::Many(ranges).reads(c) => Some(at),
                    (Some(part), Some(c)) if part.reads(c) => Some(at + 1),
                    _ => None,
                };
                if let Some(advanced) = advanced {
                    if advanced == parts.len() {
                        return None;
                    }
                    next.push(advanced);
                }
            }
            next.sort_unstable();
            next.dedup();
            let next = close(next);
            match next.last() == Some(&parts.len()) {
                true => None,
                false => Some(next),
            }
        };
        let mut states = vec![close(vec![0])];
        let mut next: Vec<Vec<Option<usize>>> = Vec::new();
        let mut index = 0;
        while index < states.len() {
            let mut row = Vec::with_capacity(alphabet.len() + 1);
            for c in alphabet.iter().copied().map(Some).chain([None]) {
                let target = step(&states[index], c).map(|target| {
                    match states.iter().position(|known| *known == target) {
                        Some(known) => known,
                        None => {
                            states.push(target);
                            states.len() - 1
                        }
                    }
                });
                row.push(target);
            }
            next.push(row);
            index += 1;
        }
        CallStart {
            parts,
            states,
            next,
            alphabet,
        }
    }

    /// The column of `next` for `c`.
    fn column(&self, c: char) -> usize {
        self.alphabet
            .binary_search(&c)
            .unwrap_or(self.alphabet.len())
    }

    /// The first character of a call's start.
    fn first(&self) -> char {
        match self.parts[0] {
            Part::Char(c) => c,
            Part::One(_) | Part::Many(_) => {
                unreachable!("a call's start begins with a character")
            }
        }
    }

    /// Where the first call's start in `text` begins, if one is complete in it.
    pub(crate) fn find(&self, text: &str) -> Option<usize> {
        let mut state = 0;
        let mut last_first = None;
        for (index, c) in text.char_indices() {
            if c == self.first() {
                last_first = Some(index);
            }
            match self.next[state][self.column(c)] {
                Some(next) => state = next,
                None => return last_first,
            }
        }
        None
    }

    /// Where a call's start that `text` has begun but not completed begins, if one may
    /// still be under way at its end (what follows decides whether it is text).
    pub(crate) fn pending(&self, text: &str) -> Option<usize> {
        let mut state = 0;
        let mut last_first = None;
        for (index, c) in text.char_indices() {
            if c == self.first() {
                last_first = Some(index);
            }
            state = self.next[state][self.column(c)]?;
        }
        (state != 0).then_some(last_first).flatten()
    }

    /// Text that never completes a call's start, from the automaton's start: one rule per
    /// state (`<name>`, `<name>-1`, …), each looping on the characters that keep it and
    /// ending anywhere.
    pub(crate) fn avoiding(&self, builder: &mut GrammarBuilder, name: &str) -> Expr {
        let rules: Vec<_> = (0..self.states.len())
            .map(|state| match state {
                0 => builder.declare(name),
                _ => builder.declare(&format!("{name}-{state}")),
            })
            .collect();
        for (state, &rule) in rules.iter().enumerate() {
            let row = &self.next[state];
            let other = row[self.alphabet.len()];
            // Characters of the alphabet, grouped by where they lead.
            let mut groups: Vec<(Option<usize>, Vec<char>)> = Vec::new();
            for (&c, &target) in self.alphabet.iter().zip(row) {
                match groups.iter_mut().find(|(known, _)| *known == target) {
                    Some((_, chars)) => chars.push(c),
                    None => groups.push((target, vec![c])),
                }
            }
            let set =
                |chars: &[char]| CharSet::new(chars.iter().map(|&c| (c as u32, c as u32)), false);
            // The loop: characters that stay here (with the others, when they do).
            let staying: Vec<char> = groups
                .iter()
                .filter(|(target, _)| *target == Some(state))
                .flat_map(|(_, chars)| chars.iter().copied())
                .collect();
            let looping = match other == Some(state) {
                // Anything but the characters that leave.
                true => {
                    let leaving: Vec<char> = self
                        .alphabet
                        .iter()
                        .copied()
                        .filter(|c| !staying.contains(c))
                        .collect();
                    Some(Expr::Chars(CharSet::new(
                        leaving.iter().map(|&c| (c as u32, c as u32)),
                        true,
                    )))
                }
                false => (!staying.is_empty()).then(|| Expr::Chars(set(&staying))),
            };
            let mut choices = vec![Expr::Empty];
            for (target, chars) in &groups {
                match target {
                    Some(target) if *target != state => choices.push(Expr::sequence([
                        Expr::Chars(set(chars)),
                        Expr::Rule(rules[*target]),
                    ])),
                    _ => {}
                }
            }
            if let Some(target) = other
                && target != state
            {
                choices.push(Expr::sequence([
                    Expr::Chars(CharSet::new(
                        self.alphabet.iter().map(|&c| (c as u32, c as u32)),
                        true,
                    )),
                    Expr::Rule(rules[target]),
                ]));
            }
            let body = match looping {
                Some(looping) => Expr::sequence([looping.zero_or_more(), Expr::choice(choices)]),
                None => Expr::choice(choices),
            };
            builder.define(rule, body).expect("declared above");
        }
        Expr::Rule(rules[0])
    }
}

/// The characters free text may not start with: whitespace, `extra`, and `<` when a
/// reasoning block may come first (text starting with `<` could be an unclosed
/// `<think>`).
pub(crate) fn not_first(think: Think, extra: &[char]) -> Vec<char> {
    let mut chars = JSON_SPACE.to_vec();
    chars.extend_from_slice(extra);
    if think == Think::Optional {
        debug_assert!(THINK_MARKERS.open.starts_with('<'));
        chars.push('<');
    }
    chars.sort_unstable();
    chars.dedup();
    chars
}

/// The characters the calls (or a call) may start with in `options`' wire format: an
/// answer under `auto` that starts with one is read as calls.
pub(crate) fn call_first_chars(wire: WireFormat) -> &'static [char] {
    match wire.marked().map(|marked| marked.trigger.chars().next()) {
        None => &['{', '['],
        Some(Some('[')) => &['['],
        Some(Some('<')) => &['<'],
        Some(other) => unreachable!("no wire's calls start with {other:?}"),
    }
}

/// Where the calls begin in an `auto` answer (see the module doc): at 0 when it starts
/// with a character calls start with, at the first call's start otherwise (on the JSON
/// wires with several calls, at the `[` just before it when there is one), `None` when
/// the answer is all text.
pub(crate) fn calls_begin(options: &CallOptions, answer: &str) -> Option<usize> {
    let first = answer.chars().next()?;
    if call_first_chars(options.wire).contains(&first) {
        return Some(0);
    }
    next_calls(options, &CallStart::of(options), answer)
}

/// Where the next calls begin in `text`, the answer's text after a block of calls (which
/// may start with any character): at the first call's start (on the JSON wires with
/// several calls, at the `[` just before it when there is one); `None` when the rest is
/// all text.
pub(crate) fn next_calls(options: &CallOptions, start: &CallStart, text: &str) -> Option<usize> {
    let found = start.find(text)?;
    let json_list = options.parallel() && options.wire.marked().is_none();
    if json_list {
        let before = text[..found].trim_end_matches(JSON_SPACE);
        if before.ends_with('[') {
            return Some(before.len() - 1);
        }
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::CallOptions;

    fn options(wire: WireFormat, parallel: bool) -> CallOptions {
        CallOptions {
            wire,
            max_calls: if parallel { None } else { Some(1) },
            ..CallOptions::default()
        }
    }

    #[test]
    fn a_call_start_is_found_where_it_begins() {
        let start = CallStart::of(&options(WireFormat::OpenAi, false));
        assert_eq!(start.find(r#"Sure. {"name": "x"}"#), Some(6));
        assert_eq!(start.find("Sure. {\n  \"name\"\t:"), Some(6));
        assert_eq!(start.find(r#"a {{"name":"#), Some(3));
        assert_eq!(start.find(r#"{"names": 1} {"name" 2}"#), None);
        assert_eq!(start.find(r#"{"name""#), None);
        let hermes = CallStart::of(&options(WireFormat::Hermes, false));
        assert_eq!(hermes.find("x <tool_cal <tool_call>"), Some(12));
        assert_eq!(hermes.find("x <tool_call"), None);
    }

    /// The grammar's text rule matches exactly the texts in which the validator finds no
    /// call start: both come from one automaton.
    #[test]
    fn the_text_rule_and_the_search_agree() {
        use grail_engine::{CompiledGrammar, Matcher};
        use grail_grammar::GrammarBuilder;
        use rand::rngs::SmallRng;
        use rand::{Rng, SeedableRng};

        let mut alphabet: Vec<char> = "{\"name:tol_c>[TOLCAS]<\n x(f_1".chars().collect();
        // Every marked wire's trigger characters, so damaged triggers are met.
        for wire in WireFormat::ALL {
            alphabet.extend(
                wire.marked()
                    .into_iter()
                    .flat_map(|marked| marked.trigger.chars()),
            );
        }
        alphabet.sort_unstable();
        alphabet.dedup();
        let mut rng = SmallRng::seed_from_u64(3);
        for wire in WireFormat::ALL {
            let start = CallStart::of(&options(wire, false));
            let mut builder = GrammarBuilder::new();
            let text = start.avoiding(&mut builder, "text");
            let root = builder.root();
            builder.define(root, text).unwrap();
            let grammar = builder.build().unwrap();
            let compiled = CompiledGrammar::compile(&grammar, &Default::default()).unwrap();
            let mut found = 0;
            for _ in 0..3000 {
                let length = rng.random_range(0..16);
                let mut text: String = (0..length)
                    .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                    .collect();
                // Often plant a call's start, perhaps damaged.
                if rng.random_bool(0.5) {
                    let planted = match wire.marked() {
                        Some(marked) if matches!(marked.name, NamePlace::Keywords(_)) => {
                            format!("{}f_1(", marked.trigger)
                        }
                        Some(marked) => marked.trigger.to_string(),
                        None => format!("{{ \"{}\"\n:", wire.name_key()),
                    };
                    let mut planted: Vec<char> = planted.chars().collect();
                    if rng.random_bool(0.3) {
                        planted.remove(rng.random_range(0..planted.len()));
                    }
                    let mut chars: Vec<char> = text.chars().collect();
                    let at = rng.random_range(0..=chars.len());
                    chars.splice(at..at, planted);
                    text = chars.into_iter().collect();
                }
                let mut matcher = Matcher::new(&compiled);
                let matched = matcher.accept_str(&text).is_ok() && matcher.is_accepting();
                let start_found = start.find(&text).is_some();
                found += usize::from(start_found);
                assert_eq!(matched, !start_found, "{wire:?}: {text:?}");
            }
            assert!(found > 500, "{wire:?}: {found} call starts found");
        }
    }

    #[test]
    fn calls_begin_at_the_list_before_a_call_with_several_calls() {
        let several = options(WireFormat::OpenAi, true);
        assert_eq!(calls_begin(&several, r#"See [ {"name": 1}"#), Some(4));
        assert_eq!(calls_begin(&several, r#"See {"name": 1}"#), Some(4));
        assert_eq!(calls_begin(&several, r#"[1]"#), Some(0));
        assert_eq!(calls_begin(&several, "plain"), None);
        let mistral = options(WireFormat::Mistral, false);
        assert_eq!(calls_begin(&mistral, "[1, 2]"), Some(0));
        assert_eq!(calls_begin(&mistral, "so [TOOL_CALLS][]"), Some(3));
    }
}
