//! Markers a model holds as special tokens are written as those tokens: given their ids
//! (`CallOptions::special_tokens`), the grammar lets the model write `[TOOL_CALLS]` or
//! `<|channel|>` as its one special token and refuses the marker spelt out in text
//! tokens; without the ids, markers are text. The decoded output (special tokens as their
//! text) reads back through the validator either way.

use std::sync::Arc;

use grail_engine::{CompiledGrammar, Matcher, VocabularyIndex};
use grail_tools::{
    CallOptions, Think, ToolChoice, ToolRegistry, WireFormat, tool_call_grammar, validate_output,
};
use grail_vocab::{TokenKind, Vocabulary};

fn registry() -> ToolRegistry {
    ToolRegistry::from_json_text(
        r#"[{"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]"#,
    )
    .unwrap()
}

/// A vocabulary of `special` tokens, then `text` tokens, then an end of generation.
fn vocabulary(special: &[&str], text: &[&str]) -> Arc<VocabularyIndex> {
    let mut tokens: Vec<Vec<u8>> = special.iter().map(|t| t.as_bytes().to_vec()).collect();
    let mut kinds = vec![TokenKind::Special; special.len()];
    tokens.extend(text.iter().map(|t| t.as_bytes().to_vec()));
    kinds.extend(vec![TokenKind::Text; text.len()]);
    // Every printable ASCII character, so that any text can be spelt.
    for c in ' '..='~' {
        tokens.push(c.to_string().into_bytes());
        kinds.push(TokenKind::Text);
    }
    tokens.push(b"\n".to_vec());
    kinds.push(TokenKind::Text);
    tokens.push(b"</s>".to_vec());
    kinds.push(TokenKind::Special);
    let eos = tokens.len() as u32 - 1;
    Arc::new(VocabularyIndex::new(Vocabulary::new(
        "special",
        tokens,
        kinds,
        vec![eos],
        None,
    )))
}

/// Ids of `pieces` in `index` (a special token by its text, else a text token).
fn ids(index: &VocabularyIndex, pieces: &[&str]) -> Vec<u32> {
    let vocabulary = index.vocabulary();
    pieces
        .iter()
        .map(|piece| {
            vocabulary
                .special_id_of_text(piece)
                .or_else(|| {
                    vocabulary
                        .iter()
                        .find(|(_, bytes, kind)| {
                            *kind == TokenKind::Text && *bytes == piece.as_bytes()
                        })
                        .map(|(id, _, _)| id)
                })
                .unwrap_or_else(|| panic!("no token {piece:?}"))
        })
        .collect()
}

/// Whether the grammar accepts `tokens` and then the end of generation.
fn accepts(compiled: &CompiledGrammar, index: &Arc<VocabularyIndex>, tokens: &[u32]) -> bool {
    let mut matcher = Matcher::with_vocabulary(compiled, index.clone());
    let eos = index.vocabulary().end_of_generation()[0];
    tokens.iter().all(|&id| matcher.accept_token(id).is_ok()) && matcher.accept_token(eos).is_ok()
}

/// The decoded text of `tokens`.
fn decoded(index: &VocabularyIndex, tokens: &[u32]) -> String {
    tokens
        .iter()
        .map(|&id| String::from_utf8_lossy(index.vocabulary().bytes(id)).into_owned())
        .collect()
}

/// Compiles the grammar of `options`, with the special tokens of `index` or without.
fn compiled(options: &CallOptions, index: &VocabularyIndex, with_tokens: bool) -> CompiledGrammar {
    let vocabulary = index.vocabulary();
    let options = CallOptions {
        special_tokens: match with_tokens {
            true => options
                .wire
                .marker_tokens(|text| vocabulary.special_id_of_text(text)),
            false => Vec::new(),
        },
        ..options.clone()
    };
    let grammar = tool_call_grammar(&registry(), &options).unwrap();
    CompiledGrammar::compile(&grammar.grammar, &Default::default()).unwrap()
}

#[test]
fn mistral_markers_are_written_as_their_special_tokens() {
    let index = vocabulary(
        &["[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"],
        &[
            "[TOOL",
            "_CALLS]",
            "[ARGS",
            "get_weather",
            "{\"city\": \"Paris\"}",
        ],
    );
    let options = CallOptions {
        wire: WireFormat::MistralV11,
        choice: ToolChoice::Auto,
        ..CallOptions::default()
    };
    let as_tokens = ids(
        &index,
        &[
            "[TOOL_CALLS]",
            "get_weather",
            "[ARGS]",
            "{\"city\": \"Paris\"}",
        ],
    );
    let spelt = ids(
        &index,
        &[
            "[TOOL",
            "_CALLS]",
            "get_weather",
            "[ARGS",
            "]",
            "{\"city\": \"Paris\"}",
        ],
    );
    assert_eq!(decoded(&index, &as_tokens), decoded(&index, &spelt));
    let with_tokens = compiled(&options, &index, true);
    assert!(accepts(&with_tokens, &index, &as_tokens));
    assert!(!accepts(&with_tokens, &index, &spelt));
    let as_text = compiled(&options, &index, false);
    assert!(!accepts(&as_text, &index, &as_tokens));
    assert!(accepts(&as_text, &index, &spelt));
    // Text that spells a marker is refused either way: the validator reads decoded text.
    let text = ids(&index, &["a", " ", "[TOOL", "_CALLS]"]);
    assert!(!accepts(&with_tokens, &index, &text));
    let checked = validate_output(&registry(), &options, &decoded(&index, &as_tokens)).unwrap();
    assert_eq!(checked.calls[0].name, "get_weather");
}

#[test]
fn harmony_channels_and_the_analysis_block_are_tokens() {
    let specials = [
        "<|channel|>",
        "<|message|>",
        "<|constrain|>",
        "<|call|>",
        "<|end|>",
        "<|start|>",
    ];
    let index = vocabulary(
        &specials,
        &[
            "analysis",
            "commentary",
            " to=functions.",
            "get_weather",
            " ",
            "json",
            "assistant",
            "{\"city\": \"Paris\"}",
            "Let me think.",
        ],
    );
    let options = CallOptions {
        wire: WireFormat::Harmony,
        choice: ToolChoice::Required,
        think: Think::Optional,
        ..CallOptions::default()
    };
    let answer = ids(
        &index,
        &[
            "<|channel|>",
            "analysis",
            "<|message|>",
            "Let me think.",
            "<|end|>",
            "<|start|>",
            "assistant",
            "<|channel|>",
            "commentary",
            " to=functions.",
            "get_weather",
            " ",
            "<|constrain|>",
            "json",
            "<|message|>",
            "{\"city\": \"Paris\"}",
            "<|call|>",
        ],
    );
    let with_tokens = compiled(&options, &index, true);
    assert!(accepts(&with_tokens, &index, &answer));
    // The reasoning may not close with the marker spelt out.
    let mut spelt_end = answer.clone();
    let end = spelt_end
        .iter()
        .position(|&id| id == ids(&index, &["<|end|>"])[0])
        .unwrap();
    spelt_end.splice(end..=end, ids(&index, &["<", "|", "e", "n", "d", "|", ">"]));
    assert!(!accepts(&with_tokens, &index, &spelt_end));
    let checked = validate_output(&registry(), &options, &decoded(&index, &answer)).unwrap();
    assert_eq!(checked.reasoning.as_deref(), Some("Let me think."));
    assert_eq!(checked.calls[0].name, "get_weather");
}
