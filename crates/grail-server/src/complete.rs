//! Answering one planned request: the backend writes, Grail checks, and a refused answer
//! goes back to the model with the checker's feedback until it is valid or the attempts
//! run out.
//!
//! Every piece a backend writes is fed to Grail's matcher as it arrives, so a remote
//! server that ignores the grammar is stopped at the first byte it should not have
//! written (HTTP 502), never passed on. Whole answers are then checked: tool calls by
//! grail-tools' validator (what grammars cannot say, such as `uniqueItems`), JSON text
//! against the `response_format` schema with the `jsonschema` crate.
//!
//! Streaming: text is sent as it is written when nothing can refuse it afterwards (no
//! tools, and a schema converted exactly); otherwise the answer is held until it is
//! checked, then sent (tool calls as OpenAI's deltas).

use std::ops::ControlFlow;
use std::time::Instant;

use axum::http::StatusCode;
use grail_engine::Matcher;
use grail_gen::{Message, ToolsShown, feedback_as_results};
use grail_tools::{CallStream, ReasoningMarkers, StreamDelta, Think, ToolCall, validate_output};
use serde_json::{Value, json};

use crate::backend::{Backend, BackendError, Ending, Generate};
use crate::error::ApiError;
use crate::plan::{AnswerKind, Plan, TextCheck};
use crate::stop::StopScanner;

/// What the answering thread tells the HTTP side.
#[derive(Debug)]
pub enum Event {
    /// Answer text, sent as it is written.
    Content(String),
    /// Another delta sent as it is written (a streamed call's name or arguments, the
    /// reasoning), as OpenAI's `delta` object.
    Delta(Value),
    /// The answer.
    Done(Completion),
    /// The request failed.
    Failed(ApiError),
}

/// A finished answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The answer's text (`None` with calls and no text before them).
    pub content: Option<String>,
    /// The reasoning block's text, when the answer had one (`reasoning_content`).
    pub reasoning: Option<String>,
    /// Whether `content` was already sent as [`Event::Content`].
    pub content_sent: bool,
    /// Whether the reasoning and the calls were already sent as [`Event::Delta`]s.
    pub calls_sent: bool,
    /// The calls.
    pub tool_calls: Vec<ToolCall>,
    /// OpenAI's `finish_reason`: `stop`, `length` or `tool_calls`.
    pub finish_reason: &'static str,
    /// Prompt tokens read, over every attempt.
    pub prompt_tokens: usize,
    /// Tokens written, over every attempt.
    pub completion_tokens: usize,
    /// Prompt tokens not read again (a cached prefix), over every attempt.
    pub cached_tokens: usize,
    /// Tokens the grammar forced (jump-forward), over every attempt.
    pub forced_tokens: usize,
    /// Seconds spent on the grammar by the backend, over every attempt.
    pub grammar_seconds: f64,
    /// Attempts made.
    pub attempts: usize,
}

/// Where events go.
pub trait EventSink {
    /// Sends an event; false when nobody listens any more.
    fn send(&mut self, event: Event) -> bool;
    /// True when nobody listens any more (the client went away).
    fn is_closed(&self) -> bool;
}

impl EventSink for tokio::sync::mpsc::Sender<Event> {
    fn send(&mut self, event: Event) -> bool {
        self.blocking_send(event).is_ok()
    }

    fn is_closed(&self) -> bool {
        tokio::sync::mpsc::Sender::is_closed(self)
    }
}

/// Answers `plan` with `backend` (see the module doc); the outcome goes to `sink`.
pub fn answer(
    plan: &Plan,
    backend: &dyn Backend,
    max_attempts: usize,
    deadline: Instant,
    sink: &mut dyn EventSink,
) {
    if let Some(event) = answer_inner(plan, backend, max_attempts, deadline, sink) {
        sink.send(event);
    }
}

