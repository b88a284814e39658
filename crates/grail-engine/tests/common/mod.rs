//! Shared by the property tests: random grammars over a small alphabet, and samples.

#![allow(dead_code)]

use grail_engine::{CompiledGrammar, Sampler, Segment};
use proptest::prelude::*;
use rand::SeedableRng;
use rand::rngs::SmallRng;

/// The characters brute-force checks try: ASCII, two-byte, three-byte and four-byte.
pub const ALPHABET: [char; 7] = ['a', 'b', 'c', 'd', 'é', '世', '😀'];

/// One random GBNF term over the alphabet, referring to rules `r0..r{rules}`.
pub fn term(rules: usize) -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        4 => prop::sample::select(vec!["\"a\"", "\"b\"", "\"ab\"", "\"é\"", "\"世😀\"", "\"\""]).prop_map(str::to_string),
        3 => (any::<bool>(), prop::sample::subsequence(vec!["a", "b", "c", "é", "😀"], 1..3))
            .prop_map(|(negated, items)| format!("[{}{}]", if negated { "^" } else { "" }, items.concat())),
        1 => Just(".".to_string()),
        3 => (0..rules).prop_map(|rule| format!("r{rule}")),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(vec![
                    "*", "+", "?", "{2}", "{0,2}", "{1,}", "{0,9}", "{1,10}"
                ])
            )
                .prop_map(|(term, quantifier)| format!("({term}){quantifier}")),
            prop::collection::vec(inner.clone(), 1..3)
                .prop_map(|terms| format!("({})", terms.join(" "))),
            prop::collection::vec(inner, 2..3).prop_map(|terms| format!("({})", terms.join(" | "))),
        ]
    })
}

/// A random grammar of 1–3 rules (`root` is `r0`).
pub fn grammar_text() -> impl Strategy<Value = String> {
    (1usize..4).prop_flat_map(|rules| {
        prop::collection::vec(
            prop::collection::vec(prop::collection::vec(term(rules), 0..4), 1..3),
            rules,
        )
        .prop_map(|bodies| {
            let mut text = String::from("root ::= r0\n");
            for (index, alternatives) in bodies.iter().enumerate() {
                let alternatives: Vec<String> = alternatives
                    .iter()
                    .map(|sequence| {
                        // An empty body would continue onto the next line in GBNF.
                        if sequence.is_empty() {
                            "\"\"".to_string()
                        } else {
                            sequence.join(" ")
                        }
                    })
                    .collect();
                text.push_str(&format!("r{index} ::= {}\n", alternatives.join(" | ")));
            }
            text
        })
    })
}

pub fn compile(text: &str) -> CompiledGrammar {
    CompiledGrammar::from_gbnf(text).unwrap_or_else(|error| panic!("{text}\n{error:?}"))
}

pub fn samples(grammar: &CompiledGrammar, seed: u64, count: usize) -> Vec<String> {
    let sampler = Sampler::new(grammar);
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..count)
        .filter_map(|_| sampler.sample(&mut rng, 12))
        .map(|segments| match segments.as_slice() {
            [Segment::Text(text)] => text.clone(),
            other => panic!("no tokens in these grammars: {other:?}"),
        })
        .collect()
}
