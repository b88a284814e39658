//! The HTTP side: routes, limits, the API key, request logs, streaming and shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use subtle::ConstantTimeEq;
use tokio::sync::mpsc;

use crate::api::ChatRequest;
use crate::backend::Backend;
use crate::complete::{Completion, Event, answer};
use crate::error::ApiError;
use crate::grammar_cache::{DEFAULT_GRAMMAR_CACHE_ENTRIES, GrammarCache};
use crate::plan::{PlanSettings, plan};

/// How the server runs.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    /// Requests must carry `Authorization: Bearer <key>` when set.
    pub api_key: Option<String>,
    /// The largest request body, in bytes (larger: HTTP 413).
    pub max_body_bytes: usize,
    /// The longest a request may take, queueing included (longer: HTTP 504).
    pub request_timeout: Duration,
    /// Attempts per answer, the first included, when the checker refuses an answer.
    pub max_attempts: usize,
    /// Writes one JSON line per request to standard error.
    pub log_requests: bool,
    /// How requests become plans.
    pub plan: PlanSettings,
    /// Request grammars kept for later requests with the same tools and formats
    /// (0: none; see `grammar_cache.rs`).
    pub grammar_cache_entries: usize,
}

impl Default for ServerSettings {
    fn default() -> ServerSettings {
        ServerSettings {
            api_key: None,
            max_body_bytes: 4 * 1024 * 1024,
            request_timeout: Duration::from_secs(300),
            max_attempts: 3,
            log_requests: true,
            plan: PlanSettings::default(),
            grammar_cache_entries: DEFAULT_GRAMMAR_CACHE_ENTRIES,
        }
    }
}

/// What every handler shares.
pub struct AppState {
    backend: Arc<dyn Backend>,
    settings: ServerSettings,
    shutting_down: AtomicBool,
    next_id: AtomicU64,
    grammars: Arc<GrammarCache>,
}

impl AppState {
    /// The state for `backend` under `settings`.
    pub fn new(backend: Arc<dyn Backend>, settings: ServerSettings) -> Arc<AppState> {
        Arc::new(AppState {
            backend,
            grammars: Arc::new(GrammarCache::new(settings.grammar_cache_entries)),
            settings,
            shutting_down: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
        })
    }

    /// From now on, new requests are refused with HTTP 503 (in-flight ones finish).
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }
}

/// The routes: `POST /v1/chat/completions`, `GET /v1/models`, `GET /health`.
pub fn router(state: Arc<AppState>) -> Router {
    let api = Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/models", get(models))
        .route_layer(middleware::from_fn_with_state(state.clone(), authorize));
    Router::new()
        .merge(api)
        .route("/health", get(health))
        .fallback(not_found)
        .with_state(state)
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        "not_found",
        "no such route; this server answers POST /v1/chat/completions, GET /v1/models and GET /health",
    )
}

async fn health(State(state): State<Arc<AppState>>) -> Response {
    if state.shutting_down.load(Ordering::SeqCst) {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({"status": "shutting down"})),
        )
            .into_response();
    }
    if state.backend.ready() {
        (
            StatusCode::OK,
            axum::Json(json!({"status": "ok", "model": state.backend.model_id()})),
        )
            .into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({"status": "loading"})),
        )
            .into_response()
    }
}

async fn models(State(state): State<Arc<AppState>>) -> Response {
    axum::Json(json!({
        "object": "list",
        "data": [{"id": state.backend.model_id(), "object": "model", "created": 0, "owned_by": "grail"}],
    }))
    .into_response()
}

/// Checks the API key (compared in constant time).
async fn authorize(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    if let Some(key) = &state.settings.api_key {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .unwrap_or("");
        let matches: bool = given.as_bytes().ct_eq(key.as_bytes()).into();
        if !matches {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "invalid_request_error",
                "invalid_api_key",
                "missing or wrong API key; send `Authorization: Bearer <key>`",
            )
            .into_response();
        }
    }
    next.run(request).await
}

/// What one request's log line says.
struct RequestLog {
    id: u64,
    started: Instant,
    stream: bool,
    status: u16,
    code: Option<&'static str>,
    completion: Option<(usize, usize, usize)>,
    warnings: usize,
    /// Planning time, in ms: the grammar built and compiled, or taken from the cache.
    plan_ms: Option<f64>,
}

