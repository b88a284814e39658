//! `grail tools` (a tool registry to its tool-call grammar) and `grail validate-call` (a
//! model's output checked against the registry).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};
use grail_schema::{Mode, SchemaOptions};
use grail_tools::{
    CallOptions, PoolFilter, Think, ToolChoice, ToolRegistry, ToolsError, WireFormat,
    lazy_tool_call_grammar, tool_call_grammar, validate_output,
};
use serde_json::json;

use crate::input::read_source;
use crate::schema::{SchemaArgs, diagnostic_json};

/// How the calls are written (shared by `grail tools` and `grail validate-call`).
#[derive(Debug, Clone, Args)]
pub struct CallArgs {
    /// The tool registry: an OpenAI `tools` array, a list of functions, or an MCP
    /// `tools/list` result (`-` for standard input).
    pub tools: PathBuf,
    /// The wire format the model writes calls in (`auto`: the one the chat template of
    /// --template teaches, `openai` when it shows none).
    #[arg(long, default_value = "openai", value_parser = WireArg::parser())]
    pub wire: WireArg,
    /// A model's chat template (Jinja text), for `--wire auto`.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// `auto` (free text or a call), `required` (a call), `none` (free text), or the name
    /// of the one tool to call.
    #[arg(long, default_value = "auto", value_name = "auto|required|none|NAME")]
    pub choice: ToolChoice,
    /// Allow several calls in one answer: `--parallel` (no maximum) or `--parallel=MAX`.
    #[arg(long, value_name = "MAX", num_args = 0..=1, require_equals = true, default_missing_value = "0")]
    pub parallel: Option<u32>,
    /// A reasoning block first: `optional` (`<think>…</think>` may come first),
    /// `required` (it must), `forced` (the prompt opened `<think>`: the answer starts
    /// inside it), or `off`.
    #[arg(
        long,
        default_value = "off",
        value_name = "off|optional|required|forced"
    )]
    pub think: Think,
    /// The user's query: tools with `x-grail-markers` stay only when it holds one of
    /// their markers as whole words; `x-grail-fallback` tools only when few canonical
    /// tools do (--fallback-below).
    #[arg(long, value_name = "TEXT")]
    pub query: Option<String>,
    /// With --query: fallback tools stay only when fewer canonical tools than this are
    /// offered.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub fallback_below: usize,
    /// A model's vocabulary (GGUF or tokenizer.json): its special tokens among the
    /// format's markers (`[TOOL_CALLS]`, `<|channel|>`, …) are written as tokens
    /// (`<[id]>`), as that model writes them; without it, markers are text.
    #[arg(long, value_name = "FILE")]
    pub vocab: Option<PathBuf>,
    /// How the tools' argument schemas are converted.
    #[command(flatten, next_help_heading = "Argument schemas")]
    pub schema: SchemaArgs,
}

/// A registry read for a command: the tools kept, those the pool filter dropped (with
/// why), and the options.
pub struct Loaded {
    /// The tools kept.
    pub registry: ToolRegistry,
    /// The tools the pool filter dropped, with why.
    pub dropped: Vec<(String, String)>,
    /// How calls are written.
    pub options: CallOptions,
}

/// A `--wire` value: a wire format, or `auto` (the format a chat template teaches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireArg {
    /// Detected from the model's chat template.
    Auto,
    /// This format.
    Format(WireFormat),
}

impl WireArg {
    /// The parser of `--wire`: `auto` or a format's label, each listed in `--help` with
    /// how its calls look.
    pub fn parser() -> impl clap::builder::TypedValueParser<Value = WireArg> {
        let auto = PossibleValue::new("auto")
            .help("the format the model's chat template teaches (openai when it shows none)");
        let formats = WireFormat::ALL.map(|format| {
            PossibleValue::new(format.label()).help(format.write_calls(&[("NAME", "{…}")], false))
        });
        PossibleValuesParser::new([auto].into_iter().chain(formats))
            .map(|label| WireFormat::from_label(&label).map_or(WireArg::Auto, WireArg::Format))
    }

