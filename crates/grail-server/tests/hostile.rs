//! Hostile clients, failing backends and browsers (issue 48, findings 6-14): slow
//! headers, too many connections, a model that cannot load, backends that ignore
//! `max_tokens` or send endless lines or leak secrets, huge conversations and grammars,
//! grammars that match nothing, pages of other sites, and what a client is told while
//! the server is unavailable or shutting down.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use grail_server::{
    AppState, Backend, BackendError, EmbeddedBackend, EmbeddedOptions, Generate, RemoteBackend,
    RemoteKind, ServeError, ServerSettings, Written,
};
use serde_json::{Value, json};

mod support;
use support::*;

/// A generous bound for what should take about a second on an idle machine.
const PATIENCE: Duration = Duration::from_secs(30);

/// Reads from `stream` until it is closed (`true`) or `PATIENCE` passes (`false`).
fn closed_by_server(stream: &mut TcpStream) -> bool {
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut buffer = [0u8; 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            // Reset: closed too.
            Err(_) => return true,
        }
    }
}

/// A connection that sent part of a request's head and stops there.
fn half_header(server: &TestServer) -> TcpStream {
    let mut stream = TcpStream::connect(server.address).unwrap();
    stream
        .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
        .unwrap();
    stream
}

/// A raw HTTP exchange: the status line's code, the headers (lower-case names) and the
/// body.
fn raw_request(server: &TestServer, request: &str) -> (u16, Vec<(String, String)>, String) {
    let mut stream = TcpStream::connect(server.address).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).unwrap();
    let code = status.split(' ').nth(1).unwrap_or("0").parse().unwrap_or(0);
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap();
        let (name, value) = (name.to_ascii_lowercase(), value.trim().to_string());
        if name == "content-length" {
            length = value.parse().unwrap();
        }
        headers.push((name, value));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    (code, headers, String::from_utf8(body).unwrap())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

fn chat(body: &str, extra_headers: &str) -> String {
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra_headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

// Finding 6: slow headers.

#[test]
fn a_half_sent_header_is_closed_after_the_header_timeout() {
    let settings = ServerSettings {
        header_timeout: Duration::from_secs(1),
        ..quiet()
    };
    let server = TestServer::start(tiny_backend(8), settings);
    let mut stream = half_header(&server);
    assert!(
        closed_by_server(&mut stream),
        "the connection is still open"
    );
    // And an idle kept-alive connection too.
    let mut idle = TcpStream::connect(server.address).unwrap();
    assert!(
        closed_by_server(&mut idle),
        "the idle connection is still open"
    );
}

#[test]
fn at_the_connection_cap_slow_clients_make_room_and_busy_ones_get_a_503() {
    let settings = ServerSettings {
        // Long enough that only an eviction closes a half-sent header within PATIENCE.
        header_timeout: Duration::from_secs(600),
        max_connections: 4,
        ..quiet()
    };
    let backend = paced_backend(8, Duration::from_millis(10));
    let server = Arc::new(TestServer::start(backend.clone(), settings));
    let mut slow: Vec<TcpStream> = (0..4).map(|_| half_header(&server)).collect();
    // Older than a second: evictable.
    std::thread::sleep(Duration::from_millis(1500));
    let body = json!({"messages": user("x"), "grammar": "root ::= \"ok\""}).to_string();
    let (status, _, answer) =
        raw_request(&server, &chat(&body, "Content-Type: application/json\r\n"));
    assert_eq!(status, 200, "{answer}");
    // The oldest half-sent header made room.
    assert!(closed_by_server(&mut slow[0]));
    drop(slow);

    // Four connections busy with answers: a fifth is refused, with Retry-After.
    let long = json!({"messages": user("x"), "grammar": "root ::= [a-z]{300}", "max_tokens": 300})
        .to_string();
    let busy: Vec<_> = (0..4)
        .map(|_| {
            let (server, long) = (server.clone(), long.clone());
            std::thread::spawn(move || {
                // The first request's connection may not be counted closed yet: a client
                // told to retry does.
                for _ in 0..100 {
                    let (status, _, answer) =
                        raw_request(&server, &chat(&long, "Content-Type: application/json\r\n"));
                    if status != 503 || !answer.contains("too_many_connections") {
                        return status;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                503
            })
        })
        .collect();
    wait_until("the first long answer is being written", || {
        backend.inner.busy()
    });
    wait_until("the other three wait for the model", || {
        backend.inner.waiting() == 3
    });
    let (status, headers, answer) =
        raw_request(&server, &chat(&body, "Content-Type: application/json\r\n"));
    assert_eq!(status, 503, "{answer}");
    assert_eq!(header(&headers, "retry-after"), Some("1"));
    assert!(answer.contains("too_many_connections"), "{answer}");
    for thread in busy {
        assert_eq!(thread.join().unwrap(), 200);
    }
}

#[test]
fn a_half_sent_header_does_not_hold_the_shutdown() {
    let settings = ServerSettings {
        header_timeout: Duration::from_secs(1),
        request_timeout: Duration::from_secs(600),
        ..quiet()
    };
    let mut server = TestServer::start(tiny_backend(8), settings);
    let _stream = half_header(&server);
    std::thread::sleep(Duration::from_millis(100));
    server.begin_shutdown();
    let ended = server.stopped_within(PATIENCE);
    assert!(
        matches!(ended, Some(Ok(()))),
        "the server did not stop: {ended:?}"
    );
}

// Finding 7: a model that cannot be loaded.

#[test]
fn a_model_that_fails_to_load_stops_the_server_with_its_reason() {
    let backend = EmbeddedBackend::start(
        "broken",
        Box::new(|| Err("model.gguf is not a GGUF file (bad magic 0x00000000)".to_string())),
        EmbeddedOptions {
            queue: 4,
            ..EmbeddedOptions::default()
        },
    );
    let mut server = TestServer::start(Arc::new(backend), quiet());
    match server.stopped_within(PATIENCE) {
        Some(Err(ServeError::Backend(reason))) => {
            assert!(reason.contains("could not be loaded"), "{reason}");
            assert!(reason.contains("bad magic"), "{reason}");
        }
        other => panic!("the server did not stop with the reason: {other:?}"),
    }
}

// Findings 8 and 9: remote backends.

/// An upstream that reads one request, then lets `respond` write anything at all.
fn raw_upstream(
    respond: impl FnOnce(&mut TcpStream) + Send + 'static,
) -> (u16, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let thread = std::thread::spawn(move || {
        let (mut connection, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(connection.try_clone().unwrap());
        read_request_body(&mut reader);
        respond(&mut connection);
    });
    (port, thread)
}

fn event(piece: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]})
    )
}

