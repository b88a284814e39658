//! Grail's OpenAI-compatible chat server: tools, JSON Schemas and grammars in one
//! request, all enforced at once, in front of the embedded model, a llama-server or an
//! OpenAI-compatible server that takes grammars (vLLM).
//!
//! - [`plan::plan`]: a chat request becomes one grammar (tools, `response_format`,
//!   `grammar`), the conversation with the tools' prompt, and how the answer is checked.
//! - [`grammar_cache::GrammarCache`]: the compiled grammars of earlier requests, for later
//!   ones with the same tools and formats (their matchers start from what earlier ones
//!   learned).
//! - [`backend::Backend`]: what writes the text — [`embedded::EmbeddedBackend`] (a model
//!   in this process, requests queued) or [`remote::RemoteBackend`].
//! - [`complete::answer`]: every piece checked against the grammar as it arrives, the
//!   whole answer by the validators, feedback to the model and retries.
//! - [`server`]: routes, limits, the API key, logs, metrics (`GET /metrics`), streaming,
//!   graceful shutdown;
//!   [`guard`]: which `Host`, `Origin` and content types are accepted.
//!
//! See docs/server.md for the HTTP contract and its choices.
#![warn(missing_docs)]

pub mod api;
pub mod backend;
pub mod complete;
pub mod embedded;
pub mod error;
mod event_lines;
pub mod grammar_cache;
pub mod guard;
mod listen;
mod metrics;
pub mod plan;
mod redact;
pub mod remote;
pub mod server;
mod stop;
mod utf8;

pub use backend::{Activity, Backend, BackendError, Ending, Generate, RequestGrammar, Written};
pub use embedded::{EmbeddedBackend, EmbeddedOptions, ModelLoader};
pub use error::ApiError;
pub use plan::PlanSettings;
pub use remote::{RemoteBackend, RemoteKind};
pub use server::{AppState, LogSink, ServeError, ServerSettings, router, serve};
