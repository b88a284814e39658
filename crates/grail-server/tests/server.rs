//! The server over real HTTP on 127.0.0.1, with the tiny model as the embedded backend
//! (instant, no model file) and mock upstream servers for the remote backends: every
//! constraint of a request holds in the answer, and faults and bad input get the errors
//! docs/server.md promises.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use grail_engine::{CompiledGrammar, Matcher};
use grail_server::{
    Backend, BackendError, Generate, RemoteBackend, RemoteKind, ServerSettings, Written,
};
use serde_json::{Value, json};

mod support;
use support::*;

fn weather_tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"]}}},
        {"type": "function", "function": {"name": "search", "description": "Search the web",
            "parameters": {"type": "object", "properties": {"query": {"type": "string", "maxLength": 12},
                "limit": {"type": "integer", "minimum": 1, "maximum": 5}}, "required": ["query", "limit"]}}}
    ])
}

/// Checks a call's arguments against its tool's schema in `tools`.
fn assert_call_valid(tools: &Value, call: &Value) {
    let name = call["function"]["name"].as_str().unwrap();
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    let tool = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["function"]["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name}"));
    let validator = jsonschema::validator_for(&tool["function"]["parameters"]).unwrap();
    assert!(validator.is_valid(&arguments), "{name}: {arguments}");
    assert!(call["id"].as_str().unwrap().starts_with("call_"));
}

#[test]
fn health_and_models() {
    let server = TestServer::start(tiny_backend(8), quiet());
    let health = agent().get(&server.url("/health")).call().unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let models: Value = agent()
        .get(&server.url("/v1/models"))
        .call()
        .unwrap()
        .into_body()
        .read_json()
        .unwrap();
    assert_eq!(models["data"][0]["id"], "tiny");
    let missing = agent().get(&server.url("/v2/nothing")).call().unwrap();
    assert_eq!(missing.status().as_u16(), 404);
}

