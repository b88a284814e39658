//! A wire format's markers as the grammar writes them. A model whose tokenizer holds a
//! marker (`[TOOL_CALLS]`, `<|channel|>`, `<｜tool▁calls▁begin｜>`) as a special token
//! writes it as that one token, which never matches text: given the ids of those tokens
//! ([`crate::CallOptions::special_tokens`]), a marker holding one is written as the
//! token (the grammar's `<[id]>`), the rest as text. Without ids every marker is text (a
//! grammar for any vocabulary, or for a tokenizer that holds the markers as text).
//!
//! The output decoded from the tokens is the same text either way (a special token
//! decodes to its text), so the validator and the stream read both alike.

use grail_grammar::{CharSet, Expr, GrammarBuilder};

use crate::answer::CallStart;

/// `text` with the special tokens among `tokens` (texts and ids) as tokens, the longest
/// first where two start at one place; nothing when `text` is empty.
pub(crate) fn marker(tokens: &[(String, u32)], text: &str) -> Expr {
    let mut items = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let token = tokens
            .iter()
            .filter(|(token, _)| !token.is_empty() && rest.starts_with(token.as_str()))
            .max_by_key(|(token, _)| token.len());
        match token {
            Some((token, id)) => {
                if !literal.is_empty() {
                    items.push(Expr::literal(std::mem::take(&mut literal)));
                }
                items.push(Expr::token_id(*id));
                rest = &rest[token.len()..];
            }
            None => {
                literal.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    if !literal.is_empty() {
        items.push(Expr::literal(literal));
    }
    match items.len() {
        0 => Expr::Empty,
        1 => items.pop().expect("one item"),
        _ => Expr::sequence(items),
    }
}

/// Text up to and including the first `stop`, as [`until_after`] writes it; where `stop`
/// holds a special token of `tokens`, text that never contains `stop`'s characters, then
/// `stop` with its tokens (text can never write a special token, and the validator reads
/// the decoded text up to the first `stop`).
pub(crate) fn until_marker(
    builder: &mut GrammarBuilder,
    name: &str,
    stop: &str,
    tokens: &[(String, u32)],
) -> Expr {
    let holds_token = tokens
        .iter()
        .any(|(token, _)| !token.is_empty() && stop.contains(token.as_str()));
    match holds_token {
        false => until_after(builder, name, stop),
        true => Expr::sequence([
            CallStart::literal(stop).avoiding(builder, name),
            marker(tokens, stop),
        ]),
    }
}

/// Any text up to and including the first occurrence of `stop` (one rule per
/// character of `stop` matched so far, as in string search).
fn until_after(builder: &mut GrammarBuilder, name: &str, stop: &str) -> Expr {
    let stop: Vec<char> = stop.chars().collect();
    let states: Vec<_> = (0..stop.len())
        .map(|state| {
            let hint = match state {
                0 => name.to_string(),
                _ => format!("{name}-{state}"),
            };
            builder.declare(&hint)
        })
        .collect();
    // The longest prefix of `stop` that ends the text matched so far plus `c`.
    let next = |state: usize, c: char| -> usize {
        let mut seen: Vec<char> = stop[..state].to_vec();
        seen.push(c);
        (0..=seen.len().min(stop.len()))
            .rev()
            .find(|&len| seen.ends_with(&stop[..len]))
            .unwrap_or(0)
    };
    let mut alphabet: Vec<char> = stop.clone();
    alphabet.sort_unstable();
    alphabet.dedup();
    for (state, &rule) in states.iter().enumerate() {
        let mut staying: Vec<(char, char)> = Vec::new();
        let mut leaving: Vec<Expr> = Vec::new();
        for &c in &alphabet {
            match next(state, c) {
                target if target == stop.len() => leaving.push(Expr::literal(c.to_string())),
                target if target == state => staying.push((c, c)),
                target => leaving.push(Expr::sequence([
                    Expr::literal(c.to_string()),
                    Expr::Rule(states[target]),
                ])),
            }
        }
        // Characters outside `stop` go back to the start.
        let others = Expr::Chars(CharSet::new(
            alphabet.iter().map(|&c| (c as u32, c as u32)),
            true,
        ));
        let body = if state == 0 {
            // The start loops on itself (a loop inside the rule, for the mask engine).
            let looping = match staying.is_empty() {
                true => others,
                false => Expr::choice([
                    others,
                    Expr::Chars(CharSet::new(
                        staying.iter().map(|&(c, _)| (c as u32, c as u32)),
                        false,
                    )),
                ]),
            };
            Expr::sequence([looping.zero_or_more(), Expr::choice(leaving)])
        } else {
            let mut choices = leaving;
            if !staying.is_empty() {
                choices.push(Expr::sequence([
                    Expr::Chars(CharSet::new(
                        staying.iter().map(|&(c, _)| (c as u32, c as u32)),
                        false,
                    )),
                    Expr::Rule(rule),
                ]));
            }
            choices.push(Expr::sequence([others, Expr::Rule(states[0])]));
            Expr::choice(choices)
        };
        builder.define(rule, body).expect("declared above");
    }
    Expr::Rule(states[0])
}
