//! Jump-forward against brute force, on random grammars, vocabularies and tokenizers:
//!
//! - the forced bytes are exactly the bytes found by trying all 256 on forks, one after
//!   another while exactly one is accepted and the input may not end;
//! - the tokens are accepted by the matcher in order and spell a prefix of the forced bytes;
//! - for every continuation the grammar allows after the forced bytes (all of up to two
//!   characters, the rest of the document they came from and its prefixes, and random
//!   walks), the tokenizer's tokens of the forced bytes and the continuation start with
//!   exactly those tokens.
//!
//! Three tokenizers: byte-pair merging by rank, greedy longest match, and byte-pair
//! merging after a pre-tokenizer that starts a piece at every `d` (as a word-splitting
//! regex starts one at a space).

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::{ALPHABET, compile};
use grail_engine::{CompiledGrammar, JumpForward, Matcher, Sampler, Segment, VocabularyIndex};
use grail_vocab::{TokenKind, Vocabulary};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

/// How the test tokenizes.
#[derive(Debug, Clone, Copy)]
enum Tokenizer {
    /// Byte-pair merging: the adjacent pair whose join is the token with the lowest id
    /// merges first, leftmost on ties.
    Bpe,
    /// The longest token that starts the rest, again and again.
    Greedy,
    /// `Bpe` on pieces, a new piece starting at every `d`.
    SplitBpe,
}

/// A vocabulary (token bytes, in rank order) and a tokenizer over it.
struct Model {
    texts: Vec<Vec<u8>>,
    ids: HashMap<Vec<u8>, u32>,
    index: Arc<VocabularyIndex>,
    tokenizer: Tokenizer,
}

impl Model {
    /// Every byte of the alphabet's characters as a token, then `merges` tokens each the
    /// join of two earlier ones (so merging can reach it; some end inside a character),
    /// then every other byte.
    fn random(rng: &mut SmallRng, merges: usize, tokenizer: Tokenizer) -> Model {
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for character in ALPHABET {
            let mut buffer = [0; 4];
            for &byte in character.encode_utf8(&mut buffer).as_bytes() {
                if !texts.contains(&vec![byte]) {
                    texts.push(vec![byte]);
                }
            }
        }
        let mut attempts = 0;
        while texts.len() < 15 + merges && attempts < 50 * merges {
            attempts += 1;
            let left = texts.choose(rng).unwrap().clone();
            let right = texts.choose(rng).unwrap().clone();
            let joined = [left, right].concat();
            // Mostly short tokens over ASCII, where the grammars' literals are.
            if joined.len() > 6 || (joined.iter().any(|&b| b >= 0x80) && rng.random_bool(0.7)) {
                continue;
            }
            if !texts.contains(&joined) {
                texts.push(joined);
            }
        }
        // Every other byte too, so any text tokenizes (the grammars' classes allow more
        // than the alphabet).
        for byte in 0..=255u8 {
            if !texts.contains(&vec![byte]) {
                texts.push(vec![byte]);
            }
        }
        Model::with_texts(texts, tokenizer)
    }

    /// Every byte, then many tokens of two to four letters of `abcd` in random rank
    /// order (each the join of two earlier ones), where merges that reorder one another
    /// are common.
    fn dense(rng: &mut SmallRng, tokenizer: Tokenizer) -> Model {
        let mut texts: Vec<Vec<u8>> = (0..=255u8).map(|byte| vec![byte]).collect();
        let letters: Vec<Vec<u8>> = b"abcd".iter().map(|&b| vec![b]).collect();
        let mut pool = letters.clone();
        for _ in 0..rng.random_range(8..60) {
            let joined = [
                pool.choose(rng).unwrap().as_slice(),
                pool.choose(rng).unwrap().as_slice(),
            ]
            .concat();
            if joined.len() <= 4 && !pool.contains(&joined) {
                pool.push(joined.clone());
                texts.push(joined);
            }
        }
        Model::with_texts(texts, tokenizer)
    }

    fn with_texts(texts: Vec<Vec<u8>>, tokenizer: Tokenizer) -> Model {
        let kinds = vec![TokenKind::Text; texts.len()];
        let index = Arc::new(VocabularyIndex::new(Vocabulary::new(
            "jump",
            texts.clone(),
            kinds,
            vec![],
            None,
        )));
        let ids = texts
            .iter()
            .enumerate()
            .map(|(id, text)| (text.clone(), id as u32))
            .collect();
        Model {
            texts,
            ids,
            index,
            tokenizer,
        }
    }

