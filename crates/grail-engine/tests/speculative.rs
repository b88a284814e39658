//! Speculative decoding against brute force: `validate_tokens` counts what accepting a
//! draft token by token on a fork accepts, `accept_tokens` takes all or nothing,
//! `fill_draft_masks` gives each position's mask as a fork that walked the draft, and
//! none of them moves the matcher (also with a history limit shorter than the draft).

mod common;

use std::sync::Arc;

use common::{compile, grammar_text};
use grail_engine::{CompiledGrammar, Matcher, TokenBitmask, VocabularyIndex};
use grail_vocab::{TokenKind, Vocabulary};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Letters alone and joined, `é` whole and split, `世` split, an empty token, an
/// end-of-generation token and a special token no grammar here names.
fn vocabulary() -> Arc<VocabularyIndex> {
    let world = "世".as_bytes();
    let texts: Vec<(Vec<u8>, TokenKind)> = vec![
        (b"<eos>".to_vec(), TokenKind::Special),
        (b"a".to_vec(), TokenKind::Text),
        (b"b".to_vec(), TokenKind::Text),
        (b"c".to_vec(), TokenKind::Text),
        (b"ab".to_vec(), TokenKind::Text),
        (b"bab".to_vec(), TokenKind::Text),
        ("é".as_bytes().to_vec(), TokenKind::Text),
        (vec![0xC3], TokenKind::Text),
        (vec![0xA9], TokenKind::Text),
        (world[..1].to_vec(), TokenKind::Text),
        (world[1..].to_vec(), TokenKind::Text),
        ("😀".as_bytes().to_vec(), TokenKind::Text),
        (Vec::new(), TokenKind::Text),
        (b"<tool>".to_vec(), TokenKind::Special),
    ];
    let (tokens, kinds) = texts.into_iter().unzip();
    Arc::new(VocabularyIndex::new(Vocabulary::new(
        "speculative",
        tokens,
        kinds,
        vec![0],
        None,
    )))
}

fn mask_of(matcher: &mut Matcher, size: usize) -> Vec<u32> {
    let mut mask = TokenBitmask::new(size);
    matcher.fill_mask(&mut mask);
    mask.ids().collect()
}

/// A draft: a few tokens a walk of allowed tokens takes, then sometimes any token.
fn draft(grammar: &CompiledGrammar, index: &Arc<VocabularyIndex>, rng: &mut SmallRng) -> Vec<u32> {
    let size = index.vocabulary().len();
    let mut walker = Matcher::with_vocabulary(grammar, index.clone());
    let mut draft = Vec::new();
    for _ in 0..rng.random_range(0..8) {
        let allowed = mask_of(&mut walker, size);
        if allowed.is_empty() {
            break;
        }
        let id = allowed[rng.random_range(0..allowed.len())];
        walker.accept_token(id).unwrap();
        draft.push(id);
    }
    if rng.random_bool(0.5) {
        draft.push(rng.random_range(0..size as u32 + 1));
    }
    if rng.random_bool(0.3) {
        draft.push(rng.random_range(0..size as u32));
    }
    draft
}

/// The tokens of `draft` a fork accepts one after another.
fn accepted_one_by_one(matcher: &Matcher, draft: &[u32]) -> usize {
    let mut fork = matcher.fork();
    draft
        .iter()
        .take_while(|&&id| fork.accept_token(id).is_ok())
        .count()
}

