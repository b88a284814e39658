//! The formatter corpus: every `testdata/fmt/*.gbnf` is formatted and snapshot-tested,
//! and every grammar in `testdata/` and in `../shared/conformance/llama.cpp/grammars`
//! must format idempotently, to the same grammar, keeping every comment.

use std::path::{Path, PathBuf};

use grail_syntax::format_verified;

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn gbnf_files(directory: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "gbnf")
        })
        .collect();
    files.sort();
    files
}

/// Formats `source`, asserting the output keeps the grammar and comments and is a fixed point.
fn format_checked(name: &str, source: &str) -> String {
    let formatted = format_verified(source).unwrap_or_else(|error| panic!("{name}: {error:?}"));
    assert_eq!(
        format_verified(&formatted).unwrap(),
        formatted,
        "{name}: formatting is not idempotent"
    );
    formatted
}

#[test]
fn format_corpus_snapshots() {
    let files = gbnf_files(&repository_root().join("testdata/fmt"));
    assert!(!files.is_empty());
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap();
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        let formatted = format_checked(&name, &source);
        insta::assert_snapshot!(format!("fmt-{name}"), formatted);
    }
    println!("fmt corpus: {} passed, 0 failed", files.len());
}

#[test]
fn every_known_grammar_formats_to_a_fixed_point() {
    let root = repository_root();
    let mut directories = vec![
        root.join("testdata/check/valid"),
        root.join("testdata/check/warn"),
    ];
    let shared = root.join("../shared/conformance/llama.cpp/grammars");
    if shared.is_dir() {
        directories.push(shared);
    } else {
        eprintln!("note: ../shared absent; formatting only the repository's grammars");
    }
    let mut count = 0;
    for directory in directories {
        for file in gbnf_files(&directory) {
            let source = std::fs::read_to_string(&file).unwrap();
            if source.contains('\0') {
                // A NUL byte is only a warning under `--target llama.cpp` (llama.cpp stops
                // reading there); to Grail's parser it is an error, so fmt refuses it.
                assert!(
                    format_verified(&source).is_err(),
                    "{}: formatted a grammar with a NUL byte",
                    file.display()
                );
                continue;
            }
            format_checked(&file.display().to_string(), &source);
            count += 1;
        }
    }
    println!("fmt fixed point: {count} passed, 0 failed");
}
