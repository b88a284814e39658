//! The tool-call corpus (`testdata/tools/cases.json`): every case in every wire format.
//! Each accepted output matches the grammar and passes the validator; each rejected one
//! does neither, and the validator's feedback says why. Every grammar passes llama.cpp's
//! checks (`--target llama.cpp`).

use std::path::{Path, PathBuf};

use grail_engine::{CompiledGrammar, Matcher};
use grail_tools::{
    CallOptions, Think, ToolChoice, ToolRegistry, ToolsError, WireFormat, tool_call_grammar,
    validate_output,
};
use serde_json::Value;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/tools")
}

/// The registry `testdata/tools/<file>`.
fn registry(file: &str) -> ToolRegistry {
    ToolRegistry::from_json_text(&std::fs::read_to_string(testdata().join(file)).unwrap())
        .unwrap_or_else(|error| panic!("{file}: {error}"))
}

/// The options a case asks for, in `wire`.
fn options(case: &Value, wire: WireFormat) -> CallOptions {
    let choice = match case["choice"].as_str().unwrap_or("auto") {
        "auto" => ToolChoice::Auto,
        "required" => ToolChoice::Required,
        "none" => ToolChoice::None,
        name => ToolChoice::Named(name.to_string()),
    };
    let think = match case["think"].as_str().unwrap_or("off") {
        "optional" => Think::Optional,
        "required" => Think::Required,
        "forced" => Think::Forced,
        _ => Think::Off,
    };
    CallOptions {
        wire,
        choice,
        max_calls: case["parallel"].as_u64().map(|max| max as u32).or(Some(1)),
        think,
        ..CallOptions::default()
    }
}

