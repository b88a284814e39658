//! The decode loop on the tiny model: every constrained output matches its grammar (GBNF
//! files, schemas, tool registries in every wire format), both mask strategies agree,
//! and truncation, empty languages, inexpressible grammars and a validator that keeps
//! refusing give clear outcomes.

use std::path::Path;

use grail_engine::{CompileOptions, CompiledGrammar, Matcher};
use grail_gen::testing::TinyModel;
use grail_gen::{
    DecodeError, DecodeOptions, Finish, MaskStrategy, Message, Model, SamplingParams, ToolTask,
    chat_prompt, decode, run_tool_task,
};
use grail_schema::{SchemaOptions, schema_text_to_grammar};
use grail_tools::{CallOptions, ToolChoice, ToolRegistry, WireFormat};

fn repository() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn matches(grammar: &CompiledGrammar, bytes: &[u8]) -> bool {
    let mut matcher = Matcher::new(grammar);
    matcher.accept_bytes(bytes).is_ok() && matcher.is_accepting()
}

/// Decodes after the prompt "x" with `model`, under the GBNF `grammar`.
fn decode_gbnf(
    grammar: &str,
    mut model: TinyModel,
    options: &DecodeOptions,
) -> Result<grail_gen::Generation, DecodeError> {
    let grammar = CompiledGrammar::from_gbnf(grammar).unwrap();
    let prompt = model.tokenize("x").unwrap();
    decode(&mut model, &prompt, Some(&grammar), options)
}

/// Greedy, three sampled settings, and greedy with a repeat penalty.
fn settings() -> Vec<SamplingParams> {
    let mut settings = vec![SamplingParams::default()];
    for (seed, top_k, top_p) in [(1, 0, 1.0), (2, 5, 1.0), (3, 0, 0.9)] {
        settings.push(SamplingParams {
            temperature: 1.0,
            top_k,
            top_p,
            seed,
            ..SamplingParams::default()
        });
    }
    settings.push(SamplingParams {
        repeat_penalty: 1.5,
        ..SamplingParams::default()
    });
    settings
}

/// Decodes `grammar` with several models and settings and checks every output.
fn check_outputs(name: &str, grammar: &CompiledGrammar) {
    let mut finished = 0;
    for model_seed in 0..3 {
        let mut model = TinyModel::new(model_seed);
        let prompt = model.tokenize("Write it: ").unwrap();
        for (sampling, jump_forward) in settings()
            .into_iter()
            .flat_map(|sampling| [(sampling.clone(), false), (sampling, true)])
        {
            let options = DecodeOptions {
                max_tokens: 400,
                sampling,
                mask: MaskStrategy::CheckFirst,
                jump_forward,
                reasoning_budget: None,
            };
            let generation = decode(&mut model, &prompt, Some(grammar), &options)
                .unwrap_or_else(|error| panic!("{name}: {error}"));
            match generation.finish {
                Finish::Stop | Finish::Length => {
                    finished += 1;
                    assert!(
                        matches(grammar, &generation.bytes),
                        "{name}: {:?} does not match",
                        generation.text()
                    );
                }
                Finish::Truncated => assert!(!matches(grammar, &generation.bytes)),
                Finish::Interrupted => panic!("{name}: interrupted without an observer"),
            }
        }
    }
    assert!(
        finished > 0,
        "{name}: no run finished within the token limit"
    );
}

