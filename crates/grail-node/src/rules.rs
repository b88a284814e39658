//! Next-character rules as JavaScript objects, in the `gbnf` npm package's shapes:
//! `{type: 'char', value: [codePoint | [first, last], ...]}`, `{type: 'char_exclude',
//! value: [...]}`, `{type: 'end'}`; and Grail's token rules, `{type: 'token', value:
//! [ids], negated}` (grammars with `<[id]>` or `<think>`, which the `gbnf` package cannot
//! read).

use grail_engine::{NextCharacters, NextRule};
use grail_syntax::escape::{write_class_ranges, write_literal};
use napi::Either;
use napi_derive::napi;

/// One next-character rule.
#[napi(object)]
pub struct RuleObject {
    /// `char`, `char_exclude`, `token` or `end`.
    #[napi(js_name = "type")]
    pub kind: String,
    /// Code points and inclusive `[first, last]` ranges (char, char_exclude), or token
    /// ids (token).
    pub value: Option<Vec<Either<u32, Vec<u32>>>>,
    /// For a token rule: true when any token except these is allowed.
    pub negated: Option<bool>,
}

/// Ranges as the `gbnf` package writes them: a single code point as a number.
fn values(ranges: &[(u32, u32)]) -> Vec<Either<u32, Vec<u32>>> {
    ranges
        .iter()
        .map(|&(first, last)| {
            if first == last {
                Either::A(first)
            } else {
                Either::B(vec![first, last])
            }
        })
        .collect()
}

/// The rules as objects.
pub fn rule_objects(next: &NextCharacters) -> Vec<RuleObject> {
    next.rules
        .iter()
        .map(|rule| match rule {
            NextRule::Char(ranges) => RuleObject {
                kind: "char".to_string(),
                value: Some(values(ranges)),
                negated: None,
            },
            NextRule::CharExclude(ranges) => RuleObject {
                kind: "char_exclude".to_string(),
                value: Some(values(ranges)),
                negated: None,
            },
            NextRule::Token { ids, negated } => RuleObject {
                kind: "token".to_string(),
                value: Some(ids.iter().map(|&id| Either::A(id)).collect()),
                negated: Some(*negated),
            },
            NextRule::End => RuleObject {
                kind: "end".to_string(),
                value: None,
                negated: None,
            },
        })
        .collect()
}

/// "expected ..." for an error message: the rules in GBNF spelling.
pub fn expected(next: &NextCharacters) -> String {
    let parts: Vec<String> = next
        .rules
        .iter()
        .map(|rule| {
            let mut text = String::new();
            match rule {
                NextRule::Char(ranges) if ranges.len() == 1 && ranges[0].0 == ranges[0].1 => {
                    write_literal(&mut text, &[ranges[0].0]);
                }
                NextRule::Char(ranges) => write_class_ranges(&mut text, false, ranges),
                NextRule::CharExclude(ranges) if ranges.is_empty() => {
                    text.push_str("any character")
                }
                NextRule::CharExclude(ranges) => write_class_ranges(&mut text, true, ranges),
                NextRule::Token { ids, negated } => {
                    if *negated {
                        text.push('!');
                    }
                    let names: Vec<String> = ids.iter().map(|id| format!("<[{id}]>")).collect();
                    text.push_str(&names.join(" | "));
                }
                NextRule::End => text.push_str("the end of the input"),
            }
            text
        })
        .collect();
    match parts.as_slice() {
        [] => "nothing can come next".to_string(),
        [only] => format!("expected {only}"),
        _ => format!("expected one of {}", parts.join(", ")),
    }
}
