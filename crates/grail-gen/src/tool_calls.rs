//! Tool calls end to end: the tools' system prompt, the tool-call grammar, decoding, and
//! the validator; when the validator finds what the grammar cannot say (`uniqueItems`,
//! say), its feedback goes back to the model and it writes the call again, up to a cap
//! (seed 001's `consecutive_blocked`).

use grail_engine::{CompileOptions, CompiledGrammar};
use grail_tools::{
    CallOptions, Checked, ToolRegistry, ToolsError, tool_call_grammar, validate_output,
};

use crate::chat::Message;
use crate::decode::{DecodeError, DecodeOptions, Finish, Generation, decode};
use crate::model::Model;
use crate::prompt::{PromptError, chat_prompt};
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

/// Compiles the tool-call grammar of `registry` under `options`.
pub fn compile_tool_grammar(
    registry: &ToolRegistry,
    options: &CallOptions,
) -> Result<CompiledGrammar, ToolTaskError> {
    let grammar = tool_call_grammar(registry, options)?;
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
        Some(compile_tool_grammar(task.registry, task.options)?)
    } else {
        None
    };
    let mut messages = messages_with_tools(task.registry, task.options, task.messages);
    let mut attempts = Vec::new();
    for attempt in 0..task.max_attempts.max(1) {
        let prompt = chat_prompt(model, &messages)?;
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
    Ok(ToolOutcome {
        attempts,
        checked: None,
    })
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
