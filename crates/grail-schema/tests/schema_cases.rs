//! The schema cases in `testdata/schema/*.json`: each file is one schema with options and
//! texts the grammar must accept (`valid`) or reject (`invalid`), or the diagnostics a
//! refusal must carry. Fields:
//!
//! - `description`: what the case shows.
//! - `schema`: the schema.
//! - `options` (optional): `mode` (`strict`/`lenient`), `whitespace` (`llama`, `none`,
//!   `free`, `bounded:N`), `key_order` (`schema`/`any`), `additional_properties_default`
//!   (bool), `dialect` (`spec`/`llama.cpp`), `item_separator`, `key_separator`.
//! - `valid`, `invalid`: texts (matched whole).
//! - `refused` (optional): `["code", "/keyword/pointer"]` pairs the refusal must include.
//! - `notes` (optional): codes of notes or warnings the conversion must report, each
//!   alone or as `["code", "/keyword/pointer"]`.

use std::path::PathBuf;

use grail_engine::{CompiledGrammar, Matcher};
use grail_schema::{
    Dialect, KeyOrder, Mode, SchemaError, SchemaOptions, Whitespace, schema_to_grammar,
};
use serde_json::Value;

fn options_of(case: &Value) -> SchemaOptions {
    let mut options = SchemaOptions::default();
    let Some(given) = case.get("options").and_then(Value::as_object) else {
        return options;
    };
    for (name, value) in given {
        let text = value.as_str().unwrap_or_default();
        match name.as_str() {
            "mode" => {
                options.mode = if text == "lenient" {
                    Mode::Lenient
                } else {
                    Mode::Strict
                }
            }
            "whitespace" => {
                options.whitespace = match text {
                    "llama" => Whitespace::Llama,
                    "none" => Whitespace::None,
                    "free" => Whitespace::Free,
                    bounded => Whitespace::Bounded(
                        bounded
                            .strip_prefix("bounded:")
                            .and_then(|count| count.parse().ok())
                            .unwrap_or_else(|| panic!("unknown whitespace {bounded:?}")),
                    ),
                }
            }
            "key_order" => {
                options.key_order = if text == "any" {
                    KeyOrder::Any
                } else {
                    KeyOrder::Schema
                }
            }
            "additional_properties_default" => {
                options.additional_properties_default = value.as_bool().unwrap()
            }
            "dialect" => {
                options = if text == "llama.cpp" {
                    SchemaOptions {
                        dialect: Dialect::LlamaCpp,
                        ..options
                    }
                } else {
                    options
                }
            }
            "depth_cap" => options.depth_cap = Some(value.as_u64().unwrap() as u32),
            "item_separator" => options.item_separator = text.to_string(),
            "key_separator" => options.key_separator = text.to_string(),
            other => panic!("unknown option {other:?}"),
        }
    }
    options
}

fn matches(grammar: &CompiledGrammar, text: &str) -> bool {
    let mut matcher = Matcher::new(grammar);
    matcher.accept_str(text).is_ok() && matcher.is_accepting()
}

/// Checks one case; the failures found.
fn run_case(case: &Value) -> Vec<String> {
    let mut failures = Vec::new();
    let options = options_of(case);
    let texts = |field: &str| -> Vec<String> {
        case.get(field)
            .and_then(Value::as_array)
            .map(|texts| {
                texts
                    .iter()
                    .map(|text| text.as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let expected_codes = |field: &str| -> Vec<Vec<String>> {
        case.get(field)
            .and_then(Value::as_array)
            .map(|entries| {
                entries
                    .iter()
                    .map(|entry| match entry {
                        Value::Array(parts) => parts
                            .iter()
                            .map(|part| part.as_str().unwrap().to_string())
                            .collect(),
                        Value::String(code) => vec![code.clone()],
                        other => panic!("unexpected {other}"),
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    match schema_to_grammar(&case["schema"], &options) {
        Err(SchemaError::Refused { diagnostics }) => {
            let refused = expected_codes("refused");
            if refused.is_empty() {
                failures.push(format!("refused: {}", diagnostics[0]));
            }
            for expected in refused {
                let found = diagnostics.iter().any(|diagnostic| {
                    diagnostic.code == expected[0]
                        && expected
                            .get(1)
                            .is_none_or(|pointer| diagnostic.keyword_pointer() == *pointer)
                });
                if !found {
                    failures.push(format!(
                        "no {expected:?} among {:?}",
                        diagnostics
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                    ));
                }
            }
        }
        Err(other) => failures.push(format!("error: {other}")),
        Ok(converted) => {
            if case.get("refused").is_some() {
                failures.push("compiled, but should be refused".to_string());
            }
            for expected in expected_codes("notes") {
                if !converted.diagnostics.iter().any(|found| {
                    found.code == expected[0]
                        && expected
                            .get(1)
                            .is_none_or(|pointer| found.keyword_pointer() == *pointer)
                }) {
                    failures.push(format!("no {expected:?} reported"));
                }
            }
            let grammar = CompiledGrammar::compile(&converted.grammar, &Default::default())
                .expect("an emitted grammar compiles");
            for text in texts("valid") {
                if !matches(&grammar, &text) {
                    failures.push(format!("rejects valid {text:?}"));
                }
            }
            for text in texts("invalid") {
                if matches(&grammar, &text) {
                    failures.push(format!("accepts invalid {text:?}"));
                }
            }
        }
    }
    failures
}

#[test]
fn schema_cases_hold() {
    let directory = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/schema");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&directory)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "json")
        })
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no cases in {}", directory.display());
    let mut failed = Vec::new();
    for path in &paths {
        let case: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap())
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        for failure in run_case(&case) {
            failed.push(format!(
                "{}: {failure}",
                path.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    println!(
        "schema cases: {} files, {} failures",
        paths.len(),
        failed.len()
    );
    assert!(failed.is_empty(), "{failed:#?}");
}