    fn id_of(&self, bytes: &[u8]) -> Option<u32> {
        self.ids.get(bytes).copied()
    }

    fn tokenize(&self, bytes: &[u8]) -> Option<Vec<u32>> {
        match self.tokenizer {
            Tokenizer::Bpe => self.bpe(bytes),
            Tokenizer::Greedy => self.greedy(bytes),
            Tokenizer::SplitBpe => {
                let mut ids = Vec::new();
                let mut start = 0;
                for end in 1..=bytes.len() {
                    if end == bytes.len() || bytes[end] == b'd' {
                        ids.extend(self.bpe(&bytes[start..end])?);
                        start = end;
                    }
                }
                Some(ids)
            }
        }
    }

    fn bpe(&self, bytes: &[u8]) -> Option<Vec<u32>> {
        let mut pieces: Vec<Vec<u8>> = bytes.iter().map(|&byte| vec![byte]).collect();
        loop {
            let best = (0..pieces.len().saturating_sub(1))
                .filter_map(|i| {
                    self.id_of(&[pieces[i].as_slice(), pieces[i + 1].as_slice()].concat())
                        .map(|id| (id, i))
                })
                .min();
            let Some((_, i)) = best else { break };
            let right = pieces.remove(i + 1);
            pieces[i].extend(right);
        }
        pieces.iter().map(|piece| self.id_of(piece)).collect()
    }

    fn greedy(&self, bytes: &[u8]) -> Option<Vec<u32>> {
        let mut ids = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            let (id, text) = self
                .texts
                .iter()
                .enumerate()
                .filter(|(_, text)| rest.starts_with(text))
                .max_by_key(|(_, text)| text.len())?;
            ids.push(id as u32);
            rest = &rest[text.len()..];
        }
        Some(ids)
    }

    fn spell(&self, ids: &[u32]) -> Vec<u8> {
        ids.iter()
            .flat_map(|&id| self.texts[id as usize].clone())
            .collect()
    }
}

/// A grammar with forced runs between choices: literals, alternatives of literals,
/// optional literals and loops of a class, over the test alphabet.
fn grammar_with_runs() -> impl Strategy<Value = String> {
    let literal = prop::collection::vec(prop::sample::select(ALPHABET.to_vec()), 1..5)
        .prop_map(|chars| format!("\"{}\"", chars.into_iter().collect::<String>()));
    let item = prop_oneof![
        4 => literal.clone(),
        2 => (literal.clone(), literal.clone()).prop_map(|(a, b)| format!("({a} | {b})")),
        1 => literal.clone().prop_map(|a| format!("{a}?")),
        1 => prop::sample::subsequence(vec!["a", "b", "c", "d", "é"], 1..4)
            .prop_map(|items| format!("[{}]*", items.concat())),
        1 => (literal.clone(), literal).prop_map(|(a, b)| format!("({a} {b})+")),
    ];
    prop::collection::vec(item, 1..6).prop_map(|items| format!("root ::= {}\n", items.join(" ")))
}

/// A grammar like [`grammar_with_runs`] over `abcd` alone (for [`Model::dense`]).
fn letters_grammar() -> impl Strategy<Value = String> {
    let literal = prop::collection::vec(prop::sample::select(vec!['a', 'b', 'c', 'd']), 1..6)
        .prop_map(|chars| format!("\"{}\"", chars.into_iter().collect::<String>()));
    let item = prop_oneof![
        3 => literal.clone(),
        3 => (literal.clone(), literal.clone()).prop_map(|(a, b)| format!("({a} | {b})")),
        1 => literal.clone().prop_map(|a| format!("{a}?")),
        1 => (literal.clone(), literal).prop_map(|(a, b)| format!("({a} {b})+")),
    ];
    prop::collection::vec(item, 1..6).prop_map(|items| format!("root ::= {}\n", items.join(" ")))
}

