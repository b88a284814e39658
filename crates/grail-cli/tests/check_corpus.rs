//! The `grail check` corpus: `testdata/check/{valid,warn,invalid}/*.gbnf`, each checked by
//! the real binary. `valid/` must pass with no diagnostics, `warn/` must pass with some,
//! `invalid/` must fail. The rendered diagnostics (human and JSON) are snapshot-tested,
//! and every diagnostic code Grail has must appear somewhere in the corpus.
//! A first line `# target: llama.cpp` checks that file with `--target llama.cpp`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

struct Outcome {
    exit_code: i32,
    human: String,
    json: serde_json::Value,
}

fn run_check(root: &Path, relative: &str, target: &str) -> Outcome {
    let run = |format: &str| {
        Command::new(env!("CARGO_BIN_EXE_grail"))
            .current_dir(root)
            .args(["check", "--target", target, "--format", format, relative])
            .env_remove("NO_COLOR")
            .output()
            .expect("run grail")
    };
    let human = run("human");
    let json = run("json");
    assert_eq!(
        human.status.code(),
        json.status.code(),
        "{relative}: exit codes differ by format"
    );
    Outcome {
        exit_code: human.status.code().expect("exit code"),
        human: String::from_utf8(human.stderr).expect("utf-8 stderr"),
        json: serde_json::from_slice(&json.stdout).expect("JSON on stdout"),
    }
}

/// Every diagnostic code `grail check` can emit, except those only reachable with
/// non-default limits (`source-too-large`, `too-many-rules`, `diagnostics-truncated`),
/// which have unit tests of their own.
const ALL_CODES: &[&str] = &[
    "rule-name-expected",
    "rule-name-underscore",
    "line-starts-with-bar",
    "definition-expected",
    "other-dialect",
    "rule-end-expected",
    "group-unmatched-close",
    "group-unclosed",
    "literal-unterminated",
    "class-unterminated",
    "escape-unknown",
    "escape-hex-digits",
    "quantifier-without-item",
    "repetition-count-expected",
    "repetition-unclosed",
    "repetition-count-overflow",
    "token-malformed",
    "token-id-overflow",
    "token-negation-without-token",
    "nesting-too-deep",
    "nul-byte",
    "invalid-utf8",
    "rule-undefined",
    "root-missing",
    "repetition-bounds-reversed",
    "repetition-too-large",
    "rule-duplicate",
    "rule-unused",
    "rule-unreachable",
    "class-empty",
    "range-reversed",
    "range-suspicious",
    "code-point-invalid",
    "language-empty",
    "rule-never-finishes",
    "optional-chain",
    "left-recursion",
    "llama-left-recursion",
    "llama-repetition-minimum",
    "llama-repetition-maximum",
    "llama-rule-budget",
    "llama-slow",
    "rule-undefined-unused",
    "repetition-no-maximum",
    "repetition-maximum-above-limit",
    "llama-rule-undefined",
    "llama-left-recursion-loops",
    "token-needs-vocabulary",
];

#[test]
fn check_corpus() {
    let root = repository_root();
    let mut seen_codes = BTreeSet::new();
    let mut count = 0;
    for category in ["valid", "warn", "invalid"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("testdata/check").join(category))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| {
                path.extension()
                    .is_some_and(|extension| extension == "gbnf")
            })
            .collect();
        files.sort();
        for file in files {
            let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
            let relative = format!("testdata/check/{category}/{stem}.gbnf");
            let bytes = std::fs::read(&file).unwrap();
            let target = if bytes.starts_with(b"# target: llama.cpp") {
                "llama.cpp"
            } else {
                "grail"
            };
            let outcome = run_check(&root, &relative, target);
            let diagnostics = outcome.json["diagnostics"].as_array().unwrap();
            for diagnostic in diagnostics {
                seen_codes.insert(diagnostic["code"].as_str().unwrap().to_string());
            }
            match category {
                "valid" => assert!(
                    outcome.exit_code == 0 && diagnostics.is_empty(),
                    "{relative}: expected no diagnostics:\n{}",
                    outcome.human
                ),
                "warn" => assert!(
                    outcome.exit_code == 0 && !diagnostics.is_empty(),
                    "{relative}: expected warnings and exit 0:\n{}",
                    outcome.human
                ),
                _ => assert_eq!(
                    outcome.exit_code, 1,
                    "{relative}: expected exit 1:\n{}",
                    outcome.human
                ),
            }
            assert_eq!(
                outcome.json["ok"].as_bool(),
                Some(outcome.exit_code == 0),
                "{relative}"
            );
            let snapshot = format!(
                "exit: {}\n--- stderr ---\n{}--- json ---\n{}\n",
                outcome.exit_code,
                outcome.human,
                serde_json::to_string_pretty(&outcome.json).unwrap()
            );
            insta::assert_snapshot!(format!("check-{category}-{stem}"), snapshot);
            count += 1;
        }
    }
    let missing: Vec<&&str> = ALL_CODES
        .iter()
        .filter(|code| !seen_codes.contains(**code))
        .collect();
    println!(
        "check corpus: {count} passed, 0 failed; {} diagnostic codes covered",
        seen_codes.len()
    );
    assert!(
        missing.is_empty(),
        "codes not covered by testdata/check: {missing:?}"
    );
}
