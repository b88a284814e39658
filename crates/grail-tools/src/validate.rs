//! The post-decode validator: a model's output, in the chosen wire format, read back
//! into calls and checked against each tool's schema with the `jsonschema` crate (which
//! also checks what a grammar cannot say, such as `uniqueItems`). A fault comes with a
//! message written for the model (it goes back as a `role: tool` message), naming the
//! tool, the place and what is wrong.

use grail_schema::numeric::Decimal;
use serde_json::{Value, json};

use crate::answer::{CallStart, JSON_SPACE, call_first_chars, calls_begin, next_calls};
use crate::arguments::Arguments;
use crate::grammar::{CallOptions, Think, ToolChoice, tool_names};
use crate::json_read::{self, Json, MAX_DEPTH, ReadError};
use crate::keywords;
use crate::numbers::{call_number_syntax, outside_syntax};
use crate::parameters::{self, ArgumentsFault};
use crate::registry::{Tool, ToolRegistry};
use crate::wire::{
    CALL_ID_LEN, CALL_ID_MARKER, CallTag, MAX_INDEX_DIGITS, Marked, NamePlace, ReasoningMarkers,
};

/// A call read from the output, valid for its tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// A generated id (`call_` and 16 hex digits, derived from the call and its place).
    pub id: String,
    /// The tool.
    pub name: String,
    /// The arguments, as written (numbers exactly) and as a value.
    pub arguments: Arguments,
}

impl ToolCall {
    /// As an entry of OpenAI's `tool_calls` (the arguments as a JSON string).
    pub fn to_openai(&self) -> Value {
        json!({
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments.text()},
        })
    }
}

/// A valid output: the reasoning, and text, calls, or (with `auto`) text and calls.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Checked {
    /// The reasoning block's text, when there was one.
    pub reasoning: Option<String>,
    /// The answer's free text: all of it when there is no call, or (with `auto`) the
    /// texts before, between and after the blocks of calls, each trimmed of whitespace,
    /// joined by a line break.
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
    /// `calls-empty`, `key-duplicate`, `tool-unknown`, `tool-not-chosen`,
    /// `arguments-missing`, `arguments-invalid`, `too-many-calls`, `think-unclosed`,
    /// `think-missing`, `answer-empty`.
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
/// most calls, reasoning block). What is text and what is a call is decided as the
/// grammar decides it (see `answer.rs`); the validator also reads whitespace the grammar
/// never writes (around the answer, between JSON tokens) as layout, and keys and values
/// in any order and spelling JSON allows.
pub fn validate_output(
    registry: &ToolRegistry,
    options: &CallOptions,
    output: &str,
) -> Result<Checked, CallFault> {
    let markers = options.wire.reasoning();
    let (reasoning, answer) = split_reasoning(options.think, markers, output)?;
    let answer = answer.trim_matches(JSON_SPACE);
    let text_open = options.wire.marked().and_then(|marked| marked.text_open);
    if answer.is_empty() && options.choice != ToolChoice::Required {
        return Err(CallFault::one(
            "answer-empty",
            None,
            "the answer is empty; write the answer, or a tool call".into(),
        ));
    }
    let calls_possible = options.choice != ToolChoice::None && !registry.tools.is_empty();
    if options.think == Think::Optional
        && text_open.is_none()
        && answer.starts_with('<')
        && !(calls_possible && call_first_chars(options.wire).contains(&'<'))
    {
        return Err(CallFault::one(
            "think-unclosed",
            None,
            format!(
                "an answer that starts with `<` is read as a reasoning block ({}…{}); close it, or start the answer with another character",
                markers.open, markers.close
            ),
        ));
    }
    // A format that frames its text (harmony's final channel): text is that frame's.
    if let Some(open) = text_open {
        match answer.strip_prefix(open) {
            Some(text) if text.trim_matches(JSON_SPACE).is_empty() => {
                return Err(CallFault::one(
                    "answer-empty",
                    None,
                    format!("the answer after {open} is empty; write the answer"),
                ));
            }
            Some(text) if !calls_possible || options.choice == ToolChoice::Auto => {
                return Ok(Checked {
                    reasoning,
                    text: Some(text.trim_start_matches(JSON_SPACE).to_string()),
                    calls: Vec::new(),
                });
            }
            None if !calls_possible => {
                return Err(CallFault::one(
                    "not-a-call",
                    None,
                    format!("write the answer after {open}"),
                ));
            }
            _ => {}
        }
    }
    // No tool may be called: whatever was written is the answer.
    if !calls_possible {
        return Ok(Checked {
            reasoning,
            text: Some(answer.to_string()),
            calls: Vec::new(),
        });
    }
    // With `auto`, text and blocks of calls in turn (see `answer.rs`); the calls alone
    // otherwise, or where text is framed (and was read above).
    let (texts, raw_calls) = match options.choice {
        ToolChoice::Auto if text_open.is_none() => {
            let (texts, calls) = read_turns(registry, options, answer)?;
            if calls.is_empty() {
                return Ok(Checked {
                    reasoning,
                    text: Some(answer.to_string()),
                    calls: Vec::new(),
                });
            }
            (texts, calls)
        }
        _ => match read_calls(registry, options, answer, false)? {
            Some((calls, _)) if calls.is_empty() => return Err(calls_empty(registry, options)),
            Some((calls, _)) => (Vec::new(), calls),
            None if options.choice == ToolChoice::Auto
                && let Some(open) = text_open =>
            {
                return Err(CallFault::one(
                    "call-malformed",
                    None,
                    format!(
                        "an answer is text after {open}, or a tool call, written as {}",
                        example(options)
                    ),
                ));
            }
            None => {
                return Err(CallFault::one(
                    "not-a-call",
                    None,
                    format!(
                        "the answer is text, not a tool call; call one of the tools ({}) as {}",
                        tool_names(registry.tools.iter()),
                        example(options)
                    ),
                ));
            }
        },
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
        text: joined_text(&texts),
        calls,
    })
}

