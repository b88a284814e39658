//! `grail bench`: per-step token-mask timings on a real document, in the same JSON shape
//! as the peer harness (`../shared/bench/scripts/bench.py`), so one table holds every
//! engine.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Args;
use grail_engine::{Matcher, TokenBitmask, VocabularyIndex};
use serde_json::{Value, json};

use crate::check::OutputFormat;
use crate::grammar::{GrammarInput, SchemaSource, SchemaWarnings, grammar_or_schema, load_grammar};

/// Arguments of `grail bench`.
#[derive(Debug, Args)]
#[command(group(grammar_or_schema(false)))]
pub struct BenchArgs {
    /// The grammar (GBNF). Not with --schema.
    #[arg(long)]
    pub grammar: Option<PathBuf>,
    /// The vocabulary: tokenizer.json, a .gguf file or vocab.json.
    #[arg(long)]
    pub vocab: PathBuf,
    /// The document the model "writes". Its token ids come from --ids; or from
    /// tokenizing it with --tokenizer; or from the `NAME.docs.json` next to the
    /// vocabulary (key: the document's file name); or from tokenizing it with the
    /// vocabulary itself when that is a tokenizer.json.
    #[arg(long)]
    pub doc: PathBuf,
    /// A JSON array of the document's token ids.
    #[arg(long)]
    pub ids: Option<PathBuf>,
    /// A Hugging Face tokenizer.json to tokenize the document with (no special tokens
    /// added).
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
    /// Runs over the document, each with a fresh matcher. The first is cold; later ones
    /// start from what earlier matchers of the grammar learned (on this document, so
    /// their masks are mostly remembered ones: see --warm-ids for another document, and
    /// --cold for runs that are all cold).
    #[arg(long, default_value_t = 2)]
    pub runs: usize,
    /// A JSON array of the token ids of another document of the grammar: before the timed
    /// runs, a matcher goes through it (masks included) and is dropped, so every timed run
    /// starts from what it learned, as a server's later request with the same grammar
    /// does.
    #[arg(long, conflicts_with = "cold")]
    pub warm_ids: Option<PathBuf>,
    /// Every run starts from a grammar compiled for it (the compile is not timed), so no
    /// run inherits what an earlier one learned: each is as cold as the first, as each
    /// run of llguidance or xgrammar is (they build a new matcher per run). What depends
    /// on the vocabulary alone stays built, for every engine.
    #[arg(long)]
    pub cold: bool,
    /// Fresh compiles timed.
    #[arg(long, default_value_t = 3)]
    pub compile_reps: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub format: OutputFormat,
    /// Also write the full JSON (with per-step timings) to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write every mask of the first run to this file, one JSON object per line:
    /// `{"step": i, "token": id, "words": "<hex of the u32 words, little-endian>"}`
    /// (for comparing masks with other engines: scripts/mask_agreement.py).
    #[arg(long)]
    pub dump_masks: Option<PathBuf>,
    /// Also run this many sequences at once (forks of one matcher, as a server keeps
    /// one per request) through the document in lockstep, and report their memory.
    #[arg(long, default_value_t = 0)]
    pub sequences: usize,
    /// With --sequences: fill each step's masks of all sequences in one batch call on a
    /// pool of this many threads (as a server batching its sequences does), and report
    /// the batch's time per step; every row is checked against a lone matcher's mask.
    #[arg(long, requires = "sequences")]
    pub threads: Option<usize>,
    /// With --sequences: each sequence keeps history to roll back this many tokens
    /// (`Matcher::set_token_history_limit`), as a server that rolls back at most a draft
    /// does; without it, each keeps its whole history.
    #[arg(long, requires = "sequences")]
    pub rollback_tokens: Option<usize>,
    /// The grammar of a JSON Schema instead of a GBNF file.
    #[command(flatten, next_help_heading = "JSON Schema (instead of a GBNF grammar)")]
    pub schema: SchemaSource,
}

