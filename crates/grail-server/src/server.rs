//! The HTTP side: routes, limits, the API key, browser checks, request logs, metrics,
//! streaming and shutdown.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use subtle::ConstantTimeEq;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use crate::api::ChatRequest;
use crate::backend::Backend;
use crate::complete::{Completion, Event, answer};
use crate::error::ApiError;
use crate::grammar_cache::{
    DEFAULT_GRAMMAR_CACHE_ENTRIES, DEFAULT_GRAMMAR_CACHE_NODES, GrammarCache, constraint_key,
};
use crate::guard::{BrowserPolicy, require_json};
use crate::listen::{ListenLimits, serve_connections};
use crate::metrics::{CONTENT_TYPE, Gauges, Metrics, Usage};
use crate::plan::{Plan, PlanSettings, plan};

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
    /// Compiled nodes the kept grammars may hold in all (see `grammar_cache.rs`).
    pub grammar_cache_nodes: usize,
    /// The longest a request's head may take to arrive, idle time on a kept-alive
    /// connection included (longer: the connection is closed).
    pub header_timeout: Duration,
    /// The longest a request's body may take to arrive (longer: HTTP 408).
    pub body_timeout: Duration,
    /// The most connections open at once (more: HTTP 503 `too_many_connections`).
    pub max_connections: usize,
    /// Requests planned (grammars built and compiled) at once; planning takes memory
    /// in proportion to the grammar, so this bounds it.
    pub planning_slots: usize,
    /// Requests that may wait for a planning slot (more: HTTP 503 `unavailable`).
    pub planning_queue: usize,
    /// `Host` names accepted besides this server's own (see `guard.rs`; `*`: any).
    pub allowed_hosts: Vec<String>,
    /// `Origin`s accepted besides pages of accepted hosts (`*`: any).
    pub allowed_origins: Vec<String>,
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
            grammar_cache_nodes: DEFAULT_GRAMMAR_CACHE_NODES,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(60),
            max_connections: 512,
            planning_slots: 2,
            planning_queue: 64,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
        }
    }
}

/// Why [`serve`] stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listener failed.
    #[error("the server failed: {0}")]
    Io(#[from] std::io::Error),
    /// The backend can never answer (a model that failed to load).
    #[error("{0}")]
    Backend(String),
}

/// What every handler shares.
pub struct AppState {
    backend: Arc<dyn Backend>,
    settings: ServerSettings,
    shutting_down: AtomicBool,
    next_id: AtomicU64,
    grammars: Arc<GrammarCache>,
    /// Which `Host` and `Origin` headers are accepted (the bound address set by [`serve`]).
    browsers: RwLock<BrowserPolicy>,
    /// Planning slots (see [`ServerSettings::planning_slots`]).
    planning: Arc<Semaphore>,
    /// Requests waiting for a planning slot.
    planning_waiting: AtomicUsize,
    /// Requests being planned now, and the most there have been at once.
    planning_now: AtomicUsize,
    planning_peak: AtomicUsize,
    /// Where request log lines go instead of standard error, when set.
    log_sink: OnceLock<LogSink>,
    /// What `GET /metrics` reports (see `metrics.rs`).
    metrics: Metrics,
}

/// Takes request log lines (one JSON text each).
pub type LogSink = Arc<dyn Fn(String) + Send + Sync>;

impl AppState {
    /// The state for `backend` under `settings`.
    pub fn new(backend: Arc<dyn Backend>, settings: ServerSettings) -> Arc<AppState> {
        let browsers = BrowserPolicy {
            bound: None,
            allowed_hosts: lower(&settings.allowed_hosts),
            allowed_origins: lower(&settings.allowed_origins),
        };
        Arc::new(AppState {
            backend,
            grammars: Arc::new(GrammarCache::with_node_budget(
                settings.grammar_cache_entries,
                settings.grammar_cache_nodes,
            )),
            planning: Arc::new(Semaphore::new(settings.planning_slots.max(1))),
            settings,
            shutting_down: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
            browsers: RwLock::new(browsers),
            planning_waiting: AtomicUsize::new(0),
            planning_now: AtomicUsize::new(0),
            planning_peak: AtomicUsize::new(0),
            log_sink: OnceLock::new(),
            metrics: Metrics::new(),
        })
    }