/// The forced bytes by brute force: while the input may not end and exactly one byte of
/// the 256 is accepted, that byte.
fn forced_by_brute_force(matcher: &Matcher, max_bytes: usize) -> Vec<u8> {
    let mut probe = matcher.fork();
    let mut forced = Vec::new();
    while forced.len() < max_bytes && !probe.is_accepting() {
        let accepted: Vec<u8> = (0..=255u8)
            .filter(|&byte| {
                let accepted = probe.accept_bytes(&[byte]).is_ok();
                accepted && probe.rollback(1)
            })
            .collect();
        let [byte] = accepted[..] else { break };
        probe.accept_bytes(&[byte]).unwrap();
        forced.push(byte);
    }
    forced
}

/// Continuations `after` (a matcher after the forced bytes) accepts: every string of up
/// to two alphabet characters, `tail` and its prefixes, and random walks.
fn continuations(after: &Matcher, tail: &[u8], rng: &mut SmallRng) -> Vec<Vec<u8>> {
    let mut found: Vec<Vec<u8>> = Vec::new();
    let mut probe = after.fork();
    let mut accepts = |bytes: &[u8]| {
        let before = probe.history_len();
        let accepted = probe.accept_bytes(bytes).is_ok();
        probe.rollback(probe.history_len() - before);
        accepted
    };
    let mut short: Vec<String> = ALPHABET.iter().map(|c| c.to_string()).collect();
    for first in ALPHABET {
        for second in ALPHABET {
            short.push(format!("{first}{second}"));
        }
    }
    for text in short {
        if accepts(text.as_bytes()) {
            found.push(text.into_bytes());
        }
    }
    for end in 1..=tail.len() {
        found.push(tail[..end].to_vec());
    }
    for _ in 0..6 {
        let mut walker = after.fork();
        let mut walk = Vec::new();
        for _ in 0..rng.random_range(1..10) {
            let next: Vec<char> = ALPHABET
                .iter()
                .copied()
                .filter(|&c| {
                    let before = walker.history_len();
                    let accepted = walker.accept_char(c).is_ok();
                    walker.rollback(walker.history_len() - before);
                    accepted
                })
                .collect();
            let Some(&c) = next.choose(rng) else { break };
            walker.accept_char(c).unwrap();
            let mut buffer = [0; 4];
            walk.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
        }
        if !walk.is_empty() {
            found.push(walk);
        }
    }
    found
}

#[derive(Debug, Default)]
struct Counts {
    /// Positions with forced bytes.
    jumps: usize,
    /// Tokens appended over all of them.
    tokens: usize,
    /// Tokens of the forced bytes' own tokenization over all of them.
    tokenized: usize,
}

/// Checks every byte position of a few documents of `grammar`.
fn check(grammar: &CompiledGrammar, model: &Model, seed: u64) -> Result<Counts, TestCaseError> {
    const MAX_BYTES: usize = 48;
    let mut rng = SmallRng::seed_from_u64(seed);
    let sampler = Sampler::new(grammar);
    let mut counts = Counts::default();
    for _ in 0..3 {
        let Some(segments) = sampler.sample(&mut rng, 16) else {
            break;
        };
        let document = match segments.as_slice() {
            [Segment::Text(text)] => text.as_bytes().to_vec(),
            [] => Vec::new(),
            other => panic!("no tokens in these grammars: {other:?}"),
        };
        let mut matcher = Matcher::with_vocabulary(grammar, model.index.clone());
        for position in 0..=document.len() {
            if position > 0 {
                matcher
                    .accept_bytes(&document[position - 1..position])
                    .unwrap();
            }
            let jump: JumpForward = matcher
                .jump_forward_tokens(MAX_BYTES, |bytes| model.tokenize(bytes))
                .map_err(|error| TestCaseError::fail(error.to_string()))?;
            prop_assert_eq!(&jump.bytes, &matcher.jump_forward_bytes(MAX_BYTES));
            prop_assert_eq!(
                &jump.bytes,
                &forced_by_brute_force(&matcher, MAX_BYTES),
                "forced bytes after {:?}",
                String::from_utf8_lossy(&document[..position])
            );
            prop_assert!(document[position..].starts_with(&jump.bytes));
            // (a) accepted in order, (b) a prefix of the forced bytes.
            prop_assert_eq!(matcher.validate_tokens(&jump.tokens), jump.tokens.len());
            prop_assert_eq!(model.spell(&jump.tokens), &jump.bytes[..jump.covered]);
            if jump.bytes.is_empty() {
                continue;
            }
            counts.jumps += 1;
            counts.tokens += jump.tokens.len();
            counts.tokenized += model.tokenize(&jump.bytes).map_or(0, |ids| ids.len());
            // (c) every continuation tokenizes after the same tokens.
            let mut after = matcher.fork();
            after.accept_bytes(&jump.bytes).unwrap();
            let tail = &document[position + jump.bytes.len()..];
            for continuation in continuations(&after, tail, &mut rng) {
                let whole = [jump.bytes.as_slice(), continuation.as_slice()].concat();
                let ids = model.tokenize(&whole).unwrap();
                prop_assert!(
                    ids.starts_with(&jump.tokens),
                    "{:?} then {:?}: appended {:?}, but the whole tokenizes as {:?} ({:?})",
                    String::from_utf8_lossy(&jump.bytes),
                    String::from_utf8_lossy(&continuation),
                    jump.tokens
                        .iter()
                        .map(|&id| String::from_utf8_lossy(&model.texts[id as usize]).into_owned())
                        .collect::<Vec<_>>(),
                    ids.iter()
                        .map(|&id| String::from_utf8_lossy(&model.texts[id as usize]).into_owned())
                        .collect::<Vec<_>>(),
                    model.tokenizer
                );
            }
        }
    }
    Ok(counts)
}

