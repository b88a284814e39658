//! Tool calls as they are written: an answer read piece by piece into the deltas
//! OpenAI's streaming carries (reasoning, text, each call's name, then its arguments in
//! pieces), never taking back what was sent.
//!
//! Only what the rest of the answer cannot change is sent: text that could still turn
//! out to be a call's start, or whitespace the answer's text is trimmed of, waits for the
//! next piece; a tool's name is sent once it is whole. The reading trusts the grammar:
//! it follows the wire format as the grammar writes it, so an answer must have been
//! matched by the tool-call grammar, byte for byte, before it is pushed here. Formats
//! that write arguments apart (in tags: `qwen3-xml`, `glm`; as keyword arguments:
//! `pythonic`, `gemma3`) have no JSON to stream:
//! [`CallStream::streams_live`] is false for them.

use crate::answer::{CallStart, JSON_SPACE, call_first_chars, next_calls};
use crate::grammar::{CallOptions, Think, ToolChoice};
use crate::validate::joined_text;
use crate::wire::{CALL_ID_LEN, CALL_ID_MARKER, CallTag, Marked, NamePlace, ReasoningMarkers};

/// One piece of a streamed answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamDelta {
    /// More of the reasoning block's text.
    Reasoning(String),
    /// More of the answer's text.
    Content(String),
    /// A call begins: its index among the answer's calls and its tool.
    Call {
        /// The call's index.
        index: usize,
        /// The tool's name.
        name: String,
    },
    /// More of a call's arguments (JSON text, as written).
    Arguments {
        /// The call's index.
        index: usize,
        /// The text.
        piece: String,
    },
}

/// An answer read as it is written (see the module doc).
#[derive(Debug, Clone)]
pub struct CallStream {
    options: CallOptions,
    start: CallStart,
    text: String,
    sent_reasoning: usize,
    sent_content: usize,
    /// For each call whose name was sent, the bytes of its arguments sent.
    sent_arguments: Vec<usize>,
    /// Whether the answer is over (nothing more can change what was held back).
    ended: bool,
}

/// What the answer so far shows for certain.
#[derive(Debug, Default)]
struct Shown<'t> {
    reasoning: &'t str,
    /// The texts settled so far, as the validator joins them ([`joined_text`]).
    content: String,
    /// Each call with a whole name: the name and its arguments so far.
    calls: Vec<(&'t str, &'t str)>,
}

impl CallStream {
    /// Whether answers in `options`' wire format can be streamed as written.
    pub fn streams_live(options: &CallOptions) -> bool {
        !matches!(
            options.wire.marked().map(|marked| marked.name),
            Some(NamePlace::Parameters(_) | NamePlace::Keywords(_))
        )
    }

    /// A stream of an answer written under `options`.
    pub fn new(options: &CallOptions) -> CallStream {
        CallStream {
            options: options.clone(),
            start: CallStart::of(options),
            text: String::new(),
            sent_reasoning: 0,
            sent_content: 0,
            sent_arguments: Vec::new(),
            ended: false,
        }
    }

    /// The answer is over: the deltas of what was held back for what might follow.
    pub fn finish(&mut self) -> Vec<StreamDelta> {
        self.ended = true;
        self.push("")
    }

    /// Reads `piece`; the deltas it settles.
    pub fn push(&mut self, piece: &str) -> Vec<StreamDelta> {
        self.text.push_str(piece);
        let shown = self.shown();
        let mut deltas = Vec::new();
        if shown.reasoning.len() > self.sent_reasoning {
            deltas.push(StreamDelta::Reasoning(
                shown.reasoning[self.sent_reasoning..].to_string(),
            ));
        }
        if shown.content.len() > self.sent_content {
            deltas.push(StreamDelta::Content(
                shown.content[self.sent_content..].to_string(),
            ));
        }
        let (reasoning, content) = (shown.reasoning.len(), shown.content.len());
        let calls: Vec<(String, String)> = shown
            .calls
            .iter()
            .map(|(name, arguments)| (name.to_string(), arguments.to_string()))
            .collect();
        self.sent_reasoning = self.sent_reasoning.max(reasoning);
        self.sent_content = self.sent_content.max(content);
        for (index, (name, arguments)) in calls.into_iter().enumerate() {
            if index == self.sent_arguments.len() {
                deltas.push(StreamDelta::Call { index, name });
                self.sent_arguments.push(0);
            }
            let sent = self.sent_arguments[index];
            if arguments.len() > sent {
                deltas.push(StreamDelta::Arguments {
                    index,
                    piece: arguments[sent..].to_string(),
                });
                self.sent_arguments[index] = arguments.len();
            }
        }
        deltas
    }