/// An `auto` answer (not framed) read as text and blocks of calls in turn, as the grammar
/// writes it (see `answer.rs`): the texts before, between and after the blocks, and the
/// calls of every block, in order; no calls when the answer is all text.
fn read_turns<'a>(
    registry: &ToolRegistry,
    options: &CallOptions,
    answer: &'a str,
) -> Result<(Vec<&'a str>, Vec<Json>), CallFault> {
    let start = CallStart::of(options);
    let text_after = options.wire.text_after_calls();
    let mut texts = Vec::new();
    let mut calls = Vec::new();
    let mut rest = answer;
    let mut begin = calls_begin(options, rest);
    while let Some(at) = begin {
        texts.push(&rest[..at]);
        match read_calls(registry, options, &rest[at..], text_after)? {
            Some((block, _)) if block.is_empty() => return Err(calls_empty(registry, options)),
            Some((block, after)) => {
                calls.extend(block);
                rest = after;
            }
            None => {
                let first = rest[at..].chars().next().unwrap_or_default();
                return Err(CallFault::one(
                    "call-malformed",
                    None,
                    format!(
                        "an answer that starts with `{first}` is read as tool calls, written as {}; to answer in text, start with another character",
                        example(options)
                    ),
                ));
            }
        }
        begin = next_calls(options, &start, rest);
    }
    texts.push(rest);
    Ok((texts, calls))
}