#[test]
fn every_tool_choice_gives_what_it_asks() {
    let server = TestServer::start(tiny_backend(8), quiet());
    let tools = weather_tools();
    for choice in [
        json!("required"),
        json!({"type": "function", "function": {"name": "search"}}),
    ] {
        let (status, answer) = post(
            &server,
            &json!({"messages": user("Weather in Paris?"), "tools": tools, "tool_choice": choice}),
        );
        assert_eq!(status, 200, "{answer}");
        let choice_made = &answer["choices"][0];
        assert_eq!(choice_made["finish_reason"], "tool_calls", "{answer}");
        let calls = choice_made["message"]["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1);
        assert_call_valid(&tools, &calls[0]);
        if choice.is_object() {
            assert_eq!(calls[0]["function"]["name"], "search");
        }
    }
    // `none`: text, no calls.
    let (status, answer) = post(
        &server,
        &json!({"messages": user("Hi"), "tools": tools, "tool_choice": "none", "max_tokens": 20}),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer["choices"][0]["message"].get("tool_calls").is_none());
    // `auto`: a valid call or text.
    let (status, answer) = post(
        &server,
        &json!({"messages": user("Hi"), "tools": tools, "max_tokens": 60}),
    );
    assert_eq!(status, 200, "{answer}");
    if let Some(calls) = answer["choices"][0]["message"]["tool_calls"].as_array() {
        calls
            .iter()
            .for_each(|call| assert_call_valid(&tools, call));
    }
    // Parallel calls: a list of valid calls.
    let (status, answer) = post(
        &server,
        &json!({"messages": user("Both"), "tools": tools, "tool_choice": "required", "parallel_tool_calls": true, "max_tokens": 300}),
    );
    assert_eq!(status, 200, "{answer}");
    for call in answer["choices"][0]["message"]["tool_calls"]
        .as_array()
        .unwrap()
    {
        assert_call_valid(&tools, call);
    }
}

#[test]
fn response_format_and_grammar_hold() {
    let server = TestServer::start(tiny_backend(8), quiet());
    let schema = json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
        "age": {"type": "integer", "minimum": 0, "maximum": 120}}, "required": ["name", "age"], "additionalProperties": false});
    let (status, answer) = post(
        &server,
        &json!({"messages": user("A person"), "max_tokens": 200,
        "response_format": {"type": "json_schema", "json_schema": {"name": "person", "schema": schema, "strict": true}}}),
    );
    assert_eq!(status, 200, "{answer}");
    let content: Value =
        serde_json::from_str(answer["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert!(
        jsonschema::validator_for(&schema)
            .unwrap()
            .is_valid(&content),
        "{content}"
    );

    let (status, answer) = post(
        &server,
        &json!({"messages": user("Any object"), "max_tokens": 300, "response_format": {"type": "json_object"}}),
    );
    assert_eq!(status, 200, "{answer}");
    if answer["choices"][0]["finish_reason"] == "stop" {
        let content: Value =
            serde_json::from_str(answer["choices"][0]["message"]["content"].as_str().unwrap())
                .unwrap();
        assert!(content.is_object());
    }

    let gbnf = r#"root ::= "yes" | "no" | "maybe " [0-9]"#;
    let (status, answer) = post(
        &server,
        &json!({"messages": user("Answer"), "grammar": gbnf}),
    );
    assert_eq!(status, 200, "{answer}");
    let text = answer["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(full_match(gbnf, text), "{text:?}");
}

fn full_match(gbnf: &str, text: &str) -> bool {
    let grammar = CompiledGrammar::from_gbnf(gbnf).unwrap();
    let mut matcher = Matcher::new(&grammar);
    matcher.accept_bytes(text.as_bytes()).is_ok() && matcher.is_accepting()
}

#[test]
fn tools_with_a_grammar_answer_a_call_or_text_of_the_grammar() {
    let server = TestServer::start(tiny_backend(8), quiet());
    let tools = weather_tools();
    let gbnf = r#"root ::= "I cannot help with that.""#;
    for seed in 0..4 {
        let (status, answer) = post(
            &server,
            &json!({"messages": user("x"), "tools": tools, "grammar": gbnf, "seed": seed, "temperature": 1.0, "max_tokens": 120}),
        );
        assert_eq!(status, 200, "{answer}");
        let message = &answer["choices"][0]["message"];
        match message["tool_calls"].as_array() {
            Some(calls) => calls
                .iter()
                .for_each(|call| assert_call_valid(&tools, call)),
            None => assert_eq!(message["content"], "I cannot help with that."),
        }
    }
}

#[test]
fn streaming_tool_calls_reassemble_into_valid_calls() {
    let server = TestServer::start(tiny_backend(8), quiet());
    let tools = weather_tools();
    let body = json!({"messages": user("Weather?"), "tools": tools, "tool_choice": "required", "stream": true,
        "stream_options": {"include_usage": true}});
    let response = agent()
        .post(&server.url("/v1/chat/completions"))
        .header("Content-Type", "application/json")
        .send(&body.to_string())
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let text = response.into_body().read_to_string().unwrap();
    let events: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .collect();
    assert_eq!(events.last(), Some(&"[DONE]"));
    let (mut name, mut arguments, mut id, mut finish, mut usage) =
        (String::new(), String::new(), None, None, None);
    for event in &events[..events.len() - 1] {
        let chunk: Value = serde_json::from_str(event).unwrap();
        assert_eq!(chunk["object"], "chat.completion.chunk");
        if let Some(found) = chunk.get("usage") {
            usage = Some(found.clone());
        }
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        if let Some(reason) = choice["finish_reason"].as_str() {
            finish = Some(reason.to_string());
        }
        if let Some(calls) = choice["delta"]["tool_calls"].as_array() {
            for call in calls {
                assert_eq!(call["index"], 0);
                if let Some(found) = call["id"].as_str() {
                    id = Some(found.to_string());
                }
                name.push_str(call["function"]["name"].as_str().unwrap_or(""));
                arguments.push_str(call["function"]["arguments"].as_str().unwrap_or(""));
            }
        }
    }
    assert_eq!(finish.as_deref(), Some("tool_calls"));
    assert!(usage.unwrap()["total_tokens"].as_u64().unwrap() > 0);
    let call = json!({"id": id.unwrap(), "function": {"name": name, "arguments": arguments}});
    assert_call_valid(&tools, &call);
}

#[test]
fn bad_requests_get_openai_errors_naming_the_field() {
    let server = TestServer::start(tiny_backend(8), quiet());
    let cases: Vec<(String, u16, &str, Option<&str>)> = vec![
        ("{\"messages\": [".into(), 400, "invalid_json", None),
        (json!({"messages": user("x"), "tool_choise": "auto"}).to_string(), 400, "unknown_parameter", Some("tool_choise")),
        (json!({"messages": user("x"), "grammar": "root ::= missing"}).to_string(), 400, "grammar_invalid", Some("grammar")),
        (json!({"messages": user("x"), "tools": [{"type": "function", "function": {"parameters": {}}}]}).to_string(), 400, "tools_invalid", Some("tools")),
        (json!({"messages": user("x"), "tools": [{"type": "function", "function": {"name": "f", "parameters":
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "(a)\\1"}}}}}]}).to_string(), 400, "schema_refused", Some("tools")),
        (json!({"messages": user("x"), "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema":
            {"type": "string", "pattern": "(?=a)"}}}}).to_string(), 400, "schema_refused", Some("response_format.json_schema.schema")),
        (json!({"messages": user("x"), "grammar": "root ::= \"a\"", "response_format": {"type": "json_object"}}).to_string(), 400, "conflicting_constraints", Some("grammar")),
        (json!({"messages": user("x"), "tool_choice": "required"}).to_string(), 400, "invalid_value", Some("tool_choice")),
        (json!({"messages": user("x"), "tools": weather_tools(), "tool_choice": {"type": "function", "function": {"name": "nope"}}}).to_string(), 400, "invalid_value", Some("tool_choice")),
        (json!({"messages": user("x"), "n": 2}).to_string(), 400, "unsupported_parameter", Some("n")),
        (json!({"messages": []}).to_string(), 400, "unsupported_parameter", Some("messages")),
        (json!({"messages": [{"role": "robot", "content": "x"}]}).to_string(), 400, "invalid_value", Some("messages[0].role")),
        (json!({"messages": user("x"), "max_tokens": 1_000_000}).to_string(), 400, "invalid_value", Some("max_tokens")),
        (json!({"messages": user("x"), "temperature": 5}).to_string(), 400, "invalid_value", Some("temperature")),
    ];
    for (body, status, code, param) in cases {
        let (got, answer) = post_text(&server, &body);
        assert_eq!(got, status, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
        assert_eq!(answer["error"]["param"].as_str(), param, "{body}: {answer}");
        assert!(answer["error"]["message"].as_str().unwrap().len() > 10);
    }
    // The refused schema names the tool, the pointer and the keyword.
    let (_, answer) = post(
        &server,
        &json!({"messages": user("x"), "tools": [{"type": "function", "function": {"name": "f", "parameters":
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "(a)\\1"}}}}}]}),
    );
    let diagnostic = &answer["error"]["details"]["diagnostics"][0];
    assert_eq!(
        (
            diagnostic["tool"].as_str(),
            diagnostic["pointer"].as_str(),
            diagnostic["keyword"].as_str()
        ),
        (Some("f"), Some("/properties/a"), Some("pattern")),
        "{answer}"
    );
}

