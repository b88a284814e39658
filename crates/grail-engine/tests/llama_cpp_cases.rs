//! Grammars at llama.cpp's edges, with the verdicts llama.cpp's own validator gave:
//! `testdata/llama-cpp/*.case`, read by this one runner (`scripts/llama_diff.py
//! --verify-cases` reruns llama.cpp on them, so the recorded verdicts stay true).
//!
//! A file is a grammar (raw bytes, as llama.cpp reads them), a line `---`, then one
//! directive per line (`#` starts a comment):
//!
//! ```text
//! llama accepts                  llama.cpp accepts the grammar
//! llama refuses                  llama.cpp refuses it
//! llama hangs ["text"]           llama.cpp loops or runs out of memory (on that input)
//! difference "why"               Grail's --target llama.cpp verdict differs on purpose
//! grail refuses "why"            Grail's own target refuses a grammar llama.cpp accepts
//! match "text"                   llama.cpp: the whole text matches
//! prefix "text"                  llama.cpp: a viable prefix, not a complete match
//! reject "text"                  llama.cpp: not a viable prefix
//! ```
//!
//! `grail check --target llama.cpp` must accept exactly the grammars llama.cpp accepts
//! (a hang is a refusal), and Grail must match every text as llama.cpp did.

use std::path::PathBuf;

use grail_engine::{CompiledGrammar, Matcher};
use grail_grammar::{CheckOptions, Target, check};

struct Case {
    name: String,
    grammar: Vec<u8>,
    llama_accepts: bool,
    difference: bool,
    grail_refuses: bool,
    texts: Vec<(String, String)>,
}

fn read_cases() -> Vec<Case> {
    let directory = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/llama-cpp");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&directory)
        .expect("testdata/llama-cpp")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "case")
        })
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let bytes = std::fs::read(path).expect("readable case");
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let split = bytes
                .windows(5)
                .position(|window| window == b"\n---\n")
                .unwrap_or_else(|| panic!("{name}: no `---` line"));
            let mut case = Case {
                name: name.clone(),
                grammar: bytes[..split + 1].to_vec(),
                llama_accepts: false,
                difference: false,
                grail_refuses: false,
                texts: Vec::new(),
            };
            let directives = std::str::from_utf8(&bytes[split + 5..]).expect("UTF-8 directives");
            let mut verdict = None;
            for line in directives.lines().map(str::trim) {
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let (keyword, rest) = line.split_once(' ').unwrap_or((line, ""));
                match keyword {
                    "llama" => verdict = Some(rest.split(' ').next().unwrap().to_string()),
                    "difference" => case.difference = true,
                    "grail" if rest.starts_with("refuses") => case.grail_refuses = true,
                    "match" | "prefix" | "reject" => {
                        let text: String = serde_json::from_str(rest)
                            .unwrap_or_else(|error| panic!("{name}: `{line}`: {error}"));
                        case.texts.push((keyword.to_string(), text));
                    }
                    _ => panic!("{name}: unknown directive `{line}`"),
                }
            }
            case.llama_accepts = match verdict.as_deref() {
                Some("accepts") => true,
                Some("refuses" | "hangs") => false,
                other => panic!("{name}: bad or missing llama verdict {other:?}"),
            };
            case
        })
        .collect()
}

fn accepted(grammar: &[u8], target: Target) -> bool {
    let Ok(source) = std::str::from_utf8(grammar) else {
        return false;
    };
    let options = CheckOptions {
        target,
        ..CheckOptions::default()
    };
    check(source, &options).is_ok()
}

#[test]
fn grail_agrees_with_llama_cpp_at_its_edges() {
    let cases = read_cases();
    assert!(cases.len() >= 20, "the corpus went missing");
    let mut failures = Vec::new();
    for case in &cases {
        let llama_target = accepted(&case.grammar, Target::LlamaCpp);
        if (llama_target == case.llama_accepts) == case.difference {
            failures.push(format!(
                "{}: --target llama.cpp {} (llama.cpp {})",
                case.name,
                if llama_target { "accepts" } else { "refuses" },
                if case.llama_accepts {
                    "accepts"
                } else {
                    "refuses"
                },
            ));
        }
        let grail_target = accepted(&case.grammar, Target::Grail);
        if case.llama_accepts && !case.difference && grail_target == case.grail_refuses {
            failures.push(format!(
                "{}: Grail's own target {}",
                case.name,
                if grail_target { "accepts" } else { "refuses" }
            ));
        }
        if case.texts.is_empty() {
            continue;
        }
        let source = std::str::from_utf8(&case.grammar).expect("matched grammars are UTF-8");
        let grammar = CompiledGrammar::from_gbnf(source)
            .unwrap_or_else(|error| panic!("{}: {error:?}", case.name));
        for (expected, text) in &case.texts {
            let mut matcher = Matcher::new(&grammar);
            let viable = matcher.accept_str(text).is_ok();
            let got = match (viable, viable && matcher.is_accepting()) {
                (_, true) => "match",
                (true, false) => "prefix",
                (false, _) => "reject",
            };
            if got != expected {
                failures.push(format!(
                    "{}: {text:?}: Grail says {got}, llama.cpp {expected}",
                    case.name
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
