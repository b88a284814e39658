//! From a chat request to a plan: the conversation the model reads, the one grammar that
//! holds every constraint of the request at once, and how the answer is checked.
//!
//! - `tools` (with `tool_choice` and `parallel_tool_calls`) become grail-tools' tool-call
//!   grammar in the server's wire format, and the tools' system prompt.
//! - `response_format` (`json_object`, `json_schema`) or `grammar` (GBNF) constrain the
//!   answer's text. With tools and `tool_choice: auto`, the answer is a call *or* text
//!   of that constraint (the union of both grammars). Both `response_format` and
//!   `grammar` in one request is refused: two grammars over one text cannot be
//!   intersected in general.
//! - Every refusal names the request field (a refused schema: its tool, JSON pointer
//!   and keyword).

use std::collections::HashMap;
use std::sync::Arc;

use grail_engine::{CompileError, CompileOptions, CompiledGrammar, EngineLimits};
use grail_gen::{
    Message, MessageToolCall, ReasoningBudget, SamplingParams, TemplateVariables, ToolsShown,
    messages_with_tools,
};
use grail_grammar::{CheckOptions, Grammar, compose};
use grail_schema::{Mode, SchemaDiagnostic, SchemaError, SchemaOptions, Severity};
use grail_tools::{
    CallOptions, Think, ToolChoice, ToolRegistry, ToolsError, WireFormat, tool_call_grammar,
};
use serde_json::{Value, json};

use crate::api::{ChatMessage, ChatRequest};
use crate::backend::{NativePrompt, RequestGrammar};
use crate::error::ApiError;
use crate::grammar_cache::{Constraint, GrammarCache, constraint_key};

/// [`PlanSettings::max_messages`] by default (`grail serve --max-messages`).
pub const DEFAULT_MAX_MESSAGES: usize = 2048;

/// [`PlanSettings::max_grammar_bytes`] by default (`grail serve --max-grammar-bytes`).
pub const DEFAULT_MAX_GRAMMAR_BYTES: usize = 256 * 1024;

/// [`PlanSettings::max_grammar_nodes`] by default (`grail serve --max-grammar-nodes`).
pub const DEFAULT_MAX_GRAMMAR_NODES: usize = 500_000;

/// Server-wide settings that shape every plan.
#[derive(Debug, Clone)]
pub struct PlanSettings {
    /// The wire format the model writes tool calls in.
    pub wire: WireFormat,
    /// `max_tokens` when a request gives none.
    pub default_max_tokens: usize,
    /// The most `max_tokens` a request may ask for.
    pub max_tokens_limit: usize,
    /// The temperature when a request gives none (0: greedy).
    pub default_temperature: f32,
    /// The repeat penalty (1.0: off).
    pub repeat_penalty: f32,
    /// The most calls in one answer with `parallel_tool_calls: true`.
    pub max_parallel_calls: u32,
    /// The most messages in a request (checked before anything is rendered: a chat
    /// template's time grows with the conversation).
    pub max_messages: usize,
    /// The longest `grammar` text, in bytes.
    pub max_grammar_bytes: usize,
    /// The most nodes of a request's compiled grammar (grail-engine counts about 16
    /// bytes a node; what planning it takes grows with it).
    pub max_grammar_nodes: usize,
    /// A reasoning block (`<think>…</think>`) before answers with tools and unconstrained
    /// text answers, returned as `reasoning_content` (off: none).
    pub think: Think,
    /// The embedded model's special tokens among the wire format's markers, as (text,
    /// id): the tool-call grammar writes them as tokens (see
    /// [`grail_tools::CallOptions::special_tokens`]). Empty for a remote backend.
    pub special_tokens: Vec<(String, u32)>,
}

impl Default for PlanSettings {
    fn default() -> PlanSettings {
        PlanSettings {
            wire: WireFormat::OpenAi,
            think: Think::Off,
            default_max_tokens: 512,
            max_tokens_limit: 4096,
            default_temperature: 0.0,
            repeat_penalty: 1.0,
            max_parallel_calls: 8,
            max_messages: DEFAULT_MAX_MESSAGES,
            max_grammar_bytes: DEFAULT_MAX_GRAMMAR_BYTES,
            max_grammar_nodes: DEFAULT_MAX_GRAMMAR_NODES,
            special_tokens: Vec::new(),
        }
    }
}

