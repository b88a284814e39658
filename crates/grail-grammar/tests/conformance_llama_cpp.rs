//! Conformance of `check --target llama.cpp` with llama.cpp's own test data
//! (`../shared/conformance/llama.cpp`): every grammar llama.cpp accepts is accepted, every
//! grammar it refuses is refused. Prints pass/fail counts; fails only on regressions
//! against the committed baseline `testdata/conformance/llama-cpp-check.baseline`
//! (regenerate it with `GRAIL_UPDATE_BASELINE=1`). Skips when `../shared` is absent.
//! Also: `llama-slow` fires on none of llama.cpp's example, integration and JSON Schema
//! grammars (the shapes it names make llama.cpp's own matcher exponentially slow).

#[path = "support/baseline.rs"]
mod baseline;

use std::collections::BTreeSet;
use std::path::PathBuf;

use baseline::check_against_baseline;
use grail_grammar::{CheckOptions, Target, check};
use serde_json::Value;

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn conformance_directory() -> Option<PathBuf> {
    let shared = std::env::var_os("GRAIL_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repository_root().join("../shared"));
    let directory = shared.join("conformance/llama.cpp");
    directory.is_dir().then_some(directory)
}

struct Case {
    id: String,
    grammar: String,
    root: String,
    accepted_by_llama_cpp: bool,
}

fn read_json(path: PathBuf) -> Value {
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn cases(directory: &std::path::Path) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut add = |id: String, grammar: &str, root: &str, accepted: bool| {
        cases.push(Case {
            id,
            grammar: grammar.to_string(),
            root: root.to_string(),
            accepted_by_llama_cpp: accepted,
        })
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(directory.join("grammars"))
        .expect("grammars directory")
        .map(|entry| entry.expect("entry").path())
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("grammar file");
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        add(format!("example/{name}"), &text, "root", true);
    }
    let data = read_json(directory.join("grammar-cases.json"));
    for (index, case) in data["cases"].as_array().unwrap().iter().enumerate() {
        let name = case["name"].as_str().unwrap_or("");
        add(
            format!("integration/{index}/{name}"),
            case["grammar"].as_str().unwrap(),
            "root",
            true,
        );
    }
    for (index, case) in data["generated_grammar_corpus"]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let name = case["name"].as_str().unwrap_or("");
        let accepted = case["parse_ok_at_34af94cd"].as_bool() == Some(true)
            && case["init_ok_at_34af94cd"].as_bool() == Some(true);
        add(
            format!("generated/{index}/{name}"),
            case["grammar"].as_str().unwrap(),
            "root",
            accepted,
        );
    }
    for (index, case) in data["parser_structure_cases"]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        add(
            format!("parser-structure/{index}"),
            case["grammar"].as_str().unwrap(),
            "root",
            true,
        );
    }
    for (index, case) in data["parser_rejects"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        add(
            format!("parser-rejects/{index}"),
            case["grammar"].as_str().unwrap(),
            "root",
            false,
        );
    }
    for (index, case) in data["init_rejects"].as_array().unwrap().iter().enumerate() {
        let root = case["root"].as_str().unwrap_or("root");
        add(
            format!("init-rejects/{index}"),
            case["grammar"].as_str().unwrap(),
            root,
            false,
        );
    }
    for (index, case) in data["integration_special_checks"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let grammar = case["grammar"].as_str().unwrap();
        let root = case["root"].as_str().unwrap_or("root");
        add(format!("special/{index}"), grammar, root, false);
        if case["observed_with_root_foobar"].as_str() == Some("accepted") {
            add(
                format!("special/{index}/root-foobar"),
                grammar,
                "foobar",
                true,
            );
        }
    }
    let schemas = read_json(directory.join("json-schema-cases.json"));
    for (index, case) in schemas["cases"].as_array().unwrap().iter().enumerate() {
        if case["expected_status"].as_str() == Some("SUCCESS") {
            let name = case["name"].as_str().unwrap_or("");
            add(
                format!("json-schema/{index}/{name}"),
                case["expected_grammar"].as_str().unwrap(),
                "root",
                true,
            );
        }
    }
    cases
}

#[test]
fn llama_cpp_accepts_and_refuses_the_same_grammars() {
    let Some(directory) = conformance_directory() else {
        eprintln!("skipped: ../shared/conformance/llama.cpp not found (set GRAIL_SHARED_DIR)");
        return;
    };
    let mut passing = BTreeSet::new();
    let mut failures = Vec::new();
    let all = cases(&directory);
    for case in &all {
        let options = CheckOptions {
            target: Target::LlamaCpp,
            root: case.root.clone(),
            ..CheckOptions::default()
        };
        let report = check(&case.grammar, &options);
        if report.is_ok() == case.accepted_by_llama_cpp {
            passing.insert(case.id.clone());
        } else {
            let codes: Vec<&str> = report.diagnostics.iter().map(|d| d.code).collect();
            failures.push(format!(
                "{}: llama.cpp {} it, grail {} it ({codes:?})",
                case.id,
                if case.accepted_by_llama_cpp {
                    "accepts"
                } else {
                    "refuses"
                },
                if report.is_ok() { "accepts" } else { "refuses" },
            ));
        }
    }
    let accepted = all.iter().filter(|case| case.accepted_by_llama_cpp).count();
    println!(
        "llama.cpp conformance (check): {} passed, {} failed ({} grammars llama.cpp accepts, {} it refuses)",
        passing.len(),
        failures.len(),
        accepted,
        all.len() - accepted
    );
    for failure in &failures {
        println!("  FAIL {failure}");
    }
    let baseline_path = repository_root().join("testdata/conformance/llama-cpp-check.baseline");
    check_against_baseline(&baseline_path, &passing);
}

#[test]
fn llama_slow_fires_on_none_of_llama_cpps_own_grammars() {
    let Some(directory) = conformance_directory() else {
        eprintln!("skipped: ../shared/conformance/llama.cpp not found (set GRAIL_SHARED_DIR)");
        return;
    };
    let mut checked = 0;
    let mut fired: Vec<String> = Vec::new();
    let mut fired_generated: Vec<String> = Vec::new();
    for case in cases(&directory) {
        if !case.accepted_by_llama_cpp {
            continue;
        }
        let options = CheckOptions {
            target: Target::LlamaCpp,
            root: case.root.clone(),
            ..CheckOptions::default()
        };
        let report = check(&case.grammar, &options);
        checked += 1;
        if report
            .diagnostics
            .iter()
            .any(|diagnostic| diagnostic.code == "llama-slow")
        {
            if case.id.starts_with("generated/") {
                fired_generated.push(case.id.clone());
            } else {
                fired.push(case.id.clone());
            }
        }
    }
    println!(
        "llama-slow: {} of {checked} grammars llama.cpp accepts ({} of them randomly generated): {fired:?} {fired_generated:?}",
        fired.len() + fired_generated.len(),
        fired_generated.len()
    );
    assert!(fired.is_empty(), "llama-slow fired on {fired:?}");
}
