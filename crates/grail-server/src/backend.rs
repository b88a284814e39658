//! What writes the text: one trait over the embedded model and remote servers.
//!
//! A backend is given the conversation (the tools' system prompt already in it), the
//! grammar (compiled, and as GBNF for servers that take one), the sampling settings and
//! a token limit, and writes one answer, showing each piece of text to an observer as it
//! comes (which may stop it). It runs on a blocking thread. Whatever it returns is
//! checked by the server against the grammar and the schemas: a remote server that
//! ignores the grammar is caught, never passed through.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;

use grail_engine::CompiledGrammar;
use grail_gen::{Message, ReasoningBudget, SamplingParams, TemplateVariables};
use grail_grammar::{Grammar, print_grammar};
use serde_json::Value;

/// The grammar of one request.
#[derive(Debug, Clone)]
pub struct RequestGrammar {
    /// Compiled for Grail's engine.
    pub compiled: Arc<CompiledGrammar>,
    /// The grammar itself, printed as GBNF only for a backend that is sent one.
    source: Arc<Grammar>,
    /// The GBNF text, once printed (shared by the request's attempts).
    gbnf: Arc<std::sync::OnceLock<Arc<str>>>,
}

impl RequestGrammar {
    /// `grammar`, compiled as `compiled`.
    pub fn new(grammar: Grammar, compiled: CompiledGrammar) -> RequestGrammar {
        RequestGrammar {
            compiled: Arc::new(compiled),
            source: Arc::new(grammar),
            gbnf: Arc::default(),
        }
    }

    /// The grammar as GBNF (what llama-server and vLLM are sent), printed on first use:
    /// the embedded model never needs it, and printing costs about as much as building a
    /// tool-call grammar.
    pub fn gbnf(&self) -> Arc<str> {
        self.gbnf
            .get_or_init(|| print_grammar(&self.source).into())
            .clone()
    }
}

/// A conversation for a chat template with a tool section of its own (Qwen's, Llama
/// 3.1's, Mistral's…): earlier calls in `tool_calls`, results as `tool` messages, the
/// offered tools for the template's `tools` variable. A backend whose model has such a
/// template renders this instead of [`Generate::messages`].
#[derive(Debug, Clone, PartialEq)]
pub struct NativePrompt {
    /// The conversation.
    pub messages: Vec<Message>,
    /// The offered tools as OpenAI `tools` entries (none when no tool may be called).
    pub tools: Option<Vec<Value>>,
}

/// One answer to write.
#[derive(Debug, Clone)]
pub struct Generate {
    /// The conversation as a template without a tool section reads it.
    pub messages: Vec<Message>,
    /// With tools: the conversation for a template with a tool section.
    pub native: Option<NativePrompt>,
    /// The grammar the answer must match, if any.
    pub grammar: Option<RequestGrammar>,
    /// The most tokens to write.
    pub max_tokens: usize,
    /// How tokens are chosen.
    pub sampling: SamplingParams,
    /// The request's time limit: a backend does not start an answer past it (a request
    /// that waited in a queue that long gets a timeout, not a late answer).
    pub deadline: Option<Instant>,
    /// Variables for the chat template (`reasoning_effort`).
    pub variables: TemplateVariables,
    /// A cap on the reasoning block's tokens (the embedded backend only).
    pub reasoning_budget: Option<ReasoningBudget>,
}

/// Why a backend's answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ending {
    /// The model ended it (or the grammar allowed nothing more).
    #[default]
    Stop,
    /// The token limit.
    Length,
    /// The observer stopped it.
    Interrupted,
}

/// A backend's answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Written {
    /// The text.
    pub text: String,
    /// Why it ended.
    pub ending: Ending,
    /// Tokens of the prompt.
    pub prompt_tokens: usize,
    /// Tokens written.
    pub completion_tokens: usize,
    /// Prompt tokens not read again: a prefix shared with an earlier request's, already
    /// in the model's cache (0 where the backend does not say).
    pub cached_tokens: usize,
    /// Tokens the grammar forced and that were appended without a draw (jump-forward).
    pub forced_tokens: usize,
    /// Seconds spent on the grammar (masks, checks), where the backend knows.
    pub grammar_seconds: f64,
}

/// Why a backend could not answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BackendError {
    /// The request cannot be served as it is (a prompt over the context, say): HTTP 400.
    #[error("{0}")]
    Request(String),
    /// The backend cannot be reached: HTTP 502.
    #[error("the backend cannot be reached: {0}")]
    Unreachable(String),
    /// The backend answered with an error or nonsense: HTTP 502.
    #[error("the backend failed: {0}")]
    Failed(String),
    /// The backend took too long: HTTP 504.
    #[error("the backend did not answer in time: {0}")]
    Timeout(String),
    /// The server is shutting down or overloaded: HTTP 503.
    #[error("{0}")]
    Unavailable(String),
}

/// What a backend has on its hands now (for `/metrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Activity {
    /// Requests accepted that wait for the model.
    pub waiting: usize,
    /// Answers being written.
    pub running: usize,
    /// Answers it writes at once at most (0 where it does not say).
    pub capacity: usize,
}

/// Something that writes answers.
pub trait Backend: Send + Sync + 'static {
    /// The model's id, for `GET /v1/models` and the answers' `model` field.
    fn model_id(&self) -> String;

    /// Whether the backend is ready (`/health` answers 503 until it is).
    fn ready(&self) -> bool;

    /// Why the backend can never answer (a model that failed to load), if it cannot: the
    /// server then logs the reason and stops with an error.
    fn failure(&self) -> Option<String> {
        None
    }

    /// What it has on its hands now (all zero where it does not know, as for a remote
    /// server).
    fn activity(&self) -> Activity {
        Activity::default()
    }

    /// Writes one answer, showing each piece of text to `observer` as it comes; an
    /// observer that answers `Break` ends it ([`Ending::Interrupted`]).
    fn generate(
        &self,
        request: &Generate,
        observer: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Written, BackendError>;
}