/// An answer's texts as one: each trimmed of whitespace, the empty ones left out, the
/// others joined by a line break; `None` when none is left.
pub(crate) fn joined_text(texts: &[&str]) -> Option<String> {
    let texts: Vec<&str> = texts
        .iter()
        .map(|text| text.trim_matches(JSON_SPACE))
        .filter(|text| !text.is_empty())
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// The fault of a block of calls written empty.
fn calls_empty(registry: &ToolRegistry, options: &CallOptions) -> CallFault {
    CallFault::one(
        "calls-empty",
        None,
        format!(
            "the list of tool calls is empty; call one of the tools ({}) as {}{}",
            tool_names(registry.tools.iter()),
            example(options),
            match options.choice {
                ToolChoice::Auto => ", or answer in text",
                _ => "",
            }
        ),
    )
}

/// The calls of an output as written: read as the validator reads them, not checked
/// against their tools.
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenCalls {
    /// The answer's text around the calls, if any (as [`Checked::text`]).
    pub text: Option<String>,
    /// Each call's tool name and arguments, as written.
    pub calls: Vec<(String, Value)>,
}

/// The calls `output` writes, read as [`validate_output`] reads them but not checked
/// against their tools: to give a refused answer back to a model whose chat template
/// reads calls and results as its own (the calls, then the validator's feedback as their
/// results). `None` when no call can be read from it.
pub fn written_calls(
    registry: &ToolRegistry,
    options: &CallOptions,
    output: &str,
) -> Option<WrittenCalls> {
    let (_, answer) = split_reasoning(options.think, options.wire.reasoning(), output).ok()?;
    let answer = answer.trim_matches(JSON_SPACE);
    let (text, raw) = match options.choice {
        ToolChoice::None => return None,
        ToolChoice::Auto if !options.wire.frames_text() => {
            let (texts, calls) = read_turns(registry, options, answer).ok()?;
            (joined_text(&texts), calls)
        }
        _ => (None, read_calls(registry, options, answer, false).ok()??.0),
    };
    let (name_key, arguments_key) = (options.wire.name_key(), options.wire.arguments_key());
    let calls = raw
        .iter()
        .map(|call| {
            let Some(Json::String(name)) = call.member(name_key) else {
                return None;
            };
            let arguments = call
                .member(arguments_key)
                .and_then(|arguments| arguments.to_value().ok())
                .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
            Some((name.clone(), arguments))
        })
        .collect::<Option<Vec<_>>>()?;
    (!calls.is_empty()).then_some(WrittenCalls { text, calls })
}

/// The reasoning block's text and the rest of the output.
fn split_reasoning(
    think: Think,
    markers: ReasoningMarkers,
    output: &str,
) -> Result<(Option<String>, &str), CallFault> {
    let unclosed = || {
        CallFault::one(
            "think-unclosed",
            None,
            format!(
                "the reasoning block is not closed: end it with {}",
                markers.close
            ),
        )
    };
    let inside = match think {
        Think::Off => return Ok((None, output)),
        Think::Forced => output,
        Think::Optional => match output
            .trim_start_matches(JSON_SPACE)
            .strip_prefix(markers.open)
        {
            Some(inside) => inside,
            None => return Ok((None, output)),
        },
        Think::Required => match output
            .trim_start_matches(JSON_SPACE)
            .strip_prefix(markers.open)
        {
            Some(inside) => inside,
            None => {
                return Err(CallFault::one(
                    "think-missing",
                    None,
                    format!(
                        "reason first, inside {}…{}, then answer",
                        markers.open, markers.close
                    ),
                ));
            }
        },
    };
    let (reasoning, rest) = inside.split_once(markers.close).ok_or_else(unclosed)?;
    Ok((Some(reasoning.to_string()), rest))
}

/// A JSON reading error as a fault.
fn read_fault(options: &CallOptions, error: ReadError) -> CallFault {
    match error {
        ReadError::Truncated => CallFault::one(
            "call-truncated",
            None,
            "the tool call ends before it is complete (was the generation cut off by its token limit?)".into(),
        ),
        ReadError::Syntax {
            message,
            line,
            column,
        } => CallFault::one(
            "call-malformed",
            None,
            format!(
                "the tool call is not valid JSON: {message} at line {line} column {column}; write it as {}",
                example(options)
            ),
        ),
        ReadError::DuplicateKey { key, pointer } => CallFault {
            faults: vec![Fault {
                code: "key-duplicate",
                tool: None,
                pointer: None,
                message: format!(
                    "the key \"{key}\" is written twice in one object{}; write each key once",
                    match pointer.as_str() {
                        "" => String::new(),
                        pointer => format!(" (at {pointer} in the JSON written)"),
                    }
                ),
            }],
        },
        ReadError::TooDeep => CallFault::one(
            "call-malformed",
            None,
            format!("the tool call nests values more than {MAX_DEPTH} levels deep, which is not read"),
        ),
    }
}

/// The calls of an answer that starts where a block of calls begins, as JSON, and the
/// text after the block: with `text_after` (an `auto` answer's text may follow), the rest
/// of the answer; without, the block must end the answer and the rest is empty. `None`
/// when it does not start with the wire format's opening (a `{` or `[` on the JSON
/// wires).
fn read_calls<'a>(
    registry: &ToolRegistry,
    options: &CallOptions,
    answer: &'a str,
    text_after: bool,
) -> Result<Option<(Vec<Json>, &'a str)>, CallFault> {
    let malformed = |message: String| CallFault::one("call-malformed", None, message);
    let parse = |text: &str| json_read::read(text).map_err(|error| read_fault(options, error));
    let several = options.parallel();
    let as_list = |value: Json| -> Result<Vec<Json>, CallFault> {
        match (value, several) {
            (Json::Array(items), true) => Ok(items),
            (Json::Array(items), false) if items.len() > 1 => Err(CallFault::one(
                "too-many-calls",
                None,
                format!(
                    "{} tool calls were written; at most 1 may be, as an object: {}",
                    items.len(),
                    example(options)
                ),
            )),
            (Json::Array(_), false) => Err(malformed(format!(
                "one tool call is written as an object, not in a list: {}",
                example(options)
            ))),
            (_, true) => Err(malformed(format!(
                "tool calls are written as a JSON list, even one: {}",
                example(options)
            ))),
            (other, false) => Ok(vec![other]),
        }
    };
    match options.wire.marked() {
        Some(marked) => read_marked(registry, options, marked, answer, text_after),
        None if answer.starts_with('{') || answer.starts_with('[') => match text_after {
            true => {
                let (value, end) =
                    json_read::read_prefix(answer).map_err(|error| read_fault(options, error))?;
                Ok(Some((as_list(value)?, &answer[end..])))
            }
            false => Ok(Some((as_list(parse(answer)?)?, ""))),
        },
        None => Ok(None),
    }
}

