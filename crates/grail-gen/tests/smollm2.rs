//! The decode loop on the real embedded model, SmolLM2-135M-Instruct through llama.cpp:
//! tool calls in every wire format, a schema and llama.cpp's json.gbnf, each output
//! checked against its grammar (and tool calls by the validator). Runs where the model is
//! in Grail's cache (`grail model fetch`, which `scripts/test.sh` runs) or named by
//! `GRAIL_TEST_MODEL`; says "skipped:" otherwise.
#![cfg(feature = "llama-cpp")]

use std::path::{Path, PathBuf};

use grail_engine::{CompileOptions, CompiledGrammar, Matcher};
use grail_gen::embedded::DEFAULT_MODEL;
use grail_gen::{
    Admission, BatchDecoder, DecodeOptions, Finish, LlamaCppModel, LlamaOptions, Message, Model,
    SamplingParams, ToolTask, chat_prompt, compile_tool_grammar, decode, run_tool_task,
};
use grail_schema::{SchemaOptions, schema_text_to_grammar};
use grail_tools::{CallOptions, ToolChoice, ToolRegistry, WireFormat};

fn model_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("GRAIL_TEST_MODEL") {
        return Some(PathBuf::from(path));
    }
    DEFAULT_MODEL.cached().ok().flatten()
}

fn load() -> Option<LlamaCppModel> {
    let Some(path) = model_path() else {
        eprintln!(
            "skipped: SmolLM2 is not in Grail's model cache (run `grail model fetch`, or set GRAIL_TEST_MODEL)"
        );
        return None;
    };
    let options = LlamaOptions {
        context: 4096,
        ..LlamaOptions::default()
    };
    Some(LlamaCppModel::load(&path, &options).expect("the cached model loads"))
}

fn repository() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn assert_matches(grammar: &CompiledGrammar, bytes: &[u8]) {
    let mut matcher = Matcher::new(grammar);
    assert!(
        matcher.accept_bytes(bytes).is_ok() && matcher.is_accepting(),
        "{:?} does not match",
        String::from_utf8_lossy(bytes)
    );
}

#[test]
fn smollm2_writes_valid_tool_calls_in_every_wire_format() {
    let Some(mut model) = load() else { return };
    let text = std::fs::read_to_string(repository().join("examples/agent-tools.json")).unwrap();
    let registry = ToolRegistry::from_json_text(&text).unwrap();
    let messages = [Message::new("user", "List the files in the src directory.")];
    let mut valid = 0;
    for wire in WireFormat::ALL {
        let options = CallOptions {
            wire,
            choice: ToolChoice::Required,
            ..CallOptions::default()
        };
        let task = ToolTask {
            registry: &registry,
            options: &options,
            messages: &messages,
            constrained: true,
            max_attempts: 2,
        };
        let decode_options = DecodeOptions {
            max_tokens: 400,
            sampling: SamplingParams {
                repeat_penalty: 1.2,
                ..SamplingParams::default()
            },
            ..DecodeOptions::default()
        };
        let outcome = run_tool_task(&mut model, &task, &decode_options).unwrap();
        let vocabulary = model.vocabulary().clone();
        let grammar = compile_tool_grammar(&registry, &options, vocabulary.vocabulary()).unwrap();
        for attempt in &outcome.attempts {
            let generation = &attempt.generation;
            eprintln!("{wire:?}: {:?} {}", generation.finish, generation.text());
            // Whatever the model wrote follows the grammar: a whole call, or (cut off by
            // the token limit) the start of one.
            let mut matcher = Matcher::with_vocabulary(&grammar, vocabulary.clone());
            assert!(
                generation
                    .tokens
                    .iter()
                    .filter(|&&token| !vocabulary.vocabulary().is_end_of_generation(token))
                    .all(|&token| matcher.accept_token(token).is_ok()),
                "{wire:?}"
            );
            match generation.finish {
                Finish::Truncated => assert!(!matcher.is_accepting()),
                _ => assert!(matcher.is_accepting(), "{wire:?}"),
            }
        }
        if let Some(checked) = outcome.checked {
            assert!(!checked.calls.is_empty(), "{wire:?}");
            valid += 1;
        }
    }
    // A small model may loop inside a free string until the token limit; most formats
    // must still give a valid call.
    assert!(
        valid >= 3,
        "only {valid} of 5 wire formats gave a valid call"
    );
}

