//! The tool-call grammar: one alternative per tool, the tool's name fixing its arguments'
//! schema (a discriminated union), written in a wire format, with the choice of calling,
//! several calls, and a reasoning block before them.
//!
//! The calls are written as one JSON Schema would be, `{"anyOf": [<call of tool 0>, <call
//! of tool 1>, …]}`, where the call of a tool is an object whose name property is the
//! constant name and whose arguments property is the tool's own schema (its `$ref`s stay
//! relative to it): `grail_schema::calls_to_grammar_framed` writes it without building
//! that schema, so every keyword of every tool is enforced (or the tool is refused, naming
//! the keyword), and the name literal, written first, decides which arguments may follow.
//! The wire format, the number of calls, free text and the reasoning block are written
//! around it.

use grail_grammar::{Expr, Grammar, GrammarBuilder, print_grammar};
use grail_schema::{
    ArgumentRules, Call, CallKeys, SchemaDiagnostic, SchemaError, SchemaOptions, Severity,
};

use serde_json::Value;

use crate::answer::{CallStart, JSON_SPACE, call_first_chars, not_first};
use crate::error::ToolsError;
use crate::keywords;
use crate::markers::{marker, until_marker};
use crate::numbers::call_number_syntax;
use crate::parameters;
use crate::registry::{Tool, ToolRegistry};
use crate::wire::{
    CALL_ID_LEN, CALL_ID_MARKER, CallTag, MAX_INDEX_DIGITS, Marked, NamePlace, WireFormat,
};

/// The largest bound on the calls of one answer ([`CallOptions::max_calls`]): a bound is
/// written as rules (one per call left), so a larger one is refused, not built.
pub const MAX_CALLS_BOUND: u32 = 1024;

/// Whether and which tool the model must call (OpenAI's `tool_choice`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// Free text or a call.
    #[default]
    Auto,
    /// A call (of any tool).
    Required,
    /// Free text only.
    None,
    /// A call of this tool.
    Named(String),
}

/// A reasoning block before the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Think {
    /// None.
    #[default]
    Off,
    /// `<think>…</think>` may come first.
    Optional,
    /// `<think>…</think>` comes first (seed 003's think-then-respond).
    Required,
    /// The prompt already opened `<think>`: the answer starts inside it and must close it.
    Forced,
}

/// How to write the tool-call grammar.
#[derive(Debug, Clone)]
pub struct CallOptions {
    /// The wire format.
    pub wire: WireFormat,
    /// Whether to call, and what.
    pub choice: ToolChoice,
    /// Most calls in one answer: `Some(1)` (the default; `Some(0)` reads the same) is one
    /// call; more allows several (a list, or several blocks); `None` no maximum.
    pub max_calls: Option<u32>,
    /// A reasoning block first.
    pub think: Think,
    /// How the arguments' schemas are converted: strict, and (unlike plain JSON Schema,
    /// like llama.cpp and OpenAI's strict function calling) objects that declare
    /// `properties` take no others unless `additionalProperties` says so:
    /// `additional_properties_default` is false, so a model cannot invent arguments. The
    /// validator reads the schemas the same way. Numbers are written within
    /// [`crate::CALL_INTEGER_DIGITS`] and, with an exponent, in scientific form with
    /// [`crate::CALL_EXPONENT_DIGITS`] on top of `numbers`' caps (so every one is a finite
    /// double), and the validator checks that.
    pub schema: SchemaOptions,
    /// The model's special tokens among the wire format's markers, as (text, id) (see
    /// [`WireFormat::marker_tokens`]): a marker holding one is written as the token
    /// (`<[id]>`), as the model writes it, not as text. Empty (the default): markers are
    /// text, a grammar for any vocabulary.
    pub special_tokens: Vec<(String, u32)>,
}

impl Default for CallOptions {
    fn default() -> CallOptions {
        CallOptions {
            wire: WireFormat::default(),
            choice: ToolChoice::default(),
            max_calls: Some(1),
            think: Think::default(),
            schema: SchemaOptions {
                additional_properties_default: false,
                ..SchemaOptions::default()
            },
            special_tokens: Vec::new(),
        }
    }
}