    /// Sends request log lines to `sink` instead of standard error (set once; later
    /// calls are ignored).
    pub fn log_to(&self, sink: LogSink) {
        let _ = self.log_sink.set(sink);
    }

    /// The most grammars that were ever built at once in planning slots (at most
    /// [`ServerSettings::planning_slots`]).
    pub fn planning_peak(&self) -> usize {
        self.planning_peak.load(Ordering::SeqCst)
    }

    /// From now on, new requests are refused with HTTP 503 (in-flight ones finish).
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }
}

fn lower(names: &[String]) -> Vec<String> {
    names
        .iter()
        .map(|name| name.trim().trim_end_matches('/').to_ascii_lowercase())
        .collect()
}

/// The routes: `POST /v1/chat/completions`, `GET /v1/models`, `GET /metrics` (these
/// three behind the API key and the browser checks), `GET /health`.
pub fn router(state: Arc<AppState>) -> Router {
    let api = Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/models", get(models))
        .route("/metrics", get(scrape))
        .route_layer(middleware::from_fn_with_state(state.clone(), authorize))
        .route_layer(middleware::from_fn_with_state(state.clone(), check_browser));
    Router::new()
        .merge(api)
        .route("/health", get(health))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            close_when_stopping,
        ))
        .with_state(state)
}

/// While the server shuts down, every answer closes its connection.
async fn close_when_stopping(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let mut response = next.run(request).await;
    if state.shutting_down.load(Ordering::SeqCst) {
        response.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
    }
    response
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        "not_found",
        "no such route; this server answers POST /v1/chat/completions, GET /v1/models, GET /metrics and GET /health",
    )
}

async fn health(State(state): State<Arc<AppState>>) -> Response {
    let unavailable = |body: Value, retry_after: u32| {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, retry_after.to_string())],
            axum::Json(body),
        )
            .into_response()
    };
    if state.shutting_down.load(Ordering::SeqCst) {
        return unavailable(json!({"status": "shutting down"}), 5);
    }
    if let Some(reason) = state.backend.failure() {
        return unavailable(json!({"status": "failed", "reason": reason}), 5);
    }
    if state.backend.ready() {
        (
            StatusCode::OK,
            axum::Json(json!({"status": "ok", "model": state.backend.model_id()})),
        )
            .into_response()
    } else {
        unavailable(json!({"status": "loading"}), 5)
    }
}

/// The metrics in Prometheus' text format (see `metrics.rs`); the gauges are read now.
async fn scrape(State(state): State<Arc<AppState>>) -> Response {
    let activity = state.backend.activity();
    let gauges = Gauges {
        queue_length: activity.waiting,
        active_sequences: activity.running,
        sequences_capacity: activity.capacity,
        planning_queue_length: state.planning_waiting.load(Ordering::SeqCst),
        planning_active: state.planning_now.load(Ordering::SeqCst),
    };
    (
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        state.metrics.render(&gauges),
    )
        .into_response()
}

async fn models(State(state): State<Arc<AppState>>) -> Response {
    axum::Json(json!({
        "object": "list",
        "data": [{"id": state.backend.model_id(), "object": "model", "created": 0, "owned_by": "grail"}],
    }))
    .into_response()
}

/// Refuses requests whose `Host` or `Origin` is not accepted (see `guard.rs`).
async fn check_browser(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let verdict = state
        .browsers
        .read()
        .unwrap_or_else(|poison| poison.into_inner())
        .check(request.headers());
    match verdict {
        Ok(()) => next.run(request).await,
        Err(error) => refuse(&state, &request, started, error),
    }
}

/// The answer to a request refused before its handler; a chat request is counted in the
/// metrics (the handler counts the others).
fn refuse(state: &AppState, request: &Request, started: Instant, error: ApiError) -> Response {
    if request.uri().path() == "/v1/chat/completions" {
        state
            .metrics
            .record_request(error.status.as_u16(), started.elapsed(), None);
    }
    error.into_response()
}

/// Checks the API key (compared in constant time).
async fn authorize(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    if let Some(key) = &state.settings.api_key {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .unwrap_or("");
        let matches: bool = given.as_bytes().ct_eq(key.as_bytes()).into();
        if !matches {
            let error = ApiError::new(
                StatusCode::UNAUTHORIZED,
                "invalid_request_error",
                "invalid_api_key",
                "missing or wrong API key; send `Authorization: Bearer <key>`",
            );
            return refuse(&state, &request, started, error);
        }
    }
    next.run(request).await
}