/// The calls of an answer in a marked wire format (see `wire.rs`), each as a call object
/// (a name written outside the JSON goes under the wire's name key, beside the
/// arguments); `None` when the answer does not start with the format's trigger.
/// Whitespace in and before a marker is read as layout.
fn read_marked<'a>(
    registry: &ToolRegistry,
    options: &CallOptions,
    marked: &Marked,
    answer: &'a str,
    text_after: bool,
) -> Result<Option<(Vec<Json>, &'a str)>, CallFault> {
    if !answer.starts_with(marked.trigger) {
        return Ok(None);
    }
    let truncated = || read_fault(options, ReadError::Truncated);
    let malformed = |expected: String, found: &str| {
        CallFault::one(
            "call-malformed",
            None,
            format!(
                "{expected}, found: {}; write the calls as {}",
                preview(found),
                example(options)
            ),
        )
    };
    let mut rest = match after_marker(answer, marked.open) {
        MarkerRead::Found(rest) => rest,
        MarkerRead::Truncated => return Err(truncated()),
        MarkerRead::Absent => {
            return Err(malformed(
                format!("the calls open with {:?}", marked.open),
                answer,
            ));
        }
    };
    // A list written empty.
    if !marked.close.is_empty()
        && let MarkerRead::Found(after) = after_marker(rest, marked.close)
        && (text_after || after.trim_matches(JSON_SPACE).is_empty())
    {
        return Ok(Some((Vec::new(), after)));
    }
    let next_call = format!("{}{}", marked.separator, marked.before);
    let mut calls = Vec::new();
    loop {
        let (call, after) = read_marked_call(registry, options, marked, rest, calls.is_empty())?;
        calls.push(call);
        rest = after;
        match after_marker(rest, &next_call) {
            MarkerRead::Found(_) => continue,
            MarkerRead::Truncated if rest.trim_matches(JSON_SPACE).is_empty() => {
                if marked.close.is_empty() {
                    return Ok(Some((calls, "")));
                }
                return Err(truncated());
            }
            // Text after a block that has no end may start like another call.
            MarkerRead::Truncated | MarkerRead::Absent if text_after && marked.close.is_empty() => {
                return Ok(Some((calls, rest)));
            }
            MarkerRead::Truncated => return Err(truncated()),
            MarkerRead::Absent => {}
        }
        return match after_marker(rest, marked.close) {
            MarkerRead::Found(after) if text_after || after.trim_matches(JSON_SPACE).is_empty() => {
                Ok(Some((calls, after)))
            }
            MarkerRead::Truncated => Err(truncated()),
            _ => Err(malformed(
                match marked.close {
                    "" => format!(
                        "only another call ({:?}) may follow a tool call",
                        next_call.trim_matches(JSON_SPACE)
                    ),
                    close => format!(
                        "after a tool call come another ({:?}) or the end of the calls ({close:?})",
                        next_call.trim_matches(JSON_SPACE)
                    ),
                },
                rest,
            )),
        };
    }
}

