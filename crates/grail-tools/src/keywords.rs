//! Calls written as Python calls with keyword arguments, `get_weather(city="Paris",
//! days=3)` (Llama 3.2/4's `pythonic` format and Gemma 3's): the grammar of one call's
//! arguments, their reading back into a call object, and their writing.
//!
//! Each argument is `key=value`, separated by `, `, in the order Grail writes JSON
//! objects (the required ones first, each in the schema's order). The value is written in
//! the format's literals ([`Literals`]): Python's (`True`, `False`, `None`, strings
//! without the escapes Python reads otherwise than JSON) in `pythonic`, JSON in `gemma3`.
//! A key must be a Python identifier (a keyword argument can have no other name), and the
//! arguments are the declared properties: anything else is refused as any keyword Grail
//! cannot enforce (a warning in lenient mode). The reader takes what Python's parser
//! takes in a call's arguments: whitespace around `=` and `,`, a trailing comma, strings
//! in either quote (in `pythonic`).

use grail_grammar::Expr;
use grail_schema::diagnostic::escape_pointer_token;
use grail_schema::{ArgumentRules, Literals};
use serde_json::Value;

use crate::json_read::{self, Json, ReadError};
use crate::parameters::{ArgumentsFault, arguments_in_order, refuse_undeclared};
use crate::validate::preview;

/// Whether `key` is a Python identifier (ASCII: what a tool's argument names are).
pub(crate) fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The arguments of a tool whose arguments' schema is `schema`, between the call's
/// parentheses (see the module doc); the values' spelling is the one `rules` writes
/// (the schema options' literals).
pub(crate) fn arguments_expr(schema: &Value, rules: &mut ArgumentRules<'_, '_>) -> Expr {
    refuse_undeclared(schema, rules, "keyword arguments");
    let mut arguments: Vec<(Expr, bool)> = Vec::new();
    for (key, _, required) in arguments_in_order(schema) {
        let pointer = format!("/properties/{}", escape_pointer_token(key));
        if !is_identifier(key) {
            rules.unsupported(
                &pointer,
                "properties",
                "a keyword argument's name is a Python identifier (letters, digits and `_`, not first a digit)",
            );
            continue;
        }
        let value = rules.at(&pointer);
        arguments.push((
            Expr::sequence([Expr::literal(format!("{key}=")), value]),
            required,
        ));
    }
    let separator = || Expr::literal(", ");
    let required: Vec<Expr> = arguments
        .iter()
        .filter(|(_, required)| *required)
        .map(|(argument, _)| argument.clone())
        .collect();
    let optional: Vec<Expr> = arguments
        .into_iter()
        .filter(|(_, required)| !*required)
        .map(|(argument, _)| argument)
        .collect();
    // `tails[i]`: each optional argument from `i` on, perhaps, each after a separator.
    let mut tails = vec![Expr::Empty; optional.len() + 1];
    for index in (0..optional.len()).rev() {
        let tail = Expr::sequence([
            Expr::sequence([separator(), optional[index].clone()]).optional(),
            tails[index + 1].clone(),
        ]);
        tails[index] = match index + 1 == optional.len() {
            true => tail,
            false => Expr::Rule(
                rules
                    .builder()
                    .rule("keywords-tail", tail)
                    .expect("a new rule"),
            ),
        };
    }
    match required.is_empty() {
        false => {
            let mut items = Vec::new();
            for (index, argument) in required.into_iter().enumerate() {
                if index > 0 {
                    items.push(separator());
                }
                items.push(argument);
            }
            items.push(tails[0].clone());
            Expr::sequence(items)
        }
        // None, or the first present one and those after it.
        true => Expr::choice(
            std::iter::once(Expr::Empty).chain(optional.iter().enumerate().map(
                |(index, argument)| Expr::sequence([argument.clone(), tails[index + 1].clone()]),
            )),
        ),
    }
}