/// How the answer is read and checked.
#[derive(Debug, Clone)]
pub enum AnswerKind {
    /// Text (maybe JSON).
    Text(TextCheck),
    /// Tool calls, or (with `auto`) text.
    Tools {
        /// The tools offered.
        registry: Arc<ToolRegistry>,
        /// How calls are written and read.
        options: Box<CallOptions>,
        /// What text instead of a call must meet (with `auto`).
        text: TextCheck,
    },
}

/// What an answer's text must meet beyond its grammar.
#[derive(Debug, Clone, Default)]
pub struct TextCheck {
    /// The text is JSON valid against this schema (`response_format`).
    pub schema: Option<Arc<Value>>,
    /// The grammar may allow what the schema does not (a lenient conversion): the text is
    /// held back until it is checked, and a failed check is retried.
    pub may_fail: bool,
}

/// Everything needed to answer one request.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The conversation as a model reads it whose template has no tool section (earlier
    /// calls written out, Grail's tools prompt).
    pub messages: Vec<Message>,
    /// With tools: the conversation for a template with a tool section of its own.
    pub native: Option<Arc<NativePrompt>>,
    /// The grammar of the whole answer.
    pub grammar: Option<RequestGrammar>,
    /// How the answer is checked.
    pub answer: AnswerKind,
    /// The most tokens to write.
    pub max_tokens: usize,
    /// How tokens are chosen.
    pub sampling: SamplingParams,
    /// Stop sequences (applied to unconstrained answers: see docs/server.md).
    pub stops: Vec<String>,
    /// Server-sent events.
    pub stream: bool,
    /// A last chunk with the usage.
    pub include_usage: bool,
    /// Warnings to log (a lenient schema's weakened keywords).
    pub warnings: Vec<String>,
    /// The reasoning block an unconstrained text answer may start with (tool answers
    /// carry theirs in their call options).
    pub think: Think,
    /// The wire format (its reasoning block's markers).
    pub wire: WireFormat,
    /// Variables for the chat template (`reasoning_effort`).
    pub variables: TemplateVariables,
    /// A cap on the reasoning block's tokens (`reasoning_budget`).
    pub reasoning_budget: Option<ReasoningBudget>,
}

/// Builds the plan of `request` (a 400 error naming the field when it cannot be served).
///
/// `cache` keeps the compiled grammars of earlier requests: a request whose tools and
/// formats were seen before takes its grammar from there (see [`GrammarCache`]).
pub fn plan(
    request: ChatRequest,
    settings: &PlanSettings,
    cache: &GrammarCache,
) -> Result<Plan, ApiError> {
    refuse_unsupported(&request)?;
    refuse_oversized(&request, settings)?;
    let max_tokens = match request.max_completion_tokens.or(request.max_tokens) {
        None => settings.default_max_tokens,
        Some(0) => {
            return Err(ApiError::invalid(
                "invalid_value",
                Some("max_tokens"),
                "max_tokens must be at least 1",
            ));
        }
        Some(asked) if asked as usize > settings.max_tokens_limit => {
            return Err(ApiError::invalid(
                "invalid_value",
                Some("max_tokens"),
                format!(
                    "max_tokens is {asked}, over this server's limit of {} (grail serve --max-tokens-limit)",
                    settings.max_tokens_limit
                ),
            ));
        }
        Some(asked) => asked as usize,
    };
    let sampling = sampling(&request, settings)?;
    let variables = template_variables(&request)?;
    let reasoning_budget = reasoning_budget(&request, settings)?;
    let stops = stops(request.stop.as_ref())?;
    let tools = match &request.tools {
        Some(tools) if !tools.is_empty() => Some(registry(tools)?),
        _ => None,
    };
    let choice = tool_choice(request.tool_choice.as_ref(), tools.as_ref())?;
    let messages = conversation(&request.messages, History::Written(settings.wire))?;
    let constraint = cache.get_or_build(constraint_key(&request), || {
        build_constraint(&request, tools.as_ref(), &choice, settings)
    })?;
    let warnings = constraint.warnings.clone();
    let text_check = constraint.text_check.clone();
    // For a template with a tool section: the history as its own messages, the tools in
    // its `tools` (the backend chooses; see `NativePrompt`).
    let native = match &tools {
        Some(registry) => {
            let history = conversation(&request.messages, History::Native)?;
            let options = call_options(&request, settings, choice.clone());
            let (messages, tools) = ToolsShown::Template.messages(registry, &options, &history);
            Some(Arc::new(NativePrompt { messages, tools }))
        }
        None => None,
    };
    let (answer, messages) = match (tools, choice) {
        (Some(registry), choice) if choice != ToolChoice::None => {
            let options = call_options(&request, settings, choice);
            let messages = messages_with_tools(&registry, &options, &messages);
            let answer = AnswerKind::Tools {
                registry: Arc::new(registry),
                options: Box::new(options),
                text: text_check,
            };
            (answer, messages)
        }
        _ => {
            let messages = match &text_check.schema {
                Some(schema) => with_schema_prompt(messages, schema),
                None => messages,
            };
            (AnswerKind::Text(text_check), messages)
        }
    };
    let grammar = constraint.grammar.clone();
    Ok(Plan {
        messages,
        native,
        grammar,
        answer,
        max_tokens,
        sampling,
        stops,
        stream: request.stream.unwrap_or(false),
        include_usage: request
            .stream_options
            .as_ref()
            .is_some_and(|options| options.include_usage),
        warnings,
        think: settings.think,
        wire: settings.wire,
        variables,
        reasoning_budget,
    })
}

