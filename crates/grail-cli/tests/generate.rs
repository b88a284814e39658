//! `grail generate` end to end on the embedded model where it is in the cache (`grail
//! model fetch`, run by scripts/test.sh), saying "skipped:" otherwise; its usage errors
//! need no model.

use std::path::PathBuf;
use std::process::{Command, Output};

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn grail(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_grail"))
        .current_dir(repository_root())
        .args(args)
        .output()
        .expect("run grail")
}

fn model_is_cached() -> bool {
    let cached = grail(&["model", "path"]).status.success();
    if !cached {
        eprintln!("skipped: the embedded model is not in the cache (run `grail model fetch`)");
    }
    cached
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn usage_errors_need_no_model() {
    let output = grail(&["generate", "--top-p", "0", "hi"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("top-p must be in (0, 1]"),
        "{}",
        text(&output.stderr)
    );
    let output = grail(&["generate", "--wire", "hermes", "hi"]);
    assert_eq!(output.status.code(), Some(2), "--wire needs --tools");
    let output = grail(&[
        "generate",
        "--grammar",
        "a.gbnf",
        "--schema",
        "b.json",
        "hi",
    ]);
    assert_eq!(output.status.code(), Some(2), "one constraint at a time");
}

#[test]
fn a_tool_call_from_the_embedded_model() {
    if !model_is_cached() {
        return;
    }
    let stats =
        std::env::temp_dir().join(format!("grail-generate-stats-{}.json", std::process::id()));
    let output = grail(&[
        "generate",
        "--tools",
        "examples/agent-tools.json",
        "--stats",
        stats.to_str().unwrap(),
        "List the files in the src directory.",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let calls: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let call = &calls[0];
    assert_eq!(call["type"], "function");
    let arguments: serde_json::Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert!(arguments.is_object());
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    for key in ["tokens", "load_s", "prompt_s", "decode_s", "tokens_per_s"] {
        assert!(
            stats[key].as_f64().is_some_and(|value| value > 0.0),
            "{key}: {stats}"
        );
    }
    assert!(stats["mask_us"]["median"].is_number() && stats["mask_us"]["p99"].is_number());
}

#[test]
fn truncation_and_empty_languages_are_errors() {
    if !model_is_cached() {
        return;
    }
    let output = grail(&[
        "generate",
        "--schema",
        "testdata/cli/person.schema.json",
        "--max-tokens",
        "2",
        "Describe a person.",
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty(), "nothing printed as output");
    assert!(
        text(&output.stderr).contains("the token limit (2) stopped the output"),
        "{}",
        text(&output.stderr)
    );

    let empty = std::env::temp_dir().join(format!("grail-empty-{}.gbnf", std::process::id()));
    std::fs::write(&empty, "root ::= a\na ::= \"x\" a\n").unwrap();
    let output = grail(&["generate", "--grammar", empty.to_str().unwrap(), "hi"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("matches no text"),
        "{}",
        text(&output.stderr)
    );
}
