//! The post-decode validator: a model's output, in the chosen wire format, read back
//! into calls and checked against each tool's schema with the `jsonschema` crate (which
//! also checks what a grammar cannot say, such as `uniqueItems`). A fault comes with a
//! message written for the model (it goes back as a `role: tool` message), naming the
//! tool, the place and what is wrong.

use serde_json::{Value, json};

use crate::grammar::{CallOptions, THINK_CLOSE, THINK_OPEN, Think, ToolChoice, tool_names};
use crate::registry::{Tool, ToolRegistry};
use crate::wire::{HERMES_CLOSE, HERMES_OPEN, MISTRAL_OPEN, WireFormat};

/// A call read from the output, valid for its tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// A generated id (`call_` and 16 hex digits, derived from the call and its place).
    pub id: String,
    /// The tool.
    pub name: String,
    /// The arguments.
    pub arguments: Value,
}

impl ToolCall {
    /// As an entry of OpenAI's `tool_calls` (the arguments as a JSON string).
    pub fn to_openai(&self) -> Value {
        json!({
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments.to_string()},
        })
    }
}

/// A valid output: the reasoning, and text, calls, or (with `auto`) text then calls.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Checked {
    /// The reasoning block's text, when there was one.
    pub reasoning: Option<String>,
    /// The answer's free text: all of it when there is no call, or (with `auto`) the text
    /// before the calls.
    pub text: Option<String>,
    /// The calls, in order.
    pub calls: Vec<ToolCall>,
}

impl Checked {
    /// The calls as OpenAI's `tool_calls` array.
    pub fn tool_calls(&self) -> Value {
        Value::Array(self.calls.iter().map(ToolCall::to_openai).collect())
    }
}

/// What is wrong with an output: one entry per fault found.
#[derive(Debug, Clone, PartialEq)]
pub struct CallFault {
    /// The faults, in the order of the calls.
    pub faults: Vec<Fault>,
}

/// One fault.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    /// A stable kebab-case code: `not-a-call`, `call-malformed`, `call-truncated`,
    /// `tool-unknown`,
    /// `tool-not-chosen`, `arguments-missing`, `arguments-invalid`, `too-many-calls`,
    /// `think-unclosed`, `think-missing`, `answer-empty`.
    pub code: &'static str,
    /// The tool concerned, if one.
    pub tool: Option<String>,
    /// JSON pointer into the tool's arguments, if the fault is there.
    pub pointer: Option<String>,
    /// The message for the model.
    pub message: String,
}

