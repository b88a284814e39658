//! The server's metrics, for `GET /metrics`, in Prometheus' text exposition format
//! (version 0.0.4).
//!
//! Counters and histograms are kept here, updated once per chat-completion request (and
//! once at its first content); gauges are read from the backend and the planning slots at
//! the moment of a scrape and handed to [`Metrics::render`]. Everything sits behind one
//! mutex, taken a few times per request: nothing to contend for next to writing an answer.
//!
//! The renderer is small on purpose: every name, label and help text comes from this
//! module (the only label value from outside is an HTTP status, a number), so nothing
//! needs escaping.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

use crate::complete::Completion;

/// The `Content-Type` of the text exposition format 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The upper bounds, in seconds, of the latency histograms' buckets (`+Inf` comes after).
pub const LATENCY_BUCKETS: [f64; 10] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// What a finished answer used, every attempt included (from its [`Completion`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    /// Prompt tokens read.
    pub prompt_tokens: usize,
    /// Tokens written.
    pub completion_tokens: usize,
    /// Prompt tokens not read again (a cached prefix).
    pub cached_tokens: usize,
    /// Tokens the grammar forced (jump-forward).
    pub forced_tokens: usize,
    /// Seconds the backend spent on the grammar.
    pub grammar_seconds: f64,
}

impl From<&Completion> for Usage {
    fn from(completion: &Completion) -> Usage {
        Usage {
            prompt_tokens: completion.prompt_tokens,
            completion_tokens: completion.completion_tokens,
            cached_tokens: completion.cached_tokens,
            forced_tokens: completion.forced_tokens,
            grammar_seconds: completion.grammar_seconds,
        }
    }
}

/// What is read at the moment of a scrape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Gauges {
    /// Requests accepted by the backend that wait for the model.
    pub queue_length: usize,
    /// Answers the backend is writing now.
    pub active_sequences: usize,
    /// Answers the backend writes at once at most (0 where it does not say).
    pub sequences_capacity: usize,
    /// Requests waiting for a planning slot.
    pub planning_queue_length: usize,
    /// Requests being planned (their grammar built) in a slot now.
    pub planning_active: usize,
}

/// The server's counters and histograms (see the module doc).
#[derive(Debug, Default)]
pub struct Metrics {
    recorded: Mutex<Recorded>,
}

#[derive(Debug, Default)]
struct Recorded {
    /// Requests by HTTP status.
    requests: BTreeMap<u16, u64>,
    prompt_tokens: u64,
    completion_tokens: u64,
    cached_tokens: u64,
    forced_tokens: u64,
    grammar_seconds: f64,
    first_content: Histogram,
    duration: Histogram,
}

/// Observations counted by bucket (each in the first bucket that holds it; rendered
/// cumulatively), with their count and sum.
#[derive(Debug, Default)]
struct Histogram {
    buckets: [u64; LATENCY_BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        if let Some(bucket) = LATENCY_BUCKETS.iter().position(|&bound| seconds <= bound) {
            self.buckets[bucket] += 1;
        }
        self.count += 1;
        self.sum += seconds;
    }
}

impl Metrics {
    /// Metrics with nothing recorded.
    pub fn new() -> Metrics {
        Metrics::default()
    }

    fn recorded(&self) -> std::sync::MutexGuard<'_, Recorded> {
        self.recorded
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Records one chat-completion request that ended with `status` after `duration`,
    /// and what its answer used when it was answered.
    pub fn record_request(&self, status: u16, duration: Duration, usage: Option<&Usage>) {
        let mut recorded = self.recorded();
        *recorded.requests.entry(status).or_default() += 1;
        recorded.duration.observe(duration.as_secs_f64());
        if let Some(usage) = usage {
            recorded.prompt_tokens += usage.prompt_tokens as u64;
            recorded.completion_tokens += usage.completion_tokens as u64;
            recorded.cached_tokens += usage.cached_tokens as u64;
            recorded.forced_tokens += usage.forced_tokens as u64;
            recorded.grammar_seconds += usage.grammar_seconds;
        }
    }

    /// Records that a request's first content was ready `after` its arrival.
    pub fn record_first_content(&self, after: Duration) {
        self.recorded().first_content.observe(after.as_secs_f64());
    }

