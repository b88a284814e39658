//! Remote backends: a llama-server, an OpenAI-compatible server that takes a grammar
//! (vLLM's structured outputs), or a vLLM running Grail's own logits processor, reached
//! over HTTP.
//!
//! Grail builds the grammar (tools, schemas and grammars together, which llama-server
//! refuses to combine itself), sends the conversation with Grail's tools prompt to the
//! server's `/v1/chat/completions` with the grammar in the field that server reads, and
//! streams the answer back. Tools are never sent as `tools`: the grammar carries them.
//! The server checks every piece against the grammar as it arrives (see `complete.rs`),
//! so a backend that ignores the grammar is caught.

use std::io::{BufReader, Read};
use std::ops::ControlFlow;
use std::time::Duration;

use serde_json::{Value, json};

use crate::backend::{Backend, BackendError, Ending, Generate, Written};
use crate::event_lines::{BoundedLines, LineError};
use crate::redact::{Redactor, split_credentials};

/// The most bytes a backend may write per token of `max_tokens`: output past
/// `max_tokens` pieces or `max_tokens` × this many bytes is cut off (`finish_reason:
/// "length"`), whatever the backend does with `max_tokens`.
pub const MAX_BYTES_PER_TOKEN: usize = 64;

/// The longest line of an upstream event stream, in bytes (longer: HTTP 502).
pub const MAX_EVENT_LINE_BYTES: usize = 1 << 20;

/// The most bytes of an upstream error body read (a redacted start of it is shown).
const ERROR_BODY_BYTES: u64 = 64 * 1024;

/// `url` without the credentials it may carry (`http://user:pass@host` → `http://host`),
/// as logs and errors show it.
pub fn url_without_credentials(url: &str) -> String {
    split_credentials(url).0
}

/// Which field carries the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteKind {
    /// llama-server: `"grammar": GBNF`, `repeat_penalty`.
    LlamaServer,
    /// vLLM (0.12 and later): `"structured_outputs": {"grammar": GBNF}`,
    /// `repetition_penalty`. vLLM's own backend (xgrammar by default) enforces it.
    OpenAiCompatible,
    /// vLLM with Grail's logits processor (`grail_gbnf.vllm`): `"vllm_xargs": {"grail":
    /// "{\"grammar\": GBNF}"}`, so Grail's engine enforces the grammar Grail checks.
    VllmGrail,
}

/// A remote server.
pub struct RemoteBackend {
    kind: RemoteKind,
    /// The base URL, without a trailing slash (`http://127.0.0.1:8081`).
    base: String,
    /// The model name sent upstream and shown to clients.
    model: String,
    /// A key for the upstream server, if it wants one.
    api_key: Option<String>,
    agent: ureq::Agent,
    /// The URL of the chat route without credentials, as errors show it.
    shown_url: String,
    /// Takes the key and the URL's credentials out of upstream text shown to clients.
    redactor: Redactor,
}

impl RemoteBackend {
    /// A backend at `base` (`http://host:port`, with or without `/v1`), giving up on a
    /// request after `timeout`.
    pub fn new(
        kind: RemoteKind,
        base: &str,
        model: Option<String>,
        api_key: Option<String>,
        timeout: Duration,
    ) -> RemoteBackend {
        let base = base
            .trim_end_matches('/')
            .trim_end_matches("/v1")
            .to_string();
        let (shown_base, credentials) = split_credentials(&base);
        let redactor = Redactor::new(credentials.into_iter().chain(api_key.clone()));
        let config = ureq::Agent::config_builder()
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build();
        RemoteBackend {
            kind,
            base,
            model: model.unwrap_or_else(|| "default".into()),
            api_key,
            agent: config.into(),
            shown_url: format!("{shown_base}/v1/chat/completions"),
            redactor,
        }
    }

