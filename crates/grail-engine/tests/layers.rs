//! The engine's floors, bottom up: the graph and state records (`graph/`), compiling
//! into them (`compile/`), the lazy automaton and the learned store (`automaton/`), the
//! byte-level parser (`parse/`), the token layer (`tokens/`). A file may use its own
//! floor and those below, never one above (so no import circle spans two folders); the
//! leaves at the crate root (errors, limits, heap prefaulting) use none. Test modules
//! (`#[cfg(test)]`) may reach anywhere.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Floors from the bottom; the crate root's leaves are floor 0.
const FLOORS: [&str; 5] = ["graph", "compile", "automaton", "parse", "tokens"];

/// The floor of a module path's first segment (`graph`, `error`, ...).
fn floor_of(first_segment: &str) -> Option<usize> {
    match first_segment {
        "error" | "limits" | "prefault" => Some(0),
        other => FLOORS
            .iter()
            .position(|floor| *floor == other)
            .map(|index| index + 1),
    }
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
}

/// The text of a file before its test module.
fn non_test_text(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod tests") {
        Some(end) => &text[..end],
        None => text,
    }
}

/// The first segments of every `crate::` path in `text` (in `use` lines and in code;
/// not in comments).
fn crate_paths(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let code: String = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let segment: String = rest
            .chars()
            .take_while(|character| character.is_ascii_alphanumeric() || *character == '_')
            .collect();
        if !segment.is_empty() {
            found.insert(segment);
        }
    }
    found
}

/// Every (file, floor, used module, its floor) where a file uses a floor above its own.
fn upward_uses(source: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(source, &mut files);
    files.sort();
    let mut upward = Vec::new();
    for file in files {
        let relative = file.strip_prefix(source).unwrap();
        let first = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let own = first.trim_end_matches(".rs");
        // The crate root, and the helpers of unit tests (a `#[cfg(test)]` module).
        if own == "lib" || file.ends_with("test_support.rs") {
            continue;
        }
        let own_floor = floor_of(own)
            .unwrap_or_else(|| panic!("{} is in no floor: add it to one", relative.display()));
        let text = std::fs::read_to_string(&file).unwrap();
        // Test-only modules and items (`#[cfg(test)] mod x;`) may reach anywhere.
        let text = non_test_text(&text);
        for used in crate_paths(text) {
            let Some(used_floor) = floor_of(&used) else {
                // A name the crate root re-exports (`crate::Matcher`): only tests use them.
                upward.push(format!(
                    "{} uses crate::{used}, not a floor",
                    relative.display()
                ));
                continue;
            };
            if used_floor > own_floor {
                upward.push(format!(
                    "{} (floor {own}) uses {used}, a floor above",
                    relative.display()
                ));
            }
        }
    }
    upward
}

#[test]
fn no_file_uses_a_floor_above_its_own() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let upward = upward_uses(&source);
    assert!(upward.is_empty(), "uses that go up:\n{}", upward.join("\n"));
}

#[test]
fn an_upward_use_is_found() {
    let dir = std::env::temp_dir().join(format!("grail-layers-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("graph")).unwrap();
    std::fs::write(
        dir.join("graph/mod.rs"),
        "use crate::parse::matcher::Matcher;\n#[cfg(test)]\nmod tests { use crate::tokens::x; }\n",
    )
    .unwrap();
    std::fs::write(dir.join("error.rs"), "").unwrap();
    let upward = upward_uses(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        upward,
        ["graph/mod.rs (floor graph) uses parse, a floor above"]
    );
}
