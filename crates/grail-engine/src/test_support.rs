//! Helpers shared by the engine's unit tests.

use crate::CompiledGrammar;
use crate::matcher::Matcher;
use crate::step_cache::StateId;

/// A matcher of `source` compiled afresh (matchers of one compiled grammar share what
/// they learn), after `prefix`, with its state and frames.
pub(crate) fn matcher_after(source: &str, prefix: &[u8]) -> (Matcher, StateId, Vec<u32>) {
    let grammar = CompiledGrammar::from_gbnf(source).expect("the grammar compiles");
    let mut matcher = Matcher::new(&grammar);
    for &byte in prefix {
        assert!(
            matches!(matcher.step_byte(byte), Ok(true)),
            "the prefix matches"
        );
    }
    let mut frames = Vec::new();
    let state = matcher
        .current_state(&mut frames)
        .expect("the prefix's step is a cached state");
    (matcher, state, frames)
}
