//! `GET /metrics`, scraped over HTTP: Prometheus' text format (every sample parsed, every
//! family typed), requests counted by status, token counters equal to the answers'
//! `usage`, the latency histograms, the gauges following the model's sequences and
//! queue, the content type, the API key, and no request log line for a scrape.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use grail_server::{AppState, ServerSettings};
use serde_json::{Value, json};
use support::*;

const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A scrape: the status, the `Content-Type` and the body.
fn scrape_with(server: &TestServer, key: Option<&str>) -> (u16, String, String) {
    let mut request = agent().get(&server.url("/metrics"));
    if let Some(key) = key {
        request = request.header("Authorization", &format!("Bearer {key}"));
    }
    let response = request.call().unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|value| value.to_str().unwrap().to_string())
        .unwrap_or_default();
    (
        status,
        content_type,
        response.into_body().read_to_string().unwrap(),
    )
}

/// The samples of a successful scrape, parsed.
fn scrape(server: &TestServer) -> BTreeMap<String, f64> {
    let (status, _, text) = scrape_with(server, None);
    assert_eq!(status, 200, "{text}");
    parse(&text)
}

fn is_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Every sample, by `name{labels}` as written: each non-comment line must be
/// `name{label="value",...} value` (labels optional) with a float value, and belong to a
/// family whose `# TYPE` came before it (a histogram's `_bucket`, `_sum` and `_count`
/// belong to it); every family has a `# HELP`.
fn parse(text: &str) -> BTreeMap<String, f64> {
    let mut typed = BTreeSet::new();
    let mut helped = BTreeSet::new();
    let mut samples = BTreeMap::new();
    for line in text.lines().filter(|line| !line.is_empty()) {
        if let Some(comment) = line.strip_prefix("# ") {
            let mut words = comment.splitn(3, ' ');
            let (keyword, name, rest) = (words.next(), words.next(), words.next());
            let (name, rest) = (name.unwrap_or(""), rest.unwrap_or(""));
            assert!(is_name(name), "a comment naming no metric: {line}");
            match keyword {
                Some("TYPE") => {
                    assert!(
                        ["counter", "gauge", "histogram", "summary", "untyped"].contains(&rest),
                        "{line}"
                    );
                    assert!(typed.insert(name.to_string()), "typed twice: {line}");
                }
                Some("HELP") => {
                    assert!(!rest.trim().is_empty(), "empty help: {line}");
                    helped.insert(name.to_string());
                }
                _ => {}
            }
            continue;
        }
        let name_end = line
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(line.len());
        let name = &line[..name_end];
        assert!(is_name(name), "no metric name: {line}");
        let mut rest = &line[name_end..];
        let mut series = name.to_string();
        if let Some(labels) = rest.strip_prefix('{') {
            let close = labels
                .find('}')
                .unwrap_or_else(|| panic!("unclosed labels: {line}"));
            for pair in labels[..close].split(',').filter(|pair| !pair.is_empty()) {
                let (label, value) = pair
                    .split_once('=')
                    .unwrap_or_else(|| panic!("a label without a value: {line}"));
                assert!(is_name(label), "{line}");
                assert!(
                    value.len() >= 2 && value.starts_with('"') && value.ends_with('"'),
                    "an unquoted label value: {line}"
                );
            }
            series.push_str(&rest[..close + 2]);
            rest = &labels[close + 1..];
        }
        let value = rest
            .strip_prefix(' ')
            .unwrap_or_else(|| panic!("no space before the value: {line}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("a value that is not a float: {line}"));
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .filter_map(|suffix| name.strip_suffix(suffix))
            .find(|base| typed.contains(*base))
            .unwrap_or(name);
        assert!(typed.contains(family), "no # TYPE before: {line}");
        assert!(samples.insert(series, value).is_none(), "twice: {line}");
    }
    assert_eq!(typed, helped, "every family needs # HELP and # TYPE");
    samples
}

fn sample(samples: &BTreeMap<String, f64>, series: &str) -> f64 {
    *samples
        .get(series)
        .unwrap_or_else(|| panic!("no {series} in {samples:?}"))
}

/// The buckets of histogram `name` are cumulative and end with `+Inf` = `_count`.
fn assert_histogram(samples: &BTreeMap<String, f64>, name: &str) {
    let buckets: Vec<(f64, f64)> = samples
        .iter()
        .filter_map(|(series, &value)| {
            let bound = series
                .strip_prefix(&format!("{name}_bucket{{le=\""))?
                .strip_suffix("\"}")?;
            Some((bound.parse::<f64>().unwrap(), value))
        })
        .collect();
    let mut sorted = buckets.clone();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(sorted.len() >= 2, "{name}: {buckets:?}");
    assert!(sorted.last().unwrap().0.is_infinite(), "{name}: no +Inf");
    assert!(
        sorted.windows(2).all(|pair| pair[0].1 <= pair[1].1),
        "{name}: buckets not cumulative: {sorted:?}"
    );
    assert_eq!(
        sorted.last().unwrap().1,
        sample(samples, &format!("{name}_count"))
    );
    assert!(sample(samples, &format!("{name}_sum")) >= 0.0);
}

fn usage_of_stream(text: &str) -> Value {
    text.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|event| serde_json::from_str::<Value>(event).ok())
        .find_map(|chunk| chunk.get("usage").filter(|usage| !usage.is_null()).cloned())
        .unwrap_or_else(|| panic!("no usage in {text}"))
}

#[test]
fn requests_tokens_and_latencies_are_counted() {
    let server = TestServer::start(tiny_backend(8), quiet());
    let before = scrape(&server);
    assert!(
        !before
            .keys()
            .any(|series| series.starts_with("grail_requests_total")),
        "{before:?}"
    );
    assert_eq!(
        sample(&before, "grail_time_to_first_token_seconds_count"),
        0.0
    );

    // One answer whole, one streamed with its usage, one bad body.
    let (status, whole) = post(
        &server,
        &json!({"messages": user("Say ok"), "grammar": "root ::= \"ok\" [a-z]{0,12}"}),
    );
    assert_eq!(status, 200, "{whole}");
    let whole = whole["usage"].clone();
    let (status, streamed) = post(
        &server,
        &json!({"messages": user("Count to three, please"), "max_tokens": 24, "stream": true,
            "stream_options": {"include_usage": true}}),
    );
    assert_eq!(status, 200, "{streamed}");
    let streamed = usage_of_stream(streamed["raw"].as_str().unwrap());
    let (status, refused) = post_text(&server, "{\"messages\": [");
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (400, Some("invalid_json"))
    );

    let samples = scrape(&server);
    assert_eq!(
        sample(&samples, "grail_requests_total{status=\"200\"}"),
        2.0
    );
    assert_eq!(
        sample(&samples, "grail_requests_total{status=\"400\"}"),
        1.0
    );
    assert_eq!(
        samples
            .keys()
            .filter(|series| series.starts_with("grail_requests_total"))
            .count(),
        2,
        "{samples:?}"
    );
    let total = |field: &str| {
        [&whole, &streamed]
            .iter()
            .map(|usage| usage[field].as_u64().unwrap())
            .sum::<u64>() as f64
    };
    assert!(total("prompt_tokens") > 0.0 && total("completion_tokens") > 0.0);
    assert_eq!(
        sample(&samples, "grail_prompt_tokens_total"),
        total("prompt_tokens")
    );
    assert_eq!(
        sample(&samples, "grail_completion_tokens_total"),
        total("completion_tokens")
    );
    let cached: u64 = [&whole, &streamed]
        .iter()
        .map(|usage| {
            usage["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(
        sample(&samples, "grail_cached_prompt_tokens_total"),
        cached as f64
    );
    assert!(sample(&samples, "grail_forced_tokens_total") >= 0.0);
    assert!(sample(&samples, "grail_grammar_seconds_total") >= 0.0);
    // The bad body has no first token; every request has a duration.
    assert_eq!(
        sample(&samples, "grail_time_to_first_token_seconds_count"),
        2.0
    );
    assert_eq!(
        sample(&samples, "grail_request_duration_seconds_count"),
        3.0
    );
    assert_histogram(&samples, "grail_time_to_first_token_seconds");
    assert_histogram(&samples, "grail_request_duration_seconds");
    // Nothing runs now.
    assert_eq!(sample(&samples, "grail_queue_length"), 0.0);
    assert_eq!(sample(&samples, "grail_active_sequences"), 0.0);
}

#[test]
fn the_gauges_follow_the_models_sequences_and_queue() {
    let backend = batched_backend(8, Duration::from_millis(20), 2);
    let server = Arc::new(TestServer::start(backend, quiet()));
    let long = json!({"messages": user("Write letters"), "grammar": "root ::= [a-z]{300}",
        "max_tokens": 300});
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let (server, body) = (server.clone(), long.clone());
            std::thread::spawn(move || post(&server, &body))
        })
        .collect();
    // Two answers run (the model's two sequences), the third waits for one of them.
    wait_until(
        "/metrics shows two sequences running and one waiting",
        || {
            let samples = scrape(&server);
            sample(&samples, "grail_active_sequences") == 2.0
                && sample(&samples, "grail_sequences_capacity") == 2.0
                && sample(&samples, "grail_queue_length") == 1.0
        },
    );
    for client in clients {
        let (status, answer) = client.join().unwrap();
        assert_eq!(status, 200, "{answer}");
    }
    let samples = scrape(&server);
    assert_eq!(sample(&samples, "grail_active_sequences"), 0.0);
    assert_eq!(sample(&samples, "grail_queue_length"), 0.0);
    assert_eq!(sample(&samples, "grail_sequences_capacity"), 2.0);
    assert_eq!(
        sample(&samples, "grail_requests_total{status=\"200\"}"),
        3.0
    );
    // The waiting request's time to its first token includes its wait.
    assert!(sample(&samples, "grail_time_to_first_token_seconds_sum") > 0.0);
}

