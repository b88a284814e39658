//! Chat templates with tools, one folder a family under testdata/chat-templates: each
//! holds `template.jinja` (written by this team from the family's documented format) and
//! `conversation.json` (`tools`, `messages` with earlier calls and their results, and the
//! family's `bos_token` / `eos_token` texts where its template writes them, and the `wire`
//! format its template teaches, and `answers`: native calls, one and several, with the
//! OpenAI calls they mean, and calls the grammar must refuse); the rendered prompt is a
//! snapshot, the template must be seen to read `tools`, its call format must be detected,
//! and the format's grammar and parser must read the answers as written.

use std::path::Path;

use grail_engine::{CompileOptions, CompiledGrammar, Matcher};
use grail_gen::{
    Message, MessageToolCall, SpecialTexts, render_chat_with_tools, template_reads_tools,
};
use grail_tools::{
    CallOptions, ToolChoice, ToolRegistry, WireFormat, tool_call_grammar, validate_output,
};
use serde_json::{Value, json};

/// Every family's folder with its conversation, in name order.
fn families() -> Vec<(String, std::path::PathBuf, Value)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/chat-templates");
    let mut folders: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    folders.sort();
    assert!(!folders.is_empty(), "no families under {}", root.display());
    folders
        .into_iter()
        .map(|folder| {
            let family = folder.file_name().unwrap().to_string_lossy().into_owned();
            let conversation: Value = serde_json::from_str(
                &std::fs::read_to_string(folder.join("conversation.json")).unwrap(),
            )
            .unwrap_or_else(|error| panic!("{family}: {error}"));
            (family, folder, conversation)
        })
        .collect()
}

fn messages_of(conversation: &Value) -> Vec<Message> {
    let text = |value: &Value, key: &str| value[key].as_str().unwrap_or_default().to_string();
    conversation["messages"]
        .as_array()
        .expect("conversation.json has messages")
        .iter()
        .map(|message| match message["role"].as_str() {
            Some("assistant") if message.get("tool_calls").is_some() => Message::assistant_calls(
                text(message, "content"),
                message["tool_calls"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|call| {
                        MessageToolCall::new(
                            text(call, "id"),
                            text(call, "name"),
                            call["arguments"].clone(),
                        )
                    })
                    .collect(),
            ),
            Some("tool") => {
                Message::tool_result(text(message, "tool_call_id"), text(message, "content"))
            }
            _ => Message::new(text(message, "role"), text(message, "content")),
        })
        .collect()
}

#[test]
fn every_family_renders_tools_calls_and_results_through_its_template() {
    for (family, folder, conversation) in families() {
        let template = std::fs::read_to_string(folder.join("template.jinja")).unwrap();
        assert!(
            template_reads_tools(&template),
            "{family}: the template reads no `tools`"
        );
        let wire = conversation["wire"]
            .as_str()
            .expect("conversation.json names its wire format");
        assert_eq!(
            WireFormat::detect_from_template(&template),
            WireFormat::from_label(wire),
            "{family}: the call format detected from the template"
        );
        let tools = conversation["tools"].as_array().unwrap();
        let prompt = render_chat_with_tools(
            &template,
            &messages_of(&conversation),
            Some(tools),
            &SpecialTexts {
                bos: conversation["bos_token"]
                    .as_str()
                    .unwrap_or_default()
                    .into(),
                eos: conversation["eos_token"]
                    .as_str()
                    .unwrap_or_default()
                    .into(),
            },
        )
        .unwrap_or_else(|error| panic!("{family}: {error}"));
        insta::assert_snapshot!(format!("chat_template_{family}"), prompt);
    }
}

/// The calls of a checked answer as `{"name", "arguments"}` values.
fn calls_read(checked: &grail_tools::Checked) -> Value {
    Value::Array(
        checked
            .calls
            .iter()
            .map(|call| json!({"name": call.name, "arguments": call.arguments.value()}))
            .collect(),
    )
}

