//! Tool calls end to end: the tools shown to the model (through its chat template's own
//! tool section when it has one, Grail's system prompt otherwise), the tool-call
//! grammar, decoding, and the validator; when the validator finds what the grammar
//! cannot say (`uniqueItems`, say), its feedback goes back to the model and it writes the
//! call again, up to a cap (seed 001's `consecutive_blocked`).

use grail_engine::{CompileOptions, CompiledGrammar};
use grail_tools::{
    CallOptions, Checked, ToolRegistry, ToolsError, WireFormat, tool_call_grammar, validate_output,
    written_calls,
};
use grail_vocab::Vocabulary;
use serde_json::Value;

use crate::chat::{Message, MessageToolCall, template_reads_tools};
use crate::decode::{DecodeError, DecodeOptions, Finish, Generation, decode};
use crate::model::Model;
use crate::prompt::{PromptError, chat_prompt_with_tools};
use crate::tool_prompt::tools_system_prompt;

/// The default cap on attempts (the first one included).
pub const DEFAULT_MAX_ATTEMPTS: usize = 3;

/// A tool-call task.
#[derive(Debug, Clone)]
pub struct ToolTask<'a> {
    /// The tools.
    pub registry: &'a ToolRegistry,
    /// Wire format, choice, calls, reasoning block.
    pub options: &'a CallOptions,
    /// The conversation (the tools' system prompt is put first, or joined to the
    /// conversation's own system message).
    pub messages: &'a [Message],
    /// Whether to constrain decoding with the tool-call grammar (off only to measure
    /// what the grammar brings, as `grail bench agent` does).
    pub constrained: bool,
    /// Attempts in all, the first included (at least 1).
    pub max_attempts: usize,
}

/// One attempt: what the model wrote, and the feedback when it was not valid.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// The model's output.
    pub generation: Generation,
    /// The validator's message, when the output was not valid.
    pub feedback: Option<String>,
}

/// The outcome of a tool-call task.
#[derive(Debug, Clone)]
pub struct ToolOutcome {
    /// Every attempt, in order.
    pub attempts: Vec<Attempt>,
    /// The valid output of the last attempt, if it was valid.
    pub checked: Option<Checked>,
}