/// The chat template's variables `request` gives (`reasoning_effort`, one of OpenAI's
/// values).
fn template_variables(request: &ChatRequest) -> Result<TemplateVariables, ApiError> {
    const EFFORTS: [&str; 4] = ["minimal", "low", "medium", "high"];
    match &request.reasoning_effort {
        Some(effort) if !EFFORTS.contains(&effort.as_str()) => Err(ApiError::invalid(
            "invalid_value",
            Some("reasoning_effort"),
            format!(
                "reasoning_effort is {effort:?}; use one of {}",
                EFFORTS.join(", ")
            ),
        )),
        effort => Ok(TemplateVariables {
            reasoning_effort: effort.clone(),
        }),
    }
}

/// The reasoning budget `request` asks for, in the wire format's markers: only where the
/// server writes a reasoning block (`grail serve --think`).
fn reasoning_budget(
    request: &ChatRequest,
    settings: &PlanSettings,
) -> Result<Option<ReasoningBudget>, ApiError> {
    let Some(tokens) = request.reasoning_budget else {
        return Ok(None);
    };
    let markers = settings.wire.reasoning();
    let open = match settings.think {
        Think::Off => {
            return Err(ApiError::invalid(
                "unsupported_parameter",
                Some("reasoning_budget"),
                "this server writes no reasoning block (start it with grail serve --think)",
            ));
        }
        Think::Forced if tokens == 0 => {
            return Err(ApiError::invalid(
                "invalid_value",
                Some("reasoning_budget"),
                "the prompt opens the reasoning block (--think forced), so its first token is written inside it: ask for at least 1",
            ));
        }
        Think::Forced => String::new(),
        Think::Optional | Think::Required => markers.open.to_string(),
    };
    Ok(Some(ReasoningBudget {
        tokens: tokens as usize,
        open,
        close: markers.close.to_string(),
    }))
}

/// How calls are written for `request` with `choice`.
fn call_options(request: &ChatRequest, settings: &PlanSettings, choice: ToolChoice) -> CallOptions {
    CallOptions {
        wire: settings.wire,
        choice,
        max_calls: match request.parallel_tool_calls {
            Some(true) => Some(settings.max_parallel_calls),
            _ => Some(1),
        },
        think: settings.think,
        special_tokens: settings.special_tokens.clone(),
        ..CallOptions::default()
    }
}

