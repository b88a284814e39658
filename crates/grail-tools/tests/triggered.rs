//! The triggered grammar of `tool_choice` `auto` (see `answer.rs`) against a reference
//! written apart from it: an answer is text, then a block of calls exactly where a call's
//! start (the trigger) is written, then text, and so on. The reference splits the answer
//! at every occurrence of the trigger (found by a regular expression); the text before
//! the first may not start like calls or with whitespace, every later piece must start
//! with a valid block of calls (from the pool the answers were made of) and may go on
//! with any text; the calls in all are at most the request's maximum.
//!
//! Answers are made of texts (with pieces and damaged copies of the trigger), valid
//! blocks and invalid ones (an unknown tool, a required argument missing, another tool's
//! arguments, a block cut short). They are given to the grammar token by token, over a
//! vocabulary made of single characters and of pieces cut from the answers themselves,
//! so tokens split triggers and end past them; each answer is cut into tokens at random.
//! At every step the mask must allow the next token exactly when the matcher accepts it,
//! and the answer must be accepted to its end exactly when the reference says it is
//! valid. The validator must read every valid answer's calls.

use std::sync::Arc;

use grail_engine::{CompiledGrammar, Matcher, TokenBitmask, VocabularyIndex};
use grail_tools::{
    CallOptions, Think, ToolChoice, ToolRegistry, WireFormat, tool_call_grammar, validate_output,
};
use grail_vocab::{TokenKind, Vocabulary};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use regex::Regex;

/// Answers made per wire format and maximum of calls.
const ANSWERS: usize = 150;

fn registry() -> ToolRegistry {
    ToolRegistry::from_json_text(
        r#"[
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
            "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"]}}}
    ]"#,
    )
    .unwrap()
}

/// A block of calls as written, and how many calls it holds (0: an invalid block).
#[derive(Debug, Clone)]
struct Block {
    text: String,
    calls: usize,
}

