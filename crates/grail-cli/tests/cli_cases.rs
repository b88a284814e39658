//! The command-line cases: `testdata/cli/cases.json` lists `grail` invocations (name,
//! arguments, optional standard input); each runs from the repository root and its exit
//! status, stdout and stderr are snapshot-tested. Sampled strings are checked by
//! matching them, since their text depends on the random generator.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn run(args: &[&str], stdin: Option<&str>) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_grail"))
        .current_dir(repository_root())
        .args(args)
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run grail");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

#[test]
fn cli_cases() {
    let root = repository_root();
    let cases: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("testdata/cli/cases.json")).unwrap(),
    )
    .unwrap();
    for case in cases.as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let args: Vec<&str> = case["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|arg| arg.as_str().unwrap())
            .collect();
        let output = run(&args, case["stdin"].as_str());
        let snapshot = format!(
            "$ grail {}\nexit: {}\n--- stdout ---\n{}--- stderr ---\n{}",
            args.join(" "),
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        insta::assert_snapshot!(format!("cli-{name}"), snapshot);
    }
}

#[test]
fn sampled_strings_match() {
    let grammars: [&[&str]; 3] = [
        &["testdata/cli/json.gbnf"],
        &["examples/tool-call.gbnf"],
        &["--schema", "testdata/cli/person.schema.json"],
    ];
    for grammar in grammars {
        let mut sample = vec!["sample", "-n", "20", "--seed", "7", "--max-len", "80"];
        sample.extend_from_slice(grammar);
        let output = run(&sample, None);
        assert_eq!(output.status.code(), Some(0));
        let lines = String::from_utf8(output.stdout).unwrap();
        assert_eq!(lines.lines().count(), 20);
        for line in lines.lines() {
            let text: String = serde_json::from_str(line).unwrap();
            let mut matching = vec!["match"];
            matching.extend_from_slice(grammar);
            matching.extend_from_slice(&["--", &text]);
            let matched = run(&matching, None);
            assert_eq!(
                matched.status.code(),
                Some(0),
                "{grammar:?}: {text:?} was sampled but does not match"
            );
        }
        // The same seed gives the same strings.
        let again = run(&sample, None);
        assert_eq!(String::from_utf8(again.stdout).unwrap(), lines);
    }
}

/// `grail bench` of json.gbnf on the byte-level test vocabulary (the document's ids are
/// given apart).
const BENCH_JSON_GBNF: [&str; 7] = [
    "bench",
    "--grammar",
    "testdata/cli/json.gbnf",
    "--vocab",
    "testdata/vocab/byte-level.tokenizer.json",
    "--doc",
    "x.json",
];

/// Runs `grail bench --format json` on the byte-level test vocabulary with these ids.
fn bench_json(ids: &str, runs: &str) -> (Option<i32>, serde_json::Value) {
    bench_json_with(ids, runs, &[])
}

/// `bench_json` with more arguments.
fn bench_json_with(ids: &str, runs: &str, more: &[&str]) -> (Option<i32>, serde_json::Value) {
    // One directory per call: tests run in parallel, some with the same ids.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let directory = std::env::temp_dir().join(format!("grail-bench-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let path = directory.join("ids.json");
    std::fs::write(&path, ids).unwrap();
    let mut arguments = BENCH_JSON_GBNF.to_vec();
    arguments.extend_from_slice(&["--ids", path.to_str().unwrap(), "--runs", runs]);
    arguments.extend_from_slice(&["--format", "json"]);
    arguments.extend_from_slice(more);
    let output = run(&arguments, None);
    std::fs::remove_dir_all(&directory).unwrap();
    let result = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stderr)));
    (output.status.code(), result)
}