fn status_kib(key: &str) -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with(key) && line[key.len()..].starts_with(':'))
                .and_then(|line| line.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(-1)
}

/// The document's token ids: from --ids, or from a `NAME.docs.json` beside the vocabulary.
fn document_ids(args: &BenchArgs) -> anyhow::Result<Vec<u32>> {
    if let Some(path) = &args.ids {
        return read_ids(path);
    }
    if let Some(tokenizer) = &args.tokenizer {
        return tokenize(tokenizer, &args.doc);
    }
    let key = args
        .doc
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(docs) = docs_file(&args.vocab) {
        let all: Value = serde_json::from_str(&std::fs::read_to_string(&docs)?)
            .with_context(|| format!("`{}` is not JSON", docs.display()))?;
        if let Some(ids) = all.get(&key) {
            return Ok(serde_json::from_value(ids.clone())?);
        }
    }
    if is_tokenizer_json(&args.vocab) {
        return tokenize(&args.vocab, &args.doc);
    }
    bail!(
        "no token ids for `{}`: give a tokenizer.json with --tokenizer FILE, the ids with --ids FILE (a JSON array), or put them in a NAME.docs.json next to the vocabulary",
        args.doc.display()
    )
}

/// Token ids from a file holding a JSON array of them.
fn read_ids(path: &Path) -> anyhow::Result<Vec<u32>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("`{}` is not a JSON array of token ids", path.display()))
}

/// True for a Hugging Face tokenizer file (not the engine-neutral `vocab.json`).
fn is_tokenizer_json(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name.to_string_lossy().ends_with("tokenizer.json"))
}

/// The document's token ids from a Hugging Face tokenizer (no special tokens added).
#[cfg(feature = "tokenize")]
fn tokenize(tokenizer: &Path, doc: &Path) -> anyhow::Result<Vec<u32>> {
    let text = std::fs::read_to_string(doc)
        .with_context(|| format!("cannot read `{}` as UTF-8 text", doc.display()))?;
    let tokenizer = tokenizers::Tokenizer::from_file(tokenizer).map_err(|error| {
        anyhow::anyhow!(
            "cannot load the tokenizer `{}`: {error}",
            tokenizer.display()
        )
    })?;
    let encoding = tokenizer
        .encode(text.as_str(), false)
        .map_err(|error| anyhow::anyhow!("cannot tokenize `{}`: {error}", doc.display()))?;
    Ok(encoding.get_ids().to_vec())
}

/// Without the `tokenize` feature there is no tokenizer: ids must be given.
#[cfg(not(feature = "tokenize"))]
fn tokenize(tokenizer: &Path, doc: &Path) -> anyhow::Result<Vec<u32>> {
    bail!(
        "cannot tokenize `{}` with `{}`: this grail was built without the `tokenize` feature; give the ids with --ids FILE",
        doc.display(),
        tokenizer.display()
    )
}

