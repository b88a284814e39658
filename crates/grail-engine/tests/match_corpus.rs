//! The matching corpus: `testdata/match/*.match`, read by this one runner.
//!
//! A file is a grammar, a line `---`, then one case per line (`#` starts a comment):
//!
//! ```text
//! match "text"          the whole text matches
//! reject "text"         the text is not even a viable prefix
//! prefix "text"         the text is a viable prefix but not a complete match
//! next "text" RULES     the next-character rules after the text, as JSON: a list of
//!                       {"type": "CHAR" | "CHAR_EXCLUDE", "ranges": [[lo, hi], ...]},
//!                       {"type": "TOKEN", "ids": [...], "negated": bool}, {"type": "END"};
//!                       a range bound may be a one-character string ("a") or a number
//! forced "text" "more"  the forced continuation after the text
//! ```
//!
//! For every `match` and `prefix` text, every prefix must be viable too, and rolling
//! back to each earlier position must give the same answers as matching it afresh.

use std::path::{Path, PathBuf};

use grail_engine::{CompiledGrammar, Matcher, NextRule};
use serde_json::Value;

fn corpus_directory() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/match")
}

/// Splits a case line into its keyword and the JSON values after it.
fn parse_case(line: &str) -> (String, Vec<Value>) {
    let (keyword, rest) = line.split_once(' ').unwrap_or((line, ""));
    let values = serde_json::Deserializer::from_str(rest)
        .into_iter::<Value>()
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|error| panic!("bad JSON in case `{line}`: {error}"));
    (keyword.to_string(), values)
}

fn bound(value: &Value) -> u32 {
    match value {
        Value::Number(number) => number.as_u64().expect("a code point") as u32,
        Value::String(text) => {
            let mut characters = text.chars();
            let character = characters.next().expect("one character");
            assert!(characters.next().is_none(), "one character, not `{text}`");
            u32::from(character)
        }
        other => panic!("bad range bound {other}"),
    }
}

fn ranges(value: &Value) -> Vec<(u32, u32)> {
    value
        .as_array()
        .expect("ranges")
        .iter()
        .map(|range| (bound(&range[0]), bound(&range[1])))
        .collect()
}

fn expected_rules(value: &Value) -> Vec<NextRule> {
    value
        .as_array()
        .expect("a list of rules")
        .iter()
        .map(|rule| match rule["type"].as_str().expect("a rule type") {
            "CHAR" => NextRule::Char(ranges(&rule["ranges"])),
            "CHAR_EXCLUDE" => NextRule::CharExclude(ranges(&rule["ranges"])),
            "TOKEN" => NextRule::Token {
                ids: rule["ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|id| id.as_u64().unwrap() as u32)
                    .collect(),
                negated: rule["negated"].as_bool().unwrap_or(false),
            },
            "END" => NextRule::End,
            other => panic!("unknown rule type {other}"),
        })
        .collect()
}

fn text_of(values: &[Value], index: usize, line: &str) -> String {
    values
        .get(index)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("case `{line}` needs a JSON string here"))
        .to_string()
}

/// Checks that every prefix of `text` is viable, and that rolling back from the end to
/// each prefix agrees with a fresh matcher fed that prefix.
fn check_prefixes(grammar: &CompiledGrammar, text: &str, failures: &mut Vec<String>, at: &str) {
    let mut matcher = Matcher::new(grammar);
    if matcher.accept_str(text).is_err() {
        failures.push(format!("{at}: {text:?} is rejected"));
        return;
    }
    for (length, _) in text.char_indices().rev() {
        matcher.rollback(matcher.history_len() - length);
        let mut fresh = Matcher::new(grammar);
        fresh
            .accept_str(&text[..length])
            .expect("a prefix of an accepted text");
        if !fresh.is_viable()
            || fresh.is_accepting() != matcher.is_accepting()
            || fresh.next_characters() != matcher.next_characters()
        {
            failures.push(format!(
                "{at}: after rollback to {:?} the state differs from a fresh match",
                &text[..length]
            ));
        }
    }
}

fn run_file(path: &Path, failures: &mut Vec<String>) -> usize {
    let content = std::fs::read_to_string(path).expect("corpus file");
    let (grammar_text, cases) = content
        .split_once("\n---\n")
        .unwrap_or_else(|| panic!("{}: no `---` line after the grammar", path.display()));
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let grammar = CompiledGrammar::from_gbnf(grammar_text)
        .unwrap_or_else(|error| panic!("{name}: the grammar does not compile: {error:?}"));
    let mut count = 0;
    for (line_number, line) in cases.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        count += 1;
        let at = format!("{name}: case line {}", line_number + 1);
        let (keyword, values) = parse_case(line);
        let text = text_of(&values, 0, line);
        let mut matcher = Matcher::new(&grammar);
        let accepted = matcher.accept_str(&text).is_ok();
        match keyword.as_str() {
            "match" => {
                if !(accepted && matcher.is_accepting()) {
                    failures.push(format!("{at}: {text:?} should match"));
                }
                check_prefixes(&grammar, &text, failures, &at);
            }
            "prefix" => {
                if !(accepted && matcher.is_viable() && !matcher.is_accepting()) {
                    failures.push(format!(
                        "{at}: {text:?} should be a viable prefix, not a match"
                    ));
                }
                check_prefixes(&grammar, &text, failures, &at);
            }
            "reject" => {
                if accepted && matcher.is_viable() {
                    failures.push(format!("{at}: {text:?} should be rejected"));
                }
            }
            "next" => {
                let expected = expected_rules(values.get(1).expect("the rules"));
                let actual = matcher.next_characters().rules;
                if !accepted || actual != expected {
                    failures.push(format!(
                        "{at}: after {text:?} expected {expected:?}, got {actual:?}"
                    ));
                }
            }
            "forced" => {
                let expected = text_of(&values, 1, line);
                let actual = matcher.forced(1000);
                if !accepted || actual != expected {
                    failures.push(format!(
                        "{at}: forced after {text:?}: expected {expected:?}, got {actual:?}"
                    ));
                }
            }
            other => panic!("{at}: unknown case kind `{other}`"),
        }
    }
    count
}

#[test]
fn match_corpus() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_directory())
        .expect("testdata/match")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "match")
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus files");
    let mut failures = Vec::new();
    let mut cases = 0;
    for file in &files {
        cases += run_file(file, &mut failures);
    }
    println!(
        "match corpus: {cases} cases in {} files, {} failed",
        files.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