#[test]
fn bench_checks_every_token_of_the_document() {
    // In the byte-level test vocabulary, 8 is `{"`, 1 is `a`, 4 is a line break (which a
    // JSON string cannot hold, so `[8, 4]` fails at step 1).
    let (code, result) = bench_json("[8, 1]", "2");
    assert_eq!(code, Some(0));
    assert_eq!(result["status"], "ok");
    assert_eq!(result["runs"].as_array().unwrap().len(), 2);
    assert_eq!(result["runs"][0]["mask"]["n"], 2);
    // A token the grammar refuses is reported with its step.
    let (code, result) = bench_json("[8, 4]", "1");
    assert_eq!(code, Some(1));
    assert_eq!(result["status"], "mismatch");
    assert_eq!(result["runs"][0]["failure"]["step"], 1);
}

#[test]
fn bench_cold_runs_each_check_the_document() {
    let (code, result) = bench_json_with("[8, 1]", "3", &["--cold"]);
    assert_eq!(code, Some(0));
    assert_eq!(result["cold_runs"], true);
    let runs = result["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    assert!(
        runs.iter()
            .all(|run| run["ok"] == true && run["mask"]["n"] == 2)
    );
    let (code, result) = bench_json_with("[8, 4]", "2", &["--cold"]);
    assert_eq!(code, Some(1));
    assert_eq!(result["runs"][1]["failure"]["step"], 1);
    // Runs that start warm and runs that are all cold do not go together.
    let mut arguments = BENCH_JSON_GBNF.to_vec();
    arguments.extend_from_slice(&["--cold", "--warm-ids", "x.json"]);
    let output = run(&arguments, None);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn bench_tokenizes_the_document_with_the_vocabularys_tokenizer() {
    // `{"a": "a"}` in the merges test tokenizer: `{"`, `a`, `"`, `:`, ` "`, `a`, `"`, `}`.
    let output = run(
        &[
            "bench",
            "--grammar",
            "testdata/cli/json.gbnf",
            "--vocab",
            "testdata/vocab/merges.tokenizer.json",
            "--doc",
            "testdata/cli/tokenized-doc.json",
            "--runs",
            "1",
            "--format",
            "json",
        ],
        None,
    );
    let result: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(result["doc_tokens"], 8);
    assert_eq!(result["status"], "ok");
    assert_eq!(result["runs"][0]["eos_or_accepting_at_end"], true);
}

#[test]
fn bench_takes_a_schema() {
    // `{"a": "a"}` against a schema of one string property `a`, in the merges test
    // tokenizer.
    let output = run(
        &[
            "bench",
            "--schema",
            "testdata/cli/key-a.schema.json",
            "--vocab",
            "testdata/vocab/merges.tokenizer.json",
            "--doc",
            "testdata/cli/tokenized-doc.json",
            "--runs",
            "1",
            "--format",
            "json",
        ],
        None,
    );
    let result: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(result["grammar"], "testdata/cli/key-a.schema.json");
    assert_eq!(result["compile_ms_all"].as_array().unwrap().len(), 3);
    assert_eq!(result["status"], "ok");
    assert_eq!(result["runs"][0]["eos_or_accepting_at_end"], true);
}

#[test]
fn bench_shows_a_lenient_schemas_warnings_once() {
    let output = run(
        &[
            "bench",
            "--lenient",
            "--schema",
            "testdata/cli/tags.schema.json",
            "--vocab",
            "testdata/vocab/byte-level.tokenizer.json",
            "--doc",
            "x.json",
            "--ids",
            "testdata/cli/no-ids.json",
            "--compile-reps",
            "3",
            "--format",
            "json",
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("warning[keyword-weakened]").count(),
        1,
        "{stderr}"
    );
}

#[test]
fn bench_without_ids_or_tokenizer_says_how_to_give_them() {
    let output = run(
        &[
            "bench",
            "--grammar",
            "testdata/cli/json.gbnf",
            "--vocab",
            "testdata/vocab/tiny.vocab.json",
            "--doc",
            "testdata/cli/tokenized-doc.json",
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--tokenizer FILE"), "{stderr}");
}