/// `DIR/NAME.vocab.json` → `DIR/NAME.docs.json`; `DIR/NAME/tokenizer.json` or
/// `DIR/NAME/x.gguf` → `DIR/NAME.docs.json`.
fn docs_file(vocab: &Path) -> Option<PathBuf> {
    let name = vocab.file_name()?.to_string_lossy().into_owned();
    let candidate = if let Some(stem) = name.strip_suffix(".vocab.json") {
        vocab.with_file_name(format!("{stem}.docs.json"))
    } else {
        let directory = vocab.parent()?;
        let stem = directory.file_name()?.to_string_lossy().into_owned();
        directory.with_file_name(format!("{stem}.docs.json"))
    };
    candidate.is_file().then_some(candidate)
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    let index = ((q / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn summarize(micros: &[f64]) -> Value {
    if micros.is_empty() {
        return json!({"n": 0});
    }
    let mut sorted = micros.to_vec();
    sorted.sort_by(f64::total_cmp);
    let total: f64 = micros.iter().sum();
    let median = if sorted.len() % 2 == 1 {
        sorted[sorted.len() / 2]
    } else {
        (sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) / 2.0
    };
    let round = |value: f64| (value * 100.0).round() / 100.0;
    json!({
        "n": micros.len(),
        "mean_us": round(total / micros.len() as f64),
        "median_us": round(median),
        "p90_us": round(percentile(&sorted, 90.0)),
        "p99_us": round(percentile(&sorted, 99.0)),
        "max_us": round(*sorted.last().unwrap()),
        "total_ms": round(total / 1000.0),
    })
}

/// Runs `grail bench`.
pub fn run(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    if args.runs == 0 || args.compile_reps == 0 {
        bail!("--runs and --compile-reps must be at least 1");
    }
    // Tokenizing (when the ids are not given) comes first and outside the memory
    // figures: a Hugging Face tokenizer is not what is measured.
    let ids = document_ids(args)?;
    let rss_start = status_kib("VmRSS");
    let started = Instant::now();
    let vocabulary = grail_vocab::load(&args.vocab)?;
    let index = Arc::new(VocabularyIndex::new(vocabulary));
    // Part of the setup: the memory the first masks grow into is made resident here,
    // not page-faulted in the middle of a timed step.
    crate::prefault::prefault_heap_from_env()?;
    let vocab_setup_s = started.elapsed().as_secs_f64();
    let rss_after_vocab = status_kib("VmRSS");
    let size = index.vocabulary().len();
    if let Some(&bad) = ids.iter().find(|&&id| id as usize >= size) {
        bail!("token id {bad} is outside the vocabulary ({size} tokens)");
    }
    let input = match (&args.grammar, &args.schema.schema) {
        (Some(path), None) => GrammarInput::Gbnf { path, root: "root" },
        (None, Some(path)) => GrammarInput::Schema {
            path,
            options: &args.schema.options,
        },
        _ => bail!("give either --grammar FILE or --schema FILE"),
    };
    let mut compile_ms = Vec::new();
    let mut grammar = None;
    for repetition in 0..args.compile_reps {
        // A schema's warnings are shown once, not once per compile.
        let warnings = if repetition == 0 {
            SchemaWarnings::Show
        } else {
            SchemaWarnings::Quiet
        };
        let started = Instant::now();
        let compiled = load_grammar(input, Some(index.vocabulary()), warnings)?;
        let matcher = Matcher::with_vocabulary(&compiled, index.clone());
        compile_ms.push(started.elapsed().as_secs_f64() * 1e3);
        drop(matcher);
        grammar.get_or_insert(compiled);
    }
    let grammar = grammar.expect("at least one compile");
    let mut mask = TokenBitmask::new(size);
    let warm_tokens = match &args.warm_ids {
        Some(path) => Some(warm_up(&grammar, &index, path, &mut mask)?),
        None => None,
    };
    let mut runs = Vec::new();
    let mut dump = match &args.dump_masks {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot write `{}`", path.display()))?,
        )),
        None => None,
    };
    for run in 0..args.runs {
        let fresh = match args.cold && run > 0 {
            true => Some(load_grammar(
                input,
                Some(index.vocabulary()),
                SchemaWarnings::Quiet,
            )?),
            false => None,
        };
        let rss_before = status_kib("VmRSS");
        let mut matcher =
            Matcher::with_vocabulary(fresh.as_ref().unwrap_or(&grammar), index.clone());
        let (mut mask_us, mut commit_us) = (Vec::new(), Vec::new());
        let mut failure = Value::Null;
        for (step, &id) in ids.iter().enumerate() {
            let started = Instant::now();
            matcher.fill_mask(&mut mask);
            mask_us.push(started.elapsed().as_secs_f64() * 1e6);
            let in_mask = mask.is_set(id);
            if run == 0
                && let Some(dump) = dump.as_mut()
            {
                use std::io::Write;
                let hex: String = mask
                    .words()
                    .iter()
                    .flat_map(|word| word.to_le_bytes())
                    .map(|byte| format!("{byte:02x}"))
                    .collect();
                writeln!(dump, "{}", json!({"step": step, "token": id, "words": hex}))?;
            }
            let started = Instant::now();
            let accepted = matcher.accept_token(id);
            commit_us.push(started.elapsed().as_secs_f64() * 1e6);
            if !in_mask || accepted.is_err() {
                let piece = String::from_utf8_lossy(index.vocabulary().bytes(id)).into_owned();
                failure = json!({"step": step, "token": id, "piece": piece, "in_mask": in_mask, "accepted": accepted.is_ok()});
                break;
            }
        }
        matcher.fill_mask(&mut mask);
        let end_ok = failure.is_null()
            && (matcher.is_accepting()
                || index
                    .vocabulary()
                    .end_of_generation()
                    .iter()
                    .any(|&id| mask.is_set(id)));
        runs.push(json!({
            "run": run,
            "ok": failure.is_null(),
            "failure": failure,
            "eos_or_accepting_at_end": end_ok,
            "first_mask_us": mask_us.first().map(|us| (us * 100.0).round() / 100.0),
            "mask": summarize(&mask_us),
            "commit": summarize(&commit_us),
            "rss_delta_kib": status_kib("VmRSS") - rss_before,
            "mask_us_raw": mask_us.iter().map(|us| (us * 100.0).round() / 100.0).collect::<Vec<_>>(),
        }));
    }
    let sequences = if args.sequences > 0 {
        match args.threads {
            None => run_sequences(&grammar, &index, &ids, args.sequences, args.rollback_tokens),
            Some(threads) => run_batch(
                &grammar,
                &index,
                &ids,
                args.sequences,
                threads,
                args.rollback_tokens,
            )?,
        }
    } else {
        Value::Null
    };
    let mut sorted = compile_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let all_ok = runs.iter().all(|run| run["ok"] == true);
    let result = json!({
        "engine": "grail",
        "version": env!("CARGO_PKG_VERSION"),
        "vocab": args.vocab.display().to_string(),
        "grammar": input.path().display().to_string(),
        "doc": args.doc.display().to_string(),
        "doc_tokens": ids.len(),
        "vocab_setup_s": (vocab_setup_s * 1e4).round() / 1e4,
        "compile_ms_first": (compile_ms[0] * 1e3).round() / 1e3,
        "compile_ms_median": (sorted[sorted.len() / 2] * 1e3).round() / 1e3,
        "compile_ms_all": compile_ms.iter().map(|ms| (ms * 1e3).round() / 1e3).collect::<Vec<_>>(),
        "warm_tokens": warm_tokens,
        "cold_runs": args.cold,
        "runs": runs,
        "sequences": sequences,
        "rss_kib": {
            "start": rss_start,
            "after_vocab": rss_after_vocab,
            "vocab_delta": rss_after_vocab - rss_start,
            "end": status_kib("VmRSS"),
            "peak_hwm": status_kib("VmHWM"),
        },
        "status": if all_ok { "ok" } else { "mismatch" },
    });
    if let Some(out) = &args.out {
        std::fs::write(out, result.to_string())
            .with_context(|| format!("cannot write `{}`", out.display()))?;
    }
    let mut short = result.clone();
    for run in short["runs"].as_array_mut().expect("runs") {
        run.as_object_mut().expect("run").remove("mask_us_raw");
    }
    match args.format {
        OutputFormat::Json => println!("{short}"),
        OutputFormat::Human => print_human(&short),
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Runs a matcher of `grammar` through the document whose ids are in `path`, a mask at
/// every step, and drops it (later matchers start from what it learned). Its token count.
fn warm_up(
    grammar: &grail_engine::CompiledGrammar,
    index: &Arc<VocabularyIndex>,
    path: &Path,
    mask: &mut TokenBitmask,
) -> anyhow::Result<usize> {
    let ids = read_ids(path)?;
    let mut matcher = Matcher::with_vocabulary(grammar, index.clone());
    for (step, &id) in ids.iter().enumerate() {
        matcher.fill_mask(mask);
        if !mask.is_set(id) || matcher.accept_token(id).is_err() {
            bail!(
                "--warm-ids: token {id} at step {step} of `{}` does not fit the grammar",
                path.display()
            );
        }
    }
    Ok(ids.len())
}

/// Runs `count` forks of one matcher through the document in lockstep (each step: a mask
/// and the token for every sequence), reporting mask times over all of them and the
/// memory they added.
fn run_sequences(
    grammar: &grail_engine::CompiledGrammar,
    index: &Arc<VocabularyIndex>,
    ids: &[u32],
    count: usize,
    rollback_tokens: Option<usize>,
) -> Value {
    let rss_before = status_kib("VmRSS");
    let mut template = Matcher::with_vocabulary(grammar, index.clone());
    template.set_token_history_limit(rollback_tokens);
    let mut matchers: Vec<Matcher> = (0..count).map(|_| template.fork()).collect();
    let mut mask = TokenBitmask::new(index.vocabulary().len());
    let mut mask_us = Vec::with_capacity(ids.len() * count);
    let mut ok = true;
    for &id in ids {
        for matcher in &mut matchers {
            let started = Instant::now();
            matcher.fill_mask(&mut mask);
            mask_us.push(started.elapsed().as_secs_f64() * 1e6);
            ok &= mask.is_set(id) && matcher.accept_token(id).is_ok();
        }
    }
    let rss_delta = status_kib("VmRSS") - rss_before;
    json!({
        "count": count,
        "rollback_tokens": rollback_tokens,
        "ok": ok,
        "mask": summarize(&mask_us),
        "rss_delta_kib": rss_delta,
        "kib_per_sequence": rss_delta / count as i64,
        "own_kib": own_kib(&matchers),
    })
}

/// Runs `count` forks of one matcher through the document in lockstep, each step's masks
/// filled in one batch call ([`grail_engine::fill_masks`]) on a pool of `threads`
/// threads; every row is compared with the mask of a lone matcher at the same step.
fn run_batch(
    grammar: &grail_engine::CompiledGrammar,
    index: &Arc<VocabularyIndex>,
    ids: &[u32],
    count: usize,
    threads: usize,
    rollback_tokens: Option<usize>,
) -> anyhow::Result<Value> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .context("cannot start the batch's threads")?;
    let rss_before = status_kib("VmRSS");
    let mut template = Matcher::with_vocabulary(grammar, index.clone());
    template.set_token_history_limit(rollback_tokens);
    let mut lone = template.fork();
    let mut matchers: Vec<Matcher> = (0..count).map(|_| template.fork()).collect();
    let row_words = index.vocabulary().len().div_ceil(32);
    let mut rows = vec![0u32; row_words * count];
    let mut lone_mask = TokenBitmask::new(index.vocabulary().len());
    let mut step_ms = Vec::with_capacity(ids.len());
    let mut ok = true;
    let mut equal = true;
    for &id in ids {
        let started = Instant::now();
        {
            let mut batch: Vec<&mut Matcher> = matchers.iter_mut().collect();
            pool.install(|| grail_engine::fill_masks(&mut batch, &mut rows, row_words));
        }
        step_ms.push(started.elapsed().as_secs_f64() * 1e3);
        lone.fill_mask(&mut lone_mask);
        equal &= rows.chunks(row_words).all(|row| row == lone_mask.words());
        ok &= lone_mask.is_set(id) && lone.accept_token(id).is_ok();
        for matcher in &mut matchers {
            ok &= matcher.accept_token(id).is_ok();
        }
    }
    let rss_delta = status_kib("VmRSS") - rss_before;
    let total_ms: f64 = step_ms.iter().sum();
    Ok(json!({
        "count": count,
        "rollback_tokens": rollback_tokens,
        "threads": threads,
        "ok": ok,
        "masks_equal_lone": equal,
        "batch_ms": summarize(&step_ms.iter().map(|ms| ms * 1e3).collect::<Vec<_>>()),
        "batch_total_ms": (total_ms * 100.0).round() / 100.0,
        "rss_delta_kib": rss_delta,
        "kib_per_sequence": rss_delta / count as i64,
        "own_kib": own_kib(&matchers),
    }))
}

/// The memory each sequence holds of its own at the end ([`Matcher::own_bytes`]), in
/// KiB: the mean and the largest.
fn own_kib(matchers: &[Matcher]) -> Value {
    let own: Vec<f64> = matchers
        .iter()
        .map(|matcher| matcher.own_bytes() as f64 / 1024.0)
        .collect();
    let round = |kib: f64| (kib * 10.0).round() / 10.0;
    json!({
        "mean": round(own.iter().sum::<f64>() / own.len().max(1) as f64),
        "max": round(own.iter().copied().fold(0.0, f64::max)),
    })
}

fn print_human(result: &Value) {
    println!(
        "grammar {}  vocab {} ({} setup s)  doc {} ({} tokens)",
        result["grammar"],
        result["vocab"],
        result["vocab_setup_s"],
        result["doc"],
        result["doc_tokens"]
    );
    println!(
        "compile: median {} ms (first {} ms)",
        result["compile_ms_median"], result["compile_ms_first"]
    );
    if result["cold_runs"] == true {
        println!("every run on a grammar compiled for it (all cold)");
    }
    if let Some(tokens) = result["warm_tokens"].as_u64() {
        println!("warmed on another document first ({tokens} tokens)");
    }
    for run in result["runs"].as_array().into_iter().flatten() {
        let mask = &run["mask"];
        println!(
            "run {}: {}  mask median {} µs  p90 {}  p99 {}  max {}  |  commit median {} µs",
            run["run"],
            if run["ok"] == true { "ok" } else { "FAILED" },
            mask["median_us"],
            mask["p90_us"],
            mask["p99_us"],
            mask["max_us"],
            run["commit"]["median_us"]
        );
        if !run["failure"].is_null() {
            println!("  failure: {}", run["failure"]);
        }
    }
    let sequences = &result["sequences"];
    if !sequences["threads"].is_null() {
        println!(
            "{} sequences, masks in one batch on {} threads: {}{}  batch per step: median {} µs  p99 {}  |  total {} ms  |  +{} KiB ({} KiB each)  |  own {} KiB each, at most {}",
            sequences["count"],
            sequences["threads"],
            if sequences["ok"] == true {
                "ok"
            } else {
                "FAILED"
            },
            if sequences["masks_equal_lone"] == true {
                ", every row equal to a lone matcher's"
            } else {
                ", ROWS DIFFER from a lone matcher's"
            },
            sequences["batch_ms"]["median_us"],
            sequences["batch_ms"]["p99_us"],
            sequences["batch_total_ms"],
            sequences["rss_delta_kib"],
            sequences["kib_per_sequence"],
            sequences["own_kib"]["mean"],
            sequences["own_kib"]["max"]
        );
    } else if !sequences.is_null() {
        println!(
            "{} sequences at once: {}  mask median {} µs  p99 {}  max {}  |  +{} KiB ({} KiB each)  |  own {} KiB each, at most {}",
            sequences["count"],
            if sequences["ok"] == true {
                "ok"
            } else {
                "FAILED"
            },
            sequences["mask"]["median_us"],
            sequences["mask"]["p99_us"],
            sequences["mask"]["max_us"],
            sequences["rss_delta_kib"],
            sequences["kib_per_sequence"],
            sequences["own_kib"]["mean"],
            sequences["own_kib"]["max"]
        );
    }
    println!(
        "memory: peak {} KiB, vocabulary +{} KiB",
        result["rss_kib"]["peak_hwm"], result["rss_kib"]["vocab_delta"]
    );
}