impl RequestLog {
    fn write(&self, state: &AppState) {
        if !state.settings.log_requests {
            return;
        }
        let mut line = json!({
            "time": unix_seconds(),
            "request": self.id,
            "route": "/v1/chat/completions",
            "status": self.status,
            "stream": self.stream,
            "ms": (self.started.elapsed().as_secs_f64() * 1e3 * 10.0).round() / 10.0,
        });
        if let Some(code) = self.code {
            line["error"] = json!(code);
        }
        if let Some((prompt, completion, attempts)) = self.completion {
            line["prompt_tokens"] = json!(prompt);
            line["completion_tokens"] = json!(completion);
            line["attempts"] = json!(attempts);
        }
        if self.warnings > 0 {
            line["warnings"] = json!(self.warnings);
        }
        if let Some(plan_ms) = self.plan_ms {
            line["plan_ms"] = json!((plan_ms * 1e3).round() / 1e3);
        }
        eprintln!("{line}");
    }
}

async fn chat_completions(State(state): State<Arc<AppState>>, body: Body) -> Response {
    let id = state.next_id.fetch_add(1, Ordering::SeqCst);
    let mut log = RequestLog {
        id,
        started: Instant::now(),
        stream: false,
        status: 200,
        code: None,
        completion: None,
        warnings: 0,
        plan_ms: None,
    };
    let response = match start(&state, body, &mut log).await {
        Ok(response) => response,
        Err(error) => {
            log.status = error.status.as_u16();
            log.code = Some(error.code);
            error.into_response()
        }
    };
    if !log.stream || log.status != 200 {
        log.write(&state);
    }
    response
}

async fn start(
    state: &Arc<AppState>,
    body: Body,
    log: &mut RequestLog,
) -> Result<Response, ApiError> {
    if state.shutting_down.load(Ordering::SeqCst) {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "shutting_down",
            "the server is shutting down",
        ));
    }
    if !state.backend.ready() {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "loading",
            "the model is still loading; GET /health answers 200 once it is ready",
        ));
    }
    let bytes = read_body(body, state.settings.max_body_bytes).await?;
    let request: ChatRequest = serde_json::from_slice(&bytes).map_err(|error| {
        let message = error.to_string();
        let param = message
            .strip_prefix("unknown field `")
            .and_then(|rest| rest.split('`').next())
            .map(str::to_string);
        let mut error = ApiError::invalid(
            if param.is_some() {
                "unknown_parameter"
            } else {
                "invalid_json"
            },
            None,
            format!("the request body is not a valid chat request: {message}"),
        );
        error.param = param;
        error
    })?;
    // Plans compile grammars (a big schema takes milliseconds): off the async threads.
    let settings = state.settings.plan.clone();
    let grammars = state.grammars.clone();
    let planning = Instant::now();
    let plan = tokio::task::spawn_blocking(move || plan(request, &settings, &grammars))
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                "internal",
                "planning the request failed",
            )
        })??;
    log.plan_ms = Some(planning.elapsed().as_secs_f64() * 1e3);
    log.stream = plan.stream;
    log.warnings = plan.warnings.len();
    let (sender, mut receiver) = mpsc::channel::<Event>(64);
    let backend = state.backend.clone();
    let max_attempts = state.settings.max_attempts;
    let deadline = log.started + state.settings.request_timeout;
    let stream = plan.stream;
    let include_usage = plan.include_usage;
    tokio::task::spawn_blocking(move || {
        let mut sender = sender;
        answer(&plan, backend.as_ref(), max_attempts, deadline, &mut sender);
    });
    let model = state.backend.model_id();
    let id = log.id;
    let completion_id = format!("chatcmpl-{:016x}{id:08x}", unix_nanos());
    let created = unix_seconds();
    if !stream {
        let mut content = String::new();
        while let Some(event) = receiver.recv().await {
            match event {
                Event::Content(piece) => content.push_str(&piece),
                Event::Failed(error) => return Err(error),
                Event::Done(completion) => {
                    log.completion = Some((
                        completion.prompt_tokens,
                        completion.completion_tokens,
                        completion.attempts,
                    ));
                    return Ok(axum::Json(completion_body(
                        &completion_id,
                        created,
                        &model,
                        &completion,
                    ))
                    .into_response());
                }
            }
        }
        return Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "internal",
            "the answer ended without an outcome",
        ));
    }
    // Streaming: an error before the first piece is still an HTTP error.
    let first = receiver.recv().await;
    if let Some(Event::Failed(error)) = first {
        return Err(error);
    }
    let chunk = ChunkWriter {
        id: completion_id,
        created,
        model,
    };
    let state = state.clone();
    let started = log.started;
    let (warnings, plan_ms) = (log.warnings, log.plan_ms);
    let (body_sender, body_receiver) = mpsc::channel::<Result<Bytes, std::io::Error>>(64);
    tokio::spawn(async move {
        let mut log = RequestLog {
            id,
            started,
            stream: true,
            status: 200,
            code: None,
            completion: None,
            warnings,
            plan_ms,
        };
        let send = |text: String| {
            let body_sender = body_sender.clone();
            async move {
                body_sender
                    .send(Ok(Bytes::from(format!("data: {text}\n\n"))))
                    .await
                    .is_ok()
            }
        };
        if !send(chunk.chunk(json!({"role": "assistant", "content": ""}), None)).await {
            return;
        }
        let mut event = first;
        loop {
            match event {
                None => break,
                Some(Event::Content(piece)) => {
                    if !send(chunk.chunk(json!({"content": piece}), None)).await {
                        // The client went away: dropping the receiver stops the answer.
                        log.code = Some("client_disconnected");
                        break;
                    }
                }
                Some(Event::Failed(error)) => {
                    log.status = error.status.as_u16();
                    log.code = Some(error.code);
                    send(error.body().to_string()).await;
                    break;
                }
                Some(Event::Done(completion)) => {
                    log.completion = Some((
                        completion.prompt_tokens,
                        completion.completion_tokens,
                        completion.attempts,
                    ));
                    for delta in final_deltas(&completion) {
                        if !send(chunk.chunk(delta, None)).await {
                            break;
                        }
                    }
                    send(chunk.chunk(json!({}), Some(completion.finish_reason))).await;
                    if include_usage {
                        let mut usage = chunk.chunk(json!({}), None);
                        if let Ok(mut value) = serde_json::from_str::<Value>(&usage) {
                            value["choices"] = json!([]);
                            value["usage"] = usage_json(&completion);
                            usage = value.to_string();
                        }
                        send(usage).await;
                    }
                    send("[DONE]".to_string()).await;
                    break;
                }
            }
            event = receiver.recv().await;
        }
        drop(receiver);
        log.write(&state);
    });
    let stream = tokio_stream::wrappers::ReceiverStream::new(body_receiver);
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .expect("a valid response"))
}