    /// What the text so far shows for certain.
    fn shown(&self) -> Shown<'_> {
        let text = self.text.as_str();
        let markers = self.options.wire.reasoning();
        let (reasoning, rest) = reasoning_split(self.options.think, markers, text, self.ended);
        let mut shown = Shown {
            reasoning,
            ..Shown::default()
        };
        let Some(rest) = rest else {
            return shown;
        };
        let rest = rest.trim_start_matches(JSON_SPACE);
        // A format that frames its text (harmony's final channel).
        if let Some(open) = self
            .options
            .wire
            .marked()
            .and_then(|marked| marked.text_open)
        {
            if let Some(text) = rest.strip_prefix(open) {
                shown.content = text.trim_matches(JSON_SPACE).to_string();
                return shown;
            }
            if open.starts_with(rest) {
                return shown;
            }
        }
        match &self.options.choice {
            ToolChoice::None => {
                shown.content = rest.trim_end_matches(JSON_SPACE).to_string();
            }
            ToolChoice::Required | ToolChoice::Named(_) => {
                shown.calls = self.calls_shown(rest).0;
            }
            ToolChoice::Auto => self.turns_shown(rest, &mut shown),
        }
        shown
    }

    /// What an `auto` answer (from its first character) shows for certain: text and
    /// blocks of calls in turn (see `answer.rs`), text held back while it may still turn
    /// out to be a call's start or trailing whitespace.
    fn turns_shown<'t>(&self, mut rest: &'t str, shown: &mut Shown<'t>) {
        let mut texts: Vec<&str> = Vec::new();
        let mut first = true;
        loop {
            let begin = match rest.chars().next() {
                None if first => return,
                Some(c) if first && call_first_chars(self.options.wire).contains(&c) => Some(0),
                _ => next_calls(&self.options, &self.start, rest),
            };
            first = false;
            let Some(begin) = begin else {
                let settled = match self.start.pending(rest) {
                    Some(pending) if !self.ended => &rest[..pending],
                    _ => rest,
                };
                let settled = settled.trim_end_matches(JSON_SPACE);
                texts.push(match self.json_list() && !self.ended {
                    true => settled.strip_suffix('[').unwrap_or(settled),
                    false => settled,
                });
                break;
            };
            texts.push(&rest[..begin]);
            let (calls, after) = self.calls_shown(&rest[begin..]);
            shown.calls.extend(calls);
            match after {
                Some(after) if self.options.wire.text_after_calls() => rest = after,
                _ => break,
            }
        }
        shown.content = joined_text(&texts).unwrap_or_default();
    }

    /// True when several calls are a JSON list (the JSON wires with several calls).
    fn json_list(&self) -> bool {
        self.options.parallel() && self.options.wire.marked().is_none()
    }

    /// The calls of the block of calls `text` starts with, with whole names, and the text
    /// after the block once its end is certain.
    fn calls_shown<'t>(&self, text: &'t str) -> (Vec<(&'t str, &'t str)>, Option<&'t str>) {
        let mut cursor = Cursor { rest: text };
        let mut calls = Vec::new();
        match self.options.wire.marked() {
            None => {
                let list = self.json_list();
                if list && !cursor.space_then("[") {
                    return (calls, None);
                }
                loop {
                    cursor.space();
                    let Some(call) = cursor.object_call(&self.options) else {
                        return (calls, None);
                    };
                    let complete = call.2;
                    calls.push((call.0, call.1));
                    if !complete {
                        return (calls, None);
                    }
                    if !list {
                        return (calls, Some(cursor.rest));
                    }
                    if cursor.space_then(",") {
                        continue;
                    }
                    let end = cursor.space_then("]").then_some(cursor.rest);
                    return (calls, end);
                }
            }
            Some(marked) => {
                if !cursor.eat(marked.open) {
                    return (calls, None);
                }
                loop {
                    if !calls.is_empty() {
                        // The block goes on, or ends: certain once the text after the
                        // call is neither the next call's start nor may become it.
                        let next = format!("{}{}", marked.separator, marked.before);
                        if cursor.rest.starts_with(&next) {
                            cursor.eat(marked.separator);
                        } else if marked.close.is_empty() {
                            let undecided = next.starts_with(cursor.rest) && !self.ended;
                            return (calls, (!undecided).then_some(cursor.rest));
                        } else {
                            let end = cursor.eat(marked.close).then_some(cursor.rest);
                            return (calls, end);
                        }
                    }
                    let Some((name, arguments, complete)) =
                        cursor.marked_call(&self.options, marked)
                    else {
                        return (calls, None);
                    };
                    calls.push((name, arguments));
                    if !complete || !cursor.eat(marked.after) {
                        return (calls, None);
                    }
                }
            }
        }
    }
}

