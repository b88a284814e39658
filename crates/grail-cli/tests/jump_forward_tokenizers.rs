//! Jump-forward tokens with real tokenizers (Llama 3 and SmolLM2's `tokenizer.json`, run
//! by the `tokenizers` crate; read from `../shared/bench/vocab`, skipped when absent): at
//! every character boundary of documents sampled from a few grammars, the tokens
//! `Matcher::jump_forward_tokens` appends are accepted by the matcher, spell a prefix of
//! the forced bytes, and begin the tokenizer's own tokens of the forced bytes followed by
//! any continuation tried (the rest of the document and its prefixes, and random walks
//! the grammar allows).

#![cfg(feature = "tokenize")]

use std::path::PathBuf;
use std::sync::Arc;

use grail_engine::{CompiledGrammar, Matcher, Sampler, Segment, VocabularyIndex};
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use tokenizers::Tokenizer;

/// Grammars with forced runs between choices: JSON keys that share a prefix (`orderId`
/// and `orderName`, the case llguidance's documentation describes), a compact tool call,
/// an indented object, and general JSON.
const GRAMMARS: &[&str] = &[
    r#"root ::= "{\"order" ("Id" | "Name") "\":" [0-9]+ "}""#,
    r#"root ::= "{\"name\":\"" ("search\",\"arguments\":{\"query\":" string | "read_file\",\"arguments\":{\"path\":" string) "}}"
string ::= "\"" [a-zA-Z0-9 ._/-]* "\"""#,
    r#"root ::= "{\n  \"name_of_the_person\": " string ",\n  \"age\": " [0-9]{1,3} ",\n  \"tags\": [" (string ("," string)*)? "]\n}"
string ::= "\"" [a-z ]{0,12} "\"""#,
];

/// Characters the random continuations are made of.
const WALK: &str = "abcdefINghijklmnopqrstuvwxyz_0123456789 \n\t\"{}[]:,./-";

fn vocabulary_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench/vocab")
}

fn tokens_text(index: &VocabularyIndex, ids: &[u32]) -> Vec<String> {
    ids.iter()
        .map(|&id| String::from_utf8_lossy(index.vocabulary().bytes(id)).into_owned())
        .collect()
}

/// Continuations of a matcher after the forced bytes: prefixes of `tail` ending at
/// character boundaries, and random walks over [`WALK`] it accepts.
fn continuations(after: &Matcher, tail: &str, rng: &mut SmallRng) -> Vec<String> {
    let mut found: Vec<String> = tail
        .char_indices()
        .map(|(end, c)| tail[..end + c.len_utf8()].to_string())
        .collect();
    let walk_chars: Vec<char> = WALK.chars().collect();
    for _ in 0..4 {
        let mut walker = after.fork();
        let mut walk = String::new();
        for _ in 0..rng.random_range(1..12) {
            let next: Vec<char> = walk_chars
                .iter()
                .copied()
                .filter(|&c| walker.fork().accept_char(c).is_ok())
                .collect();
            let Some(&c) = next.choose(rng) else { break };
            walker.accept_char(c).unwrap();
            walk.push(c);
        }
        if !walk.is_empty() {
            found.push(walk);
        }
    }
    found
}