fn tokenizer_of(choice: u8) -> Tokenizer {
    match choice % 3 {
        0 => Tokenizer::Bpe,
        1 => Tokenizer::Greedy,
        _ => Tokenizer::SplitBpe,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn jump_forward_agrees_with_brute_force(
        text in grammar_with_runs(),
        merges in 0usize..40,
        choice in any::<u8>(),
        seed in any::<u64>(),
    ) {
        let grammar = compile(&text);
        let mut rng = SmallRng::seed_from_u64(seed);
        let model = Model::random(&mut rng, merges, tokenizer_of(choice));
        check(&grammar, &model, seed)?;
    }

    #[test]
    fn jump_forward_agrees_with_dense_merges(
        text in letters_grammar(),
        choice in any::<u8>(),
        seed in any::<u64>(),
    ) {
        let grammar = compile(&text);
        let mut rng = SmallRng::seed_from_u64(seed);
        let model = Model::dense(&mut rng, tokenizer_of(choice));
        check(&grammar, &model, seed)?;
    }

    #[test]
    fn jump_forward_agrees_on_general_grammars(
        text in common::grammar_text(),
        merges in 0usize..40,
        choice in any::<u8>(),
        seed in any::<u64>(),
    ) {
        let grammar = compile(&text);
        let mut rng = SmallRng::seed_from_u64(seed);
        let model = Model::random(&mut rng, merges, tokenizer_of(choice));
        check(&grammar, &model, seed)?;
    }
}

/// The property is not met by appending nothing: over fixed seeds, with each tokenizer,
/// on both kinds of vocabulary, most forced runs' tokens are appended.
#[test]
fn most_forced_tokens_are_appended() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    for dense in [false, true] {
        for choice in 0..3 {
            let mut runner = TestRunner::new_with_rng(
                Config::default(),
                TestRng::deterministic_rng(RngAlgorithm::ChaCha),
            );
            let mut total = Counts::default();
            for seed in 0..40u64 {
                let mut rng = SmallRng::seed_from_u64(seed);
                let (text, model) = if dense {
                    let text = letters_grammar().new_tree(&mut runner).unwrap().current();
                    (text, Model::dense(&mut rng, tokenizer_of(choice)))
                } else {
                    let text = grammar_with_runs().new_tree(&mut runner).unwrap().current();
                    (text, Model::random(&mut rng, 30, tokenizer_of(choice)))
                };
                let counts = check(&compile(&text), &model, seed).unwrap();
                total.jumps += counts.jumps;
                total.tokens += counts.tokens;
                total.tokenized += counts.tokenized;
            }
            let label = format!(
                "{:?} on a {} vocabulary",
                tokenizer_of(choice),
                if dense { "dense" } else { "random" }
            );
            eprintln!("{label}: {total:?}");
            assert!(total.jumps > 100, "{label}: {total:?}");
            assert!(
                total.tokens * 2 > total.tokenized,
                "{label}: too few tokens appended: {total:?}"
            );
        }
    }
}
