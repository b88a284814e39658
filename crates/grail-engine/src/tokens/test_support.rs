//! Helpers shared by the engine's unit tests.

use crate::CompiledGrammar;
use crate::automaton::step_cache::StateId;
use crate::tokens::matcher::Matcher;

/// A matcher of `source` compiled afresh (matchers of one compiled grammar share what
/// they learn), after `prefix`, with its state and frames.
pub(crate) fn matcher_after(source: &str, prefix: &[u8]) -> (Matcher, StateId, Vec<u32>) {
    let grammar = CompiledGrammar::from_gbnf(source).expect("the grammar compiles");
    let mut matcher = Matcher::new(&grammar);
    for &byte in prefix {
        assert!(
            matches!(matcher.parser.step_byte(byte), Ok(true)),
            "the prefix matches"
        );
    }
    let mut frames = Vec::new();
    let state = matcher
        .parser
        .current_state(&mut frames)
        .expect("the prefix's step is a cached state");
    (matcher, state, frames)
}
