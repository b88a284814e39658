//! Calls that write each argument apart, in tags (Qwen3-Coder's `<parameter=KEY>`, GLM's
//! `<arg_key>`/`<arg_value>`: see [`ParameterTags`]): the grammar of one such call and its
//! reading back into a call object.
//!
//! A value whose schema is a string (`"type": "string"`, or an `enum` or `const` of
//! strings only) is written as it is, as these models' parsers read it, up to the tag
//! that closes it (which it can therefore never contain); any other value is JSON under
//! its schema (the parsers read a non-string argument as JSON). Arguments are written in
//! the order Grail writes JSON objects: the required ones first, each in the schema's
//! order. What the tags cannot say is refused as any keyword Grail cannot enforce (a
//! warning in lenient mode): a string's `pattern`, `format` or lengths (the text written
//! as it is has no grammar of its own here), and arguments not declared in `properties`.

use grail_grammar::Expr;
use grail_schema::ArgumentRules;
use grail_schema::diagnostic::escape_pointer_token;
use serde_json::Value;

use crate::json_read::{self, Json, ReadError};
use crate::markers::{marker, until_marker};
use crate::validate::preview;
use crate::wire::ParameterTags;

/// String keywords a value written as it is cannot be held to.
const RAW_STRING_KEYWORDS: [&str; 4] = ["pattern", "format", "minLength", "maxLength"];

/// How an argument's value is written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ValueKind {
    /// As it is: any text, or one of these texts.
    Text(Option<Vec<String>>),
    /// As JSON.
    Json,
}

/// How the value of an argument with `schema` is written (see the module doc).
pub(crate) fn value_kind(schema: &Value) -> ValueKind {
    let strings = |values: &[Value]| -> Option<Vec<String>> {
        values
            .iter()
            .map(|value| value.as_str().map(str::to_string))
            .collect()
    };
    if let Some(value) = schema.get("const") {
        return match strings(std::slice::from_ref(value)) {
            Some(texts) => ValueKind::Text(Some(texts)),
            None => ValueKind::Json,
        };
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        let typed_otherwise = schema
            .get("type")
            .is_some_and(|kind| kind != &Value::String("string".into()));
        return match (strings(values), typed_otherwise) {
            (Some(texts), false) => ValueKind::Text(Some(texts)),
            _ => ValueKind::Json,
        };
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => ValueKind::Text(None),
        _ => ValueKind::Json,
    }
}

/// The arguments of `schema` in writing order: `(key, schema, required)`.
pub(crate) fn arguments_in_order(schema: &Value) -> Vec<(&str, &Value, bool)> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|keys| keys.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut ordered: Vec<(&str, &Value, bool)> = properties
        .iter()
        .filter(|(key, _)| required.contains(&key.as_str()))
        .map(|(key, value)| (key.as_str(), value, true))
        .collect();
    ordered.extend(
        properties
            .iter()
            .filter(|(key, _)| !required.contains(&key.as_str()))
            .map(|(key, value)| (key.as_str(), value, false)),
    );
    ordered
}

/// Refuses (through `rules`) what arguments written one by one cannot hold: a schema
/// that is no object with declared properties, and properties beside the declared ones.
/// `what` names the writing in the messages.
pub(crate) fn refuse_undeclared(schema: &Value, rules: &mut ArgumentRules<'_, '_>, what: &str) {
    let declares_all = schema.get("additionalProperties") == Some(&Value::Bool(false));
    let has_properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|properties| !properties.is_empty());
    if !declares_all && !has_properties && schema.get("type") != Some(&"object".into()) {
        rules.unsupported(
            "",
            "type",
            &format!("{what} must be an object with declared properties"),
        );
    }
    if let Some(Value::Object(_)) = schema.get("additionalProperties") {
        rules.unsupported(
            "",
            "additionalProperties",
            &format!("{what} are the declared properties only"),
        );
    }
}