#[test]
fn a_refused_answer_goes_back_with_feedback_until_the_cap() {
    // `strict: false` weakens `uniqueItems` in the grammar; the answer is still checked
    // against the schema. No array of two equal-by-force items is unique: every attempt
    // is refused, the feedback goes back, and the request fails after three.
    let backend = tiny_backend(8);
    let recorder = Arc::new(RecordingRequests {
        inner: backend.clone(),
        requests: Mutex::new(Vec::new()),
    });
    let server = TestServer::start(recorder.clone(), quiet());
    let schema = json!({"type": "array", "items": {"const": 1}, "minItems": 2, "maxItems": 2, "uniqueItems": true});
    let (status, answer) = post(
        &server,
        &json!({"messages": user("x"),
        "response_format": {"type": "json_schema", "json_schema": {"name": "pair", "schema": schema, "strict": false}}}),
    );
    assert_eq!(status, 500, "{answer}");
    assert_eq!(answer["error"]["code"], "answer_invalid");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unique"),
        "{answer}"
    );
    let requests = recorder.requests.lock().unwrap();
    assert_eq!(requests.len(), 3);
    let last = requests[2].last().unwrap();
    assert_eq!(last.role, "user");
    assert!(
        last.content.starts_with("That answer is not valid"),
        "{}",
        last.content
    );
    // Strict (the default), the same schema is refused up front, naming the keyword.
    let (status, answer) = post(
        &server,
        &json!({"messages": user("x"),
        "response_format": {"type": "json_schema", "json_schema": {"name": "pair", "schema": schema}}}),
    );
    assert_eq!(
        (
            status,
            answer["error"]["details"]["diagnostics"][0]["keyword"].as_str()
        ),
        (400, Some("uniqueItems")),
        "{answer}"
    );
}

/// A backend that remembers the conversation of every request.
struct RecordingRequests {
    inner: Arc<Recording>,
    requests: Mutex<Vec<Vec<grail_gen::Message>>>,
}

impl Backend for RecordingRequests {
    fn model_id(&self) -> String {
        self.inner.model_id()
    }
    fn ready(&self) -> bool {
        self.inner.ready()
    }
    fn generate(
        &self,
        request: &Generate,
        observer: &mut dyn FnMut(&str) -> std::ops::ControlFlow<()>,
    ) -> Result<Written, BackendError> {
        self.requests.lock().unwrap().push(request.messages.clone());
        self.inner.generate(request, observer)
    }
}

#[test]
fn a_ten_megabyte_body_is_refused_with_413() {
    let server = TestServer::start(tiny_backend(8), quiet());
    let body = format!(
        "{{\"messages\": [{{\"role\": \"user\", \"content\": \"{}\"}}]}}",
        "a".repeat(10 * 1024 * 1024)
    );
    let (status, answer) = post_text(&server, &body);
    assert_eq!(status, 413, "{answer}");
    assert_eq!(answer["error"]["code"], "body_too_large");
}

#[test]
fn the_api_key_is_required_when_set() {
    let settings = ServerSettings {
        api_key: Some("sesame".into()),
        ..quiet()
    };
    let server = TestServer::start(tiny_backend(8), settings);
    let body = json!({"messages": user("x"), "grammar": "root ::= \"ok\""}).to_string();
    assert_eq!(post_with(&server, &body, None).0, 401);
    assert_eq!(post_with(&server, &body, Some("sesam")).0, 401);
    let (status, answer) = post_with(&server, &body, Some("sesame"));
    assert_eq!(
        (status, answer["choices"][0]["message"]["content"].as_str()),
        (200, Some("ok"))
    );
    // Health stays open, for load balancers.
    assert_eq!(
        agent()
            .get(&server.url("/health"))
            .call()
            .unwrap()
            .status()
            .as_u16(),
        200
    );
}