/// The grammar of `request`'s whole answer, compiled (tools, `response_format`,
/// `grammar`), with what text must meet beyond it: what [`GrammarCache`] keeps.
fn build_constraint(
    request: &ChatRequest,
    tools: Option<&ToolRegistry>,
    choice: &ToolChoice,
    settings: &PlanSettings,
) -> Result<Constraint, ApiError> {
    let mut warnings = Vec::new();
    let (text_grammar, text_check) = match text_constraint(request, &mut warnings)? {
        Some((grammar, check)) => (Some(grammar), check),
        None => (None, TextCheck::default()),
    };
    let grammar = match tools {
        Some(registry) if *choice != ToolChoice::None => {
            // With `auto` and a text constraint, calls and constrained text are the union.
            let calls_choice = match (choice, &text_grammar) {
                (ToolChoice::Auto, Some(_)) => ToolChoice::Required,
                _ => choice.clone(),
            };
            let calls_options = call_options(request, settings, calls_choice);
            let calls = tool_call_grammar(registry, &calls_options).map_err(tools_error)?;
            for (tool, diagnostic) in &calls.diagnostics {
                warnings.push(format!("tool `{tool}`: {}", diagnostic.message));
            }
            Some(match (choice, text_grammar) {
                (ToolChoice::Auto, Some(text)) => compose::union(&calls.grammar, &text, "root"),
                _ => calls.grammar,
            })
        }
        _ => text_grammar,
    };
    let param = if request.grammar.is_some() {
        "grammar"
    } else if tools.is_some() {
        "tools"
    } else {
        "response_format"
    };
    Ok(Constraint {
        grammar: grammar
            .map(|grammar| compile(grammar, settings.max_grammar_nodes, param))
            .transpose()?,
        text_check,
        warnings,
    })
}

/// Requests over the size limits, refused before anything is rendered or built.
fn refuse_oversized(request: &ChatRequest, settings: &PlanSettings) -> Result<(), ApiError> {
    if request.messages.len() > settings.max_messages {
        return Err(ApiError::invalid(
            "too_many_messages",
            Some("messages"),
            format!(
                "the request has {} messages, over this server's limit of {} (grail serve --max-messages)",
                request.messages.len(),
                settings.max_messages
            ),
        ));
    }
    if let Some(grammar) = &request.grammar
        && grammar.len() > settings.max_grammar_bytes
    {
        return Err(ApiError::invalid(
            "grammar_too_large",
            Some("grammar"),
            format!(
                "the grammar is {} bytes, over this server's limit of {} (grail serve --max-grammar-bytes)",
                grammar.len(),
                settings.max_grammar_bytes
            ),
        ));
    }
    Ok(())
}

/// Fields OpenAI defines that Grail serves only at their default.
fn refuse_unsupported(request: &ChatRequest) -> Result<(), ApiError> {
    let refuse = |param: &str, message: &str| {
        Err(ApiError::invalid(
            "unsupported_parameter",
            Some(param),
            message.to_string(),
        ))
    };
    if request.n.is_some_and(|n| n != 1) {
        return refuse("n", "only one choice is written per request (n: 1)");
    }
    if request.logprobs == Some(true) || request.top_logprobs.is_some_and(|n| n > 0) {
        return refuse(
            "logprobs",
            "log-probabilities are not returned by this server",
        );
    }
    if request
        .frequency_penalty
        .is_some_and(|penalty| penalty != 0.0)
    {
        return refuse(
            "frequency_penalty",
            "only 0 is supported; the server applies its own repeat penalty (grail serve --repeat-penalty)",
        );
    }
    if request
        .presence_penalty
        .is_some_and(|penalty| penalty != 0.0)
    {
        return refuse(
            "presence_penalty",
            "only 0 is supported; the server applies its own repeat penalty (grail serve --repeat-penalty)",
        );
    }
    if request
        .logit_bias
        .as_ref()
        .is_some_and(|bias| bias.as_object().is_none_or(|bias| !bias.is_empty()))
    {
        return refuse(
            "logit_bias",
            "token biases are not supported; constrain the answer with a grammar instead",
        );
    }
    if request.messages.is_empty() {
        return refuse("messages", "messages must hold at least one message");
    }
    Ok(())
}

fn sampling(request: &ChatRequest, settings: &PlanSettings) -> Result<SamplingParams, ApiError> {
    let temperature = request.temperature.unwrap_or(settings.default_temperature);
    if !(0.0..=2.0).contains(&temperature) {
        return Err(ApiError::invalid(
            "invalid_value",
            Some("temperature"),
            "temperature must be between 0 and 2",
        ));
    }
    let top_p = request.top_p.unwrap_or(1.0);
    if !(top_p > 0.0 && top_p <= 1.0) {
        return Err(ApiError::invalid(
            "invalid_value",
            Some("top_p"),
            "top_p must be above 0 and at most 1",
        ));
    }
    Ok(SamplingParams {
        temperature,
        top_p,
        seed: request.seed.unwrap_or(0),
        repeat_penalty: settings.repeat_penalty,
        ..SamplingParams::default()
    })
}