impl CallFault {
    /// The message to give the model (one line per fault).
    pub fn feedback(&self) -> String {
        self.faults
            .iter()
            .map(|fault| fault.message.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn one(code: &'static str, tool: Option<&str>, message: String) -> CallFault {
        CallFault {
            faults: vec![Fault {
                code,
                tool: tool.map(str::to_string),
                pointer: None,
                message,
            }],
        }
    }
}

/// Reads and checks a model's `output` as `options` describe it (wire format, choice,
/// most calls, reasoning block).
pub fn validate_output(
    registry: &ToolRegistry,
    options: &CallOptions,
    output: &str,
) -> Result<Checked, CallFault> {
    let (reasoning, answer) = split_reasoning(options.think, output)?;
    let answer = answer.trim();
    if answer.is_empty() && options.choice != ToolChoice::Required {
        return Err(CallFault::one(
            "answer-empty",
            None,
            "the answer is empty; write the answer, or a tool call".into(),
        ));
    }
    // No tool may be called: whatever was written is the answer.
    if options.choice == ToolChoice::None {
        return Ok(Checked {
            reasoning,
            text: Some(answer.to_string()),
            calls: Vec::new(),
        });
    }
    // With `auto`, text may come before the calls (a lazy grammar lets the model write
    // freely until it starts a call): the calls from where they start, the text before.
    let (text_before, answer) = match options.choice {
        ToolChoice::Auto => match calls_start(options, answer) {
            Some(start) if start > 0 => (Some(answer[..start].trim_end()), &answer[start..]),
            _ => (None, answer),
        },
        _ => (None, answer),
    };
    let raw_calls = match read_calls(options, answer)? {
        Some(calls) => calls,
        None => {
            return match &options.choice {
                ToolChoice::Auto | ToolChoice::None => Ok(Checked {
                    reasoning,
                    text: Some(answer.to_string()),
                    calls: Vec::new(),
                }),
                ToolChoice::Required | ToolChoice::Named(_) => Err(CallFault::one(
                    "not-a-call",
                    None,
                    format!(
                        "the answer is text, not a tool call; call one of the tools ({}) as {}",
                        tool_names(registry.tools.iter()),
                        example(options.wire)
                    ),
                )),
            };
        }
    };
    let most = if options.parallel() {
        options.max_calls
    } else {
        Some(1)
    };
    if let Some(most) = most
        && raw_calls.len() > most as usize
    {
        return Err(CallFault::one(
            "too-many-calls",
            None,
            format!(
                "{} tool calls were written; at most {most} may be",
                raw_calls.len()
            ),
        ));
    }
    let mut faults = Vec::new();
    let mut calls = Vec::new();
    for (index, raw) in raw_calls.iter().enumerate() {
        match check_call(registry, options, raw, index) {
            Ok(call) => calls.push(call),
            Err(mut found) => faults.append(&mut found),
        }
    }
    if !faults.is_empty() {
        return Err(CallFault { faults });
    }
    Ok(Checked {
        reasoning,
        text: text_before.map(str::to_string),
        calls,
    })
}

/// Where the calls start in an answer: the wire format's opening tag, or for the JSON
/// formats a `{` (a `[` for several calls) followed by the name key (what the lazy
/// grammar's trigger waits for).
fn calls_start(options: &CallOptions, answer: &str) -> Option<usize> {
    if let Some(opening) = options.wire.opening() {
        return answer.find(opening);
    }
    let open = if options.parallel() { '[' } else { '{' };
    let key = format!("\"{}\"", options.wire.name_key());
    answer
        .match_indices(open)
        .map(|(index, _)| index)
        .find(|&index| {
            let mut rest = answer[index + 1..].trim_start();
            if options.parallel() {
                match rest.strip_prefix('{') {
                    Some(after) => rest = after.trim_start(),
                    None => return false,
                }
            }
            rest.starts_with(&key)
        })
}

/// The reasoning block's text and the rest of the output.
fn split_reasoning(think: Think, output: &str) -> Result<(Option<String>, &str), CallFault> {
    let unclosed = || {
        CallFault::one(
            "think-unclosed",
            None,
            format!("the reasoning block is not closed: end it with {THINK_CLOSE}"),
        )
    };
    let inside = match think {
        Think::Off => return Ok((None, output)),
        Think::Forced => output,
        Think::Optional => match output.trim_start().strip_prefix(THINK_OPEN) {
            Some(inside) => inside,
            None => return Ok((None, output)),
        },
        Think::Required => match output.trim_start().strip_prefix(THINK_OPEN) {
            Some(inside) => inside,
            None => {
                return Err(CallFault::one(
                    "think-missing",
                    None,
                    format!("reason first, inside {THINK_OPEN}…{THINK_CLOSE}, then answer"),
                ));
            }
        },
    };
    let (reasoning, rest) = inside.split_once(THINK_CLOSE).ok_or_else(unclosed)?;
    Ok((Some(reasoning.to_string()), rest))
}

/// The calls of an answer as JSON values; `None` when the answer is text.
fn read_calls(options: &CallOptions, answer: &str) -> Result<Option<Vec<Value>>, CallFault> {
    let malformed = |message: String| CallFault::one("call-malformed", None, message);
    let parse = |text: &str| -> Result<Value, CallFault> {
        serde_json::from_str(text.trim()).map_err(|error| match error.is_eof() {
            true => CallFault::one(
                "call-truncated",
                None,
                "the tool call ends before it is complete (was the generation cut off by its token limit?)".into(),
            ),
            false => malformed(format!(
                "the tool call is not valid JSON: {error}; write it as {}",
                example(options.wire)
            )),
        })
    };
    let as_list = |value: Value| match value {
        Value::Array(items) => items,
        other => vec![other],
    };
    match options.wire {
        WireFormat::Hermes => {
            if !answer.starts_with(HERMES_OPEN) {
                return Ok(None);
            }
            let mut calls = Vec::new();
            let mut rest = answer;
            while !rest.is_empty() {
                let Some(inside) = rest.strip_prefix(HERMES_OPEN) else {
                    return Err(malformed(format!(
                        "only {HERMES_OPEN} blocks may follow a tool call, found: {}",
                        preview(rest)
                    )));
                };
                let Some((call, after)) = inside.split_once(HERMES_CLOSE) else {
                    return Err(malformed(format!(
                        "a {HERMES_OPEN} block is not closed: end it with {HERMES_CLOSE}"
                    )));
                };
                calls.push(parse(call)?);
                rest = after.trim_start();
            }
            Ok(Some(calls))
        }
        WireFormat::Mistral => match answer.strip_prefix(MISTRAL_OPEN) {
            Some(list) => Ok(Some(as_list(parse(list)?))),
            None => Ok(None),
        },
        WireFormat::OpenAi | WireFormat::ToolArgs | WireFormat::Llama3 => {
            if answer.starts_with('{') || answer.starts_with('[') {
                Ok(Some(as_list(parse(answer)?)))
            } else {
                Ok(None)
            }
        }
    }
}

/// One call checked against its tool.
fn check_call(
    registry: &ToolRegistry,
    options: &CallOptions,
    raw: &Value,
    index: usize,
) -> Result<ToolCall, Vec<Fault>> {
    let (name_key, arguments_key) = (options.wire.name_key(), options.wire.arguments_key());
    let fault = |code, tool: Option<&str>, message: String| {
        vec![Fault {
            code,
            tool: tool.map(str::to_string),
            pointer: None,
            message,
        }]
    };
    let Value::Object(object) = raw else {
        return Err(fault(
            "call-malformed",
            None,
            format!(
                "a tool call is a JSON object, like {}",
                example(options.wire)
            ),
        ));
    };
    let Some(Value::String(name)) = object.get(name_key) else {
        return Err(fault(
            "call-malformed",
            None,
            format!("the tool call has no \"{name_key}\" string naming the tool"),
        ));
    };
    let Some(tool) = registry.get(name) else {
        let known: Vec<&str> = registry
            .tools
            .iter()
            .map(|tool| tool.name.as_str())
            .collect();
        let closest = known
            .iter()
            .map(|known| (strsim::jaro_winkler(known, name), *known))
            .filter(|(score, _)| *score > 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, known)| format!(" (did you mean '{known}'?)"))
            .unwrap_or_default();
        return Err(fault(
            "tool-unknown",
            Some(name),
            format!(
                "there is no tool '{name}'{closest}; the tools are {}",
                known
                    .iter()
                    .map(|name| format!("'{name}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    };
    if let ToolChoice::Named(chosen) = &options.choice
        && chosen != name
    {
        return Err(fault(
            "tool-not-chosen",
            Some(name),
            format!("only tool '{chosen}' may be called here, not '{name}'"),
        ));
    }
    if let Some(extra) = object
        .keys()
        .find(|key| *key != name_key && *key != arguments_key)
    {
        return Err(fault(
            "call-malformed",
            Some(name),
            format!(
                "the call of tool '{name}' has a key \"{extra}\"; a call has only \"{name_key}\" and \"{arguments_key}\""
            ),
        ));
    }
    let arguments = object
        .get(arguments_key)
        .cloned()
        .unwrap_or_else(|| json!({}));
    check_arguments(
        tool,
        &arguments,
        options.schema.additional_properties_default,
    )?;
    Ok(ToolCall {
        id: call_id(name, &arguments, index),
        name: name.clone(),
        arguments,
    })
}

/// The arguments checked against the tool's schema (with undeclared properties refused
/// where the schema does not say, unless `open_objects`, as the grammar reads it).
fn check_arguments(tool: &Tool, arguments: &Value, open_objects: bool) -> Result<(), Vec<Fault>> {
    let mut schema = tool.parameters.clone();
    if !open_objects {
        close_objects(&mut schema);
    }
    let validator = match jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
    {
        Ok(validator) => validator,
        Err(error) => {
            return Err(vec![Fault {
                code: "arguments-invalid",
                tool: Some(tool.name.clone()),
                pointer: None,
                message: format!(
                    "the schema of tool '{}' cannot be used to check its arguments: {error}",
                    tool.name
                ),
            }]);
        }
    };
    let mut missing: Vec<(String, Vec<String>)> = Vec::new();
    let mut faults = Vec::new();
    for error in validator.iter_errors(arguments) {
        let pointer = error.instance_path().to_string();
        if let jsonschema::error::ValidationErrorKind::Required { property } = error.kind() {
            let property = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_string);
            match missing.iter_mut().find(|(at, _)| *at == pointer) {
                Some((_, names)) => names.push(property),
                None => missing.push((pointer, vec![property])),
            }
            continue;
        }
        let at = if pointer.is_empty() {
            String::new()
        } else {
            format!(" at {pointer}")
        };
        // All the values, so the model can pick one (the crate's message lists two).
        let what = match error.kind() {
            jsonschema::error::ValidationErrorKind::Enum { options } => format!(
                "{} is not one of the allowed values {}",
                error.instance(),
                options
            ),
            _ => error.to_string(),
        };
        faults.push(Fault {
            code: "arguments-invalid",
            tool: Some(tool.name.clone()),
            message: format!("invalid argument{at} for tool '{}': {what}", tool.name),
            pointer: Some(pointer),
        });
    }
    let missing = missing.into_iter().map(|(pointer, names)| {
        let list = names
            .iter()
            .map(|name| format!("'{name}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let (what, at) = match pointer.as_str() {
            "" => ("arguments".to_string(), String::new()),
            _ => ("properties".to_string(), format!(" at {pointer}")),
        };
        Fault {
            code: "arguments-missing",
            tool: Some(tool.name.clone()),
            message: format!(
                "missing required {what} [{list}]{at} for tool '{}'",
                tool.name
            ),
            pointer: Some(pointer),
        }
    });
    let all: Vec<Fault> = missing.chain(faults).collect();
    if all.is_empty() { Ok(()) } else { Err(all) }
}

/// Adds `"additionalProperties": false` to every schema that declares `properties` and
/// says nothing of other properties (`additionalProperties`, `patternProperties`,
/// `unevaluatedProperties`): what `grail-schema` does with
/// `additional_properties_default: false`. Values that are data, not schemas (`const`,
/// `enum`, `default`, `examples`, vendor `x-…`), are left alone.
fn close_objects(schema: &mut Value) {
    // (value, whether it is a map from names to schemas, as `properties` is).
    let mut pending: Vec<(&mut Value, bool)> = vec![(schema, false)];
    while let Some((value, names_to_schemas)) = pending.pop() {
        match value {
            Value::Object(object) => {
                if names_to_schemas {
                    pending.extend(object.values_mut().map(|child| (child, false)));
                    continue;
                }
                let declares = object.get("properties").is_some_and(Value::is_object);
                let says = [
                    "additionalProperties",
                    "patternProperties",
                    "unevaluatedProperties",
                ]
                .iter()
                .any(|key| object.contains_key(*key));
                if declares && !says {
                    object.insert("additionalProperties".into(), Value::Bool(false));
                }
                for (key, child) in object.iter_mut() {
                    let data = matches!(key.as_str(), "const" | "enum" | "default" | "examples")
                        || key.starts_with("x-");
                    let map = matches!(
                        key.as_str(),
                        "properties"
                            | "patternProperties"
                            | "$defs"
                            | "definitions"
                            | "dependentSchemas"
                    );
                    if !data {
                        pending.push((child, map));
                    }
                }
            }
            Value::Array(items) => pending.extend(items.iter_mut().map(|item| (item, false))),
            _ => {}
        }
    }
}

/// `call_` and 16 hex digits of an FNV-1a hash of the call and its place.
fn call_id(name: &str, arguments: &Value, index: usize) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let text = format!("{index}\u{0}{name}\u{0}{arguments}");
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("call_{hash:016x}")
}

/// How a call looks in the wire format, for messages.
fn example(wire: WireFormat) -> String {
    let call = format!(
        "{{\"{}\": \"<tool>\", \"{}\": {{...}}}}",
        wire.name_key(),
        wire.arguments_key()
    );
    match wire {
        WireFormat::Hermes => format!("{HERMES_OPEN}\n{call}\n{HERMES_CLOSE}"),
        WireFormat::Mistral => format!("{MISTRAL_OPEN}[{call}]"),
        _ => call,
    }
}

/// The start of some text, for messages.
fn preview(text: &str) -> String {
    let mut shown: String = text.chars().take(40).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    format!("{shown:?}")
}