#[test]
fn metrics_are_prometheus_text_and_log_no_request_line() {
    let settings = ServerSettings {
        log_requests: true,
        ..quiet()
    };
    let state = AppState::new(tiny_backend(8), settings);
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = lines.clone();
    state.log_to(Arc::new(move |line| sink.lock().unwrap().push(line)));
    let server = TestServer::start_state(state);
    let (status, content_type, text) = scrape_with(&server, None);
    assert_eq!(status, 200, "{text}");
    assert_eq!(content_type, PROMETHEUS_TEXT);
    assert!(text.ends_with('\n'));
    parse(&text);
    assert!(
        lines.lock().unwrap().is_empty(),
        "{:?}",
        lines.lock().unwrap()
    );
    // A chat request is logged, and so counted; the scrapes still are not logged.
    let (status, answer) = post(
        &server,
        &json!({"messages": user("x"), "grammar": "root ::= \"ok\""}),
    );
    assert_eq!(status, 200, "{answer}");
    let samples = scrape(&server);
    assert_eq!(
        sample(&samples, "grail_requests_total{status=\"200\"}"),
        1.0
    );
    assert_eq!(
        lines.lock().unwrap().len(),
        1,
        "{:?}",
        lines.lock().unwrap()
    );
}

#[test]
fn metrics_want_the_api_key_when_one_is_set() {
    let settings = ServerSettings {
        api_key: Some("sesame".into()),
        ..quiet()
    };
    let server = TestServer::start(tiny_backend(8), settings);
    let (status, _, text) = scrape_with(&server, None);
    assert_eq!(status, 401, "{text}");
    assert_eq!(scrape_with(&server, Some("sesam")).0, 401);
    // A chat request refused for its key is counted too.
    let body = json!({"messages": user("x"), "grammar": "root ::= \"ok\""}).to_string();
    assert_eq!(post_with(&server, &body, None).0, 401);
    let (status, content_type, text) = scrape_with(&server, Some("sesame"));
    assert_eq!(
        (status, content_type.as_str()),
        (200, PROMETHEUS_TEXT),
        "{text}"
    );
    let samples = parse(&text);
    assert_eq!(
        sample(&samples, "grail_requests_total{status=\"401\"}"),
        1.0
    );
    assert_eq!(
        sample(&samples, "grail_request_duration_seconds_count"),
        1.0
    );
}