fn stops(stop: Option<&Value>) -> Result<Vec<String>, ApiError> {
    let invalid = || {
        ApiError::invalid(
            "invalid_value",
            Some("stop"),
            "stop must be a string or a list of at most 4 strings",
        )
    };
    match stop {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(stop)) => Ok(vec![stop.clone()]),
        Some(Value::Array(stops)) if stops.len() <= 4 => stops
            .iter()
            .map(|stop| stop.as_str().map(str::to_string).ok_or_else(invalid))
            .collect(),
        Some(_) => Err(invalid()),
    }
}

/// The grammar of the answer's text from `response_format` or `grammar`.
fn text_constraint(
    request: &ChatRequest,
    warnings: &mut Vec<String>,
) -> Result<Option<(Grammar, TextCheck)>, ApiError> {
    let format = request
        .response_format
        .as_ref()
        .filter(|format| format.get("type").and_then(Value::as_str) != Some("text"));
    match (format, &request.grammar) {
        (Some(_), Some(_)) => Err(ApiError::invalid(
            "conflicting_constraints",
            Some("grammar"),
            "response_format and grammar both constrain the answer's text, and two grammars over one text cannot be combined in general; send one of them (a JSON Schema can be written as GBNF with `grail schema`)",
        )),
        (None, Some(gbnf)) => Ok(Some((gbnf_grammar(gbnf)?, TextCheck::default()))),
        (Some(format), None) => response_format(format, warnings).map(Some),
        (None, None) => Ok(None),
    }
}

fn gbnf_grammar(source: &str) -> Result<Grammar, ApiError> {
    match grail_grammar::load(source, &CheckOptions::default()) {
        Ok(loaded) => Ok(loaded.grammar),
        Err(error) => {
            let errors: Vec<Value> = error
                .errors
                .iter()
                .map(|located| {
                    json!({
                        "code": located.diagnostic.code,
                        "message": located.diagnostic.message,
                        "line": located.position.line,
                        "column": located.position.column,
                        "help": located.diagnostic.help,
                    })
                })
                .collect();
            let first = error
                .first()
                .map(|first| {
                    format!(
                        "line {}, column {}: {}",
                        first.position.line, first.position.column, first.diagnostic.message
                    )
                })
                .unwrap_or_else(|| "the grammar is invalid".into());
            Err(ApiError::invalid(
                "grammar_invalid",
                Some("grammar"),
                format!("the grammar is invalid: {first} (check it with `grail check`)"),
            )
            .with_details(json!({ "diagnostics": errors })))
        }
    }
}

fn response_format(
    format: &Value,
    warnings: &mut Vec<String>,
) -> Result<(Grammar, TextCheck), ApiError> {
    let param = Some("response_format");
    match format.get("type").and_then(Value::as_str) {
        Some("json_object") => {
            let schema = json!({"type": "object"});
            let grammar = convert_schema(
                &schema,
                &SchemaOptions::default(),
                "response_format",
                warnings,
            )?;
            Ok((
                grammar,
                TextCheck {
                    schema: Some(Arc::new(schema)),
                    may_fail: false,
                },
            ))
        }
        Some("json_schema") => {
            let Some(spec) = format.get("json_schema").and_then(Value::as_object) else {
                return Err(ApiError::invalid(
                    "invalid_value",
                    Some("response_format.json_schema"),
                    "json_schema must be an object with a `schema`",
                ));
            };
            let Some(schema) = spec.get("schema") else {
                return Err(ApiError::invalid(
                    "invalid_value",
                    Some("response_format.json_schema.schema"),
                    "json_schema has no `schema`",
                ));
            };
            // `strict: false` asks for best effort: keywords Grail cannot enforce are
            // weakened in the grammar, and the answer is checked against the schema.
            let strict = spec.get("strict").and_then(Value::as_bool).unwrap_or(true);
            let options = SchemaOptions {
                mode: if strict { Mode::Strict } else { Mode::Lenient },
                ..SchemaOptions::default()
            };
            let grammar = convert_schema(
                schema,
                &options,
                "response_format.json_schema.schema",
                warnings,
            )?;
            Ok((
                grammar,
                TextCheck {
                    schema: Some(Arc::new(schema.clone())),
                    may_fail: !strict,
                },
            ))
        }
        Some(other) => Err(ApiError::invalid(
            "invalid_value",
            param,
            format!(
                "response_format type `{other}` is unknown; use text, json_object or json_schema"
            ),
        )),
        None => Err(ApiError::invalid(
            "invalid_value",
            param,
            "response_format needs a `type`",
        )),
    }
}