/// The arguments of a call in `text`, which starts after the tool's name (at its `(`),
/// read into a JSON object, and the text after the closing `)`; values are Python
/// literals with `python`, JSON otherwise.
pub(crate) fn read_arguments(python: bool, text: &str) -> Result<(Json, &str), ArgumentsFault> {
    fn space(text: &str) -> &str {
        text.trim_start_matches([' ', '\t', '\n', '\r'])
    }
    let malformed = |message: String| ArgumentsFault::Malformed(message);
    let mut rest = match space(text).strip_prefix('(') {
        Some(rest) => rest,
        None if space(text).is_empty() => return Err(ArgumentsFault::Truncated),
        None => {
            return Err(malformed(format!(
                "the tool's name is followed by `(` and its arguments, found: {}",
                preview(text)
            )));
        }
    };
    let mut members: Vec<(String, Json)> = Vec::new();
    loop {
        rest = space(rest);
        if let Some(after) = rest.strip_prefix(')') {
            return Ok((Json::Object(members), after));
        }
        if !members.is_empty() {
            rest = match rest.strip_prefix(',') {
                Some(after) => space(after),
                None if rest.is_empty() => return Err(ArgumentsFault::Truncated),
                None => {
                    return Err(malformed(format!(
                        "after an argument come `,` and another, or `)`, found: {}",
                        preview(rest)
                    )));
                }
            };
            if let Some(after) = rest.strip_prefix(')') {
                return Ok((Json::Object(members), after));
            }
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let (key, after) = rest.split_at(end);
        if after.is_empty() {
            return Err(ArgumentsFault::Truncated);
        }
        if !is_identifier(key) {
            return Err(malformed(format!(
                "an argument is written `name=value`, found: {}",
                preview(rest)
            )));
        }
        let after = space(after);
        let after = match after.strip_prefix('=') {
            Some(after) => after,
            None if after.is_empty() => return Err(ArgumentsFault::Truncated),
            None => {
                return Err(malformed(format!(
                    "the argument `{key}` is followed by `=` and its value, found: {}",
                    preview(after)
                )));
            }
        };
        let (value, end) = json_read::read_prefix_as(after, python).map_err(|error| match error {
            ReadError::Truncated => ArgumentsFault::Truncated,
            ReadError::Syntax { message, .. } => malformed(format!(
                "the value of `{key}` is not {}: {message}",
                match python {
                    true => "a Python literal (strings in quotes, True, False, None, numbers, lists, dicts)",
                    false => "JSON",
                }
            )),
            ReadError::DuplicateKey { key: inner, pointer } => {
                ArgumentsFault::Value(ReadError::DuplicateKey {
                    key: inner,
                    pointer: format!("/{key}{pointer}"),
                })
            }
            ReadError::TooDeep => ArgumentsFault::Value(ReadError::TooDeep),
        })?;
        if members.iter().any(|(known, _)| known == key) {
            return Err(malformed(format!(
                "the argument `{key}` is written twice; write each argument once"
            )));
        }
        members.push((key.to_string(), value));
        rest = &after[end..];
    }
}

/// `arguments` (a JSON object's text) as keyword arguments, `key=value, …`, the values in
/// `literals`; arguments that are no object (an example's `{…}`) as one placeholder.
pub(crate) fn write(literals: Literals, arguments: &str) -> String {
    match json_read::read(arguments) {
        Ok(Json::Object(members)) => members
            .iter()
            .map(|(key, value)| {
                let mut written = format!("{key}=");
                value.write_literal(literals == Literals::Python, &mut written);
                written
            })
            .collect::<Vec<_>>()
            .join(", "),
        _ => "ARGUMENT=VALUE".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(python: bool, text: &str) -> Result<(serde_json::Value, String), String> {
        read_arguments(python, text)
            .map(|(json, rest)| (json.to_value().unwrap(), rest.to_string()))
            .map_err(|fault| match fault {
                ArgumentsFault::Truncated => "truncated".to_string(),
                ArgumentsFault::Malformed(message) => message,
                ArgumentsFault::Value(_) => "value".to_string(),
            })
    }

    #[test]
    fn python_arguments_read_as_python_reads_them() {
        let (value, rest) = read(
            true,
            r#"(city='Paris', metric = True, note="a\/b\x41", days=None, tags=['x', "y"],)]"#,
        )
        .unwrap();
        assert_eq!(
            value,
            serde_json::json!({"city": "Paris", "metric": true, "note": "a\\/bA", "days": null, "tags": ["x", "y"]})
        );
        assert_eq!(rest, "]");
        assert_eq!(read(true, "()").unwrap().0, serde_json::json!({}));
        // JSON's words are not Python's, nor the other way round.
        assert!(read(true, "(metric=true)").is_err());
        assert!(read(false, "(metric=True)").is_err());
        assert!(read(false, r#"(metric=true, city="x")"#).is_ok());
        assert!(read(true, r#"(a=1, a=2)"#).unwrap_err().contains("twice"));
        assert_eq!(read(true, r#"(a={"k": 1, "k": 2})"#).unwrap_err(), "value");
        assert!(
            read(true, r#"(a="\ud83d")"#)
                .unwrap_err()
                .contains("surrogate")
        );
        assert_eq!(read(true, r#"(city="Par"#).unwrap_err(), "truncated");
        assert_eq!(read(true, "(city").unwrap_err(), "truncated");
        assert!(read(true, "(1=2)").unwrap_err().contains("name=value"));
    }

    #[test]
    fn arguments_are_written_in_the_format_s_literals() {
        let arguments = r#"{"city": "a\"b", "metric": true, "x": null, "n": [1.50, false]}"#;
        assert_eq!(
            write(Literals::Python, arguments),
            r#"city="a\"b", metric=True, x=None, n=[1.50,False]"#
        );
        assert_eq!(
            write(Literals::Json, arguments),
            r#"city="a\"b", metric=true, x=null, n=[1.50,false]"#
        );
    }
}