impl CallOptions {
    /// True when several calls may be written.
    pub fn parallel(&self) -> bool {
        self.max_calls != Some(1) && self.max_calls != Some(0)
    }
}

/// A tool-call grammar with what went into it.
#[derive(Debug, Clone)]
pub struct ToolGrammar {
    /// The grammar (root `root`).
    pub grammar: Grammar,
    /// The tools it may call, in registry order.
    pub tools: Vec<String>,
    /// Warnings from the schemas (lenient mode: every weakened keyword) and notes, with
    /// the tool they belong to.
    pub diagnostics: Vec<(String, SchemaDiagnostic)>,
}

impl ToolGrammar {
    /// The grammar as GBNF.
    pub fn gbnf(&self) -> String {
        print_grammar(&self.grammar)
    }
}

/// Builds the tool-call grammar of `registry`'s tools (see the module doc).
pub fn tool_call_grammar(
    registry: &ToolRegistry,
    options: &CallOptions,
) -> Result<ToolGrammar, ToolsError> {
    let tools: Vec<&Tool> = match &options.choice {
        ToolChoice::None => Vec::new(),
        ToolChoice::Named(name) => match registry.get(name) {
            Some(tool) => vec![tool],
            None => {
                return Err(ToolsError::Options(format!(
                    "tool_choice names `{name}`, which is not in the registry (its tools: {})",
                    tool_names(registry.tools.iter())
                )));
            }
        },
        ToolChoice::Required if registry.tools.is_empty() => {
            return Err(ToolsError::Options(
                "a call is required, but no tool is offered (the pool filter may have left none); answer without tools (tool_choice none)".into(),
            ));
        }
        // With no tools (all filtered out), `auto` leaves free text.
        ToolChoice::Auto | ToolChoice::Required => registry.tools.iter().collect(),
    };
    if let Some(max) = options.max_calls
        && max > MAX_CALLS_BOUND
    {
        return Err(ToolsError::Options(format!(
            "at most {MAX_CALLS_BOUND} calls in an answer can be bounded, not {max}; ask for no maximum instead"
        )));
    }
    if let Some(most) = options.wire.marked().and_then(|marked| marked.most_calls)
        && options.max_calls.is_none_or(|max| max > most)
    {
        return Err(ToolsError::Options(format!(
            "the {} format holds at most {most} call in an answer (generation stops after it); ask for one call",
            options.wire.label()
        )));
    }
    let text_open = options.wire.marked().and_then(|marked| marked.text_open);
    if tools.is_empty() {
        let mut builder = GrammarBuilder::new();
        let body = match text_open {
            Some(open) => framed_text(&options.special_tokens, open),
            None => free_text(&mut builder, &not_first(options.think, &[])),
        };
        let body = with_think(&mut builder, options, body);
        let root = builder.root();
        builder
            .define(root, body)
            .expect("the root is defined once");
        let grammar = builder.build().expect("every rule is defined");
        return Ok(ToolGrammar {
            grammar,
            tools: Vec::new(),
            diagnostics: Vec::new(),
        });
    }
    let calls: Vec<Call<'_>> = tools
        .iter()
        .map(|tool| Call {
            name: &tool.name,
            arguments: &tool.parameters,
        })
        .collect();
    let mut frame = |builder: &mut GrammarBuilder, call: Expr, space: Expr| {
        let block = Block::of(options, call, space);
        let body = match options.choice {
            // The calls, or text in the format's frame.
            ToolChoice::Auto if let Some(open) = text_open => {
                let text = framed_text(&options.special_tokens, open);
                Expr::choice([block.calls(options.max_calls), text])
            }
            // Text and blocks of calls, in turn: see `answer.rs`.
            ToolChoice::Auto => triggered(builder, options, block),
            _ => block.calls(options.max_calls),
        };
        with_think(builder, options, body)
    };
    let schema = SchemaOptions {
        numbers: call_number_syntax(&options.schema.numbers),
        literals: options.wire.literals(),
        ..options.schema.clone()
    };
    let converted = match options.wire.marked() {
        Some(marked) if options.wire.name_outside() => {
            let mut raw_text = None;
            let mut write_call = |name: &str, rules: &mut ArgumentRules<'_, '_>| {
                let schema = &registry.get(name).expect("a registry tool").parameters;
                named_call(
                    marked,
                    &options.special_tokens,
                    name,
                    schema,
                    rules,
                    &mut raw_text,
                )
            };
            grail_schema::named_calls_to_grammar_framed(
                &calls,
                &schema,
                "tool-call",
                &mut write_call,
                &mut frame,
            )
        }
        _ => {
            let keys = CallKeys {
                name: options.wire.name_key(),
                arguments: options.wire.arguments_key(),
            };
            grail_schema::calls_to_grammar_framed(&calls, keys, &schema, "tool-call", &mut frame)
        }
    }
    .map_err(|error| match error {
        SchemaError::Refused { diagnostics } => ToolsError::SchemaRefused {
            refusals: diagnostics
                .into_iter()
                .filter(|diagnostic| diagnostic.severity == Severity::Error)
                .map(|diagnostic| by_tool(&tools, options.wire, diagnostic))
                .collect(),
        },
        other => ToolsError::Options(other.to_string()),
    })?;
    Ok(ToolGrammar {
        grammar: converted.grammar,
        tools: tools.iter().map(|tool| tool.name.clone()).collect(),
        diagnostics: converted
            .diagnostics
            .into_iter()
            .map(|diagnostic| by_tool(&tools, options.wire, diagnostic))
            .collect(),
    })
}

