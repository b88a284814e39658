//! Pathological grammars and inputs end in errors within the documented limits, never in
//! a hang, a crash or unbounded memory.

use grail_engine::{
    AcceptError, CompileError, CompileOptions, CompiledGrammar, EngineLimits, LimitExceeded,
    Matcher,
};
use proptest::prelude::*;

fn compile_with(source: &str, limits: EngineLimits) -> Result<CompiledGrammar, CompileError> {
    let report = grail_grammar::check(source, &grail_grammar::CheckOptions::default());
    let grammar = report.grammar.expect("a valid grammar");
    CompiledGrammar::compile(
        &grammar,
        &CompileOptions {
            limits,
            ..CompileOptions::default()
        },
    )
}

#[test]
fn an_ambiguous_grammar_hits_the_per_step_limit_instead_of_slowing_down() {
    let limits = EngineLimits {
        max_items_per_step: 2_000,
        ..EngineLimits::default()
    };
    let grammar = compile_with(r#"root ::= "a" root "b" | "a" root |"#, limits).unwrap();
    let mut matcher = Matcher::new(&grammar);
    let text = format!("{}{}", "a".repeat(5_000), "b".repeat(5_000));
    match matcher.accept_str(&text) {
        Err(AcceptError::Limit {
            limit: LimitExceeded::ItemsPerStep { limit: 2_000 },
            consumed,
        }) => {
            // The matcher stays usable at the last good step.
            assert!(consumed > 0);
            assert_eq!(matcher.offset(), consumed as u64);
            assert!(matcher.is_viable());
        }
        other => panic!("expected the item limit, got {other:?}"),
    }
}

/// The live state on `a`ⁿ of the ambiguous grammar stays linear in n: one frame per
/// step, each with its two callers. When its tail call `"a" root` was a jump in the
/// caller's frame, every older frame kept the rule's start and each step's call had one
/// caller per frame: quadratic state, cubic time (issue 48; 14 s at n = 1,600). A size
/// bound, not a timing: the state limit counts items, frames and links, here those of the
/// last 64-odd steps the history trims in batches (about 2n items each) and the live
/// frames and links; the quadratic state (n²/2 links) passed it before n = 1,100.
#[test]
fn an_ambiguous_grammar_keeps_a_linear_state() {
    let n = 3_000;
    let limits = EngineLimits {
        max_state_items: 200 * n,
        ..EngineLimits::default()
    };
    for source in [
        r#"root ::= "a" root "b" | "a" root |"#,
        // The same language, the tail call made through another rule.
        "root ::= \"a\" root \"b\" | \"a\" tail | \"\"\ntail ::= root\n",
    ] {
        let grammar = compile_with(source, limits).unwrap();
        let mut matcher = Matcher::new(&grammar);
        matcher.set_history_limit(Some(4));
        let text = format!("{}{}", "a".repeat(n), "b".repeat(n / 2));
        matcher
            .accept_str(&text)
            .unwrap_or_else(|error| panic!("{source}: {error:?}"));
        assert!(matcher.is_accepting());
    }
}

#[test]
fn the_state_limit_bounds_memory_with_full_history() {
    let limits = EngineLimits {
        max_state_items: 50_000,
        ..EngineLimits::default()
    };
    let grammar = compile_with(r#"root ::= [a-z]*"#, limits).unwrap();
    let mut matcher = Matcher::new(&grammar);
    let error = matcher.accept_str(&"x".repeat(200_000)).unwrap_err();
    assert!(matches!(
        error,
        AcceptError::Limit {
            limit: LimitExceeded::StateSize { .. },
            ..
        }
    ));
    // With a history limit, the same input streams in constant memory.
    let mut streaming = Matcher::new(&grammar);
    streaming.set_history_limit(Some(8));
    streaming.accept_str(&"x".repeat(200_000)).unwrap();
    assert!(streaming.is_accepting());
    assert!(streaming.rollback(8));
    assert!(!streaming.rollback(100));
}

#[test]
fn a_huge_repetition_is_refused_at_compile_time() {
    let limits = EngineLimits {
        max_nodes: 100_000,
        ..EngineLimits::default()
    };
    let error = compile_with(r#"root ::= "a"{0,99999}"#, limits).unwrap_err();
    assert_eq!(error, CompileError::TooLarge { limit: 100_000 });
}

#[test]
fn a_big_item_repeated_many_times_is_compiled_once_and_called() {
    // 1,000 copies of a 2,000-node item would be two million nodes; the item becomes a
    // rule of its own and each copy calls it.
    let limits = EngineLimits {
        max_nodes: 100_000,
        ..EngineLimits::default()
    };
    let grammar = compile_with(r#"root ::= ("a"{0,1000} "b"){0,1000}"#, limits).unwrap();
    assert!(grammar.node_count() < 20_000, "{}", grammar.node_count());
    let mut matcher = Matcher::new(&grammar);
    matcher.accept_str(&"aab".repeat(1000)).unwrap();
    assert!(matcher.is_accepting());
    assert!(matcher.accept_str("b").is_err());
}

#[test]
fn an_item_that_can_be_empty_costs_no_items_per_copy() {
    // Each copy of `x` can be crossed without input; read as written, every step would
    // walk through all the copies after the current one (200,000 items here).
    let limits = EngineLimits {
        max_items_per_step: 1_000,
        ..EngineLimits::default()
    };
    let grammar = compile_with(
        "root ::= x{0,99999}{2} \"b\"\nx ::= \"a\" | \"y\"?\n",
        limits,
    )
    .unwrap();
    let mut matcher = Matcher::new(&grammar);
    matcher.accept_str("ayaay").unwrap();
    assert!(!matcher.is_accepting());
    matcher.accept_str("b").unwrap();
    assert!(matcher.is_accepting());
    // Bounds still hold when the item can be empty: at most 3 non-empty copies here.
    let grammar = compile_with("root ::= (\"a\"?){3}\n", limits).unwrap();
    let mut matcher = Matcher::new(&grammar);
    matcher.accept_str("aaa").unwrap();
    assert!(matcher.is_accepting());
    assert!(matcher.accept_str("a").is_err());
}

#[test]
fn deep_nesting_in_the_input_needs_no_recursion() {
    let grammar = CompiledGrammar::from_gbnf(r#"root ::= "(" root ")" |"#).unwrap();
    let depth = 20_000;
    let text = format!("{}{}", "(".repeat(depth), ")".repeat(depth));
    let mut matcher = Matcher::new(&grammar);
    matcher.set_history_limit(Some(0));
    matcher.accept_str(&text).unwrap();
    assert!(matcher.is_accepting());
}

#[test]
fn long_chains_of_rules_compile_without_deep_recursion() {
    let mut source = String::from("root ::= r0\n");
    for index in 0..5_000 {
        source.push_str(&format!("r{index} ::= \"x\" r{}\n", index + 1));
    }
    source.push_str("r5000 ::= \"end\"\n");
    let grammar = CompiledGrammar::from_gbnf(&source).unwrap();
    let mut matcher = Matcher::new(&grammar);
    matcher
        .accept_str(&format!("{}end", "x".repeat(5_000)))
        .unwrap();
    assert!(matcher.is_accepting());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_and_tokens_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64), id in 0u32..20) {
        let grammar = CompiledGrammar::from_gbnf(
            "root ::= (obj | [^x] | <[5]> | !<[7]> \"é\")*\nobj ::= \"{\" root \"}\"",
        ).unwrap();
        let mut matcher = Matcher::new(&grammar);
        let _ = matcher.accept_bytes(&bytes);
        let _ = matcher.accept_token_piece(id, Some(&bytes[..bytes.len().min(3)]));
        let _ = matcher.accept_token_piece(id, None);
        let _ = matcher.next_characters();
        let _ = matcher.forced(8);
        let history = matcher.history_len();
        prop_assert!(matcher.rollback(history));
        prop_assert_eq!(matcher.offset(), 0);
    }
}

#[test]
fn grammars_nested_thousands_deep_compile_and_match_on_a_small_stack() {
    // As llama.cpp's JSON Schema converters write `maxLength`: one group per character.
    let depth = 10_000;
    let source = format!(
        "root ::= \"<\" {}\"a\"{} \">\"\nstacked ::= \"b\"{}\n",
        "(\"a\" ".repeat(depth - 1),
        ")?".repeat(depth - 1),
        "?".repeat(depth)
    );
    on_small_stack(move || {
        let grammar = CompiledGrammar::from_gbnf(&source).unwrap();
        let mut matcher = Matcher::new(&grammar);
        matcher
            .accept_str(&format!("<{}>", "a".repeat(5_000)))
            .unwrap();
        assert!(matcher.is_accepting());
        assert!(
            matcher
                .fork()
                .accept_str(&format!("{}>", "a".repeat(5_000)))
                .is_err()
        );
    });
}

#[test]
fn masks_over_very_long_tokens_need_no_deep_native_stack() {
    // Every `[` calls a rule, so walking a 20,000-byte token of `[`s takes a real step
    // (and one more level of walk) per byte.
    let long: Vec<u8> = std::iter::repeat_n(b'[', 20_000).collect();
    let tokens = vec![
        b"x".to_vec(),
        long.clone(),
        [long.as_slice(), b"x"].concat(),
    ];
    let kinds = vec![grail_vocab::TokenKind::Text; tokens.len()];
    let vocabulary = grail_vocab::Vocabulary::new("long", tokens, kinds, vec![], None);
    let index = std::sync::Arc::new(grail_engine::VocabularyIndex::new(vocabulary));
    on_small_stack(move || {
        let grammar = CompiledGrammar::from_gbnf("root ::= \"[\" root \"]\" | \"x\"").unwrap();
        let mut matcher = Matcher::with_vocabulary(&grammar, index);
        let mut mask = grail_engine::TokenBitmask::new(3);
        matcher.fill_mask(&mut mask);
        assert_eq!(mask.ids().collect::<Vec<_>>(), vec![0, 1, 2]);
    });
}

/// Runs `test` on a thread with a 2 MB stack (what a debug-build test thread may get),
/// passing on its panics.
fn on_small_stack(test: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(test)
        .unwrap()
        .join()
        .unwrap();
}
