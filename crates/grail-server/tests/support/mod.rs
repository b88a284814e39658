//! The harness the server's tests share: the tiny model as the embedded backend (instant,
//! no model file), a server on a free port of 127.0.0.1, and small HTTP helpers.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use grail_gen::testing::TinyModel;
use grail_server::{
    AppState, Backend, BackendError, EmbeddedBackend, EmbeddedOptions, Generate, ServeError,
    ServerSettings, Written,
};
use serde_json::{Value, json};

/// A backend that remembers every answer its inner backend wrote.
pub struct Recording {
    pub inner: Arc<EmbeddedBackend>,
    pub written: Mutex<Vec<Result<Written, BackendError>>>,
}

impl Backend for Recording {
    fn model_id(&self) -> String {
        self.inner.model_id()
    }
    fn ready(&self) -> bool {
        self.inner.ready()
    }
    fn activity(&self) -> grail_server::Activity {
        self.inner.activity()
    }
    fn generate(
        &self,
        request: &Generate,
        observer: &mut dyn FnMut(&str) -> std::ops::ControlFlow<()>,
    ) -> Result<Written, BackendError> {
        let result = self.inner.generate(request, observer);
        self.written.lock().unwrap().push(result.clone());
        result
    }
}

pub fn tiny_backend(queue: usize) -> Arc<Recording> {
    paced_backend(queue, Duration::ZERO)
}

/// The tiny model taking `delay` per token, writing one answer at a time.
pub fn paced_backend(queue: usize, delay: Duration) -> Arc<Recording> {
    batched_backend(queue, delay, 1)
}

/// The tiny model taking `delay` per step, writing `sequences` answers at once.
pub fn batched_backend(queue: usize, delay: Duration, sequences: usize) -> Arc<Recording> {
    backend_of(queue, move || {
        TinyModel::new(7)
            .with_delay(delay)
            .with_sequences(sequences, 4096 * sequences)
    })
}

/// The embedded backend on the tiny model `model` makes, writing one answer at a time.
pub fn backend_of(queue: usize, model: impl Fn() -> TinyModel + Send + 'static) -> Arc<Recording> {
    let embedded = EmbeddedBackend::start(
        "tiny",
        Box::new(move || Ok(Box::new(model()) as Box<dyn grail_gen::BatchModel>)),
        EmbeddedOptions {
            queue,
            ..EmbeddedOptions::default()
        },
    );
    wait_until("the tiny model is ready", || embedded.ready());
    Arc::new(Recording {
        inner: Arc::new(embedded),
        written: Mutex::new(Vec::new()),
    })
}

/// A server on a free port, run on its own runtime until `stop` is called.
pub struct TestServer {
    pub address: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), ServeError>>>,
}

impl TestServer {
    pub fn start(backend: Arc<dyn Backend>, settings: ServerSettings) -> TestServer {
        TestServer::start_state(AppState::new(backend, settings))
    }

    /// A server for `state` (made by the caller, to watch or configure it).
    pub fn start_state(state: Arc<AppState>) -> TestServer {
        let (address_sender, address_receiver) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            let ended = runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                address_sender.send(listener.local_addr().unwrap()).unwrap();
                grail_server::serve(listener, state, async {
                    let _ = stopped.await;
                })
                .await
            });
            // Answers still held by a stuck backend are not waited for.
            runtime.shutdown_timeout(Duration::from_secs(1));
            ended
        });
        TestServer {
            address: address_receiver.recv().unwrap(),
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// Asks the server to shut down and waits until it has.
    pub fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap().unwrap();
        }
    }

    /// Asks the server to shut down without waiting: it drains meanwhile.
    pub fn begin_shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Waits (at most `limit`) for the server to stop by itself: how it ended, or `None`
    /// if it still runs.
    pub fn stopped_within(&mut self, limit: Duration) -> Option<Result<(), ServeError>> {
        let deadline = Instant::now() + limit;
        while self
            .thread
            .as_ref()
            .is_some_and(|thread| !thread.is_finished())
        {
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.thread.take().map(|thread| thread.join().unwrap())
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub fn quiet() -> ServerSettings {
    ServerSettings {
        log_requests: false,
        ..ServerSettings::default()
    }
}

pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

/// POSTs `body` (raw text) to the chat route: the status and the JSON answer.
pub fn post_text(server: &TestServer, body: &str) -> (u16, Value) {
    post_with(server, body, None)
}

pub fn post_with(server: &TestServer, body: &str, key: Option<&str>) -> (u16, Value) {
    let mut request = agent()
        .post(&server.url("/v1/chat/completions"))
        .header("Content-Type", "application/json");
    if let Some(key) = key {
        request = request.header("Authorization", &format!("Bearer {key}"));
    }
    let response = request.send(body).unwrap();
    let status = response.status().as_u16();
    let text = response.into_body().read_to_string().unwrap();
    let value = serde_json::from_str(&text).unwrap_or_else(|_| json!({ "raw": text }));
    (status, value)
}

pub fn post(server: &TestServer, body: &Value) -> (u16, Value) {
    post_text(server, &body.to_string())
}

pub fn user(text: &str) -> Value {
    json!([{"role": "user", "content": text}])
}

/// Polls `condition` until it holds, failing after 10 seconds with what was awaited.
pub fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A port of 127.0.0.1 that refuses connections for as long as the socket lives: bound,
/// never listening, so no other test can take it meanwhile (a port merely released can
/// be handed to a parallel test's listener).
pub fn refusing_port() -> (tokio::net::TcpSocket, u16) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = socket.local_addr().unwrap().port();
    (socket, port)
}

/// Reads one HTTP request from a stand-in upstream's connection: its head, then as many
/// body bytes as its `Content-Length` says; the body.
pub fn read_request_body(reader: &mut impl std::io::BufRead) -> Vec<u8> {
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    body
}
