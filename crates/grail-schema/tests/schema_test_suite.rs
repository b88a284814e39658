//! The official JSON Schema Test Suite, draft 2020-12
//! (`../shared/corpora/json-schema-test-suite/tests/draft2020-12`; skipped with a message
//! when absent), through Grail in strict mode.
//!
//! Every group (`{description, schema, tests}`) of the required files runs with
//! `assert_formats: false` (in draft 2020-12 `format` is an annotation, which
//! `format.json` checks); `optional/format/*.json` runs with `assert_formats: true`;
//! other optional files run where they fit (see [`OPTIONAL_FILES_SKIPPED`]). Instances are
//! written as `tests/support/corpus.rs` explains.
//!
//! Printed, per file: groups compiled and refused (top refusal reasons), valid instances
//! rejected and invalid instances accepted. Then every *unsound* case (a group that
//! compiles but accepts an instance the suite calls invalid: strict mode promises never
//! to be weaker than the schema), and every valid instance rejected, classified by the
//! documented narrowing that explains it (`tests/support/narrowings.rs`) or listed as a
//! bug when none does.
//!
//! Fails on regressions against `testdata/conformance/json-schema-test-suite.baseline`
//! (the ids `file#group-index` of the groups that compile and judge every instance
//! right), on unsound cases not listed in [`KNOWN_UNSOUND`], and on listed ones that are
//! sound now (so the list stays exact).
//!
//! ```text
//! cargo test -j2 -p grail-schema --test schema_test_suite -- --nocapture
//! GRAIL_UPDATE_BASELINE=1 cargo test -j2 -p grail-schema --test schema_test_suite
//! ```

#[path = "../../grail-grammar/tests/support/baseline.rs"]
mod baseline;
#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/narrowings.rs"]
mod narrowings;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use corpus::{GroupTally, run_schema, serialize};
use grail_engine::CompiledGrammar;
use grail_schema::{SchemaOptions, schema_to_grammar};
use narrowings::{Narrowing, explain_rejection};
use serde_json::Value;

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Optional files not run, and why. Everything else in `optional/` runs.
const OPTIONAL_FILES_SKIPPED: &[(&str, &str)] = &[
    (
        "optional/bignum.json",
        "serde_json (without `arbitrary_precision`) reads these numbers as f64, so the text written is not the test's number",
    ),
    (
        "optional/format-assertion.json",
        "asserts `format` through a remote metaschema's `$vocabulary` (`http://localhost:1234/...`), which a converter given only the schema cannot see",
    ),
];

/// Unsound cases known today (`file#group-index`, instance index), with why. When one
/// turns sound the test fails too, so that the list stays exact: remove it.
const KNOWN_UNSOUND: &[(&str, usize, &str)] = &[];

/// How a file's groups run.
struct SuiteFile {
    /// Path under `draft2020-12/`.
    name: String,
    assert_formats: bool,
}