fn check(
    grammar: &CompiledGrammar,
    seed: u64,
    history_limit: Option<usize>,
) -> Result<(), TestCaseError> {
    let index = vocabulary();
    let size = index.vocabulary().len();
    let row = size.div_ceil(32);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut matcher = Matcher::with_vocabulary(grammar, index.clone());
    matcher.set_history_limit(history_limit);
    // Start somewhere inside the language: a few allowed tokens in.
    for id in draft(grammar, &index, &mut rng) {
        if matcher.accept_token(id).is_err() {
            break;
        }
    }
    for _ in 0..6 {
        let draft = draft(grammar, &index, &mut rng);
        let before = mask_of(&mut matcher, size);
        let expected = accepted_one_by_one(&matcher, &draft);

        prop_assert_eq!(
            matcher.validate_tokens(&draft),
            expected,
            "validate {:?}",
            &draft
        );
        prop_assert_eq!(
            &mask_of(&mut matcher, size),
            &before,
            "validate moved the matcher"
        );

        let mut rows = vec![0u32; row * (draft.len() + 1)];
        let filled = matcher.fill_draft_masks(&draft, &mut rows);
        prop_assert_eq!(filled, expected + 1);
        let mut fork = matcher.fork();
        for position in 0..filled {
            let row_ids: Vec<u32> =
                grail_vocab::ids_of(&rows[position * row..(position + 1) * row]).collect();
            prop_assert_eq!(
                &row_ids,
                &mask_of(&mut fork, size),
                "row {} of {:?}",
                position,
                &draft
            );
            if position < expected {
                fork.accept_token(draft[position]).unwrap();
            }
        }
        prop_assert_eq!(
            &mask_of(&mut matcher, size),
            &before,
            "the draft masks moved the matcher"
        );

        let mut one_by_one = matcher.fork();
        for &id in &draft[..expected] {
            one_by_one.accept_token(id).unwrap();
        }
        match matcher.accept_tokens(&draft) {
            Ok(()) => {
                prop_assert_eq!(expected, draft.len());
                prop_assert_eq!(mask_of(&mut matcher, size), mask_of(&mut one_by_one, size));
                prop_assert_eq!(matcher.offset(), one_by_one.offset());
            }
            Err(refused) => {
                prop_assert_eq!(refused.index, expected);
                prop_assert_eq!(refused.id, draft[expected]);
                prop_assert_eq!(
                    &mask_of(&mut matcher, size),
                    &before,
                    "a refused draft moved the matcher"
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn drafts_agree_with_token_by_token_acceptance(text in grammar_text(), seed in any::<u64>()) {
        let grammar = compile(&text);
        check(&grammar, seed, None)?;
    }

    #[test]
    fn drafts_agree_under_a_short_history_limit(text in grammar_text(), seed in any::<u64>()) {
        let grammar = compile(&text);
        check(&grammar, seed, Some(2))?;
    }
}

#[test]
fn an_accepted_draft_leaves_the_matcher_where_the_tokens_lead() {
    let grammar = compile("root ::= \"ab\" [a-c]* \"é\"\n");
    let index = vocabulary();
    let size = index.vocabulary().len();
    let id = |text: &str| index.vocabulary().id_of_text(text).unwrap();
    let mut matcher = Matcher::with_vocabulary(&grammar, index.clone());
    matcher
        .accept_tokens(&[id("ab"), id("bab"), id("c")])
        .unwrap();
    let mut one_by_one = Matcher::with_vocabulary(&grammar, index.clone());
    for token in ["a", "b", "b", "a", "b", "c"] {
        one_by_one.accept_token(id(token)).unwrap();
    }
    assert_eq!(mask_of(&mut matcher, size), mask_of(&mut one_by_one, size));
    assert_eq!(matcher.offset(), one_by_one.offset());
    // A refused token anywhere leaves it there: `é` split, then `a` inside the character.
    let error = matcher.accept_tokens(&[id("c"), 7, id("a")]).unwrap_err();
    assert_eq!((error.index, error.id), (2, id("a")));
    assert_eq!(mask_of(&mut matcher, size), mask_of(&mut one_by_one, size));
    // The whole character, then the end.
    assert_eq!(matcher.validate_tokens(&[7, 8, 0]), 3);
    matcher.accept_tokens(&[id("é"), 0]).unwrap();
    assert!(matcher.is_accepting());
}
