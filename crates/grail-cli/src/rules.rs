//! Next-character rules as JSON (the `gbnf` npm package's CHAR / CHAR_EXCLUDE / END
//! shapes) and as short human text.

use grail_engine::{NextCharacters, NextRule};
use grail_syntax::escape::{write_class_ranges, write_literal};
use serde_json::{Value, json};

/// The rules as JSON values: `{"type": "CHAR", "ranges": [[lo, hi], ...]}`,
/// `{"type": "CHAR_EXCLUDE", ...}`, `{"type": "TOKEN", "ids": [...], "negated": bool}`,
/// `{"type": "END"}`.
pub fn rules_json(next: &NextCharacters) -> Vec<Value> {
    next.rules
        .iter()
        .map(|rule| match rule {
            NextRule::Char(ranges) => json!({"type": "CHAR", "ranges": ranges}),
            NextRule::CharExclude(ranges) => json!({"type": "CHAR_EXCLUDE", "ranges": ranges}),
            NextRule::Token { ids, negated } => {
                json!({"type": "TOKEN", "ids": ids, "negated": negated})
            }
            NextRule::End => json!({"type": "END"}),
        })
        .collect()
}

/// One rule in GBNF spelling: `"a"`, `[0-9a-f]`, `[^"\\]`, any character, `<[11]>`,
/// end of input.
pub fn describe(rule: &NextRule) -> String {
    let mut text = String::new();
    match rule {
        NextRule::Char(ranges) if ranges.len() == 1 && ranges[0].0 == ranges[0].1 => {
            write_literal(&mut text, &[ranges[0].0]);
        }
        NextRule::Char(ranges) => write_class_ranges(&mut text, false, ranges),
        NextRule::CharExclude(ranges) if ranges.is_empty() => text.push_str("any character"),
        NextRule::CharExclude(ranges) => write_class_ranges(&mut text, true, ranges),
        NextRule::Token { ids, negated } => {
            let names: Vec<String> = ids.iter().map(|id| format!("<[{id}]>")).collect();
            if *negated {
                text.push('!');
            }
            text.push_str(&names.join(" | "));
        }
        NextRule::End => text.push_str("end of input"),
    }
    text
}

/// Most ranges of a CHAR rule listed one by one in an error label; more are shown as
/// one class.
const LISTED_RANGES: usize = 12;

/// The rules as separate items in GBNF spelling: a CHAR rule with few ranges is listed
/// range by range (`"a"`, `[0-9]`), so the reader sees each choice.
pub fn rule_items(rule: &NextRule) -> Vec<String> {
    match rule {
        NextRule::Char(ranges) if ranges.len() <= LISTED_RANGES => {
            let mut items = Vec::new();
            for &(first, last) in ranges {
                if last - first <= 1 {
                    for code_point in first..=last {
                        items.push(describe(&NextRule::Char(vec![(code_point, code_point)])));
                    }
                } else {
                    items.push(describe(&NextRule::Char(vec![(first, last)])));
                }
            }
            items
        }
        other => vec![describe(other)],
    }
}

/// "expected one of ..." for an error label.
pub fn expected_label(next: &NextCharacters) -> String {
    let parts: Vec<String> = next.rules.iter().flat_map(rule_items).collect();
    match parts.as_slice() {
        [] => "nothing can come next".to_string(),
        [only] => format!("expected {only}"),
        _ => format!("expected one of {}", parts.join(", ")),
    }
}