fn suite_files(directory: &Path) -> Vec<SuiteFile> {
    let json_files = |sub: &str| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(directory.join(sub))
            .map(|entries| {
                entries
                    .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                    .filter(|name| name.ends_with(".json"))
                    .map(|name| {
                        if sub.is_empty() {
                            name
                        } else {
                            format!("{sub}/{name}")
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };
    let mut files: Vec<SuiteFile> = json_files("")
        .into_iter()
        .map(|name| SuiteFile {
            name,
            assert_formats: false,
        })
        .collect();
    files.extend(
        json_files("optional")
            .into_iter()
            .filter(|name| {
                !OPTIONAL_FILES_SKIPPED
                    .iter()
                    .any(|(skipped, _)| skipped == name)
            })
            .map(|name| SuiteFile {
                name,
                assert_formats: false,
            }),
    );
    files.extend(
        json_files("optional/format")
            .into_iter()
            .map(|name| SuiteFile {
                name,
                assert_formats: true,
            }),
    );
    files
}

/// A group that compiled but accepted an instance the suite calls invalid.
struct UnsoundCase {
    id: String,
    instance_index: usize,
    group: String,
    test: String,
    schema: Value,
    text: String,
}

/// A valid instance rejected that no documented narrowing explains.
struct UnexplainedRejection {
    id: String,
    group: String,
    test: String,
    schema: Value,
    text: String,
}

#[test]
fn json_schema_test_suite_groups_compile_and_judge_their_instances() {
    let directory =
        repository_root().join("../shared/corpora/json-schema-test-suite/tests/draft2020-12");
    if !directory.is_dir() {
        eprintln!("skipped: ../shared/corpora/json-schema-test-suite/tests/draft2020-12 is absent");
        return;
    }
    let started = Instant::now();
    let mut passing = BTreeSet::new();
    let mut total = GroupTally::default();
    let mut lines = Vec::new();
    let mut unsound: Vec<UnsoundCase> = Vec::new();
    let mut unexplained: Vec<UnexplainedRejection> = Vec::new();
    let mut narrowed: BTreeMap<Vec<Narrowing>, Vec<String>> = BTreeMap::new();
    for file in suite_files(&directory) {
        let options = SchemaOptions {
            assert_formats: file.assert_formats,
            ..SchemaOptions::default()
        };
        let groups: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(directory.join(&file.name)).unwrap())
                .unwrap_or_else(|error| panic!("{}: {error}", file.name));
        let mut tally = GroupTally::default();
        for (group_index, group) in groups.iter().enumerate() {
            let id = format!("{}#{group_index}", file.name);
            let schema = &group["schema"];
            let tests = group["tests"].as_array().unwrap();
            let instances: Vec<(Value, bool)> = tests
                .iter()
                .map(|test| (test["data"].clone(), test["valid"].as_bool().unwrap()))
                .collect();
            let outcome = run_schema(schema, &instances, &options);
            tally.add(&outcome);
            total.add(&outcome);
            if outcome.passes() {
                passing.insert(id.clone());
            }
            let description = |index: usize| -> String {
                tests[index]["description"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            };
            let group_description = group["description"].as_str().unwrap_or("").to_string();
            for &index in &outcome.invalid_accepted {
                unsound.push(UnsoundCase {
                    id: id.clone(),
                    instance_index: index,
                    group: group_description.clone(),
                    test: description(index),
                    schema: schema.clone(),
                    text: serialize(&instances[index].0, schema, schema),
                });
            }
            if outcome.valid_rejected.is_empty() {
                continue;
            }
            let grammar = compile(schema, &options);
            for &index in &outcome.valid_rejected {
                let instance = &instances[index].0;
                match explain_rejection(&grammar, instance, schema) {
                    Some(narrowings) => narrowed
                        .entry(narrowings)
                        .or_default()
                        .push(format!("{id}/{index}")),
                    None => unexplained.push(UnexplainedRejection {
                        id: id.clone(),
                        group: group_description.clone(),
                        test: description(index),
                        schema: schema.clone(),
                        text: serialize(instance, schema, schema),
                    }),
                }
            }
        }
        lines.push(tally.line(&file.name));
    }
    println!("JSON Schema Test Suite, draft 2020-12 (one \"schema\" per group):");
    for line in &lines {
        println!("{line}");
    }
    println!("{}", total.line("all"));
    for (name, reason) in OPTIONAL_FILES_SKIPPED {
        println!("skipped {name}: {reason}");
    }

    println!(
        "\nvalid instances rejected, by the narrowing that explains them: {}",
        narrowed.values().map(Vec::len).sum::<usize>()
    );
    for (narrowings, cases) in &narrowed {
        let names: Vec<String> = narrowings.iter().map(ToString::to_string).collect();
        println!(
            "  {} × {}: {}",
            cases.len(),
            names.join(" + "),
            cases.join(" ")
        );
    }
    println!(
        "valid instances rejected that no narrowing explains (bugs): {}",
        unexplained.len()
    );
    for case in &unexplained {
        println!(
            "  {} ({} / {}): schema {} rejects {}",
            case.id, case.group, case.test, case.schema, case.text
        );
    }
    println!(
        "unsound (compiled, invalid instance accepted): {}",
        unsound.len()
    );
    for case in &unsound {
        println!(
            "  {}/{} ({} / {}): schema {} accepts {}",
            case.id, case.instance_index, case.group, case.test, case.schema, case.text
        );
    }
    println!("took {:.1} s", started.elapsed().as_secs_f64());

    let is_known = |case: &UnsoundCase| {
        KNOWN_UNSOUND
            .iter()
            .any(|(id, index, _)| *id == case.id && *index == case.instance_index)
    };
    let now_sound: Vec<String> = KNOWN_UNSOUND
        .iter()
        .filter(|(id, index, _)| {
            !unsound
                .iter()
                .any(|case| case.id == *id && case.instance_index == *index)
        })
        .map(|(id, index, why)| format!("{id}/{index}: {why}"))
        .collect();
    let new_unsound: Vec<String> = unsound
        .iter()
        .filter(|case| !is_known(case))
        .map(|case| format!("{}/{}", case.id, case.instance_index))
        .collect();
    baseline::check_against_baseline(
        &repository_root().join("testdata/conformance/json-schema-test-suite.baseline"),
        &passing,
    );
    assert!(
        new_unsound.is_empty(),
        "groups that compile but accept invalid instances: {new_unsound:#?}"
    );
    assert!(
        now_sound.is_empty(),
        "known unsound cases that are sound now (remove them from KNOWN_UNSOUND): {now_sound:#?}"
    );
}

fn compile(schema: &Value, options: &SchemaOptions) -> CompiledGrammar {
    let converted = schema_to_grammar(schema, options).expect("converted before");
    CompiledGrammar::compile(&converted.grammar, &Default::default()).expect("compiled before")
}