    /// Everything, with `gauges`, in the text exposition format.
    pub fn render(&self, gauges: &Gauges) -> String {
        let recorded = self.recorded();
        let mut out = String::new();
        header(
            &mut out,
            "grail_requests_total",
            "Chat-completion requests answered, by HTTP status (a stream that fails after its first chunk counts under its error's status; 499: the client went away first).",
            "counter",
        );
        for (status, count) in &recorded.requests {
            let _ = writeln!(out, "grail_requests_total{{status=\"{status}\"}} {count}");
        }
        let counters = [
            (
                "grail_prompt_tokens_total",
                "Prompt tokens read for answered requests, every attempt included.",
                recorded.prompt_tokens,
            ),
            (
                "grail_completion_tokens_total",
                "Tokens written for answered requests, every attempt included.",
                recorded.completion_tokens,
            ),
            (
                "grail_cached_prompt_tokens_total",
                "Prompt tokens not read again because a shared prefix was in the model's cache.",
                recorded.cached_tokens,
            ),
            (
                "grail_forced_tokens_total",
                "Tokens the grammar forced, appended without a draw (jump-forward).",
                recorded.forced_tokens,
            ),
        ];
        for (name, help, value) in counters {
            header(&mut out, name, help, "counter");
            let _ = writeln!(out, "{name} {value}");
        }
        header(
            &mut out,
            "grail_grammar_seconds_total",
            "Seconds the backend spent on grammars (masks, checks) for answered requests.",
            "counter",
        );
        let _ = writeln!(
            out,
            "grail_grammar_seconds_total {}",
            recorded.grammar_seconds
        );
        let gauges = [
            (
                "grail_queue_length",
                "Requests accepted by the backend that wait for the model.",
                gauges.queue_length,
            ),
            (
                "grail_active_sequences",
                "Answers the model is writing now.",
                gauges.active_sequences,
            ),
            (
                "grail_sequences_capacity",
                "Answers the model writes at once at most (0 where the backend does not say).",
                gauges.sequences_capacity,
            ),
            (
                "grail_planning_queue_length",
                "Requests waiting for a planning slot (a grammar to build).",
                gauges.planning_queue_length,
            ),
            (
                "grail_planning_active",
                "Requests whose grammar is being built in a planning slot now.",
                gauges.planning_active,
            ),
        ];
        for (name, help, value) in gauges {
            header(&mut out, name, help, "gauge");
            let _ = writeln!(out, "{name} {value}");
        }
        histogram(
            &mut out,
            "grail_time_to_first_token_seconds",
            "Seconds from a request's arrival to its first content ready to send: the first streamed piece, or the whole answer where it is sent at once.",
            &recorded.first_content,
        );
        histogram(
            &mut out,
            "grail_request_duration_seconds",
            "Seconds from a request's arrival to the end of its answer (a stream's last chunk), errors included.",
            &recorded.duration,
        );
        out
    }
}

fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn histogram(out: &mut String, name: &str, help: &str, histogram: &Histogram) {
    header(out, name, help, "histogram");
    let mut cumulative = 0;
    for (bound, count) in LATENCY_BUCKETS.iter().zip(histogram.buckets) {
        cumulative += count;
        let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
    }
    let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", histogram.count);
    let _ = writeln!(out, "{name}_sum {}", histogram.sum);
    let _ = writeln!(out, "{name}_count {}", histogram.count);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
            .map(|value| value.parse().unwrap())
    }

    #[test]
    fn buckets_are_cumulative_and_counters_add_up() {
        let metrics = Metrics::new();
        let usage = Usage {
            prompt_tokens: 10,
            completion_tokens: 4,
            cached_tokens: 3,
            forced_tokens: 2,
            grammar_seconds: 0.25,
        };
        metrics.record_request(200, Duration::from_millis(5), Some(&usage));
        metrics.record_request(200, Duration::from_millis(300), Some(&usage));
        metrics.record_request(400, Duration::from_secs(20), None);
        metrics.record_first_content(Duration::from_millis(30));
        let text = metrics.render(&Gauges {
            active_sequences: 3,
            ..Gauges::default()
        });
        let duration = "grail_request_duration_seconds";
        for (series, expected) in [
            ("grail_requests_total{status=\"200\"}", 2.0),
            ("grail_requests_total{status=\"400\"}", 1.0),
            ("grail_prompt_tokens_total", 20.0),
            ("grail_completion_tokens_total", 8.0),
            ("grail_cached_prompt_tokens_total", 6.0),
            ("grail_forced_tokens_total", 4.0),
            ("grail_grammar_seconds_total", 0.5),
            ("grail_active_sequences", 3.0),
            ("grail_queue_length", 0.0),
            (&format!("{duration}_bucket{{le=\"0.01\"}}"), 1.0),
            (&format!("{duration}_bucket{{le=\"0.25\"}}"), 1.0),
            (&format!("{duration}_bucket{{le=\"0.5\"}}"), 2.0),
            (&format!("{duration}_bucket{{le=\"10\"}}"), 2.0),
            (&format!("{duration}_bucket{{le=\"+Inf\"}}"), 3.0),
            (&format!("{duration}_count"), 3.0),
            (
                "grail_time_to_first_token_seconds_bucket{le=\"0.025\"}",
                0.0,
            ),
            ("grail_time_to_first_token_seconds_bucket{le=\"0.05\"}", 1.0),
            ("grail_time_to_first_token_seconds_count", 1.0),
        ] {
            assert_eq!(value(&text, series), Some(expected), "{series} in\n{text}");
        }
        let sum = value(&text, &format!("{duration}_sum")).unwrap();
        assert!((sum - 20.305).abs() < 1e-9, "{sum}");
    }

    #[test]
    fn every_metric_has_help_and_type_before_its_samples() {
        let metrics = Metrics::new();
        metrics.record_request(503, Duration::ZERO, None);
        let text = metrics.render(&Gauges::default());
        let mut typed: Vec<String> = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                typed.push(rest.split(' ').next().unwrap().to_string());
            } else if !line.starts_with("# HELP ") {
                let name = line.split(['{', ' ']).next().unwrap();
                let family = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|suffix| name.strip_suffix(suffix))
                    .filter(|base| typed.last().is_some_and(|last| last == base))
                    .unwrap_or(name);
                assert_eq!(typed.last().map(String::as_str), Some(family), "{line}");
            }
        }
        assert!(text.contains("# HELP grail_requests_total "));
        assert_eq!(typed.len(), 13, "{text}");
    }
}
