//! The schema cases in `testdata/schema/*.json`: each file is one schema with options and
//! texts the grammar must accept (`valid`) or reject (`invalid`), or the diagnostics a
//! refusal must carry. Fields:
//!
//! - `description`: what the case shows.
//! - `schema`: the schema.
//! - `options` (optional): `mode` (`strict`/`lenient`), `whitespace` (`llama`, `none`,
//!   `free`, `bounded:N`), `key_order` (`schema`/`any`), `additional_properties_default`
//!   (bool), `dialect` (`spec`/`llama.cpp`), `depth_cap` (a number), `item_separator`,
//!   `key_separator`.
//! - `valid`, `invalid`: texts (matched whole).
//! - `refused` (optional): `["code", "/keyword/pointer"]` pairs the refusal must include.
//! - `notes` (optional): codes of notes or warnings the conversion must report, each
//!   alone or as `["code", "/keyword/pointer"]`.
//!
//! Each case is also converted under depth caps of 0 to 3 levels (up to its own cap when
//! it sets one): the capped grammar must judge every text whose objects and arrays all lie
//! within the cap as the case says (a depth cap is exact up to it), and must not panic.

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

/// The deepest level of an object or array in `value` (the outermost value is level 0),
/// `None` when it holds none.
fn container_depth(value: &Value) -> Option<u32> {
    let children: Box<dyn Iterator<Item = &Value>> = match value {
        Value::Array(items) => Box::new(items.iter()),
        Value::Object(map) => Box::new(map.values()),
        _ => return None,
    };
    Some(
        children
            .filter_map(container_depth)
            .map(|depth| depth + 1)
            .max()
            .unwrap_or(0),
    )
}

/// The failures of `case` converted with a depth cap of `cap` in place of its own: a
/// panic, a refusal, a note missing, or a text within the cap judged otherwise than the
/// case says; and how many texts were judged.
fn run_capped(case: &Value, cap: u32) -> (Vec<String>, usize) {
    let options = SchemaOptions {
        depth_cap: Some(cap),
        ..options_of(case)
    };
    let converted = std::panic::catch_unwind(|| schema_to_grammar(&case["schema"], &options));
    let converted = match converted {
        Ok(Ok(converted)) => converted,
        Ok(Err(error)) => return (vec![format!("cap {cap}: refused: {error}")], 0),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|text| text.to_string()))
                .unwrap_or_default();
            return (vec![format!("cap {cap}: panicked: {message}")], 0);
        }
    };
    let grammar = CompiledGrammar::compile(&converted.grammar, &Default::default())
        .expect("an emitted grammar compiles");
    let (mut failures, mut judged) = (Vec::new(), 0);
    for (field, valid) in [("valid", true), ("invalid", false)] {
        for text in case[field].as_array().into_iter().flatten() {
            let text = text.as_str().unwrap();
            // Texts that are not JSON, or nest deeper than the cap, are not exact there.
            let within = serde_json::from_str::<Value>(text)
                .is_ok_and(|value| container_depth(&value).is_none_or(|depth| depth <= cap));
            if !within {
                continue;
            }
            judged += 1;
            if matches(&grammar, text) != valid {
                failures.push(format!("cap {cap}: judges the {field} text {text:?} wrong"));
            }
        }
    }
    (failures, judged)
}

#[test]
fn depth_capped_grammars_are_exact_within_the_cap() {
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
    let (mut failed, mut judged, mut nested) = (Vec::new(), 0, 0);
    for path in &paths {
        let case: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap())
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        // Refused cases and invalid options say nothing of a grammar.
        if case.get("refused").is_some() || options_of(&case).validate().is_err() {
            continue;
        }
        let own_cap = options_of(&case).depth_cap.unwrap_or(u32::MAX);
        for cap in 0..=own_cap.min(3) {
            let (failures, count) = run_capped(&case, cap);
            judged += count;
            if cap > 0 {
                nested += count;
            }
            let name = path.file_name().unwrap().to_string_lossy();
            failed.extend(
                failures
                    .into_iter()
                    .map(|failure| format!("{name}: {failure}")),
            );
        }
    }
    println!(
        "depth caps 0-3 over {} schema cases: {judged} texts judged ({nested} under caps of 1 or more), {} failures",
        paths.len(),
        failed.len()
    );
    assert!(nested > 0, "no text was judged under a cap of 1 or more");
    assert!(failed.is_empty(), "{failed:#?}");
}
