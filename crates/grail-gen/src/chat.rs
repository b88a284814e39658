//! Chat prompts: messages rendered with the model's own Jinja chat template (minijinja,
//! with Python's string methods as Hugging Face templates use them).

use minijinja::{Environment, Error as JinjaError, ErrorKind, context};
use serde::Serialize;

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl Message {
    /// A message with this role and text.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Message {
        Message {
            role: role.into(),
            content: content.into(),
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
    let mut environment = Environment::new();
    environment.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    environment.add_function(
        "raise_exception",
        |message: String| -> Result<String, JinjaError> {
            Err(JinjaError::new(ErrorKind::InvalidOperation, message))
        },
    );
    let error = |error: JinjaError| ChatTemplateError(error.to_string());
    environment.add_template("chat", template).map_err(error)?;
    let template = environment.get_template("chat").map_err(error)?;
    template
        .render(context! {
            messages => messages,
            add_generation_prompt => true,
            bos_token => specials.bos,
            eos_token => specials.eos,
        })
        .map_err(error)
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
