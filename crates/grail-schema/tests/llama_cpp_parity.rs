//! Parity with llama.cpp's JSON Schema converter, over its own test data in
//! `../shared/conformance/llama.cpp` (skipped with a message when absent):
//!
//! - `json-schema-cases.json`: for every schema llama.cpp converts, Grail's grammar (with
//!   [`SchemaOptions::llama_cpp`]) denotes the same language as llama.cpp's expected
//!   grammar: strings sampled from each are matched by the other. Schemas llama.cpp
//!   refuses, Grail refuses.
//! - `grammar-cases.json`: the schema cases' strings that must and must not match.
//!
//! Identical grammar text is not the goal; the language is. Grail runs leniently here:
//! what llama.cpp drops silently (`uniqueItems`), Grail drops with a warning.
//!
//! llama.cpp writes the characters of `pattern` strings unescaped (`^"$` gives `"""`, not
//! JSON); Grail escapes them, so a string of Grail's also counts as llama.cpp's when its
//! unescaped form is. Texts llama.cpp's grammars make that are not what a JSON writer
//! writes are left out of the comparison, on purpose: integer ranges with a negative minimum accept `-0`, and
//! with a negative maximum texts with leading zeros such as `-07` (not JSON at all); Grail
//! writes neither.

use std::path::PathBuf;

use grail_engine::{CompiledGrammar, Matcher, Sampler, Segment};
use grail_schema::{SchemaOptions, schema_text_to_grammar};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use serde_json::Value;

fn conformance_directory() -> Option<PathBuf> {
    let directory =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/llama.cpp");
    directory.is_dir().then_some(directory)
}

/// Cases where llama.cpp's expected grammar is not the language of the schema, so Grail
/// does not follow it.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[(
    "optional props with empty name",
    "llama.cpp names the rule of the property \"\" `root`, so its grammar's root is that property's value (an integer), not the object",
)];

fn matches(grammar: &CompiledGrammar, text: &str) -> bool {
    let mut matcher = Matcher::new(grammar);
    matcher.accept_str(text).is_ok() && matcher.is_accepting()
}

fn samples(grammar: &CompiledGrammar, seed: u64, count: usize) -> Vec<String> {
    let sampler = Sampler::new(grammar);
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..count)
        .filter_map(|_| sampler.sample(&mut rng, 40))
        .filter_map(|segments| match segments.as_slice() {
            [Segment::Text(text)] => Some(text.clone()),
            [] => Some(String::new()),
            _ => None,
        })
        .collect()
}

/// Whether a text from llama.cpp's grammar is one a JSON writer would write: valid JSON,
/// and no integer written `-0`.
fn writable(text: &str) -> bool {
    if serde_json::from_str::<Value>(text).is_err() {
        return false;
    }
    let bytes = text.as_bytes();
    !bytes.windows(2).enumerate().any(|(at, pair)| {
        pair == b"-0" && !matches!(bytes.get(at + 2), Some(b'.' | b'e' | b'E' | b'0'..=b'9'))
    })
}

/// A JSON string written as llama.cpp's pattern grammars write it: its characters as they
/// are between the quotes, none escaped (which is not JSON: Grail escapes them).
fn unescaped(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::String(value)) => format!("\"{value}\""),
        _ => text.to_string(),
    }
}

fn compile_ours(schema: &str) -> Result<CompiledGrammar, String> {
    let options = SchemaOptions {
        mode: grail_schema::Mode::Lenient,
        ..SchemaOptions::llama_cpp()
    };
    let converted = schema_text_to_grammar(schema, &options).map_err(|error| error.to_string())?;
    CompiledGrammar::compile(&converted.grammar, &Default::default())
        .map_err(|error| error.to_string())
}

#[test]
fn grail_denotes_the_language_of_llama_cpps_converter() {
    let Some(directory) = conformance_directory() else {
        eprintln!("skipped: ../shared/conformance/llama.cpp is absent");
        return;
    };
    let cases: Value = serde_json::from_str(
        &std::fs::read_to_string(directory.join("json-schema-cases.json")).unwrap(),
    )
    .unwrap();
    let mut passed = 0;
    let mut failures = Vec::new();
    for (index, case) in cases["cases"].as_array().unwrap().iter().enumerate() {
        let name = case["name"].as_str().unwrap();
        let schema = case["schema"].as_str().unwrap();
        if let Some((_, why)) = KNOWN_DIFFERENCES.iter().find(|(known, _)| *known == name) {
            println!("known difference, not compared: {name}: {why}");
            continue;
        }
        let expected_success = case["expected_status"] == "SUCCESS";
        let ours = compile_ours(schema);
        if !expected_success {
            match ours {
                Err(_) => passed += 1,
                Ok(_) => failures.push(format!(
                    "{name}: llama.cpp refuses the schema, Grail converts it"
                )),
            }
            continue;
        }
        let ours = match ours {
            Ok(ours) => ours,
            Err(error) => {
                failures.push(format!("{name}: Grail refuses: {error}"));
                continue;
            }
        };
        let theirs = match CompiledGrammar::from_gbnf(case["expected_grammar"].as_str().unwrap()) {
            Ok(theirs) => theirs,
            Err(error) => {
                failures.push(format!(
                    "{name}: llama.cpp's grammar does not compile: {error:?}"
                ));
                continue;
            }
        };
        let mut disagreement = None;
        for text in samples(&theirs, index as u64, 40) {
            if writable(&text) && !matches(&ours, &text) {
                disagreement = Some(format!(
                    "llama.cpp's grammar makes {text:?}, Grail's refuses it"
                ));
                break;
            }
        }
        if disagreement.is_none() {
            for text in samples(&ours, index as u64 + 1000, 40) {
                if !matches(&theirs, &text) && !matches(&theirs, &unescaped(&text)) {
                    disagreement = Some(format!(
                        "Grail's grammar makes {text:?}, llama.cpp's refuses it"
                    ));
                    break;
                }
            }
        }
        match disagreement {
            None => passed += 1,
            Some(reason) => failures.push(format!("{name}: {reason}")),
        }
    }
    println!(
        "llama.cpp JSON Schema parity: {passed} passed, {} failed",
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn schema_strings_match_as_in_llama_cpps_integration_tests() {
    let Some(directory) = conformance_directory() else {
        eprintln!("skipped: ../shared/conformance/llama.cpp is absent");
        return;
    };
    let cases: Value = serde_json::from_str(
        &std::fs::read_to_string(directory.join("grammar-cases.json")).unwrap(),
    )
    .unwrap();
    let mut checked = 0;
    let mut failures = Vec::new();
    for case in cases["cases"].as_array().unwrap() {
        if case["kind"] != "schema" {
            continue;
        }
        let name = case["name"].as_str().unwrap();
        let ours = match compile_ours(case["schema"].as_str().unwrap()) {
            Ok(ours) => ours,
            Err(error) => {
                failures.push(format!("{name}: Grail refuses: {error}"));
                continue;
            }
        };
        for (key, expected) in [("pass", true), ("fail", false)] {
            for text in case[key].as_array().unwrap() {
                let Some(text) = text.as_str() else { continue };
                checked += 1;
                if matches(&ours, text) != expected {
                    failures.push(format!(
                        "{name}: {text:?} should {}match",
                        if expected { "" } else { "not " }
                    ));
                }
            }
        }
    }
    println!(
        "llama.cpp schema strings: {} of {checked} as expected",
        checked - failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
