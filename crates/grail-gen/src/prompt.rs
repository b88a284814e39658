//! From messages to prompt tokens: the model's chat template when it has one, the plain
//! text otherwise.

use serde_json::Value;

use crate::chat::{
    ChatTemplateError, Message, SpecialTexts, TemplateVariables, plain_prompt, render_chat_with,
};
use crate::model::{Model, ModelError};

/// Why a prompt could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// The chat template failed.
    #[error(transparent)]
    Template(#[from] ChatTemplateError),
    /// The tokenizer failed.
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// The prompt tokens for `messages`: rendered with the model's chat template (ending where
/// the assistant's answer starts), or, for a model without one, the messages' texts as
/// they are, after the beginning-of-text token the model wants.
pub fn chat_prompt(model: &dyn Model, messages: &[Message]) -> Result<Vec<u32>, PromptError> {
    chat_prompt_with_tools(model, messages, None)
}

/// [`chat_prompt`] with `tools` (OpenAI `tools` entries) in the template's `tools`
/// variable, for templates with a tool section of their own (see
/// [`crate::template_reads_tools`]); a model without a template ignores them.
pub fn chat_prompt_with_tools(
    model: &dyn Model,
    messages: &[Message],
    tools: Option<&[Value]>,
) -> Result<Vec<u32>, PromptError> {
    chat_prompt_with(model, messages, tools, &TemplateVariables::default())
}

/// [`chat_prompt_with_tools`] with the request's template `variables` (a model without a
/// template ignores them).
pub fn chat_prompt_with(
    model: &dyn Model,
    messages: &[Message],
    tools: Option<&[Value]>,
    variables: &TemplateVariables,
) -> Result<Vec<u32>, PromptError> {
    let vocabulary = model.vocabulary().vocabulary();
    let text_of = |id: Option<u32>| {
        id.map(|id| String::from_utf8_lossy(vocabulary.bytes(id)).into_owned())
            .unwrap_or_default()
    };
    let specials = SpecialTexts {
        bos: text_of(model.begin_of_text()),
        eos: text_of(vocabulary.end_of_generation().first().copied()),
    };
    let (text, templated) = match model.chat_template() {
        Some(template) => (
            render_chat_with(template, messages, tools, &specials, variables)?,
            true,
        ),
        None => (plain_prompt(messages), false),
    };
    if templated {
        // A template writes its own beginning-of-text token (or none on purpose).
        Ok(model.tokenize(&text)?)
    } else {
        Ok(raw_prompt(model, &text)?)
    }
}

/// The prompt tokens of `text` as it is, after the beginning-of-text token when the model
/// wants one (as llama.cpp's `/completion` adds it: Gemma writes nonsense without it).
pub fn raw_prompt(model: &dyn Model, text: &str) -> Result<Vec<u32>, ModelError> {
    let mut tokens = model.tokenize(text)?;
    if let Some(bos) = model.begin_of_text()
        && tokens.first() != Some(&bos)
    {
        tokens.insert(0, bos);
    }
    Ok(tokens)
}
