//! Chat templates with tools, one folder a family under testdata/chat-templates: each
//! holds `template.jinja` (written by this team from the family's documented format) and
//! `conversation.json` (`tools`, `messages` with earlier calls and their results, and the
//! family's `bos_token` / `eos_token` texts where its template writes them, and the `wire`
//! format its template teaches); the rendered prompt is a snapshot, the template must be
//! seen to read `tools`, and its call format must be detected.

use std::path::Path;

use grail_gen::{
    Message, MessageToolCall, SpecialTexts, render_chat_with_tools, template_reads_tools,
};
use grail_tools::WireFormat;
use serde_json::Value;

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
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/chat-templates");
    let mut families: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    families.sort();
    assert!(!families.is_empty(), "no families under {}", root.display());
    for folder in families {
        let family = folder.file_name().unwrap().to_string_lossy().into_owned();
        let template = std::fs::read_to_string(folder.join("template.jinja")).unwrap();
        let conversation: Value = serde_json::from_str(
            &std::fs::read_to_string(folder.join("conversation.json")).unwrap(),
        )
        .unwrap();
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