/// One call of a marked wire format at the start of `text` (after the separator before
/// it, unless it is the `first`), and the text after it.
fn read_marked_call<'t>(
    registry: &ToolRegistry,
    options: &CallOptions,
    marked: &Marked,
    text: &'t str,
    first: bool,
) -> Result<(Json, &'t str), CallFault> {
    let truncated = || read_fault(options, ReadError::Truncated);
    let expect = |text: &'t str, marker: &str| -> Result<&'t str, CallFault> {
        match after_marker(text, marker) {
            MarkerRead::Found(rest) => Ok(rest),
            MarkerRead::Truncated => Err(truncated()),
            MarkerRead::Absent => Err(CallFault::one(
                "call-malformed",
                None,
                format!(
                    "expected {marker:?} in the tool call, found: {}; write the calls as {}",
                    preview(text),
                    example(options)
                ),
            )),
        }
    };
    let before = match first {
        true => marked.before.to_string(),
        false => format!("{}{}", marked.separator, marked.before),
    };
    let rest = expect(text, &before)?;
    let (call, rest) = match marked.name {
        NamePlace::InObject => {
            let (call, end) =
                json_read::read_prefix(rest).map_err(|error| read_fault(options, error))?;
            (call, &rest[end..])
        }
        NamePlace::Outside { .. } | NamePlace::Parameters(_) | NamePlace::Keywords(_) => {
            let name_end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
                .unwrap_or(rest.len());
            let (name, rest) = rest.split_at(name_end);
            if rest.is_empty() {
                return Err(truncated());
            }
            if name.is_empty() {
                return Err(CallFault::one(
                    "call-malformed",
                    None,
                    format!(
                        "the tool's name comes after {:?}, found: {}; write the calls as {}",
                        marked.before,
                        preview(rest),
                        example(options)
                    ),
                ));
            }
            let (arguments, rest) = match marked.name {
                NamePlace::Keywords(literals) => {
                    let python = literals == grail_schema::Literals::Python;
                    keywords::read_arguments(python, rest).map_err(|fault| match fault {
                        ArgumentsFault::Truncated => truncated(),
                        ArgumentsFault::Malformed(message) => {
                            CallFault::one("call-malformed", Some(name), message)
                        }
                        ArgumentsFault::Value(error) => read_fault(options, error),
                    })?
                }
                NamePlace::Parameters(tags) => {
                    let rest = expect(rest, tags.after_name)?;
                    let schema = registry
                        .get(name)
                        .map_or(&Value::Null, |tool| &tool.parameters);
                    parameters::read_arguments(&tags, schema, rest).map_err(
                        |fault| match fault {
                            ArgumentsFault::Truncated => truncated(),
                            ArgumentsFault::Malformed(message) => {
                                CallFault::one("call-malformed", Some(name), message)
                            }
                            ArgumentsFault::Value(error) => read_fault(options, error),
                        },
                    )?
                }
                NamePlace::Outside { middle, tag } => {
                    let rest = read_call_tag(options, tag, rest)?;
                    let rest = expect(rest, middle)?;
                    let (arguments, end) =
                        json_read::read_prefix(rest).map_err(|error| read_fault(options, error))?;
                    (arguments, &rest[end..])
                }
                NamePlace::InObject => unreachable!("matched above"),
            };
            let call = Json::Object(vec![
                (
                    options.wire.name_key().to_string(),
                    Json::String(name.to_string()),
                ),
                (options.wire.arguments_key().to_string(), arguments),
            ]);
            (call, rest)
        }
    };
    Ok((call, expect(rest, marked.after)?))
}