    /// The request body sent upstream for `request`.
    pub fn upstream_body(&self, request: &Generate) -> Value {
        let messages: Vec<Value> = request
            .messages
            .iter()
            .map(|message| json!({"role": message.role, "content": message.content}))
            .collect();
        let sampling = &request.sampling;
        let mut body = json!({
            "model": self.model,
            "messages": messages,
            "max_tokens": request.max_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "seed": sampling.seed,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        let penalty_key = match self.kind {
            RemoteKind::LlamaServer => "repeat_penalty",
            RemoteKind::OpenAiCompatible | RemoteKind::VllmGrail => "repetition_penalty",
        };
        body[penalty_key] = json!(sampling.repeat_penalty);
        if sampling.top_k > 0 {
            body["top_k"] = json!(sampling.top_k);
        }
        if let Some(effort) = &request.variables.reasoning_effort {
            body["reasoning_effort"] = json!(effort);
        }
        if let Some(grammar) = &request.grammar {
            match self.kind {
                RemoteKind::LlamaServer => body["grammar"] = json!(&*grammar.gbnf()),
                RemoteKind::OpenAiCompatible => {
                    body["structured_outputs"] = json!({"grammar": &*grammar.gbnf()})
                }
                // vLLM takes only strings and numbers in `vllm_xargs`: the processor's
                // argument goes as JSON text.
                RemoteKind::VllmGrail => {
                    let argument = json!({"grammar": &*grammar.gbnf()}).to_string();
                    body["vllm_xargs"] = json!({"grail": argument})
                }
            }
        }
        body
    }
}

impl Backend for RemoteBackend {
    fn model_id(&self) -> String {
        self.model.clone()
    }

    fn ready(&self) -> bool {
        true
    }

    fn generate(
        &self,
        request: &Generate,
        observer: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Written, BackendError> {
        if request.reasoning_budget.is_some() {
            return Err(BackendError::Request(
                "reasoning_budget is kept by the embedded backend only: a remote backend cannot cap its model's reasoning".into(),
            ));
        }
        let url = format!("{}/v1/chat/completions", self.base);
        let shown = &self.shown_url;
        let mut call = self.agent.post(&url);
        if let Some(key) = &self.api_key {
            call = call.header("Authorization", &format!("Bearer {key}"));
        }
        let response = call
            .send_json(self.upstream_body(request))
            .map_err(|error| self.transport_error(error))?;
        let status = response.status();
        let mut body = response.into_body();
        if !status.is_success() {
            // At most ERROR_BODY_BYTES of it are read; an error shows a redacted start.
            let mut text = Vec::new();
            let _ = body
                .as_reader()
                .take(ERROR_BODY_BYTES)
                .read_to_end(&mut text);
            let text = self.redactor.redact(&String::from_utf8_lossy(&text));
            return Err(if status.as_u16() == 400 {
                BackendError::Failed(format!("{shown} refused the request (HTTP 400): {text}"))
            } else {
                BackendError::Failed(format!("{shown} answered HTTP {}: {text}", status.as_u16()))
            });
        }
        let mut lines = BoundedLines::new(BufReader::new(body.as_reader()), MAX_EVENT_LINE_BYTES);
        let mut written = Written::default();
        let byte_limit = request.max_tokens.saturating_mul(MAX_BYTES_PER_TOKEN);
        let mut pieces = 0usize;
        let (mut finished, mut cut) = (false, false);
        loop {
            let line = match lines.next_line() {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(LineError::Io(error)) => return Err(self.io_error(error)),
                Err(LineError::TooLong(limit)) => {
                    return Err(BackendError::Failed(format!(
                        "{shown} sent an event line over {limit} bytes"
                    )));
                }
            };
            let Some(data) = line.strip_prefix("data:") else {
                continue;
            };
            let data = data.trim();
            if data == "[DONE]" {
                break;
            }
            let chunk: Value = serde_json::from_str(data).map_err(|error| {
                BackendError::Failed(format!(
                    "{shown} sent an event that is not JSON ({error}): {}",
                    self.redactor.redact(data)
                ))
            })?;
            if let Some(error) = chunk.get("error") {
                return Err(BackendError::Failed(format!(
                    "{shown} reported an error: {}",
                    self.redactor.redact(&error.to_string())
                )));
            }
            if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
                let count =
                    |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0) as usize;
                written.prompt_tokens = count("prompt_tokens");
                written.completion_tokens = count("completion_tokens");
            }
            let Some(choice) = chunk.get("choices").and_then(|choices| choices.get(0)) else {
                continue;
            };
            if let Some(piece) = choice
                .pointer("/delta/content")
                .and_then(Value::as_str)
                .filter(|piece| !piece.is_empty())
            {
                // A backend that ignores max_tokens is cut off at it: every piece counts
                // as at least one token, and a token as at most MAX_BYTES_PER_TOKEN bytes.
                if pieces >= request.max_tokens || written.text.len() >= byte_limit {
                    written.ending = Ending::Length;
                    (finished, cut) = (true, true);
                    break;
                }
                let room = byte_limit - written.text.len();
                let truncated = piece.len() > room;
                let piece = if truncated {
                    let mut end = room;
                    while !piece.is_char_boundary(end) {
                        end -= 1;
                    }
                    &piece[..end]
                } else {
                    piece
                };
                written.text.push_str(piece);
                pieces += 1;
                if observer(piece).is_break() {
                    written.ending = Ending::Interrupted;
                    // Dropping the response closes the connection: the server stops.
                    finished = true;
                    break;
                }
                if truncated {
                    written.ending = Ending::Length;
                    (finished, cut) = (true, true);
                    break;
                }
            }
            match choice.get("finish_reason").and_then(Value::as_str) {
                Some("length") => {
                    written.ending = Ending::Length;
                    finished = true;
                }
                Some(_) => finished = true,
                None => {}
            }
        }
        if !finished {
            return Err(BackendError::Failed(format!(
                "{shown} ended the stream without a finish reason"
            )));
        }
        if written.completion_tokens == 0 || cut {
            // No usage came (or it came for more than was taken): what was taken.
            written.completion_tokens = pieces;
        }
        Ok(written)
    }
}

impl RemoteBackend {
    fn transport_error(&self, error: ureq::Error) -> BackendError {
        let shown = &self.shown_url;
        let text = self.redactor.redact(&error.to_string());
        match error {
            ureq::Error::Timeout(_) => BackendError::Timeout(format!("{shown}: {text}")),
            ureq::Error::Io(io) => self.io_error(io),
            ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => {
                BackendError::Unreachable(format!("{shown}: {text}"))
            }
            _ => BackendError::Failed(format!("{shown}: {text}")),
        }
    }

    fn io_error(&self, error: std::io::Error) -> BackendError {
        use std::io::ErrorKind;
        let shown = &self.shown_url;
        let text = self.redactor.redact(&error.to_string());
        match error.kind() {
            ErrorKind::TimedOut | ErrorKind::WouldBlock => {
                BackendError::Timeout(format!("{shown}: {text}"))
            }
            ErrorKind::ConnectionRefused | ErrorKind::ConnectionReset | ErrorKind::NotConnected => {
                BackendError::Unreachable(format!("{shown}: {text}"))
            }
            // ureq wraps its own timeouts in io errors while reading a body.
            _ if text.to_lowercase().contains("timeout") => {
                BackendError::Timeout(format!("{shown}: {text}"))
            }
            _ => BackendError::Failed(format!("{shown}: {text}")),
        }
    }
}