    /// The format, `auto` made concrete from the model's chat template, with whether it
    /// was detected.
    pub fn resolve(self, template: Option<&str>) -> (WireFormat, bool) {
        match self {
            WireArg::Format(format) => (format, false),
            WireArg::Auto => match template.and_then(WireFormat::detect_from_template) {
                Some(format) => (format, true),
                None => (WireFormat::OpenAi, false),
            },
        }
    }
}

impl CallArgs {
    /// The wire format, `auto` read from --template.
    fn wire_format(&self) -> anyhow::Result<WireFormat> {
        let template = match (&self.wire, &self.template) {
            (WireArg::Auto, Some(path)) => {
                let input = read_source(path)?;
                Some(String::from_utf8(input.bytes).map_err(|_| {
                    anyhow::anyhow!("the chat template `{}` is not UTF-8", input.name)
                })?)
            }
            (WireArg::Auto, None) => anyhow::bail!(
                "--wire auto reads a model's chat template: give it with --template FILE, or name the format ({})",
                WireFormat::ALL.map(WireFormat::label).join(", ")
            ),
            _ => None,
        };
        let (wire, detected) = self.wire.resolve(template.as_deref());
        if self.wire == WireArg::Auto && !detected {
            eprintln!(
                "note: the chat template shows no call format Grail knows; using {}",
                wire.label()
            );
        }
        Ok(wire)
    }

    /// The registry's name in messages.
    fn display_name(&self) -> String {
        match self.tools.as_os_str() == "-" {
            true => "<stdin>".to_string(),
            false => self.tools.display().to_string(),
        }
    }

    /// The registry (read and parsed) and the options these arguments ask for.
    pub fn load(&self) -> anyhow::Result<Result<Loaded, ToolsError>> {
        let mut schema = self.schema.options();
        // Tool arguments: no invented properties unless asked (see `CallOptions::schema`).
        if self.schema.additional_properties.is_none() {
            schema.additional_properties_default = false;
        }
        schema
            .validate()
            .map_err(|message| anyhow::anyhow!("{message} (--item-separator / --key-separator)"))?;
        let wire = self.wire_format()?;
        let input = read_source(&self.tools)?;
        let text = String::from_utf8(input.bytes)
            .map_err(|_| anyhow::anyhow!("`{}` is not UTF-8, so not JSON", input.name))?;
        let registry = match ToolRegistry::from_json_text(&text) {
            Ok(registry) => registry,
            Err(error) => return Ok(Err(error)),
        };
        let (registry, dropped) = match &self.query {
            Some(query) => {
                let filter = PoolFilter {
                    fallback_below: self.fallback_below,
                };
                let pool = filter.apply(&registry, query);
                (pool.kept, pool.dropped)
            }
            None => (registry, Vec::new()),
        };
        let choice = self.choice.clone();
        let options = CallOptions {
            wire,
            choice,
            max_calls: match self.parallel {
                None => Some(1),
                Some(0) => None,
                Some(max) => Some(max),
            },
            think: self.think,
            schema,
            special_tokens: match &self.vocab {
                Some(path) => {
                    let vocabulary = grail_vocab::load(path).map_err(|error| {
                        anyhow::anyhow!("cannot load the vocabulary `{}`: {error}", path.display())
                    })?;
                    wire.marker_tokens(|text| vocabulary.special_id_of_text(text))
                }
                None => Vec::new(),
            },
        };
        Ok(Ok(Loaded {
            registry,
            dropped,
            options,
        }))
    }
}

/// Arguments of `grail tools`.
#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// The registry and how calls are written.
    #[command(flatten)]
    pub call: CallArgs,
    /// Output: the grammar as GBNF (diagnostics on stderr), or one JSON object
    /// `{"ok", "grammar", "system_prompt", "tools_kept", "tools_filtered", "diagnostics"}`
    /// (with --triggers also `grammar_lazy`, `grammar_triggers`, `preserved_tokens`);
    /// `system_prompt` is the tools' description with an example call each, as `grail
    /// generate` and `grail serve` give the model (null when no tool may be called).
    #[arg(long, value_enum, default_value_t = ToolsFormat::Gbnf)]
    pub format: ToolsFormat,
    /// For `--choice auto`: the lazy form llama-server takes (the calls' grammar alone,
    /// applied from the first trigger on), with its triggers and preserved tokens.
    #[arg(long)]
    pub triggers: bool,
}