/// An output of the corpus as `wire` writes it.
fn render(output: &Value, options: &CallOptions, registry: &ToolRegistry) -> String {
    let mut text = output["text_before"].as_str().unwrap_or("").to_string();
    if let Some(prose) = output["text"].as_str() {
        if options.wire == WireFormat::Harmony {
            return format!("<|channel|>final<|message|>{prose}");
        }
        text.push_str(prose);
        return text;
    }
    let wire = options.wire;
    let calls: Vec<(&str, String)> = output["calls"]
        .as_array()
        .expect("an output has `text` or `calls`")
        .iter()
        .map(|call| {
            (
                call["name"].as_str().unwrap(),
                call["arguments"].to_string(),
            )
        })
        .collect();
    let objects: Vec<String> = calls
        .iter()
        .map(|(name, arguments)| {
            format!(
                r#"{{"{}":"{name}","{}":{arguments}}}"#,
                wire.name_key(),
                wire.arguments_key()
            )
        })
        .collect();
    let several = calls.len() > 1 || options.parallel();
    // Each format as its model family writes it (see docs/tool-calling.md).
    let written = match wire {
        WireFormat::Hermes => objects
            .iter()
            .map(|call| format!("<tool_call>\n{call}\n</tool_call>"))
            .collect::<Vec<_>>()
            .join("\n"),
        WireFormat::Mistral => format!("[TOOL_CALLS][{}]", objects.join(", ")),
        WireFormat::Granite => format!("<|tool_call|>[{}]", objects.join(", ")),
        WireFormat::Llama3PythonTag => format!("<|python_tag|>{}", objects.join("; ")),
        WireFormat::MistralV11 => calls
            .iter()
            .map(|(name, arguments)| format!("[TOOL_CALLS]{name}[ARGS]{arguments}"))
            .collect(),
        WireFormat::DeepSeek => format!(
            "<｜tool▁calls▁begin｜>{}<｜tool▁calls▁end｜>",
            calls
                .iter()
                .map(|(name, arguments)| format!(
                    "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{arguments}\n```<｜tool▁call▁end｜>"
                ))
                .collect::<Vec<_>>()
                .join("\n")
        ),
        WireFormat::DeepSeekV31 => format!(
            "<｜tool▁calls▁begin｜>{}<｜tool▁calls▁end｜>",
            calls
                .iter()
                .map(|(name, arguments)| format!(
                    "<｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{arguments}<｜tool▁call▁end｜>"
                ))
                .collect::<String>()
        ),
        WireFormat::KimiK2 => format!(
            "<|tool_calls_section_begin|>{}<|tool_calls_section_end|>",
            calls
                .iter()
                .enumerate()
                .map(|(index, (name, arguments))| format!(
                    "<|tool_call_begin|>functions.{name}:{index}<|tool_call_argument_begin|>{arguments}<|tool_call_end|>"
                ))
                .collect::<String>()
        ),
        WireFormat::Qwen3Xml | WireFormat::Glm => {
            let (open, key_open, key_close, value_close, close) = match wire {
                WireFormat::Qwen3Xml => (
                    "<tool_call>\n<function=",
                    "<parameter=",
                    ">\n",
                    "\n</parameter>\n",
                    "</function>\n</tool_call>",
                ),
                _ => (
                    "<tool_call>",
                    "<arg_key>",
                    "</arg_key>\n<arg_value>",
                    "</arg_value>\n",
                    "</tool_call>",
                ),
            };
            let after_name = match wire {
                WireFormat::Qwen3Xml => ">\n",
                _ => "\n",
            };
            output["calls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|call| {
                    let name = call["name"].as_str().unwrap();
                    let schema = registry.get(name).map(|tool| &tool.parameters);
                    let mut text = format!("{open}{name}{after_name}");
                    for (key, value) in call["arguments"].as_object().unwrap() {
                        let property = schema.and_then(|schema| schema["properties"].get(key));
                        let written = match (value, property.is_some_and(is_text)) {
                            (Value::String(text), true) => text.clone(),
                            (other, _) => other.to_string(),
                        };
                        text.push_str(&format!("{key_open}{key}{key_close}{written}{value_close}"));
                    }
                    text.push_str(close);
                    text
                })
                .collect::<Vec<_>>()
                .join("\n")
        }
        // A Python list of calls, each argument `key=value`: a Python literal in
        // `pythonic`, JSON in `gemma3`.
        WireFormat::Pythonic | WireFormat::Gemma3 => {
            let written: Vec<String> = output["calls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|call| {
                    let arguments: Vec<String> = call["arguments"]
                        .as_object()
                        .unwrap()
                        .iter()
                        .map(|(key, value)| match wire {
                            WireFormat::Pythonic => format!("{key}={}", python_literal(value)),
                            _ => format!("{key}={value}"),
                        })
                        .collect();
                    format!("{}({})", call["name"].as_str().unwrap(), arguments.join(", "))
                })
                .collect();
            format!("[{}]", written.join(", "))
        }
        WireFormat::Harmony => calls
            .iter()
            .map(|(name, arguments)| {
                format!(
                    "<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{arguments}<|call|>"
                )
            })
            .collect(),
        WireFormat::OpenAi | WireFormat::ToolArgs | WireFormat::Llama3 if several => {
            format!("[{}]", objects.join(","))
        }
        WireFormat::OpenAi | WireFormat::ToolArgs | WireFormat::Llama3 => objects[0].clone(),
    };
    text.push_str(&written);
    text
}