/// The arguments of a tool whose arguments' schema is `schema`, written in `tags`; the
/// rule of text up to a value's closing tag is made once per grammar (`raw_text`).
pub(crate) fn arguments_expr(
    tags: &ParameterTags,
    tokens: &[(String, u32)],
    schema: &Value,
    rules: &mut ArgumentRules<'_, '_>,
    raw_text: &mut Option<Expr>,
) -> Expr {
    refuse_undeclared(schema, rules, "arguments written apart in tags");
    let mut items = Vec::new();
    for (key, property, required) in arguments_in_order(schema) {
        let pointer = format!("/properties/{}", escape_pointer_token(key));
        let value = match value_kind(property) {
            ValueKind::Text(Some(texts)) => Expr::sequence([
                Expr::choice(texts.into_iter().map(Expr::literal)),
                marker(tokens, tags.value_close),
            ]),
            ValueKind::Text(None) => {
                for keyword in RAW_STRING_KEYWORDS {
                    if property.get(keyword).is_some() {
                        rules.unsupported(
                            &pointer,
                            keyword,
                            "a string argument is written as it is in this format, where only its type and enum hold",
                        );
                    }
                }
                raw_text
                    .get_or_insert_with(|| {
                        until_marker(rules.builder(), "argument-text", tags.value_close, tokens)
                    })
                    .clone()
            }
            ValueKind::Json => {
                let json = rules.at(&pointer);
                Expr::sequence([json, marker(tokens, tags.value_close)])
            }
        };
        let argument = Expr::sequence([
            marker(tokens, tags.key_open),
            Expr::literal(key.to_string()),
            marker(tokens, tags.key_close),
            value,
            marker(tokens, tags.trailer),
        ]);
        items.push(match required {
            true => argument,
            false => argument.optional(),
        });
    }
    Expr::sequence(items)
}

/// The arguments after a tool's name in `text` (which starts after
/// `tags.after_name`), read into a JSON object by `schema` (see [`value_kind`]), and the
/// text after them.
pub(crate) fn read_arguments<'t>(
    tags: &ParameterTags,
    schema: &Value,
    text: &'t str,
) -> Result<(Json, &'t str), ArgumentsFault> {
    let fault = ArgumentsFault::Malformed;
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut members: Vec<(String, Json)> = Vec::new();
    let mut rest = text;
    loop {
        let trimmed = rest.trim_start_matches(crate::answer::JSON_SPACE);
        let Some(after_open) = trimmed.strip_prefix(tags.key_open) else {
            if tags.key_open.starts_with(trimmed) && !trimmed.is_empty() {
                return Err(ArgumentsFault::Truncated);
            }
            return Ok((Json::Object(members), rest));
        };
        let key_close = tags.key_close.trim_end_matches('\n');
        let Some(key_end) = after_open.find(key_close) else {
            return Err(ArgumentsFault::Truncated);
        };
        let key = &after_open[..key_end];
        let mut value_start = &after_open[key_end + key_close.len()..];
        if tags.key_close.ends_with('\n') {
            value_start = value_start.strip_prefix('\n').unwrap_or(value_start);
        }
        let Some(value_end) = value_start.find(tags.value_close) else {
            return Err(ArgumentsFault::Truncated);
        };
        let written = &value_start[..value_end];
        rest = &value_start[value_end + tags.value_close.len()..];
        if members.iter().any(|(known, _)| known == key) {
            return Err(fault(format!(
                "the argument `{key}` is written twice; write each argument once"
            )));
        }
        let property = properties.and_then(|properties| properties.get(key));
        let value = match property.map(value_kind) {
            Some(ValueKind::Text(_)) => Json::String(written.to_string()),
            // Not declared: read as the parsers do (JSON when it is, else text); the
            // schema check names it.
            None => json_read::read(written.trim()).unwrap_or(Json::String(written.to_string())),
            Some(ValueKind::Json) => match json_read::read(written.trim()) {
                Ok(value) => value,
                Err(ReadError::Truncated) => return Err(ArgumentsFault::Truncated),
                Err(_) => {
                    return Err(fault(format!(
                        "the argument `{key}` is not valid JSON ({}); write it as JSON, a string argument alone as it is",
                        preview(written)
                    )));
                }
            },
        };
        members.push((key.to_string(), value));
    }
}

/// Why arguments in tags could not be read.
#[derive(Debug)]
pub(crate) enum ArgumentsFault {
    /// The text ends inside them.
    Truncated,
    /// What is wrong, for the model.
    Malformed(String),
    /// A value's JSON (or Python literal) could not be read as a call's JSON is not
    /// (a key written twice, nesting too deep): reported as for JSON calls.
    Value(ReadError),
}
