//! `check` (parse, lower, every analysis) on llama.cpp's example grammars, read from
//! `../shared/conformance/llama.cpp/grammars` (skipped when absent). Also formatting.
//!
//! Run: `cargo bench -p grail-grammar --bench check`.

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use grail_grammar::{CheckOptions, Target, check};

fn grammars() -> Vec<(String, String)> {
    let directory = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/conformance/llama.cpp/grammars");
    ["c.gbnf", "json.gbnf", "json_arr.gbnf", "chess.gbnf"]
        .iter()
        .filter_map(|name| {
            let text = std::fs::read_to_string(directory.join(name)).ok()?;
            Some((name.to_string(), text))
        })
        .collect()
}

fn bench_check(criterion: &mut Criterion) {
    let grammars = grammars();
    if grammars.is_empty() {
        eprintln!("skipped: ../shared/conformance/llama.cpp/grammars not found");
        return;
    }
    for (name, text) in &grammars {
        for (target, label) in [(Target::Grail, "grail"), (Target::LlamaCpp, "llama.cpp")] {
            let options = CheckOptions {
                target,
                ..CheckOptions::default()
            };
            criterion.bench_function(&format!("check/{label}/{name}"), |bencher| {
                bencher.iter(|| check(std::hint::black_box(text), &options))
            });
        }
        criterion.bench_function(&format!("fmt/{name}"), |bencher| {
            bencher.iter(|| {
                let parsed = grail_syntax::parse(std::hint::black_box(text));
                grail_syntax::format(text, &parsed.grammar)
            })
        });
    }
}

criterion_group!(benches, bench_check);
criterion_main!(benches);
