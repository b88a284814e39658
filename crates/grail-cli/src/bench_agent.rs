//! `grail bench agent`: how well a model calls tools. Each query runs with the
//! tool-call grammar (and the pool filter, and the validator's retries) and without it
//! (the same prompt, decoded freely, judged by the same validator), and the table reports
//! convergence (a valid call of an acceptable tool), first-tool match, latency and
//! tokens per second.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Args;
use grail_gen::{DecodeOptions, Message, Model, SamplingParams, ToolTask, run_tool_task};
use grail_tools::{CallOptions, PoolFilter, ToolChoice, ToolRegistry, top_tools, validate_output};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::generate::{DEFAULT_CONTEXT, DEFAULT_REPEAT_PENALTY, ensure_default_model, load_model};

/// Arguments of `grail bench agent`.
#[derive(Debug, Args)]
pub struct AgentBenchArgs {
    /// The tool registry.
    #[arg(long, value_name = "FILE")]
    pub tools: PathBuf,
    /// The queries, one JSON object per line: `{"query", "acceptable": [tool names],
    /// "complexity"}`.
    #[arg(long, value_name = "FILE")]
    pub queries: PathBuf,
    /// A GGUF model file (default: the embedded model).
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
    /// The most tokens per answer.
    #[arg(long, default_value_t = 300, value_name = "N")]
    pub max_tokens: usize,
    /// Attempts per query with the grammar (the validator's feedback goes back each time).
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub attempts: usize,
    /// The repeat penalty (see `grail generate --repeat-penalty`).
    #[arg(long, default_value_t = DEFAULT_REPEAT_PENALTY, value_name = "X")]
    pub repeat_penalty: f32,
    /// Run only the first N queries.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Also write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// With the grammar: offer only the K tools that fit each query best (BM25 over
    /// names, descriptions and parameters), after the pool filter.
    #[arg(long, value_name = "K")]
    pub top_k_tools: Option<usize>,
}

#[derive(Debug, Deserialize)]
struct Query {
    query: String,
    acceptable: Vec<String>,
    #[serde(default)]
    complexity: String,
}

/// One query in one mode.
struct Run {
    converged: bool,
    first_tool: Option<String>,
    latency_s: f64,
    tokens: usize,
    decode_s: f64,
    attempts: usize,
}

