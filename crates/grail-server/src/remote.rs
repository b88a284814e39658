//! Remote backends: a llama-server, or an OpenAI-compatible server that takes a grammar
//! (vLLM's structured outputs), reached over HTTP.
//!
//! Grail builds the grammar (tools, schemas and grammars together, which llama-server
//! refuses to combine itself), sends the conversation with Grail's tools prompt to the
//! server's `/v1/chat/completions` with the grammar in the field that server reads, and
//! streams the answer back. Tools are never sent as `tools`: the grammar carries them.
//! The server checks every piece against the grammar as it arrives (see `complete.rs`),
//! so a backend that ignores the grammar is caught.

use std::io::{BufRead, BufReader};
use std::ops::ControlFlow;
use std::time::Duration;

use serde_json::{Value, json};

use crate::backend::{Backend, BackendError, Ending, Generate, Written};

/// Which field carries the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteKind {
    /// llama-server: `"grammar": GBNF`, `repeat_penalty`.
    LlamaServer,
    /// vLLM (0.12 and later): `"structured_outputs": {"grammar": GBNF}`,
    /// `repetition_penalty`.
    OpenAiCompatible,
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
            RemoteKind::OpenAiCompatible => "repetition_penalty",
        };
        body[penalty_key] = json!(sampling.repeat_penalty);
        if sampling.top_k > 0 {
            body["top_k"] = json!(sampling.top_k);
        }
        if let Some(grammar) = &request.grammar {
            match self.kind {
                RemoteKind::LlamaServer => body["grammar"] = json!(&*grammar.gbnf()),
                RemoteKind::OpenAiCompatible => {
                    body["structured_outputs"] = json!({"grammar": &*grammar.gbnf()})
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
        let url = format!("{}/v1/chat/completions", self.base);
        let mut call = self.agent.post(&url);
        if let Some(key) = &self.api_key {
            call = call.header("Authorization", &format!("Bearer {key}"));
        }
        let response = call
            .send_json(self.upstream_body(request))
            .map_err(|error| transport_error(&url, error))?;
        let status = response.status();
        let mut body = response.into_body();
        if !status.is_success() {
            let text = body.read_to_string().unwrap_or_default();
            let shown: String = text.chars().take(500).collect();
            return Err(if status.as_u16() == 400 {
                BackendError::Failed(format!("{url} refused the request (HTTP 400): {shown}"))
            } else {
                BackendError::Failed(format!("{url} answered HTTP {}: {shown}", status.as_u16()))
            });
        }
        let reader = BufReader::new(body.as_reader());
        let mut written = Written {
            text: String::new(),
            ending: Ending::Stop,
            prompt_tokens: 0,
            completion_tokens: 0,
        };
        let mut pieces = 0usize;
        let mut finished = false;
        for line in reader.lines() {
            let line = line.map_err(|error| io_error(&url, error))?;
            let Some(data) = line.strip_prefix("data:") else {
                continue;
            };
            let data = data.trim();
            if data == "[DONE]" {
                break;
            }
            let chunk: Value = serde_json::from_str(data).map_err(|error| {
                BackendError::Failed(format!(
                    "{url} sent an event that is not JSON ({error}): {data}"
                ))
            })?;
            if let Some(error) = chunk.get("error") {
                return Err(BackendError::Failed(format!(
                    "{url} reported an error: {error}"
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
                written.text.push_str(piece);
                pieces += 1;
                if observer(piece).is_break() {
                    written.ending = Ending::Interrupted;
                    // Dropping the response closes the connection: the server stops.
                    finished = true;
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
                "{url} ended the stream without a finish reason"
            )));
        }
        if written.completion_tokens == 0 {
            written.completion_tokens = pieces;
        }
        Ok(written)
    }
}

fn transport_error(url: &str, error: ureq::Error) -> BackendError {
    match error {
        ureq::Error::Timeout(_) => BackendError::Timeout(format!("{url}: {error}")),
        ureq::Error::Io(io) => io_error(url, io),
        ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => {
            BackendError::Unreachable(format!("{url}: {error}"))
        }
        other => BackendError::Failed(format!("{url}: {other}")),
    }
}

fn io_error(url: &str, error: std::io::Error) -> BackendError {
    use std::io::ErrorKind;
    match error.kind() {
        ErrorKind::TimedOut | ErrorKind::WouldBlock => {
            BackendError::Timeout(format!("{url}: {error}"))
        }
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionReset | ErrorKind::NotConnected => {
            BackendError::Unreachable(format!("{url}: {error}"))
        }
        _ => {
            // ureq wraps its own timeouts in io errors while reading a body.
            if error.to_string().to_lowercase().contains("timeout") {
                BackendError::Timeout(format!("{url}: {error}"))
            } else {
                BackendError::Failed(format!("{url}: {error}"))
            }
        }
    }
}