#[test]
fn thirty_two_concurrent_requests_all_answer_validly() {
    let backend = tiny_backend(64);
    let server = Arc::new(TestServer::start(backend, quiet()));
    let tools = weather_tools();
    let threads: Vec<_> = (0..32)
        .map(|index| {
            let server = server.clone();
            let tools = tools.clone();
            std::thread::spawn(move || {
                let (status, answer) = post(
                    &server,
                    &json!({"messages": user(&format!("Request {index}")), "tools": tools,
                    "tool_choice": "required", "seed": index, "temperature": 0.8}),
                );
                assert_eq!(status, 200, "{answer}");
                let calls = answer["choices"][0]["message"]["tool_calls"]
                    .as_array()
                    .unwrap()
                    .clone();
                calls
                    .iter()
                    .for_each(|call| assert_call_valid(&tools, call));
                calls.len()
            })
        })
        .collect();
    let answered: usize = threads
        .into_iter()
        .map(|thread| thread.join().unwrap())
        .sum();
    assert_eq!(answered, 32);
}

#[test]
fn a_full_queue_answers_503_instead_of_waiting_without_bound() {
    // A queue of one: while one answer is being written and one waits, a third is
    // refused. The test waits on the backend's own counts, not on the clock, so a loaded
    // machine cannot reorder it; answers are slow (20 ms a token, over 3 s an answer) so the first is still
    // being written when the third arrives.
    let backend = paced_backend(1, Duration::from_millis(20));
    let embedded = backend.inner.clone();
    let server = Arc::new(TestServer::start(backend, quiet()));
    let long = json!({"messages": user("x"), "grammar": "root ::= [a-z]{300}", "max_tokens": 300})
        .to_string();
    let send = |server: &Arc<TestServer>| {
        let (server, long) = (server.clone(), long.clone());
        std::thread::spawn(move || post_text(&server, &long).0)
    };
    let first = send(&server);
    wait_until("the first answer is being written", || embedded.busy());
    let second = send(&server);
    wait_until("the second request waits", || embedded.waiting() == 1);
    let (status, answer) = post_text(&server, &long);
    assert_eq!(status, 503, "{answer}");
    assert_eq!(answer["error"]["code"], "unavailable");
    assert_eq!(first.join().unwrap(), 200);
    assert_eq!(second.join().unwrap(), 200);
    assert_eq!(embedded.waiting(), 0);
}

#[test]
fn a_client_that_disconnects_mid_stream_stops_its_generation() {
    let backend = tiny_backend(8);
    let server = TestServer::start(backend.clone(), quiet());
    let body = json!({"messages": user("x"), "grammar": "root ::= [a-z]{3000}", "max_tokens": 3000, "stream": true}).to_string();
    let mut stream = TcpStream::connect(server.address).unwrap();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // Read until a content chunk has come, then hang up.
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    while !line.contains("\"content\":\"") || line.contains("\"content\":\"\"") {
        line.clear();
        reader.read_line(&mut line).unwrap();
    }
    drop(reader);
    stream.shutdown(std::net::Shutdown::Both).unwrap();
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(result) = backend.written.lock().unwrap().first() {
            let written = result.as_ref().unwrap();
            assert_eq!(written.ending, grail_server::Ending::Interrupted);
            assert!(
                written.completion_tokens < 3000,
                "{}",
                written.completion_tokens
            );
            break;
        }
        assert!(Instant::now() < deadline, "the generation did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_client_that_disconnects_while_waiting_for_a_whole_answer_stops_it() {
    let backend = paced_backend(8, Duration::from_millis(2));
    let server = TestServer::start(backend.clone(), quiet());
    let body =
        json!({"messages": user("x"), "grammar": "root ::= [a-z]{2000}", "max_tokens": 2000})
            .to_string();
    let mut stream = TcpStream::connect(server.address).unwrap();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    wait_until("the answer is being written", || backend.inner.busy());
    stream.shutdown(std::net::Shutdown::Both).unwrap();
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(result) = backend.written.lock().unwrap().first() {
            let written = result.as_ref().unwrap();
            assert_eq!(written.ending, grail_server::Ending::Interrupted);
            assert!(
                written.completion_tokens < 2000,
                "{}",
                written.completion_tokens
            );
            break;
        }
        assert!(Instant::now() < deadline, "the generation did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn shutdown_lets_in_flight_requests_finish_and_refuses_new_ones() {
    let backend = paced_backend(8, Duration::from_millis(1));
    let mut server = TestServer::start(backend.clone(), quiet());
    let url = server.url("/v1/chat/completions");
    let body =
        json!({"messages": user("x"), "grammar": "root ::= [a-z]{1500}", "max_tokens": 1500})
            .to_string();
    let in_flight = std::thread::spawn(move || {
        let response = agent()
            .post(&url)
            .header("Content-Type", "application/json")
            .send(&body)
            .unwrap();
        let status = response.status().as_u16();
        let answer: Value = response.into_body().read_json().unwrap();
        (
            status,
            answer["choices"][0]["message"]["content"]
                .as_str()
                .map(str::len),
        )
    });
    wait_until("the answer is being written", || backend.inner.busy());
    let address = server.address;
    server.shutdown();
    assert_eq!(in_flight.join().unwrap(), (200, Some(1500)));
    assert!(
        TcpStream::connect(address).is_err(),
        "new connections are refused"
    );
}

/// A mock upstream: records what it is sent and answers with `pieces` as SSE (or fails).
#[derive(Clone)]
enum Upstream {
    Pieces(Vec<&'static str>),
    Slow(Duration),
    Status(u16),
}

fn start_upstream(mode: Upstream) -> (String, Arc<Mutex<Vec<Value>>>, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = seen.clone();
    let thread = std::thread::spawn(move || {
        for connection in listener.incoming().take(1) {
            let mut connection = connection.unwrap();
            let mut reader = BufReader::new(connection.try_clone().unwrap());
            let body = read_request_body(&mut reader);
            recorded
                .lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap());
            match &mode {
                Upstream::Slow(delay) => {
                    std::thread::sleep(*delay);
                }
                Upstream::Status(code) => {
                    let text = "{\"error\": {\"message\": \"upstream broke\"}}";
                    let _ = write!(
                        connection,
                        "HTTP/1.1 {code} Oops\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{text}",
                        text.len()
                    );
                }
                Upstream::Pieces(pieces) => {
                    let mut events = String::new();
                    for piece in pieces {
                        events.push_str(&format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]})));
                    }
                    events.push_str(&format!(
                        "data: {}\n\n",
                        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                    ));
                    events.push_str(&format!("data: {}\n\n", json!({"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": pieces.len()}})));
                    events.push_str("data: [DONE]\n\n");
                    let _ = write!(
                        connection,
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{events}",
                        events.len()
                    );
                }
            }
        }
    });
    (format!("http://{address}"), seen, thread)
}