/// What one request's log line says; written once, when the request ends (or, for a
/// request its client abandoned, when it is dropped: status 499 `client_disconnected`),
/// and then counted in the metrics (written or not).
struct RequestLog {
    state: Arc<AppState>,
    id: u64,
    started: Instant,
    stream: bool,
    status: u16,
    code: Option<&'static str>,
    /// What the answer used, and its attempts.
    completion: Option<(Usage, usize)>,
    /// The first content was ready (counted in the metrics).
    first_content: bool,
    warnings: usize,
    /// Planning time, in ms: the grammar built and compiled, or taken from the cache.
    plan_ms: Option<f64>,
    /// Written (or handed to the task that streams the answer).
    done: bool,
}

impl RequestLog {
    fn new(state: &Arc<AppState>) -> RequestLog {
        RequestLog {
            state: state.clone(),
            id: state.next_id.fetch_add(1, Ordering::SeqCst),
            started: Instant::now(),
            stream: false,
            status: 200,
            code: None,
            completion: None,
            first_content: false,
            warnings: 0,
            plan_ms: None,
            done: false,
        }
    }

    /// A copy for the task that streams the answer; this one is then done.
    fn hand_over(&mut self) -> RequestLog {
        self.done = true;
        RequestLog {
            state: self.state.clone(),
            done: false,
            ..*self
        }
    }

    /// Counts the time to the request's first content, once.
    fn first_content(&mut self) {
        if !self.first_content {
            self.first_content = true;
            self.state
                .metrics
                .record_first_content(self.started.elapsed());
        }
    }

    /// Records what the answer used and how many attempts it took.
    fn completed(&mut self, completion: &Completion) {
        self.completion = Some((Usage::from(completion), completion.attempts));
    }