/// Seed 003's classification grammar: exactly one of `labels` (`root ::= "CODE" |
/// "REASONING"`). Labels must be distinct and non-empty.
pub fn classification_grammar(labels: &[String]) -> Result<Grammar, ToolsError> {
    if labels.is_empty() {
        return Err(ToolsError::Options(
            "a classification needs at least one label".into(),
        ));
    }
    for (index, label) in labels.iter().enumerate() {
        if label.is_empty() {
            return Err(ToolsError::Options(format!("label {index} is empty")));
        }
        if labels[..index].contains(label) {
            return Err(ToolsError::Options(format!(
                "the label `{label}` is given twice"
            )));
        }
    }
    let mut builder = GrammarBuilder::new();
    let root = builder.root();
    let body = Expr::choice(labels.iter().map(|label| Expr::literal(label.clone())));
    builder
        .define(root, body)
        .expect("the root is defined once");
    Ok(builder.build().expect("every rule is defined"))
}

/// `a`, `b`, `c`.
pub(crate) fn tool_names<'t>(tools: impl Iterator<Item = &'t Tool>) -> String {
    tools
        .map(|tool| format!("`{}`", tool.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where a tool's arguments schema sits in the calls' schema that
/// [`grail_schema::calls_to_grammar_framed`] (or, for a name outside the JSON,
/// [`grail_schema::named_calls_to_grammar_framed`]) documents, the pointers of its
/// diagnostics (tool names need no escaping in a JSON pointer: they have no `/` or `~`).
fn arguments_place(tool: &str, wire: WireFormat) -> String {
    match wire.name_outside() {
        true => format!("/$defs/{tool}"),
        false => format!("/$defs/{tool}/properties/{}", wire.arguments_key()),
    }
}

/// A diagnostic of the combined schema as (tool, diagnostic inside the tool's schema).
fn by_tool(
    tools: &[&Tool],
    wire: WireFormat,
    mut diagnostic: SchemaDiagnostic,
) -> (String, SchemaDiagnostic) {
    for tool in tools {
        // Inside the arguments' schema, or (a finding about the call as a whole, such as
        // where a depth cap applies) at the tool's call.
        let places = [
            arguments_place(&tool.name, wire),
            format!("/$defs/{}", tool.name),
        ];
        for place in places {
            if let Some(inside) = diagnostic.pointer.strip_prefix(&place)
                && (inside.is_empty() || inside.starts_with('/'))
            {
                diagnostic.pointer = inside.to_string();
                return (tool.name.clone(), diagnostic);
            }
        }
    }
    (String::new(), diagnostic)
}

/// A block of calls as the wire format writes them: what opens it, each call, what
/// comes between two calls, what closes it.
struct Block {
    open: Expr,
    call: Expr,
    separator: Expr,
    close: Expr,
}

impl Block {
    /// The block of `options`' wire format, `call` being one call (an object, or on a
    /// wire that writes the name outside the JSON, the whole call: see [`named_call`]),
    /// `space` JSON's whitespace.
    fn of(options: &CallOptions, call: Expr, space: Expr) -> Block {
        match options.wire.marked() {
            Some(marked) => {
                let text = |text: &str| marker(&options.special_tokens, text);
                Block {
                    open: text(marked.open),
                    call: match marked.name {
                        NamePlace::InObject => {
                            Expr::sequence([text(marked.before), call, text(marked.after)])
                        }
                        NamePlace::Outside { .. }
                        | NamePlace::Parameters(_)
                        | NamePlace::Keywords(_) => call,
                    },
                    separator: text(marked.separator),
                    close: text(marked.close),
                }
            }
            // Several calls on a JSON wire are a list.
            None if options.parallel() => Block {
                open: Expr::sequence([Expr::literal("["), space.clone()]),
                call,
                separator: Expr::sequence([Expr::literal(","), space.clone()]),
                close: Expr::sequence([space, Expr::literal("]")]),
            },
            None => Block {
                open: Expr::Empty,
                call,
                separator: Expr::Empty,
                close: Expr::Empty,
            },
        }
    }

    /// One block of at most `max_calls` calls (see [`CallOptions::max_calls`]).
    fn calls(self, max_calls: Option<u32>) -> Expr {
        let more = Expr::sequence([self.separator, self.call.clone()]);
        let more = match max_calls {
            None => more.zero_or_more(),
            Some(0 | 1) => Expr::Empty,
            Some(max) => more.repeat(0, Some(max - 1)),
        };
        Expr::sequence([self.open, self.call, more, self.close])
    }
}

/// The answer of `tool_choice` `auto` (see `answer.rs`): free text, or a block of calls,
/// then text and blocks in turn, at most [`CallOptions::max_calls`] calls in all (one
/// block ending the answer where the format has no text after calls: see
/// [`WireFormat::text_after_calls`]). The
/// text before the first block starts with none of the characters a block or a
/// reasoning block starts with; every text avoids a call's start, so a block begins
/// exactly where one is written.
fn triggered(builder: &mut GrammarBuilder, options: &CallOptions, block: Block) -> Expr {
    let first = Expr::chars_except(
        not_first(options.think, call_first_chars(options.wire))
            .into_iter()
            .map(|c| (c, c)),
    );
    let text = CallStart::of(options).avoiding(builder, "text");
    let lead = Expr::sequence([first, text.clone()]);
    if !options.wire.text_after_calls() {
        let calls = block.calls(options.max_calls);
        return Expr::choice([calls.clone(), Expr::sequence([lead, calls.optional()])]);
    }
    let call = match block.call {
        Expr::Rule(_) => block.call,
        call => Expr::Rule(builder.rule("call", call).expect("a new rule")),
    };
    let most = match options.parallel() {
        true => options.max_calls,
        false => Some(1),
    };
    let blocks = match most {
        // Blocks of any number of calls, text after each.
        None => {
            let one = Expr::sequence([
                block.open,
                call.clone(),
                Expr::sequence([block.separator, call]).zero_or_more(),
                block.close,
            ]);
            let one = Expr::Rule(builder.rule("calls", one).expect("a new rule"));
            Expr::sequence([
                one.clone(),
                Expr::sequence([text.clone(), one]).zero_or_more(),
                text,
            ])
        }
        // `calls-K`, inside a block with K calls left: a call, then another in the
        // block, or the block's end, text, and perhaps a block of at most K - 1.
        Some(most) => {
            let rules: Vec<_> = (1..=most)
                .map(|left| builder.declare(&format!("calls-{left}")))
                .collect();
            for (index, &rule) in rules.iter().enumerate() {
                let after = match index {
                    0 => Expr::sequence([block.close.clone(), text.clone()]),
                    _ => {
                        let fewer = Expr::Rule(rules[index - 1]);
                        Expr::choice([
                            Expr::sequence([block.separator.clone(), fewer.clone()]),
                            Expr::sequence([
                                block.close.clone(),
                                text.clone(),
                                Expr::sequence([block.open.clone(), fewer]).optional(),
                            ]),
                        ])
                    }
                };
                builder
                    .define(rule, Expr::sequence([call.clone(), after]))
                    .expect("declared above");
            }
            let last = *rules.last().expect("at least one call");
            Expr::sequence([block.open, Expr::Rule(last)])
        }
    };
    Expr::choice([blocks.clone(), Expr::sequence([lead, blocks.optional()])])
}

/// One call of a wire that writes the name outside the JSON: the call's opening and
/// the tool's name, its tag (an index, an id) where the wire writes one, the text before the
/// arguments, the arguments (as JSON, or each apart in tags: see `parameters.rs`), the
/// call's end. `schema` is the tool's arguments' schema.
fn named_call(
    marked: &Marked,
    tokens: &[(String, u32)],
    name: &str,
    schema: &Value,
    rules: &mut ArgumentRules<'_, '_>,
    raw_text: &mut Option<Expr>,
) -> Expr {
    let text = |text: &str| marker(tokens, text);
    let opening = Expr::sequence([text(marked.before), Expr::literal(name.to_string())]);
    let (middle, tag) = match marked.name {
        NamePlace::Outside { middle, tag } => (middle, tag),
        NamePlace::Parameters(tags) => {
            return Expr::sequence([
                opening,
                text(tags.after_name),
                parameters::arguments_expr(&tags, tokens, schema, rules, raw_text),
                text(marked.after),
            ]);
        }
        NamePlace::Keywords(_) => {
            return Expr::sequence([
                opening,
                Expr::literal("("),
                keywords::arguments_expr(schema, rules),
                Expr::literal(")"),
                text(marked.after),
            ]);
        }
        NamePlace::InObject => unreachable!("only for names outside the JSON"),
    };
    let arguments = rules.whole();
    let mut items = vec![opening];
    match tag {
        CallTag::None => {}
        CallTag::Index => {
            items.push(Expr::literal(":"));
            items.push(Expr::chars([('0', '9')]).repeat(1, Some(MAX_INDEX_DIGITS as u32)));
        }
        CallTag::OptionalId => {
            let id = Expr::chars([('0', '9'), ('A', 'Z'), ('a', 'z')])
                .repeat(CALL_ID_LEN as u32, Some(CALL_ID_LEN as u32));
            items.push(Expr::sequence([text(CALL_ID_MARKER), id]).optional());
        }
    }
    items.extend([text(middle), arguments, text(marked.after)]);
    Expr::sequence(items)
}

/// Free text: at least one character, the first none of `not_first` (whitespace, and
/// `<` when a reasoning block may come first).
fn free_text(builder: &mut GrammarBuilder, not_first: &[char]) -> Expr {
    let excluded = not_first.iter().map(|&c| (c, c));
    let body = Expr::sequence([Expr::chars_except(excluded), Expr::Any.zero_or_more()]);
    let rule = builder
        .rule("text", body)
        .expect("a new rule is defined once");
    Expr::Rule(rule)
}

/// Text in a format's frame: `open`, then text that does not start with whitespace
/// (the answer's text is never empty or padded, as free text).
fn framed_text(tokens: &[(String, u32)], open: &str) -> Expr {
    let first = Expr::chars_except(JSON_SPACE.into_iter().map(|c| (c, c)));
    Expr::sequence([marker(tokens, open), first, Expr::Any.zero_or_more()])
}

/// `body` after the reasoning block the options ask for, in `wire`'s markers.
fn with_think(builder: &mut GrammarBuilder, options: &CallOptions, body: Expr) -> Expr {
    let markers = options.wire.reasoning();
    let tokens = &options.special_tokens;
    let after = Expr::chars([(' ', ' '), ('\t', '\t'), ('\n', '\n'), ('\r', '\r')]).zero_or_more();
    let open = marker(tokens, markers.open);
    match options.think {
        Think::Off => body,
        Think::Optional => {
            let block = Expr::sequence([
                open,
                until_marker(builder, "think", markers.close, tokens),
                after,
            ]);
            Expr::sequence([block.optional(), body])
        }
        Think::Required => Expr::sequence([
            open,
            until_marker(builder, "think", markers.close, tokens),
            after,
            body,
        ]),
        Think::Forced => Expr::sequence([
            until_marker(builder, "think", markers.close, tokens),
            after,
            body,
        ]),
    }
}