fn answer_inner(
    plan: &Plan,
    backend: &dyn Backend,
    max_attempts: usize,
    deadline: Instant,
    sink: &mut dyn EventSink,
) -> Option<Event> {
    // An unconstrained text answer's reasoning block, and the frame of a format that
    // frames its text (harmony's final channel), are split off at the end.
    let splits_reasoning = (plan.think != Think::Off || plan.wire.text_frame().is_some())
        && plan.grammar.is_none()
        && matches!(plan.answer, AnswerKind::Text(_));
    let live = plan.stream
        && !splits_reasoning
        && match &plan.answer {
            AnswerKind::Text(check) => !check.may_fail,
            AnswerKind::Tools { .. } => false,
        };
    // Calls stream as they are written when the grammar holds all the validator checks
    // (docs/server.md, "Streaming").
    let live_calls = match &plan.answer {
        AnswerKind::Tools { options, text, .. } if plan.stream => {
            CallStream::streams_live(options) && !text.may_fail && plan.warnings.is_empty()
        }
        _ => false,
    };
    let validator = match text_check(&plan.answer)
        .schema
        .as_deref()
        .map(jsonschema::validator_for)
        .transpose()
    {
        Ok(validator) => validator,
        Err(error) => {
            return Some(Event::Failed(ApiError::invalid(
                "schema_invalid",
                Some("response_format"),
                format!("the schema cannot be used to check answers: {error}"),
            )));
        }
    };
    let mut messages = plan.messages.clone();
    let mut native = plan.native.as_deref().cloned();
    let (mut prompt_tokens, mut completion_tokens) = (0, 0);
    let (mut cached_tokens, mut forced_tokens, mut grammar_seconds) = (0, 0, 0.0);
    let attempts = max_attempts.max(1);
    for attempt in 1..=attempts {
        let mut matcher = plan
            .grammar
            .as_ref()
            .map(|grammar| Matcher::new(&grammar.compiled));
        let mut written_bytes = 0usize;
        let mut violation: Option<String> = None;
        // Stop sequences end unconstrained answers only: a grammar decides where a
        // constrained answer ends (docs/server.md).
        let mut scanner = StopScanner::new(if plan.grammar.is_none() {
            plan.stops.clone()
        } else {
            Vec::new()
        });
        let (mut gone, mut timed_out) = (false, false);
        let request = Generate {
            messages: messages.clone(),
            native: native.clone(),
            grammar: plan.grammar.clone(),
            max_tokens: plan.max_tokens,
            sampling: plan.sampling.clone(),
            deadline: Some(deadline),
            variables: plan.variables.clone(),
            reasoning_budget: plan.reasoning_budget.clone(),
        };
        let mut call_stream = match &plan.answer {
            AnswerKind::Tools { options, .. } if live_calls => Some(CallStream::new(options)),
            _ => None,
        };
        let call_ids = CallIds::new(attempt);
        let mut observer = |piece: &str| {
            if let Some(matcher) = matcher.as_mut()
                && matcher.accept_bytes(piece.as_bytes()).is_err()
            {
                violation = Some(format!(
                    "the backend wrote {piece:?} at byte {written_bytes}, which the grammar forbids; a backend must honour the grammar it is sent"
                ));
                return ControlFlow::Break(());
            }
            written_bytes += piece.len();
            if let Some(stream) = call_stream.as_mut()
                && !send_deltas(sink, &call_ids, stream.push(piece))
            {
                gone = true;
                return ControlFlow::Break(());
            }
            let released = scanner.push(piece);
            if live && !released.is_empty() {
                if !sink.send(Event::Content(released.to_string())) {
                    gone = true;
                    return ControlFlow::Break(());
                }
            } else if sink.is_closed() {
                gone = true;
                return ControlFlow::Break(());
            }
            if scanner.stopped() {
                return ControlFlow::Break(());
            }
            if Instant::now() > deadline {
                timed_out = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        };
        let written = backend.generate(&request, &mut observer);
        if gone {
            return None;
        }
        let written = match written {
            Ok(written) => written,
            Err(error) => return Some(Event::Failed(backend_error(error))),
        };
        prompt_tokens += written.prompt_tokens;
        completion_tokens += written.completion_tokens;
        cached_tokens += written.cached_tokens;
        forced_tokens += written.forced_tokens;
        grammar_seconds += written.grammar_seconds;
        if let Some(violation) = violation {
            return Some(Event::Failed(ApiError::new(
                StatusCode::BAD_GATEWAY,
                "server_error",
                "backend_ignored_grammar",
                violation,
            )));
        }
        if timed_out {
            return Some(Event::Failed(ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "server_error",
                "timeout",
                "the answer took longer than this server's request time limit (grail serve --request-timeout)",
            )));
        }
        let rest = scanner.finish().to_string();
        if live && !rest.is_empty() && !sink.send(Event::Content(rest)) {
            return None;
        }
        if let Some(stream) = call_stream.as_mut()
            && !send_deltas(sink, &call_ids, stream.finish())
        {
            return None;
        }
        let text = scanner.text().to_string();
        let complete = matcher.as_ref().is_none_or(Matcher::is_accepting);
        let done = |reasoning: Option<String>,
                    content: Option<String>,
                    tool_calls: Vec<ToolCall>,
                    finish_reason: &'static str| {
            Event::Done(Completion {
                content,
                reasoning,
                content_sent: live || live_calls,
                calls_sent: live_calls,
                tool_calls,
                finish_reason,
                prompt_tokens,
                completion_tokens,
                cached_tokens,
                forced_tokens,
                grammar_seconds,
                attempts: attempt,
            })
        };
        match written.ending {
            // Cut off by the token limit: what was written, as OpenAI does.
            Ending::Length if !complete => {
                return Some(done(None, Some(text), Vec::new(), "length"));
            }
            Ending::Length if plan.grammar.is_none() => {
                return Some(done(None, Some(text), Vec::new(), "length"));
            }
            Ending::Interrupted if scanner.stopped() => {
                return Some(done(None, Some(text), Vec::new(), "stop"));
            }
            _ if !complete => {
                return Some(Event::Failed(ApiError::new(
                    StatusCode::BAD_GATEWAY,
                    "server_error",
                    "backend_ignored_grammar",
                    format!(
                        "the backend ended its answer after {written_bytes} bytes, where the grammar is not complete"
                    ),
                )));
            }
            _ => {}
        }
        let verdict = match &plan.answer {
            AnswerKind::Text(_) if splits_reasoning => {
                let (reasoning, content) =
                    split_reasoning(plan.think, plan.wire.reasoning(), &text);
                let content = match plan.wire.text_frame() {
                    Some(frame) => content
                        .trim_start()
                        .strip_prefix(frame)
                        .map_or(content.clone(), |rest| rest.trim().to_string()),
                    None => content,
                };
                check_text(validator.as_ref(), &content)
                    .map(|()| (reasoning, Some(content), Vec::new()))
            }
            AnswerKind::Text(_) => check_text(validator.as_ref(), &text)
                .map(|()| (None, Some(text.clone()), Vec::new())),
            AnswerKind::Tools {
                registry, options, ..
            } => match validate_output(registry, options, &text) {
                Ok(checked) if !checked.calls.is_empty() => Ok((
                    checked.reasoning,
                    checked.text.filter(|text| !text.is_empty()),
                    checked.calls,
                )),
                Ok(checked) => {
                    let content = checked.text.unwrap_or_default();
                    check_text(validator.as_ref(), &content)
                        .map(|()| (checked.reasoning, Some(content), Vec::new()))
                }
                Err(fault) => Err(fault.feedback()),
            },
        };
        match verdict {
            Ok((reasoning, content, calls)) => {
                let reason = if calls.is_empty() {
                    if written.ending == Ending::Length {
                        "length"
                    } else {
                        "stop"
                    }
                } else {
                    "tool_calls"
                };
                return Some(done(reasoning, content, calls, reason));
            }
            Err(feedback) if attempt < attempts && !live && !live_calls => {
                let retry = [
                    Message::new("assistant", text.clone()),
                    Message::new(
                        "user",
                        format!("That answer is not valid: {feedback}\nWrite it again, corrected."),
                    ),
                ];
                messages.extend(retry.iter().cloned());
                if let Some(native) = native.as_mut() {
                    // A template with a tool section gets the refused calls back as its
                    // own calls, the feedback as their results (when they can be read).
                    let as_results = match &plan.answer {
                        AnswerKind::Tools {
                            registry, options, ..
                        } => feedback_as_results(
                            ToolsShown::Template,
                            registry,
                            options,
                            &native.messages,
                            &text,
                            &feedback,
                        ),
                        AnswerKind::Text(_) => None,
                    };
                    match as_results {
                        Some(turn) => native.messages.extend(turn),
                        None => native.messages.extend(retry),
                    }
                }
            }
            Err(feedback) => {
                return Some(Event::Failed(ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "server_error",
                    "answer_invalid",
                    format!(
                        "after {attempt} attempt(s) the model's answer is still not valid: {feedback}"
                    ),
                )));
            }
        }
    }
    unreachable!("the last attempt returns")
}

