//! The embedded backend under load, on the tiny model: answers written together are
//! those written one at a time, the model runs as many at once as it has sequences, a
//! client that goes away frees its sequence for a waiting request, a shared prompt is
//! reported as cached, and a full queue answers 503 with `Retry-After`.

mod support;

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;

/// A tool-like grammar with free parts, so answers differ by prompt and length.
const GRAMMAR: &str = r#"root ::= "{\"name\": \"" ("get_weather" | "search") "\", \"arguments\": {\"q\": \"" [a-z ]{1,40} "\"}}""#;

fn body(question: &str, max_tokens: usize) -> Value {
    json!({
        "messages": [
            {"role": "system", "content": "You call tools: get_weather, search. Answer with one call."},
            {"role": "user", "content": question},
        ],
        "grammar": GRAMMAR,
        "max_tokens": max_tokens,
    })
}

fn content(answer: &Value) -> String {
    answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_else(|| panic!("no content in {answer}"))
        .to_string()
}

/// Sends a request for a 3,000-letter answer on a raw connection (the caller hangs up by
/// shutting it down) and returns that connection.
fn send_long_request(server: &TestServer) -> TcpStream {
    let long =
        json!({"messages": user("x"), "grammar": "root ::= [a-z]{3000}", "max_tokens": 3000})
            .to_string();
    let mut stream = TcpStream::connect(server.address).unwrap();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{long}",
        long.len()
    )
    .unwrap();
    stream
}

#[test]
fn answers_written_together_are_those_written_one_at_a_time() {
    let questions = [
        "weather in Paris?",
        "search for cats",
        "weather in Rome, please",
        "look up the news",
        "is it raining?",
        "find a recipe",
    ];
    let alone = TestServer::start(tiny_backend(16), quiet());
    let expected: Vec<String> = questions
        .iter()
        .map(|question| {
            let (status, answer) = post(&alone, &body(question, 80));
            assert_eq!(status, 200, "{answer}");
            content(&answer)
        })
        .collect();

    let backend = batched_backend(16, Duration::from_millis(10), 4);
    let server = Arc::new(TestServer::start(backend.clone(), quiet()));
    let clients: Vec<_> = questions
        .iter()
        .map(|question| {
            let (server, request) = (server.clone(), body(question, 80));
            std::thread::spawn(move || post(&server, &request))
        })
        .collect();
    let mut most_running = 0;
    while clients.iter().any(|client| !client.is_finished()) {
        most_running = most_running.max(backend.inner.running());
        std::thread::sleep(Duration::from_millis(1));
    }
    for (client, expected) in clients.into_iter().zip(&expected) {
        let (status, answer) = client.join().unwrap();
        assert_eq!(status, 200, "{answer}");
        assert_eq!(&content(&answer), expected);
    }
    assert!(most_running > 1, "the answers were written one at a time");
    assert!(
        most_running <= 4,
        "more answers ran than the model has sequences"
    );
}

#[test]
fn a_prompt_shared_with_an_earlier_request_is_reported_as_cached() {
    let server = TestServer::start(batched_backend(4, Duration::ZERO, 2), quiet());
    let (status, first) = post(&server, &body("weather in Paris?", 40));
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    let (status, second) = post(&server, &body("search for cats", 40));
    assert_eq!(status, 200, "{second}");
    let cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    let prompt = second["usage"]["prompt_tokens"].as_u64().unwrap();
    // The system message and the template's start are shared.
    assert!(cached > 20 && cached < prompt, "{cached} of {prompt}");
}

#[test]
fn a_client_that_goes_away_frees_its_sequence_for_a_waiting_request() {
    // One sequence: a long answer holds it until its client hangs up.
    let backend = batched_backend(4, Duration::from_millis(5), 1);
    let server = Arc::new(TestServer::start(backend.clone(), quiet()));
    let stream = send_long_request(&server);
    wait_until("the long answer is being written", || {
        backend.inner.running() == 1
    });
    let waiting = {
        let server = server.clone();
        std::thread::spawn(move || post(&server, &body("weather in Paris?", 40)))
    };
    wait_until("the second request waits", || backend.inner.waiting() == 1);
    stream.shutdown(std::net::Shutdown::Both).unwrap();
    drop(stream);
    // 3,000 steps of 5 ms would take 15 s; the hang-up frees the sequence at once.
    wait_until("the waiting request is answered", || waiting.is_finished());
    let (status, answer) = waiting.join().unwrap();
    assert_eq!(status, 200, "{answer}");
    let written = backend.written.lock().unwrap();
    let abandoned = written[0].as_ref().unwrap();
    assert_eq!(abandoned.ending, grail_server::Ending::Interrupted);
    assert!(abandoned.completion_tokens < 3000);
}

#[test]
fn a_full_queue_answers_503_with_retry_after() {
    // One sequence and a queue of one: a third request finds no room while two long
    // answers (at least 7 s each) hold both; their clients then hang up.
    let backend = batched_backend(1, Duration::from_millis(10), 1);
    let server = Arc::new(TestServer::start(backend.clone(), quiet()));
    let mut holders: Vec<TcpStream> = Vec::new();
    // One at a time: a second sent while the first still waits to start finds the queue
    // of one full.
    for (running, waiting) in [(1, 0), (1, 1)] {
        holders.push(send_long_request(&server));
        wait_until("the long answer runs or waits", || {
            backend.inner.running() == running && backend.inner.waiting() == waiting
        });
    }
    let response = agent()
        .post(&server.url("/v1/chat/completions"))
        .header("Content-Type", "application/json")
        .send(body("weather?", 20).to_string())
        .unwrap();
    assert_eq!(response.status().as_u16(), 503);
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    let text = response.into_body().read_to_string().unwrap();
    assert!(text.contains("queue is full"), "{text}");
    assert!(retry_after.is_some(), "no Retry-After with {text}");
    for stream in holders {
        stream.shutdown(std::net::Shutdown::Both).unwrap();
    }
    wait_until("the hung-up answers end", || {
        backend.inner.running() == 0 && backend.inner.waiting() == 0
    });
}