/// Checks one tokenizer on every grammar; returns (forced runs, tokens appended, tokens
/// of the forced runs alone).
fn check(name: &str) -> Option<(usize, usize, usize)> {
    let path = vocabulary_dir().join(name).join("tokenizer.json");
    if !path.exists() {
        eprintln!("skipped: {} is absent", path.display());
        return None;
    }
    let tokenizer = Tokenizer::from_file(&path).expect("read tokenizer.json");
    let index = Arc::new(VocabularyIndex::new(
        grail_vocab::load(&path).expect("load the vocabulary"),
    ));
    let tokenize = |bytes: &[u8]| {
        let text = std::str::from_utf8(bytes).ok()?;
        let encoding = tokenizer.encode(text, false).ok()?;
        Some(encoding.get_ids().to_vec())
    };
    let mut rng = SmallRng::seed_from_u64(7);
    let (mut runs, mut appended, mut alone) = (0, 0, 0);
    let mut grammars: Vec<String> = GRAMMARS.iter().map(|text| text.to_string()).collect();
    let json = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/cli/json.gbnf");
    grammars.push(std::fs::read_to_string(json).expect("read json.gbnf"));
    for text in &grammars {
        let grammar = CompiledGrammar::from_gbnf(text).expect("compile");
        let sampler = Sampler::new(&grammar);
        for _ in 0..8 {
            let Some(segments) = sampler.sample(&mut rng, 80) else {
                continue;
            };
            let [Segment::Text(document)] = segments.as_slice() else {
                panic!("no tokens in these grammars: {segments:?}");
            };
            let mut matcher = Matcher::with_vocabulary(&grammar, index.clone());
            let mut position = 0;
            loop {
                let jump = matcher
                    .jump_forward_tokens(256, tokenize)
                    .expect("the tokenizer spells its input");
                assert!(document.as_bytes()[position..].starts_with(&jump.bytes));
                assert_eq!(matcher.validate_tokens(&jump.tokens), jump.tokens.len());
                let spelled: Vec<u8> = jump
                    .tokens
                    .iter()
                    .flat_map(|&id| index.vocabulary().bytes(id).to_vec())
                    .collect();
                assert_eq!(spelled, &jump.bytes[..jump.covered]);
                if let Ok(forced) = std::str::from_utf8(&jump.bytes)
                    && !forced.is_empty()
                {
                    runs += 1;
                    appended += jump.tokens.len();
                    alone += tokenize(&jump.bytes).map_or(0, |ids| ids.len());
                    let mut after = matcher.fork();
                    after.accept_bytes(&jump.bytes).unwrap();
                    let tail_start = position + jump.bytes.len();
                    let tail = document.get(tail_start..).unwrap_or("");
                    for continuation in continuations(&after, tail, &mut rng) {
                        let whole = format!("{forced}{continuation}");
                        let ids = tokenize(whole.as_bytes()).unwrap();
                        assert!(
                            ids.starts_with(&jump.tokens),
                            "{name}: after {:?}, forced {forced:?} then {continuation:?}: appended {:?}, but the whole tokenizes as {:?}",
                            &document[..position],
                            tokens_text(&index, &jump.tokens),
                            tokens_text(&index, &ids)
                        );
                    }
                }
                let Some(c) = document[position..].chars().next() else {
                    break;
                };
                matcher.accept_char(c).unwrap();
                position += c.len_utf8();
            }
        }
    }
    // The key shared by `orderId` and `orderName`: where the tokenizer has `orderId` as
    // one token, `order` is not appended after `{"`.
    let grammar = CompiledGrammar::from_gbnf(GRAMMARS[0]).unwrap();
    let matcher = Matcher::with_vocabulary(&grammar, index.clone());
    let jump = matcher.jump_forward_tokens(256, tokenize).unwrap();
    assert_eq!(jump.bytes, b"{\"order");
    if index.vocabulary().id_of_text("orderId").is_some() {
        assert!(
            jump.covered <= 2,
            "{name}: {:?}",
            tokens_text(&index, &jump.tokens)
        );
    }
    Some((runs, appended, alone))
}

#[test]
fn llama3_and_smollm2_tokenize_after_the_appended_tokens() {
    for name in ["llama3", "smollm2"] {
        let Some((runs, appended, alone)) = check(name) else {
            continue;
        };
        eprintln!(
            "{name}: {runs} forced runs, {appended} tokens appended of {alone} in their own tokenization"
        );
        assert!(runs > 100, "{name}: {runs} forced runs");
        assert!(appended * 2 > alone, "{name}: {appended} of {alone}");
    }
}
