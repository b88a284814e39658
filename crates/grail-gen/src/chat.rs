//! Chat prompts: messages rendered with the model's own Jinja chat template (minijinja,
//! with Python's string methods as Hugging Face templates use them).

use minijinja::{Environment, Error as JinjaError, ErrorKind, context};
use serde::Serialize;
use serde_json::Value;

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text.
    pub content: String,
    /// The calls an assistant message made, for templates that render them (absent from
    /// the template's view when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<MessageToolCall>,
    /// For a `tool` message: the id of the call it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// A call in an assistant message, in the shape Hugging Face chat templates read:
/// `{"id", "type": "function", "function": {"name", "arguments"}}` with the arguments
/// as a JSON object (not the string OpenAI's API carries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MessageToolCall {
    /// The call's id (`call_…`).
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The tool and its arguments.
    pub function: CalledFunction,
}

/// The tool a call names and its arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CalledFunction {
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object.
    pub arguments: Value,
}

impl Message {
    /// A message with this role and text.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Message {
        Message {
            role: role.into(),
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// An assistant message that made `calls` (`content` may be empty).
    pub fn assistant_calls(content: impl Into<String>, calls: Vec<MessageToolCall>) -> Message {
        Message {
            tool_calls: calls,
            ..Message::new("assistant", content)
        }
    }

    /// A `tool` message: the result of the call `call_id`.
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Message {
        Message {
            tool_call_id: Some(call_id.into()),
            ..Message::new("tool", content)
        }
    }
}

impl MessageToolCall {
    /// A call of `name` with `arguments` (a JSON object), with this id.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> MessageToolCall {
        MessageToolCall {
            id: id.into(),
            kind: "function",
            function: CalledFunction {
                name: name.into(),
                arguments,
            },
        }
    }
}

/// The texts of the special tokens templates refer to (`bos_token`, `eos_token`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpecialTexts {
    /// The beginning-of-text token's text (empty when none).
    pub bos: String,
    /// The end-of-text token's text (empty when none).
    pub eos: String,
}

/// Variables a request may give a chat template beside the messages and the tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TemplateVariables {
    /// `reasoning_effort` (`low`, `medium`, `high`), for templates that read it
    /// (gpt-oss's writes it into its system message); undefined when `None`.
    pub reasoning_effort: Option<String>,
}

/// A chat template that could not be read or rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the model's chat template failed: {0}")]
pub struct ChatTemplateError(pub String);

/// The prompt for `messages` in `template`, ending where the assistant's answer starts.
pub fn render_chat(
    template: &str,
    messages: &[Message],
    specials: &SpecialTexts,
) -> Result<String, ChatTemplateError> {
    render_chat_with_tools(template, messages, None, specials)
}

/// The prompt for `messages` in `template` with `tools` (OpenAI's `tools` entries, as
/// Hugging Face's `apply_chat_template(tools=…)` passes them) in the template's `tools`
/// variable; `None` leaves the variable undefined, as for a request without tools.
pub fn render_chat_with_tools(
    template: &str,
    messages: &[Message],
    tools: Option<&[Value]>,
    specials: &SpecialTexts,
) -> Result<String, ChatTemplateError> {
    render_chat_with(
        template,
        messages,
        tools,
        specials,
        &TemplateVariables::default(),
    )
}

/// [`render_chat_with_tools`] with the request's `variables` defined too.
pub fn render_chat_with(
    template: &str,
    messages: &[Message],
    tools: Option<&[Value]>,
    specials: &SpecialTexts,
    variables: &TemplateVariables,
) -> Result<String, ChatTemplateError> {
    let environment = chat_environment();
    let error = |error: JinjaError| ChatTemplateError(error.to_string());
    let template = environment.template_from_str(template).map_err(error)?;
    let base = context! {
        messages => messages,
        add_generation_prompt => true,
        bos_token => specials.bos,
        eos_token => specials.eos,
    };
    let base = match &variables.reasoning_effort {
        Some(effort) => context! { reasoning_effort => effort, ..base },
        None => base,
    };
    let context = match tools {
        Some(tools) => context! { tools => tools, ..base },
        None => base,
    };
    template.render(context).map_err(error)
}

/// Whether `template` reads a `tools` variable: the model was trained to see tools in
/// its own section (Qwen, Llama 3.1, Mistral…), so Grail's own tools prompt is not
/// needed. A template that does not parse reads nothing.
pub fn template_reads_tools(template: &str) -> bool {
    template_reads(template, "tools")
}

/// Whether `template` reads the variable `name` (`tools`, `reasoning_effort`). A
/// template that does not parse reads nothing.
pub fn template_reads(template: &str, name: &str) -> bool {
    let environment = chat_environment();
    environment
        .template_from_str(template)
        .is_ok_and(|template| template.undeclared_variables(false).contains(name))
}

/// The environment chat templates run in: Python's string methods, `raise_exception` and
/// `tojson`, as Hugging Face renders them.
fn chat_environment<'source>() -> Environment<'source> {
    let mut environment = Environment::new();
    environment.add_filter("tojson", crate::chat_json::tojson);
    environment.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    environment.add_function(
        "raise_exception",
        |message: String| -> Result<String, JinjaError> {
            Err(JinjaError::new(ErrorKind::InvalidOperation, message))
        },
    );
    environment
}

/// The prompt without a template: the messages' texts, separated by blank lines (a base
/// model continues it as it is).
pub fn plain_prompt(messages: &[Message]) -> String {
    messages
        .iter()
        .map(|message| message.content.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SmolLM2-Instruct's template, as its GGUF carries it.
    const CHATML: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    #[test]
    fn renders_a_chatml_template() {
        let prompt = render_chat(
            CHATML,
            &[
                Message::new("system", "Be brief."),
                Message::new("user", "Hi"),
            ],
            &SpecialTexts::default(),
        )
        .unwrap();
        assert_eq!(
            prompt,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn python_methods_and_exceptions_work() {
        let template = "{{ bos_token }}{% for m in messages %}{% if m.role not in ['user'] %}{{ raise_exception('only user messages') }}{% endif %}{{ m.content.strip().upper() }}{% endfor %}";
        let specials = SpecialTexts {
            bos: "<s>".into(),
            eos: "</s>".into(),
        };
        let prompt = render_chat(template, &[Message::new("user", "  hi ")], &specials).unwrap();
        assert_eq!(prompt, "<s>HI");
        let error = render_chat(template, &[Message::new("system", "x")], &specials).unwrap_err();
        assert!(error.0.contains("only user messages"), "{error}");
    }
}
