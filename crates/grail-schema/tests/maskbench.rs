//! MaskBench (`../shared/corpora/maskbench`: 11,305 real schemas in 21 groups with valid
//! and invalid instances; skipped with a message when absent), through Grail in strict
//! mode with the default options. Prints per group: schemas compiled and refused (top
//! refusal reasons), valid instances rejected and invalid instances accepted, and compile
//! times. Fails only on regressions against `testdata/conformance/maskbench.baseline`
//! (the schemas that compile and judge every instance right; `GRAIL_UPDATE_BASELINE=1`
//! rewrites it). Instances are written as `tests/support/corpus.rs` explains.
//!
//! The whole corpus takes about 2.5 minutes in a release build but over half an hour unoptimized, so a
//! debug build (plain `cargo test`) runs a fixed sample: every 32nd schema of each group,
//! compared with the baseline's entries for those schemas. `GRAIL_MASKBENCH_ALL=1` runs
//! everything in any build; the baseline is only rewritten from a full run.

// Times are taken with mimalloc, the allocator of the `grail` binary and `grail serve`
// (glibc's malloc adds about a quarter to conversion; docs/performance.md has both).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../../grail-grammar/tests/support/baseline.rs"]
mod baseline;
#[path = "support/corpus.rs"]
mod corpus;

use std::collections::BTreeSet;
use std::path::PathBuf;

use corpus::{
    GroupTally, MaskBenchSchema, maskbench_directory, maskbench_groups, percentiles, run_schema,
};
use grail_schema::SchemaOptions;

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn maskbench_schemas_compile_and_judge_their_instances() {
    let Ok(groups) = maskbench_groups(&maskbench_directory()) else {
        eprintln!("skipped: ../shared/corpora/maskbench is absent");
        return;
    };
    let options = SchemaOptions::default();
    let sample_every: usize =
        if cfg!(debug_assertions) && std::env::var_os("GRAIL_MASKBENCH_ALL").is_none() {
            32
        } else {
            1
        };
    if sample_every > 1 {
        println!(
            "unoptimized build: every {sample_every}th schema only (GRAIL_MASKBENCH_ALL=1, or --release, runs all)"
        );
    }
    let mut sampled = BTreeSet::new();
    let mut passing = BTreeSet::new();
    let mut total = GroupTally::default();
    let mut times = Vec::new();
    let mut convert_times = Vec::new();
    let mut slowest: Vec<(f64, f64, String)> = Vec::new();
    let mut lines = Vec::new();
    for group in groups {
        let mut tally = GroupTally::default();
        // `GRAIL_MASKBENCH_ONLY=text`: only the schemas whose id contains it.
        let only = std::env::var("GRAIL_MASKBENCH_ONLY").ok();
        for MaskBenchSchema {
            id,
            schema,
            instances,
        } in group.schemas(sample_every)
        {
            if only
                .as_ref()
                .is_some_and(|only| !id.contains(only.as_str()))
            {
                continue;
            }
            sampled.insert(id.clone());
            let outcome = run_schema(&schema, &instances, &options);
            times.push(outcome.compile_time);
            convert_times.push(outcome.convert_time);
            slowest.push((
                outcome.compile_time.as_secs_f64() * 1e3,
                outcome.convert_time.as_secs_f64() * 1e3,
                id.clone(),
            ));
            if outcome.compile_time.as_secs_f64() > 1.0 {
                println!(
                    "slow: {id} took {:.1} s",
                    outcome.compile_time.as_secs_f64()
                );
            }
            if outcome.passes() {
                passing.insert(id);
            } else if std::env::var_os("GRAIL_MASKBENCH_VERBOSE").is_some() && outcome.compiled {
                eprintln!(
                    "wrong verdicts: {id}: valid rejected {:?}, invalid accepted {:?}",
                    outcome.valid_rejected, outcome.invalid_accepted
                );
                for detail in &outcome.details {
                    eprintln!("    {detail}");
                }
            }
            tally.add(&outcome);
            total.add(&outcome);
        }
        lines.push(tally.line(&group.name));
    }
    for line in &lines {
        println!("{line}");
    }
    println!("{}", total.line("all"));
    let (median, p99, max) = percentiles(&mut times);
    println!(
        "convert + compile per schema: median {median:.2} ms, p99 {p99:.2} ms, max {max:.1} ms (this build)"
    );
    let (median, p99, max) = percentiles(&mut convert_times);
    println!(
        "of which converting the schema: median {median:.2} ms, p99 {p99:.2} ms, max {max:.1} ms"
    );
    slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (total, convert, id) in slowest.iter().take(12) {
        println!("slowest: {id}: {total:.1} ms ({convert:.1} ms converting)");
    }
    let baseline_path = repository_root().join("testdata/conformance/maskbench.baseline");
    let whole_corpus = sample_every == 1 && std::env::var_os("GRAIL_MASKBENCH_ONLY").is_none();
    if whole_corpus {
        baseline::check_against_baseline(&baseline_path, &passing);
    } else {
        assert!(
            std::env::var_os("GRAIL_UPDATE_BASELINE").is_none(),
            "the baseline is only rewritten from a run over the whole corpus"
        );
        baseline::check_subset_against_baseline(&baseline_path, &sampled, &passing);
    }
}
