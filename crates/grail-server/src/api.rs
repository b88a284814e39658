//! The OpenAI chat completions request, as the server reads it.
//!
//! Unknown fields are refused (as OpenAI does: "Unrecognized request argument"), so a
//! misspelled `tool_choice` never goes unnoticed. Fields OpenAI defines that Grail does
//! not implement are accepted when they ask for the default behaviour (`n: 1`,
//! `logprobs: false`, penalties of 0, …) and refused otherwise, naming the field.

use serde::Deserialize;
use serde_json::Value;

/// `POST /v1/chat/completions`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatRequest {
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// The model (any value is accepted: the server serves one model).
    #[serde(default)]
    pub model: Option<String>,
    /// Tools the model may call.
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    /// `"auto"`, `"required"`, `"none"`, or `{"type": "function", "function": {"name": …}}`.
    #[serde(default)]
    pub tool_choice: Option<Value>,
    /// Whether several calls may come in one answer (OpenAI's default: true).
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    /// `{"type": "text" | "json_object" | "json_schema", "json_schema": {…}}`.
    #[serde(default)]
    pub response_format: Option<Value>,
    /// A GBNF grammar the answer's text must match (llama-server's field).
    #[serde(default)]
    pub grammar: Option<String>,
    /// The most tokens to write.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// The same, under OpenAI's newer name.
    #[serde(default)]
    pub max_completion_tokens: Option<u32>,
    /// Sampling temperature (0: greedy).
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Nucleus sampling.
    #[serde(default)]
    pub top_p: Option<f32>,
    /// Seed for sampling.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Stop sequences: a string or a list of up to 4.
    #[serde(default)]
    pub stop: Option<Value>,
    /// Server-sent events instead of one answer.
    #[serde(default)]
    pub stream: Option<bool>,
    /// `{"include_usage": true}`: a last chunk with the usage.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// Choices to write (only 1).
    #[serde(default)]
    pub n: Option<u32>,
    /// Token log-probabilities (not given).
    #[serde(default)]
    pub logprobs: Option<bool>,
    /// Top log-probabilities (not given).
    #[serde(default)]
    pub top_logprobs: Option<u32>,
    /// Penalties (only 0).
    #[serde(default)]
    pub frequency_penalty: Option<f32>,
    /// Penalties (only 0).
    #[serde(default)]
    pub presence_penalty: Option<f32>,
    /// Token biases (only none).
    #[serde(default)]
    pub logit_bias: Option<Value>,
    /// An end-user id (ignored: it carries no constraint).
    #[serde(default)]
    pub user: Option<String>,
    /// Request metadata (ignored).
    #[serde(default)]
    pub metadata: Option<Value>,
    /// Whether OpenAI stores the completion (ignored: nothing is stored).
    #[serde(default)]
    pub store: Option<bool>,
    /// OpenAI's service tier (ignored).
    #[serde(default)]
    pub service_tier: Option<String>,
    /// `minimal`, `low`, `medium` or `high`: given to chat templates that read
    /// `reasoning_effort` (gpt-oss's); logged as unused for the others.
    #[serde(default)]
    pub reasoning_effort: Option<String>,
    /// Grail's (and llama.cpp's) cap on the reasoning block, in tokens: once it is spent,
    /// the block's end is written for the model (needs a server started with `--think`).
    #[serde(default)]
    pub reasoning_budget: Option<u32>,
}

/// `stream_options`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamOptions {
    /// Send a last chunk with the usage.
    #[serde(default)]
    pub include_usage: bool,
}

/// One message of the conversation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant` or `tool`.
    pub role: String,
    /// A string, a list of `{"type": "text", "text": …}` parts, or null (an assistant
    /// message with tool calls).
    #[serde(default)]
    pub content: Option<Value>,
    /// The speaker's name (ignored).
    #[serde(default)]
    pub name: Option<String>,
    /// The calls an assistant message made.
    #[serde(default)]
    pub tool_calls: Option<Vec<Value>>,
    /// The call a tool message answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// A refusal (assistant messages; kept as their text).
    #[serde(default)]
    pub refusal: Option<String>,
    /// OpenAI's deprecated single call (refused unless null: send `tool_calls`).
    #[serde(default)]
    pub function_call: Option<Value>,
    /// Audio output of an earlier answer (ignored; clients echo it back as null).
    #[serde(default)]
    pub audio: Option<Value>,
    /// Annotations of an earlier answer (ignored; clients echo them back).
    #[serde(default)]
    pub annotations: Option<Value>,
}