fn remote_at(url: &str, key: Option<&str>) -> Arc<dyn Backend> {
    Arc::new(RemoteBackend::new(
        RemoteKind::LlamaServer,
        url,
        Some("upstream-model".into()),
        key.map(str::to_string),
        Duration::from_secs(60),
    ))
}

#[test]
fn a_backend_that_ignores_max_tokens_is_cut_off_at_it() {
    // 100,000 pieces (the upstream would go on): the answer stops at max_tokens.
    let (port, upstream) = raw_upstream(|connection| {
        let _ = connection.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
        );
        for _ in 0..100_000 {
            if connection.write_all(event("word ").as_bytes()).is_err() {
                return;
            }
        }
    });
    let server = TestServer::start(
        remote_at(&format!("http://127.0.0.1:{port}"), None),
        quiet(),
    );
    let (status, answer) = post(&server, &json!({"messages": user("x"), "max_tokens": 40}));
    upstream.join().unwrap();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["choices"][0]["finish_reason"], "length");
    let content = answer["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(content, "word ".repeat(40));
    assert_eq!(answer["usage"]["completion_tokens"], 40);

    // One enormous piece: cut at 64 bytes a token.
    let (port, upstream) = raw_upstream(|connection| {
        let _ = connection.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
        );
        let _ = connection.write_all(event(&"y".repeat(500_000)).as_bytes());
    });
    let server = TestServer::start(
        remote_at(&format!("http://127.0.0.1:{port}"), None),
        quiet(),
    );
    let (status, answer) = post(&server, &json!({"messages": user("x"), "max_tokens": 10}));
    upstream.join().unwrap();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["choices"][0]["finish_reason"], "length");
    let content = answer["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(
        content.len(),
        10 * grail_server::remote::MAX_BYTES_PER_TOKEN
    );
}

#[test]
fn an_endless_event_line_is_refused_and_not_echoed() {
    let (port, upstream) = raw_upstream(|connection| {
        let _ = connection.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: {\"choices\": [{\"delta\": {\"content\": \"",
        );
        // 64 MB without a line end (the server stops reading long before).
        let chunk = vec![b'z'; 1 << 20];
        for _ in 0..64 {
            if connection.write_all(&chunk).is_err() {
                return;
            }
        }
    });
    let server = TestServer::start(
        remote_at(&format!("http://127.0.0.1:{port}"), None),
        quiet(),
    );
    let (status, answer) = post(&server, &json!({"messages": user("x")}));
    upstream.join().unwrap();
    assert_eq!(status, 502, "{answer}");
    assert_eq!(answer["error"]["code"], "backend_failed");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("event line over"), "{message}");
    assert!(message.len() < 1000, "{} bytes", message.len());
}