#[test]
fn every_familys_grammar_and_parser_read_its_native_calls() {
    let required = |wire, parallel: bool| CallOptions {
        wire,
        choice: ToolChoice::Required,
        max_calls: if parallel { None } else { Some(1) },
        ..CallOptions::default()
    };
    for (family, _, conversation) in families() {
        let wire = WireFormat::from_label(conversation["wire"].as_str().unwrap()).unwrap();
        let registry = ToolRegistry::from_value(&conversation["tools"]).unwrap();
        let answers = &conversation["answers"];
        let text = |key: &str| {
            answers[key]
                .as_str()
                .unwrap_or_else(|| panic!("{family}: no answers.{key}"))
        };
        for parallel in [false, true] {
            let options = required(wire, parallel);
            // A format that holds one call an answer (harmony) lists no `parallel`
            // answer, and refuses to write several.
            if parallel && answers.get("parallel").is_none() {
                assert!(
                    wire.most_calls() == Some(1),
                    "{family}: no answers.parallel"
                );
                assert!(tool_call_grammar(&registry, &options).is_err(), "{family}");
                continue;
            }
            let grammar = tool_call_grammar(&registry, &options).unwrap();
            let compiled =
                CompiledGrammar::compile(&grammar.grammar, &CompileOptions::default()).unwrap();
            let matches = |text: &str| {
                let mut matcher = Matcher::new(&compiled);
                matcher.accept_str(text).is_ok() && matcher.is_accepting()
            };
            // With several calls allowed, the JSON wires write a list even of one.
            let (key, calls) = match parallel {
                false => ("single", "single_calls"),
                true => ("parallel", "parallel_calls"),
            };
            let answer = text(key);
            assert!(matches(answer), "{family}: the grammar refuses {answer:?}");
            let checked = validate_output(&registry, &options, answer)
                .unwrap_or_else(|fault| panic!("{family}: {answer:?}: {}", fault.feedback()));
            assert_eq!(calls_read(&checked), answers[calls], "{family}: {key}");
            let mut refused: Vec<(String, &str)> = answers["refused"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(why, text)| (why.clone(), text.as_str().unwrap()))
                .collect();
            refused.push((
                "text where a call is required".into(),
                "It is sunny in Rome.",
            ));
            if !parallel && answers.get("parallel").is_some() {
                refused.push(("two calls where one may be".into(), text("parallel")));
            }
            assert!(refused.len() >= 4, "{family}: refusals are listed");
            for (why, answer) in refused {
                assert!(
                    !matches(answer),
                    "{family}: the grammar takes {why}: {answer:?}"
                );
                assert!(
                    validate_output(&registry, &options, answer).is_err(),
                    "{family}: the validator takes {why}: {answer:?}"
                );
            }
        }
    }
}

#[test]
fn a_template_without_a_tools_section_is_told_apart() {
    // SmolLM2-Instruct's template reads only the messages.
    let chatml = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
    assert!(!template_reads_tools(chatml));
    assert_eq!(WireFormat::detect_from_template(chatml), None);
    assert!(
        !template_reads_tools("{% if tools %"),
        "a template that does not parse reads nothing"
    );
}

#[test]
fn a_template_that_refuses_a_conversation_says_why() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/chat-templates");
    let template = std::fs::read_to_string(root.join("mistral/template.jinja")).unwrap();
    let messages = [
        Message::new("user", "Weather in Oslo?"),
        Message::assistant_calls(
            "",
            vec![MessageToolCall::new(
                "call_1",
                "get_weather",
                serde_json::json!({"city": "Oslo"}),
            )],
        ),
    ];
    let error = render_chat_with_tools(&template, &messages, Some(&[]), &SpecialTexts::default())
        .unwrap_err();
    assert!(
        error.to_string().contains("nine alphanumeric characters"),
        "{error}"
    );
}