fn convert_schema(
    schema: &Value,
    options: &SchemaOptions,
    param: &str,
    warnings: &mut Vec<String>,
) -> Result<Grammar, ApiError> {
    match grail_schema::schema_to_grammar(schema, options) {
        Ok(converted) => {
            warnings.extend(
                converted
                    .diagnostics
                    .iter()
                    .filter(|d| d.severity == Severity::Warning)
                    .map(|d| format!("{param}: {}", d.message)),
            );
            Ok(converted.grammar)
        }
        Err(SchemaError::Refused { diagnostics }) => {
            let errors: Vec<&SchemaDiagnostic> = diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .collect();
            let first = errors
                .first()
                .map(|d| describe_schema_diagnostic(None, d))
                .unwrap_or_else(|| "the schema was refused".into());
            Err(ApiError::invalid("schema_refused", Some(param), format!("{first}; send `strict: false` to weaken what cannot be enforced"))
                .with_details(json!({ "diagnostics": errors.iter().map(|d| schema_diagnostic_json(None, d)).collect::<Vec<_>>() })))
        }
        Err(other) => Err(ApiError::invalid(
            "schema_refused",
            Some(param),
            other.to_string(),
        )),
    }
}

fn describe_schema_diagnostic(tool: Option<&str>, diagnostic: &SchemaDiagnostic) -> String {
    let place = match (tool, diagnostic.pointer.is_empty()) {
        (Some(tool), true) => format!("tool `{tool}`, at the root of its parameters"),
        (Some(tool), false) => format!("tool `{tool}`, at {}", diagnostic.pointer),
        (None, true) => "at the schema's root".to_string(),
        (None, false) => format!("at {}", diagnostic.pointer),
    };
    format!("{place}: {}", diagnostic.message)
}

fn schema_diagnostic_json(tool: Option<&str>, diagnostic: &SchemaDiagnostic) -> Value {
    json!({
        "tool": tool,
        "pointer": diagnostic.pointer,
        "keyword": diagnostic.keyword,
        "code": diagnostic.code,
        "message": diagnostic.message,
        "help": diagnostic.help,
    })
}

fn registry(tools: &[Value]) -> Result<ToolRegistry, ApiError> {
    ToolRegistry::from_value(&Value::Array(tools.to_vec()))
        .map_err(|error| ApiError::invalid("tools_invalid", Some("tools"), error.to_string()))
}

fn tools_error(error: ToolsError) -> ApiError {
    match error {
        ToolsError::SchemaRefused { refusals } => {
            let first = refusals
                .first()
                .map(|(tool, diagnostic)| describe_schema_diagnostic(Some(tool), diagnostic))
                .unwrap_or_else(|| "a tool's parameters were refused".into());
            ApiError::invalid("schema_refused", Some("tools"), format!("{first}; simplify that schema, or leave the keyword out"))
                .with_details(json!({
                    "diagnostics": refusals.iter().map(|(tool, d)| schema_diagnostic_json(Some(tool), d)).collect::<Vec<_>>()
                }))
        }
        other => ApiError::invalid("tools_invalid", Some("tools"), other.to_string()),
    }
}

fn tool_choice(
    choice: Option<&Value>,
    tools: Option<&ToolRegistry>,
) -> Result<ToolChoice, ApiError> {
    let invalid = |error: grail_tools::ToolsError| {
        ApiError::invalid("invalid_value", Some("tool_choice"), error.to_string())
    };
    let choice = ToolChoice::from_openai(choice).map_err(invalid)?;
    choice.check_against(tools).map_err(invalid)?;
    Ok(choice)
}