#[test]
fn upstream_secrets_never_reach_the_client() {
    let key = "sk-upstream-secret-42";
    let (port, upstream) = raw_upstream(move |connection| {
        let body = format!(
            "{{\"error\": {{\"message\": \"Incorrect API key provided: {key}. You sent Authorization: Bearer {key} as alice:hunter2pass\"}}}}"
        );
        let _ = write!(
            connection,
            "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    });
    let url = format!("http://alice:hunter2pass@127.0.0.1:{port}");
    let server = TestServer::start(remote_at(&url, Some(key)), quiet());
    let (status, answer) = post(&server, &json!({"messages": user("x")}));
    upstream.join().unwrap();
    assert_eq!(status, 502, "{answer}");
    let text = answer.to_string();
    assert!(text.contains("Incorrect API key"), "{text}");
    for secret in [key, "hunter2pass"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    assert!(text.contains("[redacted]"), "{text}");
    drop(server);

    // Unreachable: the URL in the error has no credentials.
    let (_reserved, closed) = refusing_port();
    let url = format!("http://bob:pw-secret-9@127.0.0.1:{closed}/v1");
    let server = TestServer::start(remote_at(&url, None), quiet());
    let (status, answer) = post(&server, &json!({"messages": user("x")}));
    assert!(status == 502 || status == 504, "{answer}");
    let text = answer.to_string();
    assert!(!text.contains("pw-secret-9"), "{text}");
    assert!(text.contains(&format!("127.0.0.1:{closed}")), "{text}");
}

// Finding 10: conversations too long to render.

/// A backend whose every answer blocks for `hold` without writing (as an uninterruptible
/// prompt rendering does), then says it finished.
struct Stuck {
    hold: Duration,
    calls: Mutex<usize>,
    finished: AtomicBool,
}

impl Backend for Stuck {
    fn model_id(&self) -> String {
        "stuck".into()
    }
    fn ready(&self) -> bool {
        true
    }
    fn generate(
        &self,
        _request: &Generate,
        _observer: &mut dyn FnMut(&str) -> std::ops::ControlFlow<()>,
    ) -> Result<Written, BackendError> {
        *self.calls.lock().unwrap() += 1;
        std::thread::sleep(self.hold);
        self.finished.store(true, Ordering::SeqCst);
        Err(BackendError::Failed("finished too late".into()))
    }
}

#[test]
fn a_conversation_over_the_message_limit_is_refused_before_rendering() {
    let backend = Arc::new(Stuck {
        hold: Duration::ZERO,
        calls: Mutex::new(0),
        finished: AtomicBool::new(false),
    });
    let mut settings = quiet();
    settings.plan.max_messages = 1000;
    let server = TestServer::start(backend.clone(), settings);
    let messages: Vec<Value> = (0..20_000)
        .map(|index| json!({"role": if index % 2 == 0 { "user" } else { "assistant" }, "content": "hi"}))
        .collect();
    let (status, answer) = post(&server, &json!({"messages": messages}));
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], "too_many_messages");
    assert_eq!(answer["error"]["param"], "messages");
    assert_eq!(*backend.calls.lock().unwrap(), 0, "the backend was called");
}

#[test]
fn a_backend_stuck_before_its_first_token_still_answers_504_on_time() {
    let backend = Arc::new(Stuck {
        hold: Duration::from_secs(40),
        calls: Mutex::new(0),
        finished: AtomicBool::new(false),
    });
    let settings = ServerSettings {
        request_timeout: Duration::from_secs(1),
        ..quiet()
    };
    let server = TestServer::start(backend.clone(), settings);
    for stream in [false, true] {
        let (status, answer) = post(&server, &json!({"messages": user("x"), "stream": stream}));
        assert_eq!(status, 504, "{answer}");
        assert_eq!(answer["error"]["code"], "timeout");
        assert!(
            !backend.finished.load(Ordering::SeqCst),
            "the answer waited for the backend"
        );
    }
}

// Finding 11: planning bounded, grammars capped.

#[test]
fn planning_runs_in_its_slots_and_grammars_over_the_caps_are_refused() {
    let settings = ServerSettings {
        planning_slots: 2,
        ..quiet()
    };
    let state = AppState::new(tiny_backend(64), settings);
    let server = Arc::new(TestServer::start_state(state.clone()));
    // Twelve requests at once, each with a distinct grammar of 2,000 rules.
    let barrier = Arc::new(Barrier::new(12));
    let threads: Vec<_> = (0..12)
        .map(|request| {
            let (server, barrier) = (server.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut grammar = String::from("root ::= r0\n");
                for rule in 0..2000 {
                    grammar.push_str(&format!(
                        "r{rule} ::= \"q{request}x{rule}\" | r{}\n",
                        rule + 1
                    ));
                }
                grammar.push_str("r2000 ::= \"end\"\n");
                let body = json!({"messages": user("x"), "grammar": grammar, "max_tokens": 8});
                barrier.wait();
                post(&server, &body).0
            })
        })
        .collect();
    for thread in threads {
        assert_eq!(thread.join().unwrap(), 200);
    }
    let peak = state.planning_peak();
    assert!((1..=2).contains(&peak), "{peak} plans at once");

    // Over the text limit, and over the node limit.
    let mut settings = quiet();
    settings.plan.max_grammar_bytes = 1000;
    settings.plan.max_grammar_nodes = 2000;
    let server = TestServer::start(tiny_backend(8), settings);
    let long = format!("root ::= \"{}\"", "a".repeat(2000));
    let (status, answer) = post(&server, &json!({"messages": user("x"), "grammar": long}));
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], "grammar_too_large");
    assert_eq!(answer["error"]["param"], "grammar");
    let (status, answer) = post(
        &server,
        &json!({"messages": user("x"), "grammar": "root ::= [a-z]{5000}"}),
    );
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], "grammar_too_large");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-grammar-nodes"),
        "{answer}"
    );
    // A schema that expands past the node limit is refused the same way.
    let (status, answer) = post(
        &server,
        &json!({"messages": user("x"), "response_format": {"type": "json_schema", "json_schema": {
            "name": "big", "schema": {"type": "string", "minLength": 3000, "maxLength": 3000}}}}),
    );
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], "grammar_too_large");
    assert_eq!(answer["error"]["param"], "response_format");
}