fn remote(kind: RemoteKind, url: &str, timeout: Duration) -> Arc<dyn Backend> {
    Arc::new(RemoteBackend::new(
        kind,
        url,
        Some("upstream-model".into()),
        Some("upkey".into()),
        timeout,
    ))
}

#[test]
fn the_vllm_backend_is_sent_the_grammar_and_its_answer_is_checked() {
    let (url, seen, upstream) = start_upstream(Upstream::Pieces(vec![
        "{\"name\": \"get_weather\", ",
        "\"arguments\": {\"city\": \"Oslo\", \"unit\": \"celsius\"}}",
    ]));
    let server = TestServer::start(
        remote(RemoteKind::OpenAiCompatible, &url, Duration::from_secs(10)),
        quiet(),
    );
    let (status, answer) = post(
        &server,
        &json!({"messages": user("Weather in Oslo?"), "tools": weather_tools(), "tool_choice": "required"}),
    );
    upstream.join().unwrap();
    assert_eq!(status, 200, "{answer}");
    let call = &answer["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(
        serde_json::from_str::<Value>(call["function"]["arguments"].as_str().unwrap()).unwrap(),
        json!({"city": "Oslo", "unit": "celsius"})
    );
    assert_eq!(answer["usage"]["prompt_tokens"], 11);
    let sent = &seen.lock().unwrap()[0];
    // The grammar went in vLLM's field, tools only through it and the system prompt.
    let grammar = sent["structured_outputs"]["grammar"].as_str().unwrap();
    assert!(
        grail_grammar::check(grammar, &Default::default()).is_ok(),
        "{grammar}"
    );
    assert!(full_match(
        grammar,
        "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"celsius\"}}"
    ));
    assert!(!full_match(
        grammar,
        "{\"name\": \"get_weather\", \"arguments\": {\"query\": \"Oslo\", \"limit\": 1}}"
    ));
    assert!(sent.get("tools").is_none());
    assert_eq!(sent["model"], "upstream-model");
    assert_eq!(sent["stream"], true);
    assert!(
        sent["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("get_weather")
    );
}

#[test]
fn the_llama_server_backend_is_sent_the_grammar_in_its_field() {
    let (url, seen, upstream) = start_upstream(Upstream::Pieces(vec!["yes"]));
    let server = TestServer::start(
        remote(RemoteKind::LlamaServer, &url, Duration::from_secs(10)),
        quiet(),
    );
    let (status, answer) = post(
        &server,
        &json!({"messages": user("?"), "grammar": "root ::= \"yes\" | \"no\""}),
    );
    upstream.join().unwrap();
    assert_eq!(
        (status, answer["choices"][0]["message"]["content"].as_str()),
        (200, Some("yes"))
    );
    let sent = &seen.lock().unwrap()[0];
    assert!(full_match(sent["grammar"].as_str().unwrap(), "no"));
}

#[test]
fn the_vllm_grail_backend_is_sent_the_grammar_as_grails_argument() {
    let (url, seen, upstream) = start_upstream(Upstream::Pieces(vec!["no"]));
    let server = TestServer::start(
        remote(RemoteKind::VllmGrail, &url, Duration::from_secs(10)),
        quiet(),
    );
    let (status, answer) = post(
        &server,
        &json!({"messages": user("?"), "grammar": "root ::= \"yes\" | \"no\""}),
    );
    assert_eq!(status, 200, "{answer}");
    upstream.join().unwrap();
    let sent = &seen.lock().unwrap()[0];
    // vLLM takes strings and numbers in vllm_xargs: the argument is JSON text.
    let argument: Value =
        serde_json::from_str(sent["vllm_xargs"]["grail"].as_str().unwrap()).unwrap();
    let grammar = argument["grammar"].as_str().unwrap();
    assert!(full_match(grammar, "yes") && !full_match(grammar, "maybe"));
    assert_eq!(argument.as_object().unwrap().len(), 1);
    assert!(sent.get("structured_outputs").is_none() && sent.get("grammar").is_none());
    assert!(sent["repetition_penalty"].is_number());
}

#[test]
fn a_backend_that_ignores_the_grammar_is_caught() {
    let (url, _, upstream) =
        start_upstream(Upstream::Pieces(vec!["Sure! ", "Here is the weather."]));
    let server = TestServer::start(
        remote(RemoteKind::LlamaServer, &url, Duration::from_secs(10)),
        quiet(),
    );
    let (status, answer) = post(
        &server,
        &json!({"messages": user("?"), "tools": weather_tools(), "tool_choice": "required"}),
    );
    upstream.join().unwrap();
    assert_eq!(status, 502, "{answer}");
    assert_eq!(answer["error"]["code"], "backend_ignored_grammar");
}

#[test]
fn a_backend_that_is_down_fails_or_times_out_is_a_gateway_error() {
    // Nothing listens there (and no parallel test can take the port meanwhile).
    let (_reserved, port) = refusing_port();
    let server = TestServer::start(
        remote(
            RemoteKind::LlamaServer,
            &format!("http://127.0.0.1:{port}"),
            Duration::from_secs(5),
        ),
        quiet(),
    );
    let (status, answer) = post(&server, &json!({"messages": user("?")}));
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (502, Some("backend_unreachable")),
        "{answer}"
    );
    drop(server);

    let (url, _, upstream) = start_upstream(Upstream::Slow(Duration::from_secs(3)));
    let server = TestServer::start(
        remote(RemoteKind::LlamaServer, &url, Duration::from_millis(700)),
        quiet(),
    );
    let (status, answer) = post(&server, &json!({"messages": user("?")}));
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (504, Some("backend_timeout")),
        "{answer}"
    );
    upstream.join().unwrap();
    drop(server);

    let (url, _, upstream) = start_upstream(Upstream::Status(500));
    let server = TestServer::start(
        remote(RemoteKind::OpenAiCompatible, &url, Duration::from_secs(5)),
        quiet(),
    );
    let (status, answer) = post(&server, &json!({"messages": user("?")}));
    upstream.join().unwrap();
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (502, Some("backend_failed")),
        "{answer}"
    );
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("upstream broke")
    );
}