#[test]
fn smollm2_output_matches_a_schema_and_json_gbnf() {
    let Some(mut model) = load() else { return };
    let schema = r#"{"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 20},
        "legs": {"type": "integer", "minimum": 0, "maximum": 8},
        "colors": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
        "required": ["name", "legs", "colors"], "additionalProperties": false}"#;
    let converted = schema_text_to_grammar(schema, &SchemaOptions::default()).unwrap();
    let schema_grammar =
        CompiledGrammar::compile(&converted.grammar, &CompileOptions::default()).unwrap();
    let mut grammars = vec![("schema", schema_grammar)];
    let json = repository().join("../shared/conformance/llama.cpp/grammars/json.gbnf");
    match std::fs::read_to_string(&json) {
        Ok(text) => grammars.push(("json.gbnf", CompiledGrammar::from_gbnf(&text).unwrap())),
        Err(_) => eprintln!("skipped: json.gbnf ({} is absent)", json.display()),
    }
    let messages = [Message::new(
        "user",
        "Describe a cat as a short JSON object.",
    )];
    let prompt = chat_prompt(&model, &messages).unwrap();
    for (name, grammar) in &grammars {
        let options = DecodeOptions {
            max_tokens: 250,
            ..DecodeOptions::default()
        };
        let generation = decode(&mut model, &prompt, Some(grammar), &options).unwrap();
        eprintln!("{name}: {:?} {:?}", generation.finish, generation.text());
        match generation.finish {
            Finish::Truncated => {}
            _ => assert_matches(grammar, &generation.bytes),
        }
        if *name == "schema" {
            assert_ne!(
                generation.finish,
                Finish::Truncated,
                "a short object fits in 250 tokens"
            );
        }
    }
    assert!(model.tokens().len() > prompt.len());
}

/// A long conversation is tokenized in pieces (llama.cpp's reading of special tokens
/// grows with the square of their number): the tokens are those of the whole text.
#[test]
fn a_long_prompt_in_pieces_has_the_tokens_of_the_whole() {
    let Some(model) = load() else {
        return;
    };
    let endings = [
        "",
        " ",
        "\n",
        ".",
        "  ",
        "é",
        "\t",
        "!\n",
        "xylophone",
        "wörterbuch",
    ];
    let mut text = String::new();
    let mut turn = 0;
    while text.len() < 150_000 {
        let role = if turn % 2 == 0 { "user" } else { "assistant" };
        text.push_str(&format!("<|im_start|>{role}\n"));
        text.push_str(&"word, 12 münchen {\"a\": 1} ".repeat(turn % 5 + 1));
        text.push_str(endings[turn % endings.len()]);
        text.push_str("<|im_end|>\n");
        turn += 1;
    }
    let pieces = model.tokenize(&text).unwrap();
    let whole = model.tokenize_whole(&text);
    assert_eq!(pieces.len(), whole.len());
    assert!(
        pieces == whole,
        "the tokens of the pieces differ from the whole's"
    );
}

