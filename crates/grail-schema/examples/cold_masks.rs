//! Cold masks of one schema (or GBNF grammar) on one document, round after round, for `perf record`: each
//! round compiles the schema afresh and fills every mask of the document with a new
//! matcher, so every step is a first-time state (the vocabulary index stays, as in a
//! process serving many grammars). Prints each step's median over the rounds, slowest
//! first.
//!
//! `cargo run --release -p grail-schema --example cold_masks -- SCHEMA.json VOCAB IDS.json [SECONDS]`
//! (SCHEMA: a JSON Schema, or a grammar when the name ends in `.gbnf`; VOCAB: a tokenizer.json, .gguf or vocab.json; IDS: a JSON array of the document's
//! token ids). The heap is made resident first, as `grail bench` does (`GRAIL_PREFAULT_MIB`). It also prints a digest of the first round's masks, to compare builds of
//! the engine. With `COLD_MASKS_STEP=N` in the environment only step N's mask is filled (the
//! tokens before it are accepted without masks), to profile that one step; with
//! `COLD_MASKS_PROFILE_STEP=N` every mask is filled and step N's goes through
//! `profiled_step_mask`, to profile it as the document reaches it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use grail_engine::{CompiledGrammar, Matcher, TokenBitmask, VocabularyIndex};
use grail_schema::{SchemaOptions, schema_to_grammar};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let [schema, vocab, ids, rest @ ..] = arguments.as_slice() else {
        eprintln!("usage: cold_masks SCHEMA.json|GRAMMAR.gbnf VOCAB IDS.json [SECONDS]");
        std::process::exit(2);
    };
    let seconds: u64 = rest.first().map_or(10, |text| {
        text.parse().unwrap_or_else(|_| {
            eprintln!("SECONDS must be a whole number, not `{text}`");
            std::process::exit(2)
        })
    });
    let read = |path: &str| {
        std::fs::read_to_string(path).unwrap_or_else(|error| {
            eprintln!("cannot read {path}: {error}");
            std::process::exit(2)
        })
    };
    let parse = |path: &str| -> serde_json::Value {
        serde_json::from_str(&read(path)).unwrap_or_else(|error| {
            eprintln!("{path} is not JSON: {error}");
            std::process::exit(2)
        })
    };
    let source = schema;
    let ids: Vec<u32> = serde_json::from_value(parse(ids)).unwrap_or_else(|error| {
        eprintln!("the ids are not an array of token ids: {error}");
        std::process::exit(2)
    });
    let vocabulary = grail_vocab::load(std::path::Path::new(vocab)).unwrap_or_else(|error| {
        eprintln!("cannot load {vocab}: {error}");
        std::process::exit(2)
    });
    let index = Arc::new(VocabularyIndex::new(vocabulary));
    // As `grail bench` does before timing masks (`grail_engine::prepare_heap`): without it,
    // first touches of fresh pages would be timed as part of the steps.
    let prefault = std::env::var(grail_engine::PREFAULT_ENV).ok();
    let purge_delay_set = std::env::var_os("MIMALLOC_PURGE_DELAY").is_some();
    if let Err(message) = grail_engine::prepare_heap(prefault.as_deref(), purge_delay_set) {
        eprintln!("{message}");
        std::process::exit(2)
    }
    // A `.gbnf` file is read as GBNF, anything else as a JSON Schema.
    let grammar = if source.ends_with(".gbnf") {
        let report = grail_grammar::check(&read(source), &Default::default());
        match report.grammar {
            Some(grammar) if report.is_ok() => grammar,
            _ => {
                eprintln!("{source} has errors (see `grail check {source}`)");
                std::process::exit(1)
            }
        }
    } else {
        match schema_to_grammar(&parse(source), &SchemaOptions::default()) {
            Ok(converted) => converted.grammar,
            Err(error) => {
                eprintln!("the schema is refused: {error}");
                std::process::exit(1)
            }
        }
    };
    let step_from_env = |name: &str| -> Option<usize> {
        std::env::var(name).ok().map(|text| {
            text.parse().unwrap_or_else(|_| {
                eprintln!("{name} must be a step number, not `{text}`");
                std::process::exit(2)
            })
        })
    };
    let only_step = step_from_env("COLD_MASKS_STEP");
    // With COLD_MASKS_PROFILE_STEP=N every mask is filled, step N's through
    // `profiled_step_mask`, so `valgrind --tool=callgrind --toggle-collect='*profiled_step_mask*'`
    // counts that one mask as the whole document reaches it.
    let profiled_step = step_from_env("COLD_MASKS_PROFILE_STEP");
    let mut mask = TokenBitmask::new(index.vocabulary().len());
    let mut step_times: Vec<Vec<f64>> = vec![Vec::new(); ids.len()];
    // FNV-1a over the first round's mask words.
    let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
    let started = Instant::now();
    let mut rounds = 0;
    while rounds == 0 || started.elapsed() < Duration::from_secs(seconds) {
        let compiled =
            CompiledGrammar::compile(&grammar, &Default::default()).unwrap_or_else(|error| {
                eprintln!("the grammar does not compile: {error}");
                std::process::exit(1)
            });
        let mut matcher = Matcher::with_vocabulary(&compiled, index.clone());
        for (step, &id) in ids.iter().enumerate() {
            if only_step.is_none_or(|only| only == step) {
                let begun = Instant::now();
                if profiled_step == Some(step) {
                    profiled_step_mask(&mut matcher, &mut mask);
                } else {
                    matcher.fill_mask(&mut mask);
                }
                step_times[step].push(begun.elapsed().as_secs_f64() * 1e6);
                if rounds == 0 {
                    for &word in mask.words() {
                        digest = (digest ^ u64::from(word)).wrapping_mul(0x0100_0000_01b3);
                    }
                }
                if !mask.is_set(id) {
                    eprintln!("step {step}: token {id} is not in the mask");
                    std::process::exit(1);
                }
            }
            if only_step.is_some_and(|only| only == step) {
                break;
            }
            if matcher.accept_token(id).is_err() {
                eprintln!("step {step}: token {id} is not allowed");
                std::process::exit(1);
            }
        }
        rounds += 1;
    }
    let mut medians: Vec<(f64, usize)> = step_times
        .iter_mut()
        .enumerate()
        .filter(|(_, times)| !times.is_empty())
        .map(|(step, times)| {
            times.sort_by(f64::total_cmp);
            (times[times.len() / 2], step)
        })
        .collect();
    medians.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!(
        "{rounds} rounds; masks digest {digest:016x}; slowest steps (median µs over the rounds):"
    );
    for (median, step) in medians.iter().take(8) {
        println!("  step {step:4}: {median:8.1} µs");
    }
    let mut all: Vec<f64> = medians.iter().map(|(median, _)| *median).collect();
    all.sort_by(f64::total_cmp);
    let quantile = |q: f64| all[((all.len() - 1) as f64 * q).round() as usize];
    println!(
        "per-step medians over the document: median {:.2} µs, p99 {:.1} µs, {} steps over 20 µs",
        quantile(0.5),
        quantile(0.99),
        all.iter().filter(|&&median| median > 20.0).count()
    );
}

/// One mask, out of line so that a profiler can count it alone (`COLD_MASKS_PROFILE_STEP`).
#[inline(never)]
fn profiled_step_mask(matcher: &mut Matcher, mask: &mut TokenBitmask) {
    matcher.fill_mask(mask);
}
