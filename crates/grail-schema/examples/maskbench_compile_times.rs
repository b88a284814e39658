//! Convert and compile times of every MaskBench schema (best of `--reps`, default 3), to
//! find and profile the tail of issue 12's compile-time goal:
//! `cargo run --release -p grail-schema --example maskbench_compile_times [-- --reps N --only TEXT --repeat FILE --whitespace none|free]`.
//!
//! Prints the median, p90, p99 and max of convert + compile (best of the runs, and the
//! first run alone), then the schemas from the 97th percentile up with both parts. With `--repeat FILE` (one id per line) it converts
//! and compiles only those schemas, over and over for 20 s (for `perf record`), or
//! `--rounds N` times (for `valgrind --tool=callgrind`, whose counts then compare).

use std::time::{Duration, Instant};

use grail_engine::CompiledGrammar;
use grail_schema::{SchemaOptions, schema_to_grammar};
use serde_json::Value;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The MaskBench reader shared with `tests/maskbench.rs`.
#[path = "../tests/support/corpus.rs"]
mod corpus;

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let value_of = |flag: &str| {
        arguments
            .iter()
            .position(|argument| argument == flag)
            .and_then(|index| arguments.get(index + 1).cloned())
    };
    let reps: usize = value_of("--reps").map_or(3, |reps| reps.parse().expect("--reps N"));
    let only = value_of("--only");
    let repeat: Option<Vec<String>> = value_of("--repeat").map(|path| {
        std::fs::read_to_string(path)
            .expect("--repeat FILE")
            .lines()
            .map(str::to_string)
            .collect()
    });
    let directory = corpus::maskbench_directory();
    let Ok(groups) = corpus::maskbench_groups(&directory) else {
        eprintln!("{} is absent", directory.display());
        std::process::exit(2);
    };
    let mut options = SchemaOptions::default();
    // `--whitespace none|free`: another whitespace option (default: llama.cpp's).
    match value_of("--whitespace").as_deref() {
        Some("none") => options.whitespace = grail_schema::Whitespace::None,
        Some("free") => options.whitespace = grail_schema::Whitespace::Free,
        _ => {}
    }
    let mut schemas: Vec<(String, Value)> = Vec::new();
    for group in &groups {
        for entry in group.schemas(1) {
            let wanted = match (&only, &repeat) {
                (Some(only), _) => entry.id.contains(only.as_str()),
                (None, Some(ids)) => ids.contains(&entry.id),
                (None, None) => true,
            };
            if wanted {
                schemas.push((entry.id, entry.schema));
            }
        }
    }
    if repeat.is_some() {
        let wanted_rounds: Option<usize> =
            value_of("--rounds").map(|rounds| rounds.parse().expect("--rounds N"));
        let started = Instant::now();
        let mut rounds = 0;
        while wanted_rounds.map_or(started.elapsed() < Duration::from_secs(20), |wanted| {
            rounds < wanted
        }) {
            for (_, schema) in &schemas {
                if let Ok(converted) = schema_to_grammar(schema, &options) {
                    let _ = CompiledGrammar::compile(&converted.grammar, &Default::default());
                }
            }
            rounds += 1;
        }
        println!("{rounds} rounds over {} schemas", schemas.len());
        return;
    }
    // (total, convert, id, rules, engine nodes), times in milliseconds, compiled schemas only.
    let mut times: Vec<(f64, f64, String, usize, usize)> = Vec::new();
    // The first run of each schema alone (cold: what compiling a schema once costs).
    let mut first_times: Vec<f64> = Vec::new();
    for (id, schema) in &schemas {
        let mut best: Option<(Duration, Duration)> = None;
        let mut first: Option<Duration> = None;
        let mut sizes = (0, 0);
        for _ in 0..reps {
            let started = Instant::now();
            let Ok(converted) = schema_to_grammar(schema, &options) else {
                break;
            };
            let convert = started.elapsed();
            let compiled = CompiledGrammar::compile(&converted.grammar, &Default::default());
            let total = started.elapsed();
            sizes = (
                converted.grammar.rules.len(),
                compiled.map_or(0, |compiled| compiled.node_count()),
            );
            first.get_or_insert(total);
            if best.is_none_or(|(best_total, _)| total < best_total) {
                best = Some((total, convert));
            }
        }
        if let Some((total, convert)) = best {
            let (rules, nodes) = sizes;
            let milliseconds = |duration: Duration| duration.as_secs_f64() * 1e3;
            times.push((
                milliseconds(total),
                milliseconds(convert),
                id.clone(),
                rules,
                nodes,
            ));
            first_times.push(first.map_or(0.0, milliseconds));
        }
    }
    if times.is_empty() {
        eprintln!("no schema selected compiled (see --only / --repeat)");
        std::process::exit(1);
    }
    times.sort_by(|a, b| a.0.total_cmp(&b.0));
    let at =
        |fraction: f64| times[((times.len() as f64 * fraction) as usize).min(times.len() - 1)].0;
    println!(
        "{} schemas compiled: convert + compile median {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.1} ms (best of {reps})",
        times.len(),
        at(0.5),
        at(0.9),
        at(0.99),
        times.last().map_or(0.0, |last| last.0)
    );
    first_times.sort_by(f64::total_cmp);
    let first_at = |fraction: f64| {
        first_times[((first_times.len() as f64 * fraction) as usize).min(first_times.len() - 1)]
    };
    println!(
        "first runs alone: median {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.1} ms",
        first_at(0.5),
        first_at(0.9),
        first_at(0.99),
        first_times.last().copied().unwrap_or(0.0)
    );
    let from = (times.len() as f64 * 0.97) as usize;
    for (total, convert, id, rules, nodes) in &times[from..] {
        println!("{total:8.2} ms  convert {convert:8.2} ms  {rules:6} rules {nodes:8} nodes  {id}");
    }
}
