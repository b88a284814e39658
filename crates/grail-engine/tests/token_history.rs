//! A token history limit keeps rollback of the last tokens exact and the history short:
//! in random grammars, a matcher limited to `k` tokens walks random allowed tokens beside
//! one keeping everything; rolling back any `j ≤ k` of the last tokens gives the same
//! masks, acceptance and offset as the full matcher rolled back as far; rolling back more
//! than it keeps fails (changing nothing); and its history stays within the batch bound.

mod common;

use std::sync::Arc;

use common::{compile, grammar_text};
use grail_engine::{Matcher, TokenBitmask, VocabularyIndex};
use grail_vocab::{TokenKind, Vocabulary};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn vocabulary() -> Arc<VocabularyIndex> {
    let texts: [&[u8]; 12] = [
        b"<eos>", b"a", b"b", b"ab", b"ba", b"c", b"\"", b"0", b"12", b" ", b"{", b"}",
    ];
    let tokens: Vec<Vec<u8>> = texts.iter().map(|text| text.to_vec()).collect();
    let mut kinds = vec![TokenKind::Text; tokens.len()];
    kinds[0] = TokenKind::Special;
    Arc::new(VocabularyIndex::new(Vocabulary::new(
        "history",
        tokens,
        kinds,
        vec![0],
        None,
    )))
}

/// What a matcher's state shows: its mask, whether it may end, and its offset.
fn seen(matcher: &mut Matcher, size: usize) -> (Vec<u32>, bool, u64) {
    let mut mask = TokenBitmask::new(size);
    matcher.fill_mask(&mut mask);
    (
        mask.ids().collect(),
        matcher.is_accepting(),
        matcher.offset(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn rollback_within_the_token_limit_is_exact(
        text in grammar_text(),
        limit in 0usize..6,
        seed in any::<u64>(),
    ) {
        let grammar = compile(&text);
        let index = vocabulary();
        let size = index.vocabulary().len();
        let mut full = Matcher::with_vocabulary(&grammar, index.clone());
        let mut limited = Matcher::with_vocabulary(&grammar, index.clone());
        limited.set_token_history_limit(Some(limit));
        prop_assert_eq!(limited.token_history_limit(), Some(limit));
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut mask = TokenBitmask::new(size);
        let mut accepted = 0usize;
        for _ in 0..60 {
            full.fill_mask(&mut mask);
            let allowed: Vec<u32> = mask.ids().collect();
            if allowed.is_empty() {
                break;
            }
            let id = allowed[rng.random_range(0..allowed.len())];
            full.accept_token(id).unwrap();
            limited.accept_token(id).unwrap();
            accepted += 1;
            // Batches: at most twice the limit (and 16 more) tokens' steps are kept.
            prop_assert!(limited.history_len() <= full.history_len());
        }
        for back in 0..=limit.min(accepted) {
            let mut full_back = full.fork();
            let mut limited_back = limited.fork();
            prop_assert!(full_back.rollback_tokens(back));
            prop_assert!(limited_back.rollback_tokens(back), "rolling back {} of {}", back, limit);
            prop_assert_eq!(seen(&mut limited_back, size), seen(&mut full_back, size));
        }
        if accepted > limit + limit.max(16) {
            // Past the batch bound: the oldest tokens are gone, and asking for them
            // changes nothing.
            let before = seen(&mut limited, size);
            prop_assert!(!limited.rollback_tokens(accepted));
            prop_assert_eq!(seen(&mut limited, size), before);
            prop_assert!(limited.history_len() < full.history_len());
        }
    }
}

/// A long text in a loop: the limited history stays short however long the text, and
/// rollback within the limit is exact all along.
#[test]
fn a_long_text_keeps_a_short_history() {
    let grammar = compile(r#"root ::= ( "a" | "b" | "12" | " " | "{" [ab]* "}" )* "0""#);
    let index = vocabulary();
    let size = index.vocabulary().len();
    let mut full = Matcher::with_vocabulary(&grammar, index.clone());
    let mut limited = Matcher::with_vocabulary(&grammar, index.clone());
    limited.set_token_history_limit(Some(3));
    let cycle = [1u32, 10, 2, 3, 11, 8, 9, 4];
    let mut longest = 0;
    for step in 0..400 {
        let id = cycle[step % cycle.len()];
        full.accept_token(id).unwrap();
        limited.accept_token(id).unwrap();
        longest = longest.max(limited.history_len());
        if step % 37 == 0 {
            for back in 0..=3.min(step + 1) {
                let (mut full_back, mut limited_back) = (full.fork(), limited.fork());
                assert!(full_back.rollback_tokens(back) && limited_back.rollback_tokens(back));
                assert_eq!(seen(&mut limited_back, size), seen(&mut full_back, size));
            }
        }
    }
    // 3 + 16 tokens of two bytes at most, and the step before them.
    assert!(longest <= 2 * 20, "{longest} steps kept");
    // Eleven bytes a cycle of eight tokens.
    assert_eq!(full.history_len(), 400 / 8 * 11);
    assert!(!limited.rollback_tokens(50));
    assert!(limited.rollback_tokens(3));
}

/// Drafts longer than the token limit are checked, masked and accepted all or nothing
/// like any other: the limit never leaves a draft's own tokens unable to roll back.
#[test]
fn drafts_longer_than_the_token_limit_leave_the_matcher_as_it_was() {
    let grammar = compile(r#"root ::= ( "a" | "b" | "12" | " " )* "0""#);
    let index = vocabulary();
    let size = index.vocabulary().len();
    let words = size.div_ceil(32);
    for limit in [0, 1, 2] {
        let mut matcher = Matcher::with_vocabulary(&grammar, index.clone());
        matcher.set_token_history_limit(Some(limit));
        for step in 0..16 {
            matcher.accept_token([1, 2, 9][step % 3]).unwrap();
        }
        let before = seen(&mut matcher, size);
        let draft = [1, 8, 9, 2, 3];
        assert_eq!(matcher.validate_tokens(&draft), draft.len());
        assert_eq!(seen(&mut matcher, size), before);
        let mut rows = vec![0u32; words * (draft.len() + 1)];
        assert_eq!(matcher.fill_draft_masks(&draft, &mut rows), draft.len() + 1);
        assert_eq!(seen(&mut matcher, size), before);
        // Refused at its fourth token ("{" is no part of the grammar): nothing accepted.
        let refused = [1, 2, 9, 10, 1];
        assert_eq!(matcher.accept_tokens(&refused).unwrap_err().index, 3);
        assert_eq!(seen(&mut matcher, size), before);
        // Accepted whole, the limit kept.
        matcher.accept_tokens(&draft).unwrap();
        assert_eq!(matcher.token_history_limit(), Some(limit));
        assert!(matcher.rollback_tokens(limit));
    }
}