/// Runs `grail bench agent`.
pub fn run(args: &AgentBenchArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.tools)
        .with_context(|| format!("cannot read {}", args.tools.display()))?;
    let registry = ToolRegistry::from_json_text(&text)
        .map_err(|error| anyhow::anyhow!("{}: {error}", args.tools.display()))?;
    let queries_text = std::fs::read_to_string(&args.queries)
        .with_context(|| format!("cannot read {}", args.queries.display()))?;
    let mut queries = Vec::new();
    for (number, line) in queries_text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let query: Query = serde_json::from_str(line).with_context(|| {
            format!(
                "{}:{}: not a query object",
                args.queries.display(),
                number + 1
            )
        })?;
        if let Some(unknown) = query
            .acceptable
            .iter()
            .find(|name| registry.get(name).is_none())
        {
            bail!(
                "{}:{}: acceptable tool `{unknown}` is not in {}",
                args.queries.display(),
                number + 1,
                args.tools.display()
            );
        }
        queries.push(query);
    }
    if let Some(limit) = args.limit {
        queries.truncate(limit);
    }
    let model_path = match &args.model {
        Some(path) => path.clone(),
        None => ensure_default_model()?,
    };
    let mut model = load_model(&model_path, DEFAULT_CONTEXT)?;
    let decode_options = DecodeOptions {
        max_tokens: args.max_tokens,
        sampling: SamplingParams {
            repeat_penalty: args.repeat_penalty,
            ..SamplingParams::default()
        },
        ..DecodeOptions::default()
    };
    if let Err(message) = decode_options.sampling.validate() {
        bail!("{message}");
    }
    let mut rows = Vec::new();
    for query in &queries {
        let with_grammar = run_query(
            model.as_mut(),
            &registry,
            query,
            Offer::Filtered(args.top_k_tools),
            args.attempts,
            &decode_options,
        )?;
        let without = run_query(
            model.as_mut(),
            &registry,
            query,
            Offer::Unconstrained,
            1,
            &decode_options,
        )?;
        eprintln!(
            "{:<9} grammar: {:<5} {:<26} no grammar: {:<5} {:<26} {}",
            query.complexity,
            with_grammar.converged,
            with_grammar.first_tool.as_deref().unwrap_or("-"),
            without.converged,
            without.first_tool.as_deref().unwrap_or("-"),
            query.query
        );
        rows.push((query, with_grammar, without));
    }
    let grammar = summarize(
        &rows
            .iter()
            .map(|(query, run, _)| (*query, run))
            .collect::<Vec<_>>(),
    );
    let free = summarize(
        &rows
            .iter()
            .map(|(query, _, run)| (*query, run))
            .collect::<Vec<_>>(),
    );
    println!("| config | convergence | first_tool_match | mean latency | tokens/s |");
    println!("|---|---|---|---|---|");
    let constrained = match args.top_k_tools {
        Some(k) => format!("grammar + pool filter + top {k} tools + validator"),
        None => "grammar + pool filter + validator".to_string(),
    };
    for (name, row) in [("no grammar", &free), (constrained.as_str(), &grammar)] {
        println!(
            "| {name} | {:.0}% ({}/{}) | {:.0}% | {:.2} s | {:.1} |",
            row["convergence"].as_f64().unwrap_or(0.0) * 100.0,
            row["converged"],
            row["queries"],
            row["first_tool_match"].as_f64().unwrap_or(0.0) * 100.0,
            row["mean_latency_s"].as_f64().unwrap_or(0.0),
            row["tokens_per_s"].as_f64().unwrap_or(0.0),
        );
    }
    if let Some(path) = &args.json {
        let per_query: Vec<Value> = rows
            .iter()
            .map(|(query, with_grammar, without)| {
                json!({
                    "query": query.query,
                    "complexity": query.complexity,
                    "acceptable": query.acceptable,
                    "grammar": run_json(with_grammar),
                    "no_grammar": run_json(without),
                })
            })
            .collect();
        let report = json!({
            "model": model_path.display().to_string(),
            "tools": args.tools.display().to_string(),
            "max_tokens": args.max_tokens,
            "grammar": grammar,
            "no_grammar": free,
            "per_query": per_query,
        });
        std::fs::write(path, serde_json::to_string_pretty(&report)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The totals of one mode over every query.
fn summarize(runs: &[(&Query, &Run)]) -> Value {
    let count = runs.len().max(1) as f64;
    let converged = runs.iter().filter(|(_, run)| run.converged).count();
    let matched = runs
        .iter()
        .filter(|(query, run)| {
            run.first_tool
                .as_ref()
                .is_some_and(|tool| query.acceptable.contains(tool))
        })
        .count();
    let tokens: usize = runs.iter().map(|(_, run)| run.tokens).sum();
    let decode_s: f64 = runs.iter().map(|(_, run)| run.decode_s).sum();
    json!({
        "queries": runs.len(),
        "converged": converged,
        "convergence": converged as f64 / count,
        "first_tool_match": matched as f64 / count,
        "mean_latency_s": runs.iter().map(|(_, run)| run.latency_s).sum::<f64>() / count,
        "tokens_per_s": if decode_s > 0.0 { tokens as f64 / decode_s } else { 0.0 },
        "mean_attempts": runs.iter().map(|(_, run)| run.attempts).sum::<usize>() as f64 / count,
    })
}

fn run_json(run: &Run) -> Value {
    json!({
        "converged": run.converged,
        "first_tool": run.first_tool,
        "latency_s": run.latency_s,
        "tokens": run.tokens,
        "attempts": run.attempts,
    })
}

/// Runs one query: with the grammar, the pool filter on the query and the validator's
/// retries; without, one free answer judged by the validator.
/// How a query's tools are offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Offer {
    /// With the grammar: the pool filter, then the best K tools when asked.
    Filtered(Option<usize>),
    /// Every tool, decoded freely.
    Unconstrained,
}

fn run_query(
    model: &mut dyn Model,
    registry: &ToolRegistry,
    query: &Query,
    offer: Offer,
    attempts: usize,
    decode_options: &DecodeOptions,
) -> anyhow::Result<Run> {
    let constrained = offer != Offer::Unconstrained;
    let pool = match offer {
        Offer::Filtered(top_k) => {
            let pool = PoolFilter::default().apply(registry, &query.query).kept;
            match top_k {
                Some(k) => top_tools(&pool, &query.query, k).0,
                None => pool,
            }
        }
        Offer::Unconstrained => registry.clone(),
    };
    let options = CallOptions {
        choice: ToolChoice::Required,
        ..CallOptions::default()
    };
    let messages = [Message::new("user", query.query.clone())];
    let task = ToolTask {
        registry: &pool,
        options: &options,
        messages: &messages,
        constrained,
        max_attempts: attempts,
    };
    let started = Instant::now();
    let outcome = run_tool_task(model, &task, decode_options)?;
    let latency_s = started.elapsed().as_secs_f64();
    let first = &outcome.attempts[0];
    let first_tool = match validate_output(&pool, &options, &first.generation.text()) {
        Ok(checked) => checked.calls.first().map(|call| call.name.clone()),
        Err(fault) => fault.faults.iter().find_map(|fault| fault.tool.clone()),
    };
    let converged = outcome.checked.as_ref().is_some_and(|checked| {
        checked
            .calls
            .first()
            .is_some_and(|call| query.acceptable.contains(&call.name))
    });
    Ok(Run {
        converged,
        first_tool,
        latency_s,
        tokens: outcome
            .attempts
            .iter()
            .map(|a| a.generation.tokens.len())
            .sum(),
        decode_s: outcome
            .attempts
            .iter()
            .map(|a| a.generation.stats.decode_s)
            .sum(),
        attempts: outcome.attempts.len(),
    })
}