#[test]
fn a_stop_sequence_ends_an_unconstrained_answer() {
    let (url, _, upstream) = start_upstream(Upstream::Pieces(vec!["one two", " three four"]));
    let server = TestServer::start(
        remote(RemoteKind::LlamaServer, &url, Duration::from_secs(10)),
        quiet(),
    );
    let (status, answer) = post(
        &server,
        &json!({"messages": user("count"), "stop": ["three"]}),
    );
    upstream.join().unwrap();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["choices"][0]["message"]["content"], "one two ");
    assert_eq!(answer["choices"][0]["finish_reason"], "stop");
}

/// A chat template with a tool section of its own: names of the offered tools, calls as
/// `[id name arguments]`, results marked with their call's id.
const TOOLS_TEMPLATE: &str = "{% if tools %}<tools>{% for tool in tools %}{{ tool.function.name }};{% endfor %}</tools>{% endif %}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% if m.tool_calls is defined %}{% for c in m.tool_calls %}[{{ c.id }} {{ c.function.name }} {{ c.function.arguments | tojson }}]{% endfor %}{% endif %}{% if m.tool_call_id is defined %}({{ m.tool_call_id }}){% endif %}{% endfor %}<assistant>";

#[test]
fn a_template_with_a_tool_section_reads_the_tools_and_the_calls_itself() {
    use grail_gen::testing::TinyModel;
    use grail_gen::{Message, MessageToolCall, Model, SpecialTexts, render_chat_with_tools};

    let body = json!({
        "messages": [
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\", \"unit\": \"celsius\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "-3"},
            {"role": "user", "content": "And Rome?"}
        ],
        "tools": weather_tools(),
        "tool_choice": "required",
        "max_tokens": 200,
    });
    let native = TestServer::start(
        backend_of(4, || TinyModel::new(7).with_chat_template(TOOLS_TEMPLATE)),
        quiet(),
    );
    let (status, answer) = post(&native, &body);
    assert_eq!(status, 200, "{answer}");
    let call = &answer["choices"][0]["message"]["tool_calls"][0];
    assert_call_valid(&weather_tools(), call);
    // The prompt is the template's, with the tools and the history as its own messages.
    let tools: Vec<Value> = weather_tools().as_array().unwrap().clone();
    let history = [
        Message::new("user", "Weather in Oslo?"),
        Message::assistant_calls(
            "",
            vec![MessageToolCall::new(
                "call_1",
                "get_weather",
                json!({"city": "Oslo", "unit": "celsius"}),
            )],
        ),
        Message::tool_result("call_1", "-3"),
        Message::new("user", "And Rome?"),
    ];
    let prompt = render_chat_with_tools(
        TOOLS_TEMPLATE,
        &history,
        Some(&tools),
        &SpecialTexts::default(),
    )
    .unwrap();
    assert!(
        prompt.starts_with("<tools>get_weather;search;</tools>"),
        "{prompt}"
    );
    let expected = TinyModel::new(7).tokenize(&prompt).unwrap().len();
    assert_eq!(answer["usage"]["prompt_tokens"], expected, "{prompt}");
    // A template without one gets Grail's tools prompt and the calls written out.
    let plain = TestServer::start(tiny_backend(4), quiet());
    let (status, answer) = post(&plain, &body);
    assert_eq!(status, 200, "{answer}");
    assert!(answer["usage"]["prompt_tokens"].as_u64().unwrap() > expected as u64 + 100);
}