    fn write(&mut self) {
        self.done = true;
        self.state.metrics.record_request(
            self.status,
            self.started.elapsed(),
            self.completion.as_ref().map(|(usage, _)| usage),
        );
        if !self.state.settings.log_requests {
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
        if let Some((usage, attempts)) = self.completion {
            line["prompt_tokens"] = json!(usage.prompt_tokens);
            line["completion_tokens"] = json!(usage.completion_tokens);
            line["attempts"] = json!(attempts);
        }
        if self.warnings > 0 {
            line["warnings"] = json!(self.warnings);
        }
        if let Some(plan_ms) = self.plan_ms {
            line["plan_ms"] = json!((plan_ms * 1e3).round() / 1e3);
        }
        match self.state.log_sink.get() {
            Some(sink) => sink(line.to_string()),
            None => eprintln!("{line}"),
        }
    }
}

impl Drop for RequestLog {
    fn drop(&mut self) {
        if !self.done {
            // The handler was dropped before it answered: the client went away.
            self.status = 499;
            self.code = Some("client_disconnected");
            self.write();
        }
    }
}

async fn chat_completions(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let mut log = RequestLog::new(&state);
    let response = match start(&state, &headers, body, &mut log).await {
        Ok(response) => response,
        Err(error) => {
            log.status = error.status.as_u16();
            log.code = Some(error.code);
            error.into_response()
        }
    };
    if !log.done {
        log.write();
    }
    response
}

/// A 504 for a request past its time limit.
fn timed_out() -> ApiError {
    ApiError::new(
        StatusCode::GATEWAY_TIMEOUT,
        "server_error",
        "timeout",
        "the answer took longer than this server's request time limit (grail serve --request-timeout)",
    )
}

/// Waits for the answer's next event, at most until `deadline` (plus a second for the
/// answering thread to say so itself).
async fn next_event(
    receiver: &mut mpsc::Receiver<Event>,
    deadline: Instant,
) -> Result<Option<Event>, ApiError> {
    let until = tokio::time::Instant::from_std(deadline + Duration::from_secs(1));
    tokio::time::timeout_at(until, receiver.recv())
        .await
        .map_err(|_| timed_out())
}

async fn start(
    state: &Arc<AppState>,
    headers: &HeaderMap,
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
    if let Some(reason) = state.backend.failure() {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "backend_failed_to_start",
            reason,
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
    require_json(headers)?;
    let deadline = log.started + state.settings.request_timeout;
    let bytes = tokio::time::timeout(
        state.settings.body_timeout,
        read_body(body, state.settings.max_body_bytes),
    )
    .await
    .map_err(|_| {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "invalid_request_error",
            "body_timeout",
            format!(
                "the request body did not arrive within {} s (grail serve --body-timeout)",
                state.settings.body_timeout.as_secs()
            ),
        )
    })??;
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
    drop(bytes);
    let planning = Instant::now();
    let plan = plan_bounded(state, request, deadline).await?;
    log.plan_ms = Some(planning.elapsed().as_secs_f64() * 1e3);
    log.stream = plan.stream;
    log.warnings = plan.warnings.len();
    let (sender, mut receiver) = mpsc::channel::<Event>(64);
    let backend = state.backend.clone();
    let max_attempts = state.settings.max_attempts;
    let stream = plan.stream;
    let include_usage = plan.include_usage;
    tokio::task::spawn_blocking(move || {
        let mut sender = sender;
        answer(&plan, backend.as_ref(), max_attempts, deadline, &mut sender);
    });
    let model = state.backend.model_id();
    let completion_id = format!("chatcmpl-{:016x}{:08x}", unix_nanos(), log.id);
    let created = unix_seconds();
    if !stream {
        let mut content = String::new();
        while let Some(event) = next_event(&mut receiver, deadline).await? {
            match event {
                Event::Content(piece) => {
                    log.first_content();
                    content.push_str(&piece);
                }
                // Deltas are for streams; the completion holds the same.
                Event::Delta(_) => {}
                Event::Failed(error) => return Err(error),
                Event::Done(completion) => {
                    // Not streamed: the whole answer is its first content.
                    log.first_content();
                    log.completed(&completion);
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
    let first = next_event(&mut receiver, deadline).await?;
    if let Some(Event::Failed(error)) = first {
        return Err(error);
    }
    if first.is_some() {
        // Content streamed as it is written, or an answer held until it was checked.
        log.first_content();
    }
    let chunk = ChunkWriter {
        id: completion_id,
        created,
        model,
    };
    let mut log = log.hand_over();
    let (body_sender, body_receiver) = mpsc::channel::<Result<Bytes, std::io::Error>>(64);
    tokio::spawn(async move {
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
            log.code = Some("client_disconnected");
            log.write();
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
                Some(Event::Delta(delta)) => {
                    if !send(chunk.chunk(delta, None)).await {
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
                    log.completed(&completion);
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
            event = match next_event(&mut receiver, deadline).await {
                Ok(event) => event,
                Err(error) => Some(Event::Failed(error)),
            };
        }
        drop(receiver);
        log.write();
    });
    let stream = tokio_stream::wrappers::ReceiverStream::new(body_receiver);
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .expect("a valid response"))
}

/// Plans `request`; one that builds a grammar does so in a planning slot: at most
/// [`ServerSettings::planning_slots`] grammars are built at once (building takes memory
/// in proportion to the grammar), at most [`ServerSettings::planning_queue`] requests
/// wait for a slot (more: 503), and none waits past its deadline (504). The slot is held
/// until planning ends, even when the client goes away first. A request with no
/// constraint, or whose grammar is in the cache, takes no slot: it is not held up behind
/// large grammars.
async fn plan_bounded(
    state: &Arc<AppState>,
    request: ChatRequest,
    deadline: Instant,
) -> Result<Plan, ApiError> {
    let unconstrained = request.tools.as_ref().is_none_or(Vec::is_empty)
        && request.grammar.is_none()
        && request.response_format.is_none();
    let light = unconstrained || state.grammars.contains(&constraint_key(&request));
    let permit = if light {
        None
    } else {
        Some(planning_slot(state, deadline).await?)
    };
    // Plans compile grammars (a big schema takes milliseconds): off the async threads.
    let settings = state.settings.plan.clone();
    let grammars = state.grammars.clone();
    let counts = state.clone();
    tokio::task::spawn_blocking(move || {
        let Some(permit) = permit else {
            return plan(request, &settings, &grammars);
        };
        let now = counts.planning_now.fetch_add(1, Ordering::SeqCst) + 1;
        counts.planning_peak.fetch_max(now, Ordering::SeqCst);
        let planned = plan(request, &settings, &grammars);
        counts.planning_now.fetch_sub(1, Ordering::SeqCst);
        drop(permit);
        planned
    })
    .await
    .map_err(|_| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "internal",
            "planning the request failed",
        )
    })?
}

/// Waits for a planning slot (see [`plan_bounded`]).
async fn planning_slot(
    state: &Arc<AppState>,
    deadline: Instant,
) -> Result<OwnedSemaphorePermit, ApiError> {
    if let Ok(permit) = state.planning.clone().try_acquire_owned() {
        return Ok(permit);
    }
    let waiting = state.planning_waiting.fetch_add(1, Ordering::SeqCst);
    let permit = if waiting >= state.settings.planning_queue {
        Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "unavailable",
            "too many requests are waiting to be planned; try again shortly",
        ))
    } else {
        let until = tokio::time::Instant::from_std(deadline);
        match tokio::time::timeout_at(until, state.planning.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "server_error",
                "shutting_down",
                "the server is shutting down",
            )),
            Err(_) => Err(timed_out()),
        }
    };
    state.planning_waiting.fetch_sub(1, Ordering::SeqCst);
    permit
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