/// Why a tool-call task failed before any answer could be judged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolTaskError {
    /// The tools could not become a grammar (a refused schema names its tool).
    #[error(transparent)]
    Tools(#[from] ToolsError),
    /// The grammar could not be compiled.
    #[error("the tool-call grammar could not be compiled: {0}")]
    Compile(String),
    /// The prompt could not be made.
    #[error(transparent)]
    Prompt(#[from] PromptError),
    /// Decoding failed.
    #[error(transparent)]
    Decode(#[from] DecodeError),
}

/// `options` with `vocabulary`'s special tokens among the wire format's markers (see
/// [`CallOptions::special_tokens`]): the grammar then lets the model write
/// `[TOOL_CALLS]` or `<|channel|>` as the one token it was trained to write.
pub fn with_special_tokens(options: &CallOptions, vocabulary: &Vocabulary) -> CallOptions {
    CallOptions {
        special_tokens: options
            .wire
            .marker_tokens(|text| vocabulary.special_id_of_text(text)),
        ..options.clone()
    }
}

/// Compiles the tool-call grammar of `registry` under `options` for a model of
/// `vocabulary` (its special tokens among the markers written as tokens: see
/// [`with_special_tokens`]).
pub fn compile_tool_grammar(
    registry: &ToolRegistry,
    options: &CallOptions,
    vocabulary: &Vocabulary,
) -> Result<CompiledGrammar, ToolTaskError> {
    let grammar = tool_call_grammar(registry, &with_special_tokens(options, vocabulary))?;
    CompiledGrammar::compile(&grammar.grammar, &CompileOptions::default())
        .map_err(|error| ToolTaskError::Compile(error.to_string()))
}

/// Runs `task` on `model` (see the module doc).
pub fn run_tool_task(
    model: &mut dyn Model,
    task: &ToolTask<'_>,
    decode_options: &DecodeOptions,
) -> Result<ToolOutcome, ToolTaskError> {
    let grammar = if task.constrained {
        let vocabulary = model.vocabulary().clone();
        Some(compile_tool_grammar(
            task.registry,
            task.options,
            vocabulary.vocabulary(),
        )?)
    } else {
        None
    };
    let shown = ToolsShown::for_template(model.chat_template());
    let (mut messages, tools) = shown.messages(task.registry, task.options, task.messages);
    let mut attempts = Vec::new();
    for attempt in 0..task.max_attempts.max(1) {
        let prompt = chat_prompt_with_tools(model, &messages, tools.as_deref())?;
        let generation = decode(model, &prompt, grammar.as_ref(), decode_options)?;
        let output = generation.text();
        let verdict = if generation.finish == Finish::Truncated {
            Err(format!(
                "the token limit ({}) cut the call off; raise the token limit",
                decode_options.max_tokens
            ))
        } else {
            validate_output(task.registry, task.options, &output).map_err(|fault| fault.feedback())
        };
        match verdict {
            Ok(checked) => {
                attempts.push(Attempt {
                    generation,
                    feedback: None,
                });
                return Ok(ToolOutcome {
                    attempts,
                    checked: Some(checked),
                });
            }
            Err(feedback) => {
                let truncated = generation.finish == Finish::Truncated;
                attempts.push(Attempt {
                    generation,
                    feedback: Some(feedback.clone()),
                });
                // A longer answer would be cut off again: no retry.
                if truncated || attempt + 1 == task.max_attempts.max(1) {
                    break;
                }
                match feedback_as_results(
                    shown,
                    task.registry,
                    task.options,
                    &messages,
                    &output,
                    &feedback,
                ) {
                    Some(turn) => messages.extend(turn),
                    None => {
                        messages.push(Message::new("assistant", output));
                        messages.push(Message::new(
                            "user",
                            format!(
                                "That tool call is not valid: {feedback}\nWrite the call again, corrected."
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(ToolOutcome {
        attempts,
        checked: None,
    })
}

/// A refused answer given back to a model whose template reads calls and results (see
/// [`ToolsShown::Template`]): the answer's calls as the assistant's `tool_calls`, then
/// the validator's `feedback` as each call's result, as the model's own tooling would
/// report a failed call. `None` for other templates, or when no call can be read from
/// `output` (prose, a malformed call): the caller then gives the feedback as text.
pub fn feedback_as_results(
    shown: ToolsShown,
    registry: &ToolRegistry,
    options: &CallOptions,
    conversation: &[Message],
    output: &str,
    feedback: &str,
) -> Option<Vec<Message>> {
    if shown != ToolsShown::Template {
        return None;
    }
    let written = written_calls(registry, options, output)?;
    let earlier = conversation
        .iter()
        .map(|message| message.tool_calls.len())
        .sum::<usize>();
    let calls: Vec<MessageToolCall> = written
        .calls
        .into_iter()
        .enumerate()
        .map(|(index, (name, arguments))| {
            let id = history_call_id(options.wire, &name, earlier + index);
            MessageToolCall::new(id, name, arguments)
        })
        .collect();
    let results: Vec<Message> = calls
        .iter()
        .map(|call| Message::tool_result(call.id.clone(), format!("Error: {feedback}")))
        .collect();
    let mut turn = vec![Message::assistant_calls(
        written.text.unwrap_or_default(),
        calls,
    )];
    turn.extend(results);
    Some(turn)
}

/// The id of the `index`th call of a conversation, in the form `wire`'s templates
/// expect: nine letters and digits for Mistral's, `functions.NAME:INDEX` for Kimi K2's
/// (its model reads the id), `call_INDEX` otherwise.
fn history_call_id(wire: WireFormat, name: &str, index: usize) -> String {
    match wire {
        WireFormat::Mistral | WireFormat::MistralV11 => format!("{index:09}"),
        WireFormat::KimiK2 => format!("functions.{name}:{index}"),
        _ => format!("call_{index}"),
    }
}

/// How the tools reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolsShown {
    /// Through the chat template's own tool section (its `tools` variable): the model
    /// sees them as it was trained to (Qwen, Llama 3.1, Mistral, DeepSeek, Kimi K2,
    /// Granite…).
    Template,
    /// In Grail's system prompt (templates without a tool section, such as SmolLM2's,
    /// and models without a template).
    SystemPrompt,
}

impl ToolsShown {
    /// The way for a model whose chat template is `template`.
    pub fn for_template(template: Option<&str>) -> ToolsShown {
        match template.is_some_and(template_reads_tools) {
            true => ToolsShown::Template,
            false => ToolsShown::SystemPrompt,
        }
    }

    /// The conversation and the template's `tools` for `registry` under `options`: the
    /// offered tools (none with `tool_choice: none`, the named one alone) as OpenAI
    /// `tools` entries for a template, or Grail's system prompt joined to the
    /// conversation.
    pub fn messages(
        self,
        registry: &ToolRegistry,
        options: &CallOptions,
        messages: &[Message],
    ) -> (Vec<Message>, Option<Vec<Value>>) {
        match self {
            ToolsShown::SystemPrompt => (messages_with_tools(registry, options, messages), None),
            ToolsShown::Template => {
                let offered = registry.offered(&options.choice);
                let tools = (!offered.is_empty())
                    .then(|| offered.iter().map(|tool| tool.to_openai()).collect());
                (messages.to_vec(), tools)
            }
        }
    }
}

/// `messages` with the tools' system prompt first (joined to the conversation's own
/// system message when it has one); unchanged when no tool may be called.
pub fn messages_with_tools(
    registry: &ToolRegistry,
    options: &CallOptions,
    messages: &[Message],
) -> Vec<Message> {
    let mut messages = messages.to_vec();
    let Some(tools) = tools_system_prompt(registry, options) else {
        return messages;
    };
    match messages.first_mut() {
        Some(first) if first.role == "system" => {
            first.content = format!("{}\n\n{tools}", first.content);
        }
        _ => messages.insert(0, Message::new("system", tools)),
    }
    messages
}

#[cfg(test)]
mod tests {
    use grail_tools::{ToolChoice, WireFormat};

    use super::*;

    fn registry() -> ToolRegistry {
        ToolRegistry::from_json_text(
            r#"[{"name": "get_weather", "description": "Weather", "parameters": {"type": "object",
                "properties": {"city": {"type": "string"}}, "required": ["city"]}},
                {"name": "get_time", "parameters": {"type": "object"}}]"#,
        )
        .unwrap()
    }

    #[test]
    fn a_template_with_a_tool_section_gets_the_tools_and_no_system_prompt() {
        let qwen_like = "{% if tools %}<tools>{% for tool in tools %}{{ tool | tojson }}{% endfor %}</tools>{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}";
        let chatml = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}";
        assert_eq!(
            ToolsShown::for_template(Some(qwen_like)),
            ToolsShown::Template
        );
        assert_eq!(
            ToolsShown::for_template(Some(chatml)),
            ToolsShown::SystemPrompt
        );
        assert_eq!(ToolsShown::for_template(None), ToolsShown::SystemPrompt);
        let registry = registry();
        let conversation = [Message::new("user", "Weather in Rome?")];
        let mut options = CallOptions {
            wire: WireFormat::Hermes,
            ..CallOptions::default()
        };
        let (messages, tools) = ToolsShown::Template.messages(&registry, &options, &conversation);
        assert_eq!(messages, conversation);
        let tools = tools.unwrap();
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[0]["type"], "function");
        assert_eq!(tools[0]["function"]["name"], "get_weather");
        assert_eq!(tools[0]["function"]["parameters"]["required"][0], "city");
        // Grail's own section goes to a template without one.
        let (messages, tools) =
            ToolsShown::SystemPrompt.messages(&registry, &options, &conversation);
        assert!(tools.is_none());
        assert_eq!(messages[0].role, "system");
        assert!(messages[0].content.contains("get_weather"));
        // The named tool alone; none when no tool may be called.
        options.choice = ToolChoice::Named("get_time".into());
        let (_, tools) = ToolsShown::Template.messages(&registry, &options, &conversation);
        assert_eq!(tools.unwrap()[0]["function"]["name"], "get_time");
        options.choice = ToolChoice::None;
        let (_, tools) = ToolsShown::Template.messages(&registry, &options, &conversation);
        assert!(tools.is_none());
    }

    #[test]
    fn a_refused_call_goes_back_as_its_own_call_and_an_error_result() {
        let registry = registry();
        let options = CallOptions {
            wire: WireFormat::Hermes,
            choice: ToolChoice::Required,
            ..CallOptions::default()
        };
        let conversation = [Message::new("user", "Weather in Rome?")];
        let output = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"town\": \"Rome\"}}\n</tool_call>";
        let feedback = "missing required arguments ['city'] for tool 'get_weather'";
        let turn = feedback_as_results(
            ToolsShown::Template,
            &registry,
            &options,
            &conversation,
            output,
            feedback,
        )
        .unwrap();
        assert_eq!(turn.len(), 2);
        assert_eq!(turn[0].role, "assistant");
        assert_eq!(turn[0].tool_calls[0].function.name, "get_weather");
        assert_eq!(
            turn[0].tool_calls[0].function.arguments,
            serde_json::json!({"town": "Rome"})
        );
        assert_eq!(turn[1].role, "tool");
        assert_eq!(turn[1].tool_call_id.as_deref(), Some("call_0"));
        assert_eq!(turn[1].content, format!("Error: {feedback}"));
        // Ids in the forms the templates expect.
        for (wire, output, id) in [
            (
                WireFormat::KimiK2,
                "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
                "functions.get_weather:0",
            ),
            (
                WireFormat::MistralV11,
                "[TOOL_CALLS]get_weather[ARGS]{}",
                "000000000",
            ),
        ] {
            let options = CallOptions {
                wire,
                ..options.clone()
            };
            let turn = feedback_as_results(
                ToolsShown::Template,
                &registry,
                &options,
                &conversation,
                output,
                feedback,
            )
            .unwrap();
            assert_eq!(turn[0].tool_calls[0].id, id);
        }
        // Prose has no call to give back; a template without a tool section reads none.
        let prose = feedback_as_results(
            ToolsShown::Template,
            &registry,
            &options,
            &conversation,
            "It is sunny.",
            feedback,
        );
        assert!(prose.is_none());
        let plain = feedback_as_results(
            ToolsShown::SystemPrompt,
            &registry,
            &options,
            &conversation,
            output,
            feedback,
        );
        assert!(plain.is_none());
    }
}