/// The reasoning block's settled text and, once the block is over (or there is none),
/// the rest of the answer; all of it when the answer has `ended`.
fn reasoning_split(
    think: Think,
    markers: ReasoningMarkers,
    text: &str,
    ended: bool,
) -> (&str, Option<&str>) {
    let inside = match think {
        Think::Off => return ("", Some(text)),
        Think::Forced => text,
        Think::Optional | Think::Required => {
            let trimmed = text.trim_start_matches(JSON_SPACE);
            match trimmed.strip_prefix(markers.open) {
                Some(inside) => inside,
                // Not yet known whether the block comes.
                None if markers.open.starts_with(trimmed) && !ended => return ("", None),
                None => return ("", Some(text)),
            }
        }
    };
    let close = markers.close;
    match inside.split_once(close) {
        Some((reasoning, rest)) => (reasoning, Some(rest)),
        None if ended => (inside, None),
        None => {
            // Hold back what may be the start of the closing tag.
            let held = (1..close.len())
                .rev()
                .find(|&length| inside.ends_with(&close[..length]))
                .unwrap_or(0);
            (&inside[..inside.len() - held], None)
        }
    }
}

/// A reading position in the calls' text.
struct Cursor<'t> {
    rest: &'t str,
}

impl<'t> Cursor<'t> {
    /// Skips JSON whitespace.
    fn space(&mut self) {
        self.rest = self.rest.trim_start_matches(JSON_SPACE);
    }

    /// Skips `literal` when the text has it whole.
    fn eat(&mut self, literal: &str) -> bool {
        match self.rest.strip_prefix(literal) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    /// Skips whitespace, then `literal` when the text has it whole.
    fn space_then(&mut self, literal: &str) -> bool {
        self.space();
        self.eat(literal)
    }

    /// A call object `{"<name key>": "NAME", "<arguments key>": VALUE}` (the name first,
    /// as the grammar writes it): the name, the arguments so far, and whether the object
    /// is whole. None until the name is.
    fn object_call(&mut self, options: &CallOptions) -> Option<(&'t str, &'t str, bool)> {
        let key = |key: &str| format!("\"{key}\"");
        if !(self.eat("{")
            && self.space_then(&key(options.wire.name_key()))
            && self.space_then(":")
            && self.space_then("\""))
        {
            return None;
        }
        // Tool names need no escapes.
        let end = self.rest.find('"')?;
        let name = &self.rest[..end];
        self.rest = &self.rest[end + 1..];
        if !(self.space_then(",")
            && self.space_then(&key(options.wire.arguments_key()))
            && self.space_then(":"))
        {
            return Some((name, "", false));
        }
        self.space();
        let (arguments, complete) = self.value();
        Some((name, arguments, complete && self.space_then("}")))
    }

    /// A call of a marked format (from its `before`): the name, the arguments so far,
    /// and whether they are whole. None until the name is.
    fn marked_call(
        &mut self,
        options: &CallOptions,
        marked: &Marked,
    ) -> Option<(&'t str, &'t str, bool)> {
        if !self.eat(marked.before) {
            return None;
        }
        let (middle, tag) = match marked.name {
            NamePlace::InObject => return self.object_call(options),
            NamePlace::Outside { middle, tag } => (middle, tag),
            NamePlace::Parameters(_) | NamePlace::Keywords(_) => return None,
        };
        // The name is whole once something else follows it.
        let end = self
            .rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))?;
        let name = &self.rest[..end];
        self.rest = &self.rest[end..];
        let tagged = match tag {
            CallTag::None => true,
            CallTag::Index => {
                self.eat(":")
                    && match self.rest.find(|c: char| !c.is_ascii_digit()) {
                        Some(digits) => {
                            self.rest = &self.rest[digits..];
                            true
                        }
                        None => false,
                    }
            }
            CallTag::OptionalId => match self.rest.strip_prefix(CALL_ID_MARKER) {
                Some(id) if id.len() > CALL_ID_LEN => {
                    self.rest = &id[CALL_ID_LEN..];
                    true
                }
                Some(_) => false,
                None => !CALL_ID_MARKER.starts_with(self.rest),
            },
        };
        if !(tagged && self.eat(middle)) {
            return Some((name, "", false));
        }
        let (arguments, complete) = self.value();
        Some((name, arguments, complete))
    }

    /// The JSON value here: its text so far, and whether it is whole.
    fn value(&mut self) -> (&'t str, bool) {
        let text = self.rest;
        let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
        for (index, c) in text.char_indices() {
            if in_string {
                match (escaped, c) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '"') => {
                        in_string = false;
                        if depth == 0 {
                            return self.take(index + 1);
                        }
                    }
                    _ => {}
                }
                continue;
            }
            match c {
                '"' => in_string = true,
                '{' | '[' => depth += 1,
                '}' | ']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return self.take(index + 1);
                    }
                }
                // A bare value (a number, `true`) ends at what cannot continue it.
                c if depth == 0 && (JSON_SPACE.contains(&c) || matches!(c, ',' | '<' | '\n')) => {
                    return self.take(index);
                }
                _ => {}
            }
        }
        self.rest = "";
        (text, false)
    }

    /// The next `length` bytes as a whole value.
    fn take(&mut self, length: usize) -> (&'t str, bool) {
        let (value, rest) = self.rest.split_at(length);
        self.rest = rest;
        (value, true)
    }
}