/// The text after a call's tag (see [`CallTag`]) at the start of `text`.
fn read_call_tag<'t>(
    options: &CallOptions,
    tag: CallTag,
    text: &'t str,
) -> Result<&'t str, CallFault> {
    let (marker, length, what) = match tag {
        CallTag::None => return Ok(text),
        CallTag::Index => (":", 1..=MAX_INDEX_DIGITS, "the call's index"),
        CallTag::OptionalId => (CALL_ID_MARKER, CALL_ID_LEN..=CALL_ID_LEN, "the call's id"),
    };
    let rest = match after_marker(text, marker) {
        MarkerRead::Found(rest) => rest,
        MarkerRead::Truncated => return Err(read_fault(options, ReadError::Truncated)),
        MarkerRead::Absent if tag == CallTag::OptionalId => return Ok(text),
        MarkerRead::Absent => {
            return Err(CallFault::one(
                "call-malformed",
                None,
                format!(
                    "the tool's name is followed by `{marker}` and {what}, found: {}",
                    preview(text)
                ),
            ));
        }
    };
    let digits_only = tag == CallTag::Index;
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || (!digits_only && c.is_ascii_alphabetic())))
        .unwrap_or(rest.len());
    if !length.contains(&end) {
        return Err(CallFault::one(
            "call-malformed",
            None,
            format!(
                "`{marker}` is followed by {what} ({} {}), found: {}",
                match length.start() == length.end() {
                    true => format!("{}", length.start()),
                    false => format!("up to {}", length.end()),
                },
                match digits_only {
                    true => "digits",
                    false => "letters and digits",
                },
                preview(rest)
            ),
        ));
    }
    Ok(&rest[end..])
}

/// What reading a marker at the start of a text found.
enum MarkerRead<'t> {
    /// The marker, and the text after it.
    Found(&'t str),
    /// The text ends inside the marker.
    Truncated,
    /// Something else.
    Absent,
}

/// `text` after `marker`, where whitespace in the marker and before it matches any run
/// of JSON whitespace (or none).
fn after_marker<'t>(text: &'t str, marker: &str) -> MarkerRead<'t> {
    let mut rest = text;
    for expected in marker.chars() {
        rest = rest.trim_start_matches(JSON_SPACE);
        if JSON_SPACE.contains(&expected) {
            continue;
        }
        match rest.strip_prefix(expected) {
            Some(after) => rest = after,
            None if rest.is_empty() => return MarkerRead::Truncated,
            None => return MarkerRead::Absent,
        }
    }
    MarkerRead::Found(rest)
}