// Finding 12: a grammar that matches nothing.

#[test]
fn a_grammar_that_matches_nothing_is_the_requests_fault() {
    let server = TestServer::start(tiny_backend(8), quiet());
    let (status, answer) = post(
        &server,
        &json!({"messages": user("x"), "grammar": "root ::= \"a\" root"}),
    );
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], "grammar_matches_nothing");
    assert_eq!(answer["error"]["param"], "grammar");
}

// Finding 13: browsers.

#[test]
fn pages_of_other_sites_and_non_json_bodies_are_refused() {
    let server = TestServer::start(tiny_backend(8), quiet());
    let body = json!({"messages": user("x"), "grammar": "root ::= \"ok\""}).to_string();
    let json_type = "Content-Type: application/json\r\n";
    // A rebinding page: its own name as Host.
    let request = chat(&body, json_type).replace("Host: 127.0.0.1", "Host: evil.example");
    let (status, _, answer) = raw_request(&server, &request);
    assert_eq!(status, 403, "{answer}");
    assert!(answer.contains("host_not_allowed"), "{answer}");
    // A page of another site.
    let (status, _, answer) = raw_request(
        &server,
        &chat(
            &body,
            &format!("{json_type}Origin: https://evil.example\r\n"),
        ),
    );
    assert_eq!(status, 403, "{answer}");
    assert!(answer.contains("origin_not_allowed"), "{answer}");
    // A simple request (no preflight): text/plain.
    let (status, _, answer) = raw_request(&server, &chat(&body, "Content-Type: text/plain\r\n"));
    assert_eq!(status, 415, "{answer}");
    assert!(answer.contains("unsupported_media_type"), "{answer}");
    // A local page, and a client without Origin, pass.
    let (status, _, answer) = raw_request(
        &server,
        &chat(
            &body,
            &format!("{json_type}Origin: http://localhost:3000\r\n"),
        ),
    );
    assert_eq!(status, 200, "{answer}");
    let (status, _, answer) = raw_request(
        &server,
        &chat(&body, json_type).replace("Host: 127.0.0.1", "Host: localhost:8080"),
    );
    assert_eq!(status, 200, "{answer}");
    drop(server);

    // Allowed by flag.
    let settings = ServerSettings {
        allowed_hosts: vec!["Grail.Internal".into()],
        allowed_origins: vec!["https://app.example".into()],
        ..quiet()
    };
    let server = TestServer::start(tiny_backend(8), settings);
    let request = chat(
        &body,
        &format!("{json_type}Origin: https://app.example\r\n"),
    )
    .replace("Host: 127.0.0.1", "Host: grail.internal:8080");
    let (status, _, answer) = raw_request(&server, &request);
    assert_eq!(status, 200, "{answer}");
}