/// A body read past the limit is still drained (up to this much) so the client can read
/// the 413 instead of a reset connection.
const DRAIN_LIMIT: usize = 64 * 1024 * 1024;

/// Reads the request body, at most `limit` bytes (more: HTTP 413).
async fn read_body(body: Body, limit: usize) -> Result<Vec<u8>, ApiError> {
    use tokio_stream::StreamExt;
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    let mut total = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|error| {
            ApiError::invalid(
                "body_unreadable",
                None,
                format!("the request body could not be read: {error}"),
            )
        })?;
        total += chunk.len();
        if total <= limit {
            bytes.extend_from_slice(&chunk);
        } else if total > DRAIN_LIMIT {
            break;
        }
    }
    if total > limit {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            "body_too_large",
            format!(
                "the request body is over this server's limit of {limit} bytes (grail serve --max-body-bytes)"
            ),
        ));
    }
    Ok(bytes)
}

/// Writes `chat.completion.chunk` objects.
struct ChunkWriter {
    id: String,
    created: u64,
    model: String,
}

impl ChunkWriter {
    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> String {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        })
        .to_string()
    }
}

/// The deltas sent once an answer is checked: text not yet sent, then each call (its
/// id and name first, its arguments after, as OpenAI streams them).
fn final_deltas(completion: &Completion) -> Vec<Value> {
    let mut deltas = Vec::new();
    if !completion.content_sent
        && let Some(content) = completion
            .content
            .as_ref()
            .filter(|content| !content.is_empty())
    {
        deltas.push(json!({"content": content}));
    }
    for (index, call) in completion.tool_calls.iter().enumerate() {
        deltas.push(json!({"tool_calls": [{
            "index": index, "id": call.id, "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }]}));
        let arguments = call.arguments.to_string();
        for piece in char_chunks(&arguments, 64) {
            deltas
                .push(json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}));
        }
    }
    deltas
}

fn char_chunks(text: &str, size: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(&text[start..end]);
        start = end;
    }
    pieces
}

fn usage_json(completion: &Completion) -> Value {
    json!({
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "total_tokens": completion.prompt_tokens + completion.completion_tokens,
    })
}

/// The `chat.completion` object.
fn completion_body(id: &str, created: u64, model: &str, completion: &Completion) -> Value {
    let mut message = json!({"role": "assistant", "content": completion.content});
    if !completion.tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(
            completion
                .tool_calls
                .iter()
                .map(|call| call.to_openai())
                .collect(),
        );
    }
    json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": completion.finish_reason}],
        "usage": usage_json(completion),
    })
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos() as u64)
}

/// Runs the server on `listener` until `shutdown` resolves; then new requests are
/// refused and in-flight ones finish before it returns.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(state.clone());
    let shutting = state.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            shutting.begin_shutdown();
        })
        .await
}
