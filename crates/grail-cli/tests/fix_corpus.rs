//! The `grail fix` corpus: every `testdata/fix/*.gbnf` is fixed by the real binary and its
//! output (the fixed grammar and the report) snapshot-tested; every fixed grammar, every
//! grammar of `testdata/check` whose errors are all fixable, and the grammar sketches of
//! seed 003 (read from `../shared/seeds`, skipped when absent) must then pass
//! `grail check --target llama.cpp`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn grail(args: &[&str], stdin: &str) -> Output {
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
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

/// Diagnostic codes `grail fix` repairs.
const FIXABLE: &[&str] = &[
    "rule-name-underscore",
    "line-starts-with-bar",
    "range-reversed",
    "llama-repetition-minimum",
    "llama-repetition-maximum",
    "llama-rule-budget",
];

/// `grail check --target llama.cpp --format json` on `source`: exit code and diagnostics
/// as (severity, code, message).
fn check_for_llama(source: &str) -> (i32, Vec<(String, String, String)>) {
    let output = grail(
        &["check", "--target", "llama.cpp", "--format", "json", "-"],
        source,
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let diagnostics = json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|diagnostic| {
            let field = |name: &str| diagnostic[name].as_str().unwrap().to_string();
            (field("severity"), field("code"), field("message"))
        })
        .collect();
    (output.status.code().unwrap(), diagnostics)
}

/// `grail fix -` on `source`: the fixed text.
fn fixed(name: &str, source: &str) -> String {
    let output = grail(&["fix", "-"], source);
    assert!(
        output.status.code() == Some(0) || output.status.code() == Some(1),
        "{name}: grail fix failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn gbnf_files(directory: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "gbnf")
        })
        .collect();
    files.sort();
    files
}

#[test]
fn fix_corpus() {
    let root = repository_root();
    let files = gbnf_files(&root.join("testdata/fix"));
    assert!(!files.is_empty());
    for file in &files {
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        let relative = format!("testdata/fix/{stem}.gbnf");
        let output = grail(&["fix", &relative], "");
        let stdout = String::from_utf8(output.stdout).unwrap();
        let snapshot = format!(
            "$ grail fix {relative}\nexit: {}\n--- stderr ---\n{}--- stdout ---\n{stdout}",
            output.status.code().unwrap(),
            String::from_utf8_lossy(&output.stderr),
        );
        insta::assert_snapshot!(format!("fix-{stem}"), snapshot);
        let (exit, diagnostics) = check_for_llama(&stdout);
        assert_eq!(exit, 0, "{relative}: the fixed grammar: {diagnostics:?}");
        // Fixing again changes nothing.
        assert_eq!(
            fixed(&relative, &stdout),
            stdout,
            "{relative}: not a fixed point"
        );
    }
    println!("fix corpus: {} passed, 0 failed", files.len());
}

#[test]
fn check_corpus_grammars_with_only_fixable_errors_become_valid_for_llama_cpp() {
    let root = repository_root();
    let mut fixed_count = 0;
    for category in ["valid", "warn", "invalid"] {
        for file in gbnf_files(&root.join("testdata/check").join(category)) {
            let Ok(source) = std::fs::read_to_string(&file) else {
                continue; // Not UTF-8: nothing to fix.
            };
            let (_, diagnostics) = check_for_llama(&source);
            let fixable = diagnostics
                .iter()
                .any(|(_, code, _)| FIXABLE.contains(&code.as_str()));
            let only_fixable_errors = diagnostics
                .iter()
                .all(|(severity, code, _)| severity != "error" || FIXABLE.contains(&code.as_str()));
            if !fixable || !only_fixable_errors {
                continue;
            }
            let name = file.display().to_string();
            let result = fixed(&name, &source);
            let (exit, after) = check_for_llama(&result);
            assert_eq!(exit, 0, "{name}: after fix: {after:?}\n{result}");
            assert!(
                after
                    .iter()
                    .all(|(_, code, _)| !FIXABLE.contains(&code.as_str())),
                "{name}: still to fix: {after:?}"
            );
            fixed_count += 1;
        }
    }
    assert!(fixed_count >= 3, "only {fixed_count} fixable grammars");
    println!("check corpus: {fixed_count} fixable grammars fixed, each valid for llama.cpp");
}

#[test]
fn write_rewrites_the_file_and_check_reports() {
    let directory = std::env::temp_dir().join(format!("grail-fix-test-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let path = directory.join("names.gbnf");
    let source = "root ::= tool_call\ntool_call ::= \"x\"\n  | \"y\"\n";
    std::fs::write(&path, source).unwrap();
    let path_text = path.to_str().unwrap();
    let check = grail(&["fix", "--check", path_text], "");
    assert_eq!(check.status.code(), Some(1));
    assert!(check.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), source);
    let write = grail(&["fix", "--write", path_text], "");
    assert_eq!(write.status.code(), Some(0));
    assert!(write.stdout.is_empty());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "root ::= tool-call\ntool-call ::= \"x\" |\n  \"y\"\n"
    );
    let again = grail(&["fix", "--check", path_text], "");
    assert_eq!(again.status.code(), Some(0));
    std::fs::remove_dir_all(&directory).unwrap();
}

/// The ```gbnf blocks of a Markdown text.
fn gbnf_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match &mut current {
            None if line.trim_start().starts_with("```gbnf") => current = Some(String::new()),
            Some(block) if line.trim_start().starts_with("```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

#[test]
fn seed_003_grammar_sketches_are_fixed_for_llama_cpp() {
    let seed = repository_root().join("../shared/seeds/003_f7e65e222fc8124d.txt");
    let Ok(text) = std::fs::read_to_string(&seed) else {
        eprintln!(
            "note: {} absent; skipping the seed 003 grammar sketches",
            seed.display()
        );
        return;
    };
    let sketches = gbnf_blocks(&text);
    assert_eq!(sketches.len(), 4, "seed 003 has four grammar sketches");
    let mut refused_before = 0;
    let mut accepted_after = 0;
    for (index, sketch) in sketches.iter().enumerate() {
        let name = format!("seed 003 sketch {}", index + 1);
        let (exit_before, _) = check_for_llama(sketch);
        refused_before += usize::from(exit_before != 0);
        let result = fixed(&name, sketch);
        let (exit, after) = check_for_llama(&result);
        if exit == 0 {
            accepted_after += 1;
            continue;
        }
        // The thinking sketch uses `ws`, `string` and `object` without defining them (the
        // tool-call sketch defines them): no repair can supply a definition.
        let errors: Vec<&(String, String, String)> = after
            .iter()
            .filter(|(severity, _, _)| severity == "error")
            .collect();
        assert!(
            errors.iter().all(|(_, code, _)| code == "rule-undefined"),
            "{name}: errors left after fix: {errors:?}\n{result}"
        );
        eprintln!(
            "note: {name} is left with rules it uses but does not define: {:?}",
            errors
                .iter()
                .map(|(_, _, message)| message.as_str())
                .collect::<Vec<_>>()
        );
    }
    assert_eq!(
        refused_before, 3,
        "llama.cpp refuses three sketches as written"
    );
    assert_eq!(accepted_after, 3, "three sketches are valid after fix");
}