#[test]
fn outputs_match_gbnf_grammars() {
    // The example, and llama.cpp's own grammars where ../shared is beside the checkout.
    for file in [
        "examples/tool-call.gbnf",
        "../shared/conformance/llama.cpp/grammars/json.gbnf",
        "../shared/conformance/llama.cpp/grammars/list.gbnf",
        "../shared/conformance/llama.cpp/grammars/arithmetic.gbnf",
        "../shared/conformance/llama.cpp/grammars/chess.gbnf",
    ] {
        let path = repository().join(file);
        let Ok(text) = std::fs::read_to_string(&path) else {
            eprintln!("skipped: {} is absent", path.display());
            continue;
        };
        let grammar = CompiledGrammar::from_gbnf(&text).unwrap();
        check_outputs(file, &grammar);
    }
    for (name, text) in [
        ("yes-no", r#"root ::= "yes" | "no""#),
        (
            "json-ish",
            r#"root ::= "{" ([a-z]{1,8} ":" [0-9]+ ("," [a-z]{1,8} ":" [0-9]+)*)? "}""#,
        ),
        ("unicode", r#"root ::= [é-ü]{2,5} "!""#),
    ] {
        check_outputs(name, &CompiledGrammar::from_gbnf(text).unwrap());
    }
}

#[test]
fn outputs_match_schemas() {
    let schemas = [
        r#"{"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3}},
            "required": ["name", "age"], "additionalProperties": false}"#,
        r#"{"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 4}"#,
        r#"{"type": "string", "format": "date"}"#,
    ];
    for schema in schemas {
        let converted = schema_text_to_grammar(schema, &SchemaOptions::default()).unwrap();
        let grammar =
            CompiledGrammar::compile(&converted.grammar, &CompileOptions::default()).unwrap();
        check_outputs(schema, &grammar);
    }
}

#[test]
fn tool_calls_are_valid_in_every_wire_format() {
    let text = std::fs::read_to_string(repository().join("examples/agent-tools.json")).unwrap();
    let registry = ToolRegistry::from_json_text(&text).unwrap();
    let messages = [Message::new("user", "List the files in src.")];
    // Formats that write string arguments as text end each only at its closing tag,
    // which the tiny model's random draws almost never write: they are tested on
    // written answers (tests/chat_templates.rs, grail-tools' corpus).
    let json_arguments = WireFormat::ALL
        .into_iter()
        .filter(|wire| !matches!(wire, WireFormat::Qwen3Xml | WireFormat::Glm));
    for wire in json_arguments {
        for choice in [ToolChoice::Required, ToolChoice::Named("get_inputs".into())] {
            let options = CallOptions {
                wire,
                choice: choice.clone(),
                ..CallOptions::default()
            };
            let task = ToolTask {
                registry: &registry,
                options: &options,
                messages: &messages,
                constrained: true,
                max_attempts: 1,
            };
            let mut model = TinyModel::new(5)
                .with_end_bias(4.0)
                .with_context_length(16_384);
            let decode_options = DecodeOptions {
                max_tokens: 1500,
                ..DecodeOptions::default()
            };
            let outcome = run_tool_task(&mut model, &task, &decode_options).unwrap();
            let attempt = &outcome.attempts[0];
            let checked = outcome.checked.unwrap_or_else(|| {
                panic!(
                    "{wire:?} {choice:?}: {:?} refused: {:?}",
                    attempt.generation.text(),
                    attempt.feedback
                )
            });
            assert_eq!(checked.calls.len(), 1, "{wire:?}");
            if let ToolChoice::Named(name) = &choice {
                assert_eq!(&checked.calls[0].name, name);
            }
        }
    }
}

#[test]
fn both_mask_strategies_give_the_same_greedy_output() {
    let grammar = CompiledGrammar::from_gbnf(
        r#"root ::= "{" "\"name\": \"" [a-z]+ "\", \"n\": " [0-9]{1,3} "}""#,
    )
    .unwrap();
    for seed in 0..5 {
        let mut outputs = Vec::new();
        for mask in [MaskStrategy::CheckFirst, MaskStrategy::Always] {
            let mut model = TinyModel::new(seed);
            let prompt = model.tokenize("x").unwrap();
            let options = DecodeOptions {
                max_tokens: 200,
                mask,
                ..DecodeOptions::default()
            };
            let generation = decode(&mut model, &prompt, Some(&grammar), &options).unwrap();
            outputs.push((generation.bytes, generation.finish));
        }
        assert_eq!(outputs[0], outputs[1], "seed {seed}");
    }
}

#[test]
fn a_token_limit_mid_grammar_is_truncation() {
    let options = DecodeOptions {
        max_tokens: 5,
        ..DecodeOptions::default()
    };
    let generation =
        decode_gbnf(r#"root ::= "a"{20}"#, TinyModel::ascii_only(1), &options).unwrap();
    assert_eq!(generation.finish, Finish::Truncated);
    assert_eq!(generation.text(), "aaaaa");
    assert_eq!(generation.tokens.len(), 5);
}

#[test]
fn the_observer_sees_every_token_and_can_end_the_output() {
    let grammar = CompiledGrammar::from_gbnf(r#"root ::= "a"{20}"#).unwrap();
    let mut model = TinyModel::ascii_only(1);
    let prompt = model.tokenize("x").unwrap();
    let mut seen = Vec::new();
    let generation = grail_gen::decode_observed(
        &mut model,
        &prompt,
        Some(&grammar),
        &DecodeOptions::default(),
        &mut |bytes| {
            seen.extend_from_slice(bytes);
            if seen.len() >= 3 {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        },
    )
    .unwrap();
    assert_eq!(generation.finish, Finish::Interrupted);
    assert_eq!(generation.bytes, seen);
    assert!(generation.text().starts_with("aaa"));
}

#[test]
fn a_complete_grammar_ends_without_asking_the_model() {
    // A model that never wants to end.
    let generation = decode_gbnf(
        r#"root ::= "done""#,
        TinyModel::new(2).with_end_bias(-100.0),
        &DecodeOptions::default(),
    )
    .unwrap();
    assert_eq!(
        (generation.text().as_str(), generation.finish),
        ("done", Finish::Stop)
    );
}

#[test]
fn an_empty_language_is_refused() {
    let error = decode_gbnf(
        "root ::= a\na ::= \"x\" a",
        TinyModel::new(0),
        &DecodeOptions::default(),
    )
    .unwrap_err();
    assert_eq!(error, DecodeError::EmptyLanguage);
    assert!(error.to_string().contains("matches no text"));
}

#[test]
fn a_grammar_the_vocabulary_cannot_write_is_an_error() {
    let error = decode_gbnf(
        r#"root ::= "ok " "é""#,
        TinyModel::ascii_only(0),
        &DecodeOptions::default(),
    )
    .unwrap_err();
    match &error {
        DecodeError::NoAllowedToken { written, offset } => {
            assert_eq!((written.as_str(), *offset), ("ok ", 3));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        error.to_string().contains("can continue the grammar"),
        "{error}"
    );
}

#[test]
fn a_prompt_too_long_for_the_context_is_an_error() {
    let grammar = CompiledGrammar::from_gbnf(r#"root ::= "a""#).unwrap();
    let mut model = TinyModel::new(0).with_context_length(8);
    let prompt = model.tokenize("abcdef").unwrap();
    let error = decode(
        &mut model,
        &prompt,
        Some(&grammar),
        &DecodeOptions::default(),
    )
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("more than the model's context of 8"),
        "{error}"
    );
}

#[test]
fn a_refused_call_goes_back_to_the_model_until_the_cap() {
    // Three booleans can never be unique: the grammar (lenient about `uniqueItems`) lets
    // the model write them, and the validator refuses every time.
    let registry = ToolRegistry::from_json_text(
        r#"[{"name": "pick", "parameters": {"type": "object", "properties": {
            "flags": {"type": "array", "items": {"type": "boolean"}, "minItems": 3, "maxItems": 3,
                      "uniqueItems": true}}, "required": ["flags"]}}]"#,
    )
    .unwrap();
    let mut options = CallOptions {
        choice: ToolChoice::Required,
        ..CallOptions::default()
    };
    options.schema.mode = grail_schema::Mode::Lenient;
    let messages = [Message::new("user", "Pick.")];
    let task = ToolTask {
        registry: &registry,
        options: &options,
        messages: &messages,
        constrained: true,
        max_attempts: 3,
    };
    let mut model = TinyModel::new(9).with_end_bias(4.0);
    let outcome = run_tool_task(&mut model, &task, &DecodeOptions::default()).unwrap();
    assert!(outcome.checked.is_none());
    assert_eq!(outcome.attempts.len(), 3);
    for attempt in &outcome.attempts {
        let feedback = attempt.feedback.as_deref().unwrap();
        assert!(feedback.contains("pick"), "{feedback}");
    }
    // The last prompt carried the feedback of the first two attempts.
    let held = model.tokens().to_vec();
    let prompt_text: Vec<u8> = held
        .iter()
        .flat_map(|&id| model.vocabulary().vocabulary().bytes(id).to_vec())
        .collect();
    let prompt_text = String::from_utf8_lossy(&prompt_text);
    assert_eq!(
        prompt_text.matches("That tool call is not valid").count(),
        2
    );
}

#[test]
fn unconstrained_decoding_stops_at_the_end_token() {
    let mut model = TinyModel::new(3).with_end_bias(6.0);
    let prompt = chat_prompt(&model, &[Message::new("user", "Hi")]).unwrap();
    let generation = decode(&mut model, &prompt, None, &DecodeOptions::default()).unwrap();
    assert_eq!(generation.finish, Finish::Stop);
    assert_eq!(generation.tokens.last(), Some(&0));
}

#[test]
fn a_reasoning_budget_closes_the_block_and_the_grammar_goes_on() {
    // A reasoning block the noise model would fill up to the token limit, then a call.
    let registry = ToolRegistry::from_json_text(
        r#"[{"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"]}}]"#,
    )
    .unwrap();
    let options = CallOptions {
        choice: ToolChoice::Required,
        think: grail_tools::Think::Required,
        ..CallOptions::default()
    };
    let grammar = grail_tools::tool_call_grammar(&registry, &options).unwrap();
    let grammar = CompiledGrammar::compile(&grammar.grammar, &CompileOptions::default()).unwrap();
    let budget = |tokens| DecodeOptions {
        max_tokens: 120,
        reasoning_budget: Some(grail_gen::ReasoningBudget {
            tokens,
            open: "<think>".into(),
            close: "</think>".into(),
        }),
        ..DecodeOptions::default()
    };
    let mut closed = 0;
    for seed in 0..6 {
        for tokens in [0, 1, 7] {
            let mut model = TinyModel::new(seed);
            let prompt = model.tokenize("x").unwrap();
            let generation = decode(&mut model, &prompt, Some(&grammar), &budget(tokens)).unwrap();
            let text = generation.text();
            assert!(matches(&grammar, &generation.bytes), "{text:?}");
            // The block: the token that completes `<think>`, at most `tokens` more, then
            // the token that completes `</think>` (the marker is one token here). The
            // output must still be a call under the grammar.
            let vocabulary = model.vocabulary().clone();
            let prefixes: Vec<String> = generation
                .tokens
                .iter()
                .scan(String::new(), |written, &id| {
                    written.push_str(&String::from_utf8_lossy(vocabulary.vocabulary().bytes(id)));
                    Some(written.clone())
                })
                .collect();
            let opened = prefixes.iter().position(|p| p.contains("<think>")).unwrap();
            let ended = prefixes
                .iter()
                .position(|p| p.contains("</think>"))
                .unwrap();
            // (Up to three more where the budget ends inside a character.)
            assert!(
                ended - opened - 1 <= tokens + 3,
                "{tokens}: {} tokens inside the block of {text:?}",
                ended - opened - 1
            );
            closed += 1;
        }
    }
    assert_eq!(closed, 18);
    // Without a block to close, the budget is an error that says why.
    let plain = CompiledGrammar::from_gbnf(r#"root ::= "<think>" [a-z]{30}"#).unwrap();
    let mut model = TinyModel::new(1);
    let prompt = model.tokenize("x").unwrap();
    let error = decode(&mut model, &prompt, Some(&plain), &budget(2)).unwrap_err();
    assert!(error.to_string().contains("reasoning block"), "{error}");
}
