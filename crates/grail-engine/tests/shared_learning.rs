//! Matchers of one grammar share what they learn (states, transitions, walks, masks)
//! across threads: in random grammars, several threads each walk random allowed tokens
//! at once, on matchers of one compiled grammar (some forked from one another), yielding
//! at random points so their learning interleaves differently each run; every mask they
//! see equals the mask of a lone matcher, on a grammar compiled apart, at the same
//! tokens.

mod common;

use std::sync::Arc;

use common::{compile, grammar_text};
use grail_engine::{CompiledGrammar, Matcher, TokenBitmask, VocabularyIndex};
use grail_vocab::{TokenKind, Vocabulary};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Threads walking at once.
const THREADS: usize = 4;

/// Every string of one or two units over letters, quotes, digits, a space, `é` and its
/// halves, with an end-of-generation token: big enough for walks to learn and share.
fn vocabulary() -> Arc<VocabularyIndex> {
    let units: [&[u8]; 11] = [
        b"a",
        b"b",
        b"c",
        b"\"",
        b"0",
        b"1",
        b" ",
        b"{",
        "é".as_bytes(),
        &[0xC3],
        &[0xA9],
    ];
    let mut tokens: Vec<Vec<u8>> = vec![b"<eos>".to_vec()];
    for first in units {
        tokens.push(first.to_vec());
        for second in units {
            tokens.push([first, second].concat());
        }
    }
    let mut kinds = vec![TokenKind::Text; tokens.len()];
    kinds[0] = TokenKind::Special;
    Arc::new(VocabularyIndex::new(Vocabulary::new(
        "shared",
        tokens,
        kinds,
        vec![0],
        None,
    )))
}

/// The tokens a walk took and the mask seen before each.
struct Walk {
    tokens: Vec<u32>,
    masks: Vec<Vec<u32>>,
}

/// Walks up to `steps` random allowed tokens from `matcher`, yielding to other threads
/// at random points.
fn walk(mut matcher: Matcher, seed: u64, steps: usize, size: usize) -> Walk {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut mask = TokenBitmask::new(size);
    let mut walk = Walk {
        tokens: Vec::new(),
        masks: Vec::new(),
    };
    for _ in 0..steps {
        if rng.random_bool(0.3) {
            std::thread::yield_now();
        }
        matcher.fill_mask(&mut mask);
        let allowed: Vec<u32> = mask.ids().collect();
        walk.masks.push(allowed.clone());
        if allowed.is_empty() {
            break;
        }
        let id = allowed[rng.random_range(0..allowed.len())];
        matcher
            .accept_token(id)
            .expect("a token of the mask is accepted");
        walk.tokens.push(id);
    }
    walk
}

/// The masks a lone matcher of `grammar` sees along `tokens`.
fn lone_masks(
    grammar: &CompiledGrammar,
    index: &Arc<VocabularyIndex>,
    tokens: &[u32],
) -> Vec<Vec<u32>> {
    let size = index.vocabulary().len();
    let mut matcher = Matcher::with_vocabulary(grammar, index.clone());
    let mut mask = TokenBitmask::new(size);
    let mut masks = Vec::new();
    for step in 0..=tokens.len() {
        matcher.fill_mask(&mut mask);
        masks.push(mask.ids().collect());
        if let Some(&id) = tokens.get(step) {
            matcher.accept_token(id).unwrap();
        }
    }
    masks
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn matchers_sharing_learning_across_threads_mask_as_lone_matchers(
        text in grammar_text(),
        seed in any::<u64>(),
    ) {
        let grammar = compile(&text);
        let index = vocabulary();
        let size = index.vocabulary().len();
        // Half the threads start from forks of one matcher, half from matchers of their own.
        let template = Matcher::with_vocabulary(&grammar, index.clone());
        let walks: Vec<Walk> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..THREADS)
                .map(|thread| {
                    let matcher = if thread % 2 == 0 {
                        template.fork()
                    } else {
                        Matcher::with_vocabulary(&grammar, index.clone())
                    };
                    let thread_seed = seed.wrapping_add(thread as u64 * 0x9E37_79B9);
                    scope.spawn(move || walk(matcher, thread_seed, 16, size))
                })
                .collect();
            handles.into_iter().map(|handle| handle.join().unwrap()).collect()
        });
        for (thread, walk) in walks.iter().enumerate() {
            let lone = lone_masks(&compile(&text), &index, &walk.tokens);
            prop_assert_eq!(
                &walk.masks[..],
                &lone[..walk.masks.len()],
                "thread {} of grammar {}", thread, text
            );
        }
    }
}

/// A grammar with strings, numbers, bounded repetitions and nested calls, walked by many
/// threads at once many times over: the masks stay those of a lone matcher.
#[test]
fn a_json_like_grammar_shared_by_many_threads_masks_as_alone() {
    let text = r#"
        root ::= object
        value ::= object | array | string | number | "true" | "false" | "null"
        object ::= "{" ws ( string ":" ws value ( "," ws string ":" ws value )* )? "}" ws
        array ::= "[" ws ( value ( "," ws value )* )? "]" ws
        string ::= "\"" ( [^"\\] | "\\" ["\\/bfnrt] )* "\"" ws
        number ::= "-"? [0-9]{1,12} ( "." [0-9]{1,6} )? ws
        ws ::= [ ]{0,4}
    "#;
    let index = vocabulary();
    let size = index.vocabulary().len();
    for round in 0..8u64 {
        let grammar = compile(text);
        let walks: Vec<Walk> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..THREADS as u64)
                .map(|thread| {
                    let matcher = Matcher::with_vocabulary(&grammar, index.clone());
                    scope.spawn(move || walk(matcher, round * 31 + thread, 40, size))
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().unwrap())
                .collect()
        });
        for walk in &walks {
            assert!(!walk.tokens.is_empty());
            let lone = lone_masks(&compile(text), &index, &walk.tokens);
            assert_eq!(walk.masks[..], lone[..walk.masks.len()]);
        }
    }
}