fn text_check(answer: &AnswerKind) -> &TextCheck {
    match answer {
        AnswerKind::Text(check) => check,
        AnswerKind::Tools { text, .. } => text,
    }
}

/// Checks JSON text against the schema (feedback for the model when it fails).
/// The ids of an attempt's streamed calls (`call_`, the attempt's time and number, the
/// call's index): a streamed call needs its id before its arguments are written.
struct CallIds(String);

impl CallIds {
    fn new(attempt: usize) -> CallIds {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos() as u64);
        CallIds(format!("call_{nanos:016x}{attempt:02x}"))
    }

    fn of(&self, index: usize) -> String {
        format!("{}{index:02x}", self.0)
    }
}

/// Sends a call stream's deltas as events; false when nobody listens any more.
fn send_deltas(sink: &mut dyn EventSink, ids: &CallIds, deltas: Vec<StreamDelta>) -> bool {
    deltas.into_iter().all(|delta| {
        sink.send(match delta {
            StreamDelta::Content(text) => Event::Content(text),
            StreamDelta::Reasoning(text) => Event::Delta(json!({"reasoning_content": text})),
            StreamDelta::Call { index, name } => Event::Delta(json!({"tool_calls": [{
                "index": index, "id": ids.of(index), "type": "function",
                "function": {"name": name, "arguments": ""},
            }]})),
            StreamDelta::Arguments { index, piece } => Event::Delta(json!({"tool_calls": [{
                "index": index, "function": {"arguments": piece},
            }]})),
        })
    })
}

