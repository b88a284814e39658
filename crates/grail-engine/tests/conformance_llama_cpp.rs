//! Conformance of the matcher with llama.cpp's own integration tests
//! (`../shared/conformance/llama.cpp/grammar-cases.json`): every must-match string
//! matches and every must-not-match string does not, fed the way upstream's harness feeds
//! them (one code point at a time, each as a pseudo-token with id 0; `{"token": N}`
//! segments as token N whose piece is `<[N]>`). Prints pass/fail counts; fails only on
//! regressions against `testdata/conformance/llama-cpp-match.baseline` (regenerate with
//! `GRAIL_UPDATE_BASELINE=1`). Skips when `../shared` is absent.

#[path = "../../grail-grammar/tests/support/baseline.rs"]
mod baseline;

use std::collections::BTreeSet;
use std::path::PathBuf;

use baseline::check_against_baseline;
use grail_engine::{CompiledGrammar, Matcher};
use serde_json::Value;

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cases_file() -> Option<PathBuf> {
    let shared = std::env::var_os("GRAIL_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repository_root().join("../shared"));
    let path = shared.join("conformance/llama.cpp/grammar-cases.json");
    path.is_file().then_some(path)
}

/// Feeds one test string as upstream's harness does; true when it matches completely.
fn matches(grammar: &CompiledGrammar, input: &Value) -> bool {
    let mut matcher = Matcher::new(grammar);
    let feed_text = |matcher: &mut Matcher, text: &str| {
        text.chars().all(|character| {
            let mut buffer = [0; 4];
            let piece = character.encode_utf8(&mut buffer).as_bytes();
            matcher.accept_token_piece(0, Some(piece)).is_ok()
        })
    };
    let fed = match input {
        Value::String(text) => feed_text(&mut matcher, text),
        Value::Object(object) => object["segments"]
            .as_array()
            .unwrap()
            .iter()
            .all(|segment| {
                if let Some(text) = segment["text"].as_str() {
                    feed_text(&mut matcher, text)
                } else {
                    let id = segment["token"].as_u64().unwrap() as u32;
                    let piece = format!("<[{id}]>");
                    matcher
                        .accept_token_piece(id, Some(piece.as_bytes()))
                        .is_ok()
                }
            }),
        other => panic!("unexpected test string {other}"),
    };
    fed && matcher.is_accepting()
}

#[test]
fn strings_get_llama_cpp_verdicts() {
    let Some(path) = cases_file() else {
        eprintln!("skipped: ../shared/conformance/llama.cpp not found (set GRAIL_SHARED_DIR)");
        return;
    };
    let data: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut passing = BTreeSet::new();
    let mut failures = Vec::new();
    let (mut must_match, mut must_not_match) = (0, 0);
    for (index, case) in data["cases"].as_array().unwrap().iter().enumerate() {
        let name = case["name"].as_str().unwrap_or("");
        let grammar = match CompiledGrammar::from_gbnf(case["grammar"].as_str().unwrap()) {
            Ok(grammar) => grammar,
            Err(error) => {
                failures.push(format!("case/{index}/{name}: does not compile: {error}"));
                continue;
            }
        };
        for (expected, key) in [(true, "pass"), (false, "fail")] {
            for (position, input) in case[key].as_array().unwrap().iter().enumerate() {
                if expected {
                    must_match += 1;
                } else {
                    must_not_match += 1;
                }
                let id = format!("case/{index}/{name}/{key}/{position}");
                if matches(&grammar, input) == expected {
                    passing.insert(id);
                } else {
                    failures.push(format!(
                        "{id}: {input} should {}match",
                        if expected { "" } else { "not " }
                    ));
                }
            }
        }
    }
    println!(
        "llama.cpp conformance (match): {} passed, {} failed ({must_match} must match, {must_not_match} must not)",
        passing.len(),
        failures.len(),
    );
    for failure in &failures {
        println!("  FAIL {failure}");
    }
    let baseline_path = repository_root().join("testdata/conformance/llama-cpp-match.baseline");
    check_against_baseline(&baseline_path, &passing);
}