/// How a conversation's earlier calls and results reach the chat template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum History {
    /// As text: an assistant's calls written in the wire format the model writes, a
    /// tool's result as a user message naming the tool (every chat template reads
    /// `user`, few read `tool`).
    Written(WireFormat),
    /// As the template's own messages: calls in `tool_calls`, results as `tool`
    /// messages with the id of their call (templates with a tool section).
    Native,
}

/// The conversation as chat-template messages (`developer` is `system`), the earlier
/// calls and results as `history` says.
fn conversation(messages: &[ChatMessage], history: History) -> Result<Vec<Message>, ApiError> {
    let mut out = Vec::with_capacity(messages.len());
    // Call ids to tool names, looked up once per tool message (a map: a conversation of
    // thousands of calls must not cost their square).
    let mut call_names: HashMap<String, String> = HashMap::new();
    for (index, message) in messages.iter().enumerate() {
        let param = format!("messages[{index}]");
        if message
            .function_call
            .as_ref()
            .is_some_and(|call| !call.is_null())
        {
            return Err(ApiError::invalid(
                "unsupported_parameter",
                Some(&format!("{param}.function_call")),
                "function_call is OpenAI's deprecated form; send the call in tool_calls",
            ));
        }
        let text = content_text(message.content.as_ref(), &param)?;
        match message.role.as_str() {
            "system" | "developer" => out.push(Message::new("system", text)),
            "user" => out.push(Message::new("user", text)),
            "assistant" => {
                let text = match (text.is_empty(), &message.refusal) {
                    (true, Some(refusal)) => refusal.clone(),
                    _ => text,
                };
                let calls = match &message.tool_calls {
                    Some(calls) => read_calls(calls, &param, &mut call_names)?,
                    None => Vec::new(),
                };
                out.push(match history {
                    _ if calls.is_empty() => Message::new("assistant", text),
                    History::Native => Message::assistant_calls(text, calls),
                    History::Written(wire) => {
                        let written = written_calls(&calls, wire);
                        match text.is_empty() {
                            true => Message::new("assistant", written),
                            false => Message::new("assistant", format!("{text}\n{written}")),
                        }
                    }
                });
            }
            "tool" if history == History::Native => {
                let id = message.tool_call_id.clone().unwrap_or_default();
                out.push(Message::tool_result(id, text));
            }
            "tool" => {
                let name = message
                    .tool_call_id
                    .as_ref()
                    .and_then(|id| call_names.get(id))
                    .cloned();
                let label = match name {
                    Some(name) => format!("Result of the tool call `{name}`"),
                    None => "Result of the tool call".to_string(),
                };
                out.push(Message::new("user", format!("{label}:\n{text}")));
            }
            other => {
                return Err(ApiError::invalid(
                    "invalid_value",
                    Some(&format!("{param}.role")),
                    format!(
                        "role `{other}` is unknown; use system, developer, user, assistant or tool"
                    ),
                ));
            }
        }
    }
    Ok(out)
}

fn content_text(content: Option<&Value>, param: &str) -> Result<String, ApiError> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for part in parts {
                match (
                    part.get("type").and_then(Value::as_str),
                    part.get("text").and_then(Value::as_str),
                ) {
                    (Some("text"), Some(piece)) => text.push_str(piece),
                    (kind, _) => {
                        return Err(ApiError::invalid(
                            "unsupported_content",
                            Some(&format!("{param}.content")),
                            format!(
                                "content parts of type {} are not supported; send text",
                                kind.unwrap_or("(none)")
                            ),
                        ));
                    }
                }
            }
            Ok(text)
        }
        Some(_) => Err(ApiError::invalid(
            "invalid_value",
            Some(&format!("{param}.content")),
            "content must be a string or a list of text parts",
        )),
    }
}