/// One call checked against its tool.
fn check_call(
    registry: &ToolRegistry,
    options: &CallOptions,
    raw: &Json,
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
    let Json::Object(object) = raw else {
        return Err(fault(
            "call-malformed",
            None,
            format!("a tool call is a JSON object, like {}", example(options)),
        ));
    };
    let get = |key: &str| raw.member(key);
    let Some(Json::String(name)) = get(name_key) else {
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
    if let Some((extra, _)) = object
        .iter()
        .find(|(key, _)| key != name_key && key != arguments_key)
    {
        return Err(fault(
            "call-malformed",
            Some(name),
            format!(
                "the call of tool '{name}' has a key \"{extra}\"; a call has only \"{name_key}\" and \"{arguments_key}\""
            ),
        ));
    }
    let Some(arguments) = get(arguments_key) else {
        return Err(fault(
            "call-malformed",
            Some(name),
            format!(
                "the call of tool '{name}' has no \"{arguments_key}\"; write them, {{}} when there are none: {{\"{name_key}\": \"{name}\", \"{arguments_key}\": {{}}}}"
            ),
        ));
    };
    let syntax = call_number_syntax(&options.schema.numbers);
    let mut faults = Vec::new();
    for (pointer, number) in arguments.numbers() {
        if let Some(why) = outside_syntax(number, &syntax) {
            let at = match pointer.as_str() {
                "" => String::new(),
                pointer => format!(" at {pointer}"),
            };
            faults.push(Fault {
                code: "arguments-invalid",
                tool: Some(name.clone()),
                message: format!(
                    "invalid argument{at} for tool '{name}': the number {number} has {why}"
                ),
                pointer: Some(pointer),
            });
        }
    }
    if !faults.is_empty() {
        return Err(faults);
    }
    let value = arguments
        .to_value()
        .expect("numbers within the call syntax are finite doubles");
    check_arguments(
        tool,
        &value,
        arguments,
        options.schema.additional_properties_default,
    )?;
    let mut text = String::new();
    arguments.write_compact(&mut text);
    Ok(ToolCall {
        id: call_id(name, &text, index),
        name: name.clone(),
        arguments: Arguments::new(text, value),
    })
}

/// The arguments checked against the tool's schema (with undeclared properties refused
/// where the schema does not say, unless `open_objects`, as the grammar reads it).
/// `written` is the arguments as written: a bound the `jsonschema` crate finds broken by a
/// number it read as a double is checked again on the number's text, exactly (as the
/// grammar reads bounds), so a value within a double's rounding of its bound is not
/// refused when it meets the bound.
fn check_arguments(
    tool: &Tool,
    arguments: &Value,
    written: &Json,
    open_objects: bool,
) -> Result<(), Vec<Fault>> {
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
        if meets_bound_exactly(error.kind(), written, &pointer) == Some(true) {
            continue;
        }
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

/// For a broken numeric bound (`minimum`, `maximum` and their exclusive forms), whether
/// the number written at `pointer` meets it when both are read as exact decimals.
fn meets_bound_exactly(
    kind: &jsonschema::error::ValidationErrorKind,
    written: &Json,
    pointer: &str,
) -> Option<bool> {
    use jsonschema::error::ValidationErrorKind as Kind;
    use std::cmp::Ordering;
    let (limit, meets): (&Value, fn(Ordering) -> bool) = match kind {
        Kind::Minimum { limit } => (limit, |order| order != Ordering::Less),
        Kind::ExclusiveMinimum { limit } => (limit, |order| order == Ordering::Greater),
        Kind::Maximum { limit } => (limit, |order| order != Ordering::Greater),
        Kind::ExclusiveMaximum { limit } => (limit, |order| order == Ordering::Less),
        _ => return None,
    };
    let Value::Number(limit) = limit else {
        return None;
    };
    let value = Decimal::parse(written.number_at(pointer)?).ok()?;
    Some(meets(value.cmp(&Decimal::from_json(limit))))
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
fn call_id(name: &str, arguments: &str, index: usize) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let text = format!("{index}\u{0}{name}\u{0}{arguments}");
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("call_{hash:016x}")
}

/// How the calls look in the wire format, for messages (a list when several may be
/// written).
fn example(options: &CallOptions) -> String {
    options
        .wire
        .write_calls(&[("<tool>", "{...}")], options.parallel())
}

/// The start of some text, for messages.
pub(crate) fn preview(text: &str) -> String {
    let mut shown: String = text.chars().take(40).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    format!("{shown:?}")
}