/// A backend that writes one fixed answer, a few bytes at a time.
struct Scripted(&'static str);

impl Backend for Scripted {
    fn model_id(&self) -> String {
        "scripted".into()
    }
    fn ready(&self) -> bool {
        true
    }
    fn generate(
        &self,
        _request: &Generate,
        observer: &mut dyn FnMut(&str) -> std::ops::ControlFlow<()>,
    ) -> Result<Written, BackendError> {
        let mut start = 0;
        while start < self.0.len() {
            let mut end = (start + 5).min(self.0.len());
            while !self.0.is_char_boundary(end) {
                end += 1;
            }
            if observer(&self.0[start..end]).is_break() {
                break;
            }
            start = end;
        }
        Ok(Written {
            text: self.0.to_string(),
            prompt_tokens: 10,
            completion_tokens: self.0.len(),
            ..Written::default()
        })
    }
}

fn thinking(think: grail_tools::Think) -> ServerSettings {
    let mut settings = quiet();
    settings.plan.think = think;
    settings
}

#[test]
fn a_reasoning_block_comes_back_as_reasoning_content() {
    use grail_tools::Think;
    let call = r#"{"name": "get_weather", "arguments": {"city": "Rome", "unit": "celsius"}}"#;
    let answer: &'static str =
        Box::leak(format!("<think>Rome, so get_weather.</think>\n{call}").into_boxed_str());
    let server = TestServer::start(Arc::new(Scripted(answer)), thinking(Think::Required));
    let body = json!({"messages": user("Weather in Rome?"), "tools": weather_tools(), "tool_choice": "required"});
    let (status, reply) = post(&server, &body);
    assert_eq!(status, 200, "{reply}");
    let message = &reply["choices"][0]["message"];
    assert_eq!(message["reasoning_content"], "Rome, so get_weather.");
    assert_call_valid(&weather_tools(), &message["tool_calls"][0]);
    // Streamed: the reasoning first, then the call.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let response = agent()
        .post(&server.url("/v1/chat/completions"))
        .header("Content-Type", "application/json")
        .send(&streamed.to_string())
        .unwrap();
    let text = response.into_body().read_to_string().unwrap();
    let deltas: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|event| *event != "[DONE]")
        .map(|event| serde_json::from_str::<Value>(event).unwrap()["choices"][0]["delta"].clone())
        .collect();
    // Streamed as written: the reasoning in pieces, all before the call's.
    let first_call = deltas
        .iter()
        .position(|delta| delta.get("tool_calls").is_some())
        .unwrap();
    let reasoning: String = deltas[..first_call]
        .iter()
        .filter_map(|delta| delta["reasoning_content"].as_str())
        .collect();
    assert_eq!(reasoning, "Rome, so get_weather.", "{deltas:?}");
    let arguments: String = deltas[first_call..]
        .iter()
        .filter_map(|delta| delta["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert!(
        deltas[first_call..].len() > 3,
        "the arguments leave in pieces as written: {deltas:?}"
    );
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"city": "Rome", "unit": "celsius"})
    );

    // An unconstrained text answer: the block split off, the rest is the content.
    let server = TestServer::start(
        Arc::new(Scripted("<think>A greeting.</think>\n\nHello!")),
        thinking(Think::Optional),
    );
    let (status, reply) = post(&server, &json!({"messages": user("Hi")}));
    assert_eq!(status, 200, "{reply}");
    let message = &reply["choices"][0]["message"];
    assert_eq!(message["reasoning_content"], "A greeting.");
    assert_eq!(message["content"], "Hello!");
    // Without --think, the text is the content as written.
    let server = TestServer::start(
        Arc::new(Scripted("<think>A greeting.</think>\n\nHello!")),
        quiet(),
    );
    let (_, reply) = post(&server, &json!({"messages": user("Hi")}));
    assert!(
        reply["choices"][0]["message"]
            .get("reasoning_content")
            .is_none()
    );
    assert_eq!(
        reply["choices"][0]["message"]["content"],
        "<think>A greeting.</think>\n\nHello!"
    );
}