// Finding 14: what unavailable answers say, the drain, abandoned requests.

#[test]
fn unavailable_answers_carry_retry_after() {
    // A model still loading: its loader waits until the test lets it go.
    let (release, released) = std::sync::mpsc::channel::<()>();
    let backend = EmbeddedBackend::start(
        "slow",
        Box::new(move || {
            let _ = released.recv_timeout(PATIENCE);
            Err("released".to_string())
        }),
        EmbeddedOptions {
            queue: 4,
            ..EmbeddedOptions::default()
        },
    );
    let server = TestServer::start(Arc::new(backend), quiet());
    let body = json!({"messages": user("x")}).to_string();
    let (status, headers, answer) =
        raw_request(&server, &chat(&body, "Content-Type: application/json\r\n"));
    assert_eq!(status, 503, "{answer}");
    assert!(answer.contains("\"loading\""), "{answer}");
    assert_eq!(header(&headers, "retry-after"), Some("5"));
    let (status, headers, _) = raw_request(
        &server,
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 503);
    assert_eq!(header(&headers, "retry-after"), Some("5"));
    release.send(()).unwrap();
}

#[test]
fn after_shutdown_begins_new_connections_get_503_while_in_flight_answers_finish() {
    let backend = paced_backend(8, Duration::from_millis(5));
    let mut server = TestServer::start(backend.clone(), quiet());
    let url = server.url("/v1/chat/completions");
    let long =
        json!({"messages": user("x"), "grammar": "root ::= [a-z]{1500}", "max_tokens": 1500})
            .to_string();
    let in_flight = std::thread::spawn(move || {
        let response = agent()
            .post(&url)
            .header("Content-Type", "application/json")
            .send(&long)
            .unwrap();
        response.status().as_u16()
    });
    wait_until("the answer is being written", || backend.inner.busy());
    server.begin_shutdown();
    let body = json!({"messages": user("x")}).to_string();
    let mut refused = None;
    let deadline = Instant::now() + PATIENCE;
    while refused.is_none() && Instant::now() < deadline {
        let (status, headers, answer) =
            raw_request(&server, &chat(&body, "Content-Type: application/json\r\n"));
        if status == 503 {
            refused = Some((headers, answer));
        } else {
            // Not yet shutting down: answered normally.
            assert_eq!(status, 200, "{answer}");
        }
    }
    let (headers, answer) = refused.expect("no 503 during the drain");
    assert!(answer.contains("shutting_down"), "{answer}");
    assert_eq!(header(&headers, "retry-after"), Some("5"));
    assert_eq!(in_flight.join().unwrap(), 200);
    assert!(matches!(server.stopped_within(PATIENCE), Some(Ok(()))));
    assert!(TcpStream::connect(server.address).is_err());
}

#[test]
fn a_request_abandoned_before_its_answer_is_logged() {
    let backend = paced_backend(8, Duration::from_millis(2));
    let state = AppState::new(
        backend.clone(),
        ServerSettings {
            log_requests: true,
            ..ServerSettings::default()
        },
    );
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    state.log_to(Arc::new(move |line| sink.lock().unwrap().push(line)));
    let server = TestServer::start_state(state);
    let body =
        json!({"messages": user("x"), "grammar": "root ::= [a-z]{2000}", "max_tokens": 2000})
            .to_string();
    let mut stream = TcpStream::connect(server.address).unwrap();
    stream
        .write_all(chat(&body, "Content-Type: application/json\r\n").as_bytes())
        .unwrap();
    wait_until("the answer is being written", || backend.inner.busy());
    stream.shutdown(std::net::Shutdown::Both).unwrap();
    drop(stream);
    wait_until("the request is logged", || {
        !lines.lock().unwrap().is_empty()
    });
    let line: Value = serde_json::from_str(&lines.lock().unwrap()[0]).unwrap();
    assert_eq!(line["status"], 499, "{line}");
    assert_eq!(line["error"], "client_disconnected", "{line}");
}