/// An assistant's earlier calls, read (ids made up where the client gave none: the
/// message's place and the call's).
fn read_calls(
    calls: &[Value],
    param: &str,
    names: &mut HashMap<String, String>,
) -> Result<Vec<MessageToolCall>, ApiError> {
    let mut read = Vec::with_capacity(calls.len());
    for (index, call) in calls.iter().enumerate() {
        let invalid = || {
            ApiError::invalid(
                "invalid_value",
                Some(&format!("{param}.tool_calls[{index}]")),
                "a tool call needs function.name and function.arguments (a JSON text)",
            )
        };
        let name = call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .ok_or_else(invalid)?;
        let arguments = match call.pointer("/function/arguments") {
            Some(Value::String(text)) => {
                serde_json::from_str::<Value>(text).map_err(|_| invalid())?
            }
            Some(Value::Object(object)) => Value::Object(object.clone()),
            _ => return Err(invalid()),
        };
        let id = match call.get("id").and_then(Value::as_str) {
            Some(id) => {
                // The first call with an id names it, as before.
                names
                    .entry(id.to_string())
                    .or_insert_with(|| name.to_string());
                id.to_string()
            }
            None => format!("call_{}_{index}", param.trim_start_matches("messages")),
        };
        read.push(MessageToolCall::new(id, name, arguments));
    }
    Ok(read)
}

/// Calls as the model would have written them in `wire`.
fn written_calls(calls: &[MessageToolCall], wire: WireFormat) -> String {
    let arguments: Vec<String> = calls
        .iter()
        .map(|call| serde_json::to_string(&call.function.arguments).expect("a value is JSON"))
        .collect();
    let written: Vec<(&str, &str)> = calls
        .iter()
        .zip(&arguments)
        .map(|(call, arguments)| (call.function.name.as_str(), arguments.as_str()))
        .collect();
    wire.write_calls(&written, false)
}

/// The conversation with a system note giving the answer's schema (a small model cannot
/// guess property names the grammar will insist on).
fn with_schema_prompt(mut messages: Vec<Message>, schema: &Value) -> Vec<Message> {
    let note = format!("Answer with JSON that follows this JSON Schema: {schema}");
    match messages.first_mut() {
        Some(first) if first.role == "system" => {
            first.content = format!("{}\n\n{note}", first.content)
        }
        _ => messages.insert(0, Message::new("system", note)),
    }
    messages
}

fn compile(grammar: Grammar, max_nodes: usize, param: &str) -> Result<RequestGrammar, ApiError> {
    let options = CompileOptions {
        limits: EngineLimits {
            max_nodes,
            ..EngineLimits::default()
        },
        ..CompileOptions::default()
    };
    let compiled = CompiledGrammar::compile(&grammar, &options).map_err(|error| {
        let message = match error {
            CompileError::TooLarge { limit } => format!(
                "the request's grammar compiles to more than {limit} nodes, over this server's limit (grail serve --max-grammar-nodes); reduce repetition counts or split large rules"
            ),
            other => format!("the request's grammar cannot be compiled: {other}"),
        };
        ApiError::invalid("grammar_too_large", Some(param), message)
    })?;
    // A grammar that matches nothing cannot be answered: the request's fault.
    if !compiled.has_matches() {
        return Err(ApiError::invalid(
            "grammar_matches_nothing",
            Some(param),
            format!(
                "the request's grammar matches no text at all (rule `{}` can never be completed), so no answer can satisfy it",
                compiled.root_name()
            ),
        ));
    }
    Ok(RequestGrammar::new(grammar, compiled))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_results_are_labelled_with_their_calls_tool_over_a_long_conversation() {
        let mut messages = Vec::new();
        for round in 0..3000 {
            messages.push(
                json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": format!("call_{round}"), "type": "function",
                "function": {"name": format!("tool_{}", round % 7), "arguments": "{}"}}]}),
            );
            messages.push(
                json!({"role": "tool", "tool_call_id": format!("call_{round}"), "content": "done"}),
            );
        }
        messages.push(json!({"role": "tool", "tool_call_id": "call_unknown", "content": "?"}));
        let messages: Vec<ChatMessage> = serde_json::from_value(Value::Array(messages)).unwrap();
        let out = conversation(&messages, History::Written(WireFormat::OpenAi)).unwrap();
        assert_eq!(out.len(), 6001);
        assert_eq!(
            out[5999].content,
            "Result of the tool call `tool_3`:\ndone",
            "round 2999 called tool_{}",
            2999 % 7
        );
        assert_eq!(out[6000].content, "Result of the tool call:\n?");
    }
}