/// An unconstrained answer's reasoning block and the rest: the text inside the wire
/// format's markers (`<think>` … `</think>`; from the start with `forced`, where the
/// prompt opened it), the rest with the whitespace around it trimmed. An answer without
/// the block is all content; one whose block never closes is all reasoning.
fn split_reasoning(
    think: Think,
    markers: ReasoningMarkers,
    text: &str,
) -> (Option<String>, String) {
    let trimmed = text.trim_start();
    let inside = match think {
        Think::Off => return (None, text.to_string()),
        Think::Forced => text,
        Think::Optional | Think::Required => match trimmed.strip_prefix(markers.open) {
            Some(inside) => inside,
            None => return (None, text.to_string()),
        },
    };
    match inside.split_once(markers.close) {
        Some((reasoning, rest)) => (Some(reasoning.to_string()), rest.trim().to_string()),
        None => (Some(inside.to_string()), String::new()),
    }
}

fn check_text(validator: Option<&jsonschema::Validator>, text: &str) -> Result<(), String> {
    let Some(validator) = validator else {
        return Ok(());
    };
    let value: Value = serde_json::from_str(text.trim())
        .map_err(|error| format!("the answer is not JSON: {error}"))?;
    let problems: Vec<String> = validator
        .iter_errors(&value)
        .take(5)
        .map(|error| {
            let at = error.instance_path().to_string();
            if at.is_empty() {
                error.to_string()
            } else {
                format!("at {at}: {error}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// A backend's failure as an HTTP error.
pub fn backend_error(error: BackendError) -> ApiError {
    let message = error.to_string();
    match error {
        BackendError::Request(_) => {
            ApiError::invalid("request_too_large", Some("messages"), message)
        }
        BackendError::Unreachable(_) => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "server_error",
            "backend_unreachable",
            message,
        ),
        BackendError::Failed(_) => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "server_error",
            "backend_failed",
            message,
        ),
        BackendError::Timeout(_) => ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "server_error",
            "backend_timeout",
            message,
        ),
        BackendError::Unavailable(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "unavailable",
            message,
        ),
    }
}
