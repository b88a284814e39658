//! The matcher against an independent reference on recursive, ambiguous grammars: every
//! string over {a, b} up to a length is a complete match exactly when the reference
//! derives it, and no prefix of a derivable string is refused.
//!
//! The grammars are context-free rules over the literals "a" and "b" and rule references
//! (empty, left-, right- and doubly-recursive alternatives, calls in tail position, the
//! shapes whose calls the compiler turns into jumps and the matcher sometimes makes as
//! calls again). The reference decides derivation by a fixpoint over (rule, span) pairs,
//! sharing no code with the engine.

use grail_engine::{CompiledGrammar, Matcher};
use proptest::prelude::*;

/// One symbol of a reference alternative.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Symbol {
    Byte(u8),
    Rule(usize),
}

/// `rules[r]`: the alternatives of rule `r`, each a sequence of symbols; rule 0 is the
/// start.
type Rules = Vec<Vec<Vec<Symbol>>>;

fn gbnf(rules: &Rules) -> String {
    let mut text = String::from("root ::= r0\n");
    for (index, alternatives) in rules.iter().enumerate() {
        let written: Vec<String> = alternatives
            .iter()
            .map(|sequence| {
                if sequence.is_empty() {
                    return "\"\"".to_string();
                }
                let symbols: Vec<String> = sequence
                    .iter()
                    .map(|symbol| match symbol {
                        Symbol::Byte(byte) => format!("\"{}\"", *byte as char),
                        Symbol::Rule(rule) => format!("r{rule}"),
                    })
                    .collect();
                symbols.join(" ")
            })
            .collect();
        text.push_str(&format!("r{index} ::= {}\n", written.join(" | ")));
    }
    text
}

/// `derives[r][i][j]`: rule `r` derives `text[i..j]`, by iterating to a fixpoint (left
/// recursion and empty rules included).
fn derivations(rules: &Rules, text: &[u8]) -> Vec<Vec<Vec<bool>>> {
    let n = text.len();
    let mut derives = vec![vec![vec![false; n + 1]; n + 1]; rules.len()];
    loop {
        let mut changed = false;
        for (rule, alternatives) in rules.iter().enumerate() {
            for start in 0..=n {
                // reach[j]: the alternative's symbols so far span text[start..j].
                for sequence in alternatives {
                    let mut reach = vec![false; n + 1];
                    reach[start] = true;
                    for symbol in sequence {
                        let mut next = vec![false; n + 1];
                        for middle in start..=n {
                            if !reach[middle] {
                                continue;
                            }
                            match *symbol {
                                Symbol::Byte(byte) => {
                                    if middle < n && text[middle] == byte {
                                        next[middle + 1] = true;
                                    }
                                }
                                Symbol::Rule(callee) => {
                                    for end in middle..=n {
                                        if derives[callee][middle][end] {
                                            next[end] = true;
                                        }
                                    }
                                }
                            }
                        }
                        reach = next;
                    }
                    for end in start..=n {
                        if reach[end] && !derives[rule][start][end] {
                            derives[rule][start][end] = true;
                            changed = true;
                        }
                    }
                }
            }
        }
        if !changed {
            return derives;
        }
    }
}

/// Every string over {a, b} of at most `length` bytes.
fn strings(length: usize) -> Vec<Vec<u8>> {
    let mut all = vec![Vec::new()];
    let mut last = vec![Vec::new()];
    for _ in 0..length {
        let mut longer = Vec::new();
        for text in &last {
            for byte in [b'a', b'b'] {
                let mut grown: Vec<u8> = text.clone();
                grown.push(byte);
                longer.push(grown);
            }
        }
        all.extend(longer.iter().cloned());
        last = longer;
    }
    all
}

/// Checks the matcher of `rules` against the reference on every string up to `length`.
fn check(rules: &Rules, length: usize) -> Result<(), String> {
    let text = gbnf(rules);
    let grammar = CompiledGrammar::from_gbnf(&text).map_err(|error| format!("{text}{error:?}"))?;
    for input in strings(length) {
        let expected = derivations(rules, &input)[0][0][input.len()];
        let mut matcher = Matcher::new(&grammar);
        match matcher.accept_bytes(&input) {
            Ok(()) => {
                if matcher.is_accepting() != expected {
                    return Err(format!(
                        "{text}{:?}: the matcher says {}, the reference {expected}",
                        String::from_utf8_lossy(&input),
                        matcher.is_accepting()
                    ));
                }
            }
            Err(error) => {
                // Refused part-way: no derivable string of this length may have the
                // refused prefix; in particular the input itself is not derivable.
                if expected {
                    return Err(format!(
                        "{text}{:?} is derivable, the matcher refused it: {error:?}",
                        String::from_utf8_lossy(&input)
                    ));
                }
            }
        }
    }
    // Every prefix of a derivable string is viable.
    for input in strings(length) {
        if !derivations(rules, &input)[0][0][input.len()] {
            continue;
        }
        let mut matcher = Matcher::new(&grammar);
        for (offset, &byte) in input.iter().enumerate() {
            if matcher.accept_bytes(&[byte]).is_err() || !matcher.is_viable() {
                return Err(format!(
                    "{text}{:?} is derivable; refused at byte {offset}",
                    String::from_utf8_lossy(&input)
                ));
            }
        }
    }
    Ok(())
}

fn symbol(rules: usize) -> impl Strategy<Value = Symbol> {
    prop_oneof![
        2 => prop::sample::select(vec![b'a', b'b']).prop_map(Symbol::Byte),
        3 => (0..rules).prop_map(Symbol::Rule),
    ]
}

/// 1–3 rules of 1–3 alternatives of 0–3 symbols.
fn rules() -> impl Strategy<Value = Rules> {
    (1usize..4).prop_flat_map(|count| {
        prop::collection::vec(
            prop::collection::vec(prop::collection::vec(symbol(count), 0..4), 1..4),
            count,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 384,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn complete_matches_and_viable_prefixes_equal_the_reference(rules in rules()) {
        // Grammars whose language has no string are refused at compile time; skip them.
        if CompiledGrammar::from_gbnf(&gbnf(&rules)).is_err() {
            return Ok(());
        }
        if let Err(message) = check(&rules, 7) {
            prop_assert!(false, "{}", message);
        }
    }
}

#[test]
fn the_ambiguous_grammars_of_issue_48_equal_the_reference() {
    use Symbol::{Byte, Rule};
    let a = Byte(b'a');
    let b = Byte(b'b');
    let cases: Vec<Rules> = vec![
        // root ::= "a" root "b" | "a" root |
        vec![vec![vec![a, Rule(0), b], vec![a, Rule(0)], vec![]]],
        // The tail call through another rule, and two rules tail-calling one.
        vec![
            vec![vec![a, Rule(0), b], vec![a, Rule(1)], vec![]],
            vec![vec![Rule(0)]],
        ],
        vec![
            vec![vec![a, Rule(1), b], vec![a, Rule(2)], vec![b]],
            vec![vec![Rule(0)], vec![b, Rule(2)]],
            vec![vec![Rule(0)], vec![a, Rule(1)], vec![]],
        ],
        // Right recursion with a call to the same rule at the same step.
        vec![
            vec![vec![a, Rule(1)], vec![a, Rule(1), Rule(1)]],
            vec![vec![a, Rule(1)], vec![b], vec![]],
        ],
    ];
    for rules in &cases {
        check(rules, 9).unwrap_or_else(|message| panic!("{message}"));
    }
}