/// Four tool-call requests decoded together on SmolLM2 (one llama.cpp batch per step),
/// all sharing the system prompt: every output is a call of the grammar and the shared
/// prefix is read once. Outputs are not compared with lone decodes: llama.cpp's CPU
/// kernels depend on the batch's size (SmolLM2's logits after a token read alone and in a
/// batch differ by up to ~1), so greedy outputs part at near ties (printed).
#[test]
fn smollm2_decodes_a_batch_with_shared_prompts() {
    let Some(path) = model_path() else {
        eprintln!("skipped: SmolLM2 is not in Grail's model cache");
        return;
    };
    let text = std::fs::read_to_string(repository().join("examples/agent-tools.json")).unwrap();
    let registry = ToolRegistry::from_json_text(&text).unwrap();
    let options = CallOptions {
        choice: ToolChoice::Required,
        ..CallOptions::default()
    };
    let load = |sequences, unified_cache| {
        let options = LlamaOptions {
            context: 2048,
            sequences,
            unified_cache,
            ..LlamaOptions::default()
        };
        LlamaCppModel::load(&path, &options).expect("the cached model loads")
    };
    let system = format!(
        "You call tools. The tools: {}. Answer with one call as JSON.",
        registry
            .tools
            .iter()
            .map(|tool| tool.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let questions = [
        "List the files in the src directory.",
        "Read the file README.md.",
        "Search the web for the weather in Paris.",
        "What time is it?",
    ];
    let mut alone_model = load(1, true);
    let vocabulary = alone_model.vocabulary().clone();
    let grammar = compile_tool_grammar(&registry, &options, vocabulary.vocabulary()).unwrap();
    let prompts: Vec<Vec<u32>> = questions
        .iter()
        .map(|question| {
            let messages = [
                Message::new("system", &system),
                Message::new("user", *question),
            ];
            chat_prompt(&alone_model, &messages).unwrap()
        })
        .collect();
    let decode_options = DecodeOptions {
        max_tokens: 120,
        ..DecodeOptions::default()
    };
    let alone: Vec<String> = prompts
        .iter()
        .map(|prompt| {
            decode(&mut alone_model, prompt, Some(&grammar), &decode_options)
                .unwrap()
                .text()
        })
        .collect();
    // One cache for all sequences, and a share each (the prefix copied).
    for unified in [true, false] {
        let mut decoder = BatchDecoder::new(Box::new(load(4, unified)));
        let mut ids = Vec::new();
        for prompt in &prompts {
            match decoder
                .admit(prompt, Some(&grammar), &decode_options)
                .unwrap()
            {
                Admission::Started(id) => ids.push(id),
                Admission::Busy => panic!("four sequences fit"),
            }
        }
        let mut outputs = vec![None; ids.len()];
        while decoder.running() > 0 {
            for (id, result) in decoder.step().finished {
                let index = ids.iter().position(|known| *known == id).unwrap();
                outputs[index] = Some(result.unwrap());
            }
        }
        // The first prompt is read whole; the others wait for it to read the system prompt,
        // and share it.
        let cached: Vec<usize> = outputs
            .iter()
            .map(|output| {
                let stats = &output.as_ref().unwrap().stats;
                stats.prompt_tokens - stats.prompt_tokens_read
            })
            .collect();
        assert_eq!(cached[0], 0);
        for &reused in &cached[1..] {
            assert!(reused > 20, "{cached:?}");
        }
        for (output, lone) in outputs.iter().zip(&alone) {
            let generation = output.as_ref().unwrap();
            eprintln!("batched: {:?} {}", generation.finish, generation.text());
            if generation.finish != Finish::Truncated {
                assert_matches(&grammar, &generation.bytes);
            }
            if &generation.text() != lone {
                eprintln!("alone:   {lone}");
            }
        }
    }
}

/// A prefix shared from another sequence gives the logits of reading it: one cache for
/// all sequences (the cells gain the sequence) and a share each (the cells copied).
#[test]
fn smollm2_a_shared_prefix_gives_the_logits_of_reading_it() {
    use grail_gen::{BatchModel, SequenceRead};
    let Some(path) = model_path() else {
        eprintln!("skipped: SmolLM2 is not in Grail's model cache");
        return;
    };
    for unified_cache in [true, false] {
        let options = LlamaOptions {
            context: 1024,
            sequences: 2,
            unified_cache,
            ..LlamaOptions::default()
        };
        let mut model = LlamaCppModel::load(&path, &options).unwrap();
        let prompt = model
            .tokenize("<|im_start|>system\nYou call tools: get_weather, search.<|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n")
            .unwrap();
        let shared = prompt.len() - 8;
        let read = |model: &mut LlamaCppModel, sequence, tokens: &[u32]| {
            model
                .forward_batch(&[SequenceRead {
                    sequence,
                    tokens,
                    logits: true,
                }])
                .unwrap();
            model.sequence_logits(sequence).to_vec()
        };
        read(&mut model, 0, &prompt[..shared]);
        let whole = read(&mut model, 0, &prompt[shared..]);
        model.share_prefix(0, 1, shared).unwrap();
        assert_eq!(model.sequence_tokens(1), &prompt[..shared]);
        let from_shared = read(&mut model, 1, &prompt[shared..]);
        let differs = whole
            .iter()
            .zip(&from_shared)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(
            differs < 0.01,
            "unified {unified_cache}: logits differ by {differs}"
        );
    }
}