/// The deltas sent once an answer is checked: the reasoning, text not yet sent, then
/// each call (its id and name first, its arguments after, as OpenAI streams them).
fn final_deltas(completion: &Completion) -> Vec<Value> {
    let mut deltas = Vec::new();
    if let Some(reasoning) = completion
        .reasoning
        .as_ref()
        .filter(|_| !completion.calls_sent)
    {
        deltas.push(json!({"reasoning_content": reasoning}));
    }
    if !completion.content_sent
        && let Some(content) = completion
            .content
            .as_ref()
            .filter(|content| !content.is_empty())
    {
        deltas.push(json!({"content": content}));
    }
    let unsent = match completion.calls_sent {
        true => &[][..],
        false => completion.tool_calls.as_slice(),
    };
    for (index, call) in unsent.iter().enumerate() {
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
        "prompt_tokens_details": {"cached_tokens": completion.cached_tokens},
    })
}

/// The `chat.completion` object.
fn completion_body(id: &str, created: u64, model: &str, completion: &Completion) -> Value {
    let mut message = json!({"role": "assistant", "content": completion.content});
    if let Some(reasoning) = &completion.reasoning {
        message["reasoning_content"] = json!(reasoning);
    }
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

/// Runs the server on `listener` until `shutdown` resolves (see `listen.rs`): then new
/// requests are answered 503 while in-flight ones finish, within
/// [`ServerSettings::request_timeout`] and [`ServerSettings::header_timeout`] at the most.
///
/// If the backend can never answer (a model that failed to load), the reason is logged,
/// the server stops the same way, and the reason comes back as [`ServeError::Backend`].
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let bound = listener.local_addr()?;
    state
        .browsers
        .write()
        .unwrap_or_else(|poison| poison.into_inner())
        .bound = Some(bound);
    let app = router(state.clone());
    let limits = ListenLimits {
        header_timeout: state.settings.header_timeout,
        max_connections: state.settings.max_connections.max(1),
        drain_limit: state.settings.request_timeout + state.settings.header_timeout,
    };
    let failed: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
    let stop = {
        let (backend, failed) = (state.backend.clone(), failed.clone());
        async move {
            tokio::select! {
                () = shutdown => {}
                reason = backend_failure(backend) => {
                    eprintln!("grail serve: {reason}; stopping");
                    *failed.lock().unwrap_or_else(|poison| poison.into_inner()) = Some(reason);
                }
            }
        }
    };
    let shutting = state.clone();
    serve_connections(listener, app, limits, stop, move || {
        shutting.begin_shutdown()
    })
    .await;
    let reason = failed
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
        .take();
    match reason {
        Some(reason) => Err(ServeError::Backend(reason)),
        None => Ok(()),
    }
}

/// Resolves with the reason once `backend` says it can never answer.
async fn backend_failure(backend: Arc<dyn Backend>) -> String {
    loop {
        if let Some(reason) = backend.failure() {
            return reason;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