/// The pool of blocks answers are made of: valid blocks of one and two calls, and
/// invalid ones.
fn blocks(registry: &ToolRegistry, wire: WireFormat, parallel: bool) -> Vec<Block> {
    let valid = [
        ("get_weather", r#"{"city": "Paris"}"#),
        ("get_weather", r#"{"city": "a <tool_call> b"}"#),
        ("add", r#"{"a": 1, "b": -20}"#),
    ];
    let invalid = [
        ("get_wether", r#"{"city": "Paris"}"#),
        ("add", r#"{"a": 1}"#),
        ("add", r#"{"city": "Paris"}"#),
    ];
    let write = |calls: &[(&str, &str)]| wire.write_calls_for(registry, calls, parallel);
    let mut pool: Vec<Block> = valid
        .iter()
        .map(|call| Block {
            text: write(&[*call]),
            calls: 1,
        })
        .collect();
    if parallel {
        pool.push(Block {
            text: write(&[valid[0], valid[2]]),
            calls: 2,
        });
    }
    for call in invalid {
        pool.push(Block {
            text: write(&[call]),
            calls: 0,
        });
    }
    // A block cut short.
    let whole = write(&[valid[2]]);
    let cut = whole
        .char_indices()
        .nth(whole.chars().count() / 2)
        .unwrap()
        .0;
    pool.push(Block {
        text: whole[..cut].to_string(),
        calls: 0,
    });
    pool
}

/// What starts a call, as the reference finds it.
fn trigger(wire: WireFormat) -> (Regex, &'static str) {
    match wire {
        WireFormat::OpenAi => (
            Regex::new(r#"\{[ \t\n\r]*"name"[ \t\n\r]*:"#).unwrap(),
            r#"{"name":"#,
        ),
        WireFormat::Hermes => (Regex::new("<tool_call>").unwrap(), "<tool_call>"),
        WireFormat::MistralV11 => (Regex::new(r"\[TOOL_CALLS\]").unwrap(), "[TOOL_CALLS]"),
        WireFormat::KimiK2 => (
            Regex::new(r"<\|tool_calls_section_begin\|>").unwrap(),
            "<|tool_calls_section_begin|>",
        ),
        WireFormat::DeepSeek => (
            Regex::new("<｜tool▁calls▁begin｜>").unwrap(),
            "<｜tool▁calls▁begin｜>",
        ),
        other => unreachable!("{other:?} is not tested here"),
    }
}

/// The reference's verdict on `answer` (see the module doc).
fn reference(answer: &str, wire: WireFormat, pool: &[Block], most: Option<usize>) -> bool {
    let (trigger, _) = trigger(wire);
    let lead = &answer[..trigger
        .find(answer)
        .map_or(answer.len(), |found| found.start())];
    let calls_start_with: &[char] = match wire {
        WireFormat::OpenAi => &['{', '['],
        WireFormat::MistralV11 => &['['],
        _ => &['<'],
    };
    if let Some(first) = lead.chars().next()
        && (first.is_ascii_whitespace() || calls_start_with.contains(&first))
    {
        return false;
    }
    !answer.is_empty() && blocks_then_text(answer, &trigger, pool, most.unwrap_or(usize::MAX))
}

/// Whether `text` is text up to the first trigger (none: all text), then a valid block
/// there, then the same again, with at most `left` calls.
fn blocks_then_text(text: &str, trigger: &Regex, pool: &[Block], left: usize) -> bool {
    let Some(found) = trigger.find(text) else {
        return true;
    };
    let rest = &text[found.start()..];
    pool.iter().any(|block| {
        block.calls > 0
            && block.calls <= left
            && rest.starts_with(&block.text)
            && blocks_then_text(&rest[block.text.len()..], trigger, pool, left - block.calls)
    })
}

/// The calls of a valid `answer` as the reference reads them.
fn reference_calls(answer: &str, wire: WireFormat, pool: &[Block]) -> usize {
    let (trigger, _) = trigger(wire);
    let mut calls = 0;
    let mut rest = answer;
    while let Some(found) = trigger.find(rest) {
        let at = &rest[found.start()..];
        // The longest block that leaves a valid rest.
        let block = pool
            .iter()
            .filter(|block| block.calls > 0 && at.starts_with(&block.text))
            .filter(|block| blocks_then_text(&at[block.text.len()..], &trigger, pool, usize::MAX))
            .max_by_key(|block| block.text.len())
            .expect("a valid answer");
        calls += block.calls;
        rest = &at[block.text.len()..];
    }
    calls
}

/// Byte ranges of `trigger` in `answer` outside blocks: where calls start.
fn trigger_ranges(answer: &str, wire: WireFormat) -> Vec<(usize, usize)> {
    trigger(wire)
        .0
        .find_iter(answer)
        .map(|found| (found.start(), found.end()))
        .collect()
}

/// Random text: letters, layout, the characters calls are written with, pieces and
/// damaged copies of the trigger, and now and then the whole trigger.
fn text(rng: &mut SmallRng, trigger: &str) -> String {
    let alphabet: Vec<char> = "ab <>{}[]\":|_\n".chars().collect();
    let trigger: Vec<char> = trigger.chars().collect();
    let mut out = String::new();
    for _ in 0..rng.random_range(0..5) {
        match rng.random_range(0..10) {
            0..=5 => out.push(alphabet[rng.random_range(0..alphabet.len())]),
            6 | 7 => out.extend(&trigger[..rng.random_range(1..trigger.len())]),
            8 => {
                let mut damaged = trigger.clone();
                damaged.remove(rng.random_range(0..damaged.len()));
                out.extend(damaged);
            }
            _ if rng.random_bool(0.3) => out.extend(&trigger),
            _ => out.push('x'),
        }
    }
    out
}

/// An answer: text, then blocks and texts in turn.
fn answer(rng: &mut SmallRng, pool: &[Block], trigger: &str) -> String {
    let mut out = text(rng, trigger);
    for _ in 0..rng.random_range(0..4) {
        let block = match rng.random_bool(0.75) {
            true => {
                let valid: Vec<&Block> = pool.iter().filter(|block| block.calls > 0).collect();
                valid[rng.random_range(0..valid.len())]
            }
            false => &pool[rng.random_range(0..pool.len())],
        };
        out.push_str(&block.text);
        if rng.random_bool(0.6) {
            out.push_str(&text(rng, trigger));
        }
    }
    out
}

/// A vocabulary of every character of `answers` and pieces cut from them (2 to 10
/// characters, so that many split a trigger or end past one), and an end of generation.
fn vocabulary(rng: &mut SmallRng, answers: &[String]) -> Vocabulary {
    let mut tokens: Vec<String> = answers
        .iter()
        .flat_map(|answer| answer.chars().map(String::from))
        .collect();
    for answer in answers {
        let chars: Vec<char> = answer.chars().collect();
        for _ in 0..3 {
            if chars.len() < 2 {
                break;
            }
            let start = rng.random_range(0..chars.len() - 1);
            let end = rng.random_range(start + 2..=(start + 10).min(chars.len()));
            tokens.push(chars[start..end].iter().collect());
        }
    }
    tokens.sort();
    tokens.dedup();
    let mut kinds = vec![TokenKind::Text; tokens.len()];
    let mut bytes: Vec<Vec<u8>> = tokens.into_iter().map(String::into_bytes).collect();
    bytes.push(b"<eos>".to_vec());
    kinds.push(TokenKind::Special);
    let eos = bytes.len() as u32 - 1;
    Vocabulary::new("triggered", bytes, kinds, vec![eos], None)
}

/// `answer` cut into tokens of `vocabulary` at random (every character is a token).
fn tokenize(rng: &mut SmallRng, vocabulary: &Vocabulary, answer: &str) -> Vec<u32> {
    let mut ids = Vec::new();
    let mut rest = answer.as_bytes();
    while !rest.is_empty() {
        let fitting: Vec<u32> = vocabulary
            .iter()
            .filter(|(_, bytes, kind)| {
                *kind == TokenKind::Text && !bytes.is_empty() && rest.starts_with(bytes)
            })
            .map(|(id, _, _)| id)
            .collect();
        let id = fitting[rng.random_range(0..fitting.len())];
        rest = &rest[vocabulary.bytes(id).len()..];
        ids.push(id);
    }
    ids
}

#[test]
fn text_then_calls_exactly_where_the_trigger_ends_then_text() {
    let registry = registry();
    let mut rng = SmallRng::seed_from_u64(53);
    let (mut valid, mut invalid, mut straddling) = (0, 0, 0);
    let wires = [
        WireFormat::OpenAi,
        WireFormat::Hermes,
        WireFormat::MistralV11,
        WireFormat::KimiK2,
        WireFormat::DeepSeek,
    ];
    for wire in wires {
        for max_calls in [Some(1), Some(3), None] {
            let options = CallOptions {
                wire,
                choice: ToolChoice::Auto,
                max_calls,
                think: Think::Off,
                ..CallOptions::default()
            };
            let parallel = options.parallel();
            // Several calls on the JSON wire are a list, which this reference does not
            // read: one call per block there.
            let pool = blocks(&registry, wire, parallel && wire != WireFormat::OpenAi);
            if parallel && wire == WireFormat::OpenAi {
                continue;
            }
            let (_, trigger_text) = trigger(wire);
            let most = max_calls.map(|max| max as usize);
            let answers: Vec<String> = (0..ANSWERS)
                .map(|_| answer(&mut rng, &pool, trigger_text))
                .collect();
            let vocabulary = vocabulary(&mut rng, &answers);
            let index = Arc::new(VocabularyIndex::new(vocabulary));
            let grammar = tool_call_grammar(&registry, &options).unwrap();
            let compiled = CompiledGrammar::compile(&grammar.grammar, &Default::default()).unwrap();
            let eos = index.vocabulary().end_of_generation()[0];
            let mut mask = TokenBitmask::new(index.vocabulary().len());
            for answer in &answers {
                let expected = reference(answer, wire, &pool, most);
                let label = format!("{} {max_calls:?}: {answer:?}", wire.label());
                let tokens = tokenize(&mut rng, index.vocabulary(), answer);
                let triggers = trigger_ranges(answer, wire);
                let mut matcher = Matcher::with_vocabulary(&compiled, index.clone());
                let mut refused = false;
                let mut at = 0;
                for &id in &tokens {
                    matcher.fill_mask(&mut mask);
                    let allowed = mask.is_set(id);
                    let accepted = matcher.accept_token(id).is_ok();
                    assert_eq!(allowed, accepted, "{label}: token {id} at byte {at}");
                    let bytes = index.vocabulary().bytes(id);
                    let end = at + bytes.len();
                    // A token that starts inside a trigger, or ends past one it began.
                    if triggers
                        .iter()
                        .any(|&(start, stop)| at < stop && (at > start || end > stop))
                    {
                        straddling += 1;
                    }
                    at += bytes.len();
                    if !accepted {
                        refused = true;
                        break;
                    }
                }
                let ended = !refused && {
                    matcher.fill_mask(&mut mask);
                    mask.is_set(eos) && matcher.accept_token(eos).is_ok()
                };
                assert_eq!(ended, expected, "{label}");
                match expected {
                    true => {
                        valid += 1;
                        let checked = validate_output(&registry, &options, answer)
                            .unwrap_or_else(|fault| panic!("{label}: {}", fault.feedback()));
                        let blocks_calls = reference_calls(answer, wire, &pool);
                        assert_eq!(checked.calls.len(), blocks_calls, "{label}");
                    }
                    false => invalid += 1,
                }
            }
        }
    }
    assert!(
        valid > 500 && invalid > 500,
        "{valid} valid, {invalid} invalid"
    );
    assert!(straddling > 200, "{straddling} tokens split a trigger");
}