/// `value` as a Python literal: JSON's text, but `True`, `False` and `None`.
fn python_literal(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(python_literal)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Object(members) => format!(
            "{{{}}}",
            members
                .iter()
                .map(|(key, value)| format!(
                    "{}: {}",
                    Value::String(key.clone()),
                    python_literal(value)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// Whether an argument of this schema is written as text in the formats that write
/// arguments apart: a string type, or an enum or const of strings only.
fn is_text(schema: &Value) -> bool {
    let all_strings = |values: &Value| {
        values
            .as_array()
            .is_some_and(|values| values.iter().all(Value::is_string))
    };
    match (schema.get("const"), schema.get("enum"), schema.get("type")) {
        (Some(value), _, _) => value.is_string(),
        (None, Some(values), kind) => {
            all_strings(values) && kind.is_none_or(|kind| kind == "string")
        }
        (None, None, kind) => kind.is_some_and(|kind| kind == "string"),
    }
}

fn matches(grammar: &CompiledGrammar, text: &str) -> bool {
    let mut matcher = Matcher::new(grammar);
    matcher.accept_str(text).is_ok() && matcher.is_accepting()
}

#[test]
fn tool_call_corpus_in_every_wire_format() {
    let corpus: Value =
        serde_json::from_str(&std::fs::read_to_string(testdata().join("cases.json")).unwrap())
            .unwrap();
    let (mut checked, mut refused_as_text) = (0, 0);
    let mut failures = Vec::new();
    for case in corpus["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let registry = registry(case["registry"].as_str().unwrap());
        for wire in WireFormat::ALL {
            let options = options(case, wire);
            let label = wire.label();
            // Harmony holds one call an answer, and text or a call, never both: its
            // refusal of several calls is checked here, its answers in the families' test.
            if wire
                .most_calls()
                .is_some_and(|most| options.max_calls.is_none_or(|max| max > most))
            {
                assert!(
                    tool_call_grammar(&registry, &options).is_err(),
                    "{name} ({label})"
                );
                continue;
            }
            // Harmony reasons in its analysis channel and frames its text: the corpus'
            // `<think>` cases and call-shaped text under `none` do not apply to it.
            if wire.frames_text()
                && (options.think != Think::Off || options.choice == ToolChoice::None)
            {
                continue;
            }
            let grammar = match tool_call_grammar(&registry, &options) {
                Ok(grammar) => grammar,
                // A string argument written as text has no grammar for its pattern,
                // format or lengths: refused, naming the keyword (docs/tool-calling.md).
                Err(ToolsError::SchemaRefused { refusals })
                    if matches!(wire, WireFormat::Qwen3Xml | WireFormat::Glm) =>
                {
                    for (tool, refusal) in &refusals {
                        assert!(
                            matches!(
                                refusal.keyword.as_deref(),
                                Some("pattern" | "format" | "minLength" | "maxLength")
                            ),
                            "{name} ({label}): {tool}: {refusal}"
                        );
                    }
                    refused_as_text += 1;
                    continue;
                }
                Err(error) => panic!("{name} ({label}): {error}"),
            };
            let gbnf = grammar.gbnf();
            let report = grail_grammar::check(
                &gbnf,
                &grail_grammar::CheckOptions {
                    target: grail_grammar::Target::LlamaCpp,
                    ..Default::default()
                },
            );
            assert!(
                report.is_ok(),
                "{name} ({label}): llama.cpp would refuse the grammar: {:?}",
                report.diagnostics
            );
            let compiled = CompiledGrammar::compile(&grammar.grammar, &Default::default())
                .unwrap_or_else(|error| panic!("{name} ({label}): {error}"));
            for output in case["accept"].as_array().into_iter().flatten() {
                if wire.frames_text() && output.get("text_before").is_some() {
                    continue;
                }
                let text = render(output, &options, &registry);
                checked += 1;
                if !matches(&compiled, &text) {
                    failures.push(format!("{name} ({label}): grammar rejects {text:?}"));
                }
                if let Err(fault) = validate_output(&registry, &options, &text) {
                    failures.push(format!(
                        "{name} ({label}): validator rejects {text:?}: {}",
                        fault.feedback()
                    ));
                }
            }
            for output in case["reject"].as_array().into_iter().flatten() {
                let text = render(output, &options, &registry);
                let why = output["why"].as_str().unwrap_or("");
                checked += 1;
                if matches(&compiled, &text) {
                    failures.push(format!(
                        "{name} ({label}): grammar accepts {text:?} ({why})"
                    ));
                }
                match validate_output(&registry, &options, &text) {
                    Ok(_) => failures.push(format!(
                        "{name} ({label}): validator accepts {text:?} ({why})"
                    )),
                    Err(fault) => {
                        let expected = output["feedback"].as_str().unwrap_or("");
                        if !fault.feedback().contains(expected) {
                            failures.push(format!(
                                "{name} ({label}): feedback for {text:?} ({why}) is {:?}, expected it to contain {expected:?}",
                                fault.feedback()
                            ));
                        }
                    }
                }
            }
        }
    }
    println!(
        "tool-call corpus: {checked} outputs checked; {refused_as_text} case-formats refused for string keywords the text formats cannot hold"
    );
    assert!(checked > 100, "the corpus is read");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn classification_grammar_takes_exactly_one_label() {
    let labels = ["CODE".to_string(), "REASONING".to_string()];
    let grammar = grail_tools::classification_grammar(&labels).unwrap();
    assert_eq!(
        grail_grammar::print_grammar(&grammar),
        "root ::= \"CODE\" | \"REASONING\"\n"
    );
    let compiled = CompiledGrammar::compile(&grammar, &Default::default()).unwrap();
    assert!(matches(&compiled, "CODE") && matches(&compiled, "REASONING"));
    assert!(!matches(&compiled, "CODER") && !matches(&compiled, "hello"));
    assert!(grail_tools::classification_grammar(&[]).is_err());
    assert!(grail_tools::classification_grammar(&[labels[0].clone(), labels[0].clone()]).is_err());
}

/// `auto` as llama-server's lazy grammar: the calls' grammar alone, a trigger that finds
/// where a call starts in free text, and the validator taking the text before the calls.
#[test]
fn lazy_grammars_hold_the_calls_from_their_trigger_on() {
    let registry = registry("seeds.tools.json");
    for wire in WireFormat::ALL {
        let options = CallOptions {
            wire,
            choice: ToolChoice::Auto,
            ..CallOptions::default()
        };
        let lazy = grail_tools::lazy_tool_call_grammar(&registry, &options).unwrap();
        let fields = lazy.llama_server_fields();
        assert_eq!(fields["grammar_lazy"], true);
        let trigger = &fields["grammar_triggers"][0];
        let call = render(
            &serde_json::json!({"calls": [{"name": "navigate", "arguments": {"action": "get_tree"}}]}),
            &options,
            &registry,
        );
        match trigger["type"].as_u64() {
            // A word: the call starts with it.
            Some(1) => assert!(call.starts_with(trigger["value"].as_str().unwrap())),
            // A pattern: it finds the call's start (checked here with the `regex` crate,
            // which reads these simple patterns as std::regex does).
            Some(2) => {
                let pattern = regex::Regex::new(trigger["value"].as_str().unwrap()).unwrap();
                assert_eq!(pattern.find(&format!("Sure. {call}")).unwrap().start(), 6);
            }
            other => panic!("trigger type {other:?}"),
        }
        let compiled =
            CompiledGrammar::compile(&lazy.grammar.grammar, &Default::default()).unwrap();
        assert!(matches(&compiled, &call), "{}: {call}", wire.label());
        assert!(
            !matches(&compiled, "Sure."),
            "{}: text is before the trigger",
            wire.label()
        );
        // Text before the call, where the format writes text bare (harmony frames it:
        // text or a call, never both).
        let before = format!("Let me look.\n{call}");
        let checked = validate_output(&registry, &options, &before);
        if wire.frames_text() {
            assert!(checked.is_err(), "{}: {before}", wire.label());
            continue;
        }
        let checked = checked.unwrap();
        assert_eq!(checked.text.as_deref(), Some("Let me look."));
        assert_eq!(checked.calls.len(), 1);
    }
    let required = CallOptions {
        choice: ToolChoice::Required,
        ..CallOptions::default()
    };
    assert!(grail_tools::lazy_tool_call_grammar(&registry, &required).is_err());
}

/// A call cut off by the token limit is reported as such, not as bad JSON.
#[test]
fn a_truncated_call_says_so() {
    let registry = registry("seeds.tools.json");
    let options = CallOptions {
        choice: ToolChoice::Required,
        ..CallOptions::default()
    };
    let fault = validate_output(
        &registry,
        &options,
        r#"{"name": "navigate", "arguments": {"action": "get_tr"#,
    )
    .unwrap_err();
    assert_eq!(fault.faults[0].code, "call-truncated");
    assert!(
        fault.feedback().contains("token limit"),
        "{}",
        fault.feedback()
    );
}