#[test]
fn a_reasoning_budget_closes_the_block_and_reasoning_effort_reaches_the_template() {
    use grail_gen::testing::TinyModel;
    use grail_tools::Think;
    let body = json!({
        "messages": user("Weather in Rome?"),
        "tools": weather_tools(),
        "tool_choice": "required",
        "max_tokens": 300,
        "reasoning_budget": 4,
    });
    let backend = backend_of(4, || TinyModel::new(3));
    let server = TestServer::start(backend.clone(), thinking(Think::Required));
    let (status, reply) = post(&server, &body);
    assert_eq!(status, 200, "{reply}");
    let message = &reply["choices"][0]["message"];
    assert_call_valid(&weather_tools(), &message["tool_calls"][0]);
    // The block: `<think>`, at most four tokens, then its end written for the model.
    let written = backend
        .written
        .lock()
        .unwrap()
        .last()
        .cloned()
        .unwrap()
        .unwrap();
    let inside = written.text.split_once("<think>").unwrap().1;
    let (reasoning, _) = inside.split_once("</think>").unwrap();
    assert_eq!(
        message["reasoning_content"].as_str().unwrap().trim(),
        reasoning.trim()
    );
    let model = TinyModel::new(3);
    let vocabulary = grail_gen::Model::vocabulary(&model).clone();
    let longest = (0..vocabulary.vocabulary().len() as u32)
        .map(|id| vocabulary.vocabulary().bytes(id).len())
        .max()
        .unwrap();
    assert!(reasoning.len() <= 4 * longest, "{reasoning:?}");

    // Without a reasoning block, a budget is refused, naming the field.
    let plain = TestServer::start(tiny_backend(4), quiet());
    let (status, reply) = post(&plain, &body);
    assert_eq!(status, 400, "{reply}");
    assert_eq!(reply["error"]["param"], "reasoning_budget");
    // reasoning_effort: one of OpenAI's values, given to the template that reads it.
    let (status, reply) = post(
        &plain,
        &json!({"messages": user("Hi"), "reasoning_effort": "extreme"}),
    );
    assert_eq!(status, 400, "{reply}");
    assert_eq!(reply["error"]["param"], "reasoning_effort");
    const EFFORT_TEMPLATE: &str =
        "Reasoning: {{ reasoning_effort }}\n{% for m in messages %}{{ m.content }}{% endfor %}";
    let effort = TestServer::start(
        backend_of(4, || TinyModel::new(3).with_chat_template(EFFORT_TEMPLATE)),
        quiet(),
    );
    let prompt_tokens = |level: &str| {
        let (status, reply) = post(
            &effort,
            &json!({"messages": user("Hi"), "reasoning_effort": level, "max_tokens": 2}),
        );
        assert_eq!(status, 200, "{reply}");
        reply["usage"]["prompt_tokens"].as_u64().unwrap()
    };
    let expected = |level: &str| {
        grail_gen::Model::tokenize(&TinyModel::new(3), &format!("Reasoning: {level}\nHi"))
            .unwrap()
            .len() as u64
    };
    assert_eq!(prompt_tokens("low"), expected("low"));
    assert_eq!(prompt_tokens("medium"), expected("medium"));
    assert_ne!(expected("low"), expected("medium"));
}

#[test]
fn a_harmony_text_answer_comes_back_without_its_channel_frame() {
    use grail_tools::{Think, WireFormat};
    let harmony = |think| {
        let mut settings = thinking(think);
        settings.plan.wire = WireFormat::Harmony;
        settings
    };
    let server = TestServer::start(
        Arc::new(Scripted("<|channel|>final<|message|>Hello!")),
        harmony(Think::Off),
    );
    let (status, reply) = post(&server, &json!({"messages": user("Hi")}));
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["choices"][0]["message"]["content"], "Hello!");
    // The analysis channel is the reasoning.
    let server = TestServer::start(
        Arc::new(Scripted(
            "<|channel|>analysis<|message|>A greeting.<|end|><|start|>assistant<|channel|>final<|message|>Hello!",
        )),
        harmony(Think::Optional),
    );
    let (status, reply) = post(&server, &json!({"messages": user("Hi")}));
    assert_eq!(status, 200, "{reply}");
    let message = &reply["choices"][0]["message"];
    assert_eq!(message["reasoning_content"], "A greeting.");
    assert_eq!(message["content"], "Hello!");
}