/// `--format` values of `grail tools`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ToolsFormat {
    /// GBNF on stdout.
    Gbnf,
    /// One JSON object on stdout.
    Json,
}

/// Runs `grail tools`.
pub fn run_tools(args: &ToolsArgs) -> anyhow::Result<ExitCode> {
    let name = args.call.display_name();
    let Loaded {
        registry,
        dropped,
        options,
    } = match args.call.load()? {
        Ok(loaded) => loaded,
        Err(error) => return Ok(report_error(&name, &error, args.format, false)),
    };
    let filtered: Vec<serde_json::Value> = dropped
        .iter()
        .map(|(tool, reason)| json!({"name": tool, "reason": reason}))
        .collect();
    let made = if args.triggers {
        lazy_tool_call_grammar(&registry, &options).map(|lazy| {
            let fields = lazy.llama_server_fields();
            (lazy.grammar, Some(fields))
        })
    } else {
        tool_call_grammar(&registry, &options).map(|grammar| (grammar, None))
    };
    match made {
        Ok((grammar, lazy)) => {
            let gbnf = grammar.gbnf();
            match args.format {
                ToolsFormat::Gbnf => {
                    for (tool, reason) in &dropped {
                        eprintln!("note: tool `{tool}` left out: {reason}");
                    }
                    for (tool, diagnostic) in &grammar.diagnostics {
                        eprintln!("{}", tool_diagnostic(tool, diagnostic));
                    }
                    if let Some(lazy) = &lazy {
                        eprintln!(
                            "note: lazy grammar (grammar_lazy: true); grammar_triggers: {}; preserved_tokens: {}",
                            lazy["grammar_triggers"], lazy["preserved_tokens"]
                        );
                    }
                    print!("{gbnf}");
                }
                ToolsFormat::Json => {
                    let mut output = json!({
                        "ok": true,
                        "grammar": gbnf,
                        "system_prompt": grail_gen::tool_prompt::tools_system_prompt(&registry, &options),
                        "tools_kept": grammar.tools,
                        "tools_filtered": filtered,
                        "diagnostics": grammar.diagnostics.iter().map(|(tool, diagnostic)| {
                            let mut entry = diagnostic_json(diagnostic);
                            entry["tool"] = json!(tool);
                            entry
                        }).collect::<Vec<_>>(),
                    });
                    if let Some(lazy) = &lazy {
                        for key in ["grammar_lazy", "grammar_triggers", "preserved_tokens"] {
                            output[key] = lazy[key].clone();
                        }
                    }
                    println!("{output}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            let lenient_helps = lenient_would_compile(&registry, &options, &error);
            Ok(report_error(&name, &error, args.format, lenient_helps))
        }
    }
}

/// True when `error` is a strict refusal that lenient mode would not give: the grammar
/// compiles leniently (not when a schema is invalid, such as `"type": "dict"`).
fn lenient_would_compile(
    registry: &ToolRegistry,
    options: &CallOptions,
    error: &ToolsError,
) -> bool {
    if !matches!(error, ToolsError::SchemaRefused { .. }) || options.schema.mode == Mode::Lenient {
        return false;
    }
    let lenient = CallOptions {
        schema: SchemaOptions {
            mode: Mode::Lenient,
            ..options.schema.clone()
        },
        ..options.clone()
    };
    tool_call_grammar(registry, &lenient).is_ok()
}

/// A schema diagnostic of one tool, on one line.
fn tool_diagnostic(tool: &str, diagnostic: &grail_schema::SchemaDiagnostic) -> String {
    let pointer = diagnostic.keyword_pointer();
    let pointer = if pointer.is_empty() { "/" } else { &pointer };
    let mut line = format!(
        "{}[{}]: tool `{tool}`, arguments at {pointer}: {}",
        diagnostic.severity, diagnostic.code, diagnostic.message
    );
    if let Some(help) = &diagnostic.help {
        line.push_str(&format!("\n  = help: {help}"));
    }
    line
}

/// Prints why the grammar could not be made (suggesting `--lenient` only when
/// `lenient_helps`); exit 1 for refused schemas, 2 otherwise.
fn report_error(
    name: &str,
    error: &ToolsError,
    format: ToolsFormat,
    lenient_helps: bool,
) -> ExitCode {
    let refused = matches!(error, ToolsError::SchemaRefused { .. });
    match format {
        ToolsFormat::Gbnf => match error {
            ToolsError::SchemaRefused { refusals } => {
                for (tool, diagnostic) in refusals {
                    eprintln!("{}", tool_diagnostic(tool, diagnostic));
                }
                match lenient_helps {
                    true => eprintln!(
                        "{name}: refused (--lenient compiles the closest superset, with a warning for each keyword)"
                    ),
                    false => eprintln!("{name}: refused"),
                }
            }
            other => eprintln!("error: {name}: {other}"),
        },
        ToolsFormat::Json => {
            let diagnostics: Vec<serde_json::Value> = match error {
                ToolsError::SchemaRefused { refusals } => refusals
                    .iter()
                    .map(|(tool, diagnostic)| {
                        let mut entry = diagnostic_json(diagnostic);
                        entry["tool"] = json!(tool);
                        entry
                    })
                    .collect(),
                other => vec![json!({"severity": "error", "message": other.to_string()})],
            };
            println!(
                "{}",
                json!({"ok": false, "grammar": null, "diagnostics": diagnostics})
            );
        }
    }
    ExitCode::from(if refused { 1 } else { 2 })
}

/// Arguments of `grail validate-call`.
#[derive(Debug, Args)]
pub struct ValidateCallArgs {
    /// The registry and how calls are written.
    #[command(flatten)]
    pub call: CallArgs,
    /// The model's output: a file, or `-` for standard input.
    pub output: PathBuf,
}

/// Runs `grail validate-call`.
pub fn run_validate(args: &ValidateCallArgs) -> anyhow::Result<ExitCode> {
    let name = args.call.display_name();
    let Loaded {
        registry, options, ..
    } = match args.call.load()? {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("error: {name}: {error}");
            return Ok(ExitCode::from(2));
        }
    };
    if let ToolChoice::Named(tool) = &options.choice
        && registry.get(tool).is_none()
    {
        eprintln!("error: --choice names `{tool}`, which is not in {name}");
        return Ok(ExitCode::from(2));
    }
    let input = read_source(&args.output)?;
    let output = String::from_utf8(input.bytes)
        .map_err(|_| anyhow::anyhow!("`{}` is not UTF-8", input.name))?;
    match validate_output(&registry, &options, &output) {
        Ok(checked) => {
            let mut report = json!({"content": checked.text, "tool_calls": checked.tool_calls()});
            if let Some(reasoning) = &checked.reasoning {
                report["reasoning_content"] = json!(reasoning);
            }
            println!("{}", serde_json::to_string_pretty(&report)?);
            Ok(ExitCode::SUCCESS)
        }
        Err(fault) => {
            println!("{}", fault.feedback());
            Ok(ExitCode::from(1))
        }
    }
}

/// Arguments of `grail classify`.
#[derive(Debug, Args)]
pub struct ClassifyArgs {
    /// The labels, one of which the model must answer (`CODE REASONING`).
    #[arg(required = true, value_name = "LABEL")]
    pub labels: Vec<String>,
}

/// Runs `grail classify`: the grammar of exactly one label.
pub fn run_classify(args: &ClassifyArgs) -> anyhow::Result<ExitCode> {
    match grail_tools::classification_grammar(&args.labels) {
        Ok(grammar) => {
            print!("{}", grail_grammar::print_grammar(&grammar));
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            eprintln!("error: {error}");
            Ok(ExitCode::from(2))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{WireArg, WireFormat};

    #[test]
    fn auto_takes_the_templates_format_or_openai() {
        let qwen_like =
            "{% if tools %}<tools>{{ tools }}</tools> reply in <tool_call></tool_call>{% endif %}";
        assert_eq!(
            WireArg::Auto.resolve(Some(qwen_like)),
            (WireFormat::Hermes, true)
        );
        assert_eq!(
            WireArg::Auto.resolve(Some("{{ messages }}")),
            (WireFormat::OpenAi, false)
        );
        assert_eq!(WireArg::Auto.resolve(None), (WireFormat::OpenAi, false));
        assert_eq!(
            WireArg::Format(WireFormat::Mistral).resolve(Some(qwen_like)),
            (WireFormat::Mistral, false)
        );
    }
}
