//! Matcher benchmarks: throughput on a 1 MB JSON document, the ambiguous grammar on aⁿbⁿ
//! and aⁿbⁿ⁄² at growing n, next-character rule latency and compile time.
//!
//! The JSON grammar is upstream llama.cpp's `json.gbnf` from `../shared` when present,
//! otherwise the one in `testdata/match/json-values.match`. The document is generated
//! (seeded, no exponents: upstream's exponent rule is buggy); set `GRAIL_BENCH_JSON` to
//! a file to measure that one instead (to compare with another engine on the same bytes).

use std::path::PathBuf;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use grail_engine::{CompiledGrammar, Matcher};

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn json_grammar() -> String {
    let upstream = repository_root().join("../shared/conformance/llama.cpp/grammars/json.gbnf");
    if let Ok(text) = std::fs::read_to_string(upstream) {
        return text;
    }
    let corpus =
        std::fs::read_to_string(repository_root().join("testdata/match/json-values.match"))
            .expect("testdata/match/json-values.match");
    corpus.split("\n---\n").next().unwrap().to_string()
}

/// A deterministic pseudo-random JSON document of at least `size` bytes: an object
/// (upstream's root) holding an array of objects.
fn json_document(size: usize) -> Vec<u8> {
    if let Some(path) = std::env::var_os("GRAIL_BENCH_JSON") {
        return std::fs::read(path).expect("GRAIL_BENCH_JSON");
    }
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |bound: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % bound
    };
    let words = [
        "alpha", "beta", "gamma", "delta", "tool", "call", "name", "value", "x y z", "é世",
    ];
    let mut out = String::from("{\"items\": [\n");
    let mut first = true;
    while out.len() < size {
        if !first {
            out.push_str(",\n");
        }
        first = false;
        out.push_str("  {\n");
        let fields = 3 + next(5);
        for field in 0..fields {
            let key = words[next(words.len() as u64) as usize];
            out.push_str(&format!("    \"{key}{field}\": "));
            match next(6) {
                0 => out.push_str(&format!("{}", next(1_000_000))),
                1 => out.push_str(&format!("-{}.{}", next(1000), next(1000))),
                2 => out.push_str(&format!("\"{} \\\"quoted\\\" \\n {}\"", key, next(100))),
                3 => out.push_str(["true", "false", "null"][next(3) as usize]),
                4 => out.push_str(&format!("[{}, {}, \"{}\"]", next(10), next(10), key)),
                _ => out.push_str(&format!("{{\"inner\": {{\"k\": [{}, {{}}]}}}}", next(99))),
            }
            out.push_str(if field + 1 < fields { ",\n" } else { "\n" });
        }
        out.push_str("  }");
    }
    out.push_str("\n]}\n");
    out.into_bytes()
}

fn matching_throughput(criterion: &mut Criterion) {
    let grammar = CompiledGrammar::from_gbnf(&json_grammar()).expect("json grammar");
    let document = json_document(1_000_000);
    {
        let mut matcher = Matcher::new(&grammar);
        matcher.set_history_limit(Some(0));
        matcher
            .accept_bytes(&document)
            .expect("the document matches");
        assert!(matcher.is_accepting());
    }
    let mut group = criterion.benchmark_group("match");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(document.len() as u64));
    group.bench_function("json_1mb_streaming", |bench| {
        bench.iter(|| {
            let mut matcher = Matcher::new(&grammar);
            matcher.set_history_limit(Some(0));
            matcher.accept_bytes(&document).unwrap();
            matcher.is_accepting()
        })
    });
    group.bench_function("json_1mb_full_history", |bench| {
        bench.iter(|| {
            let mut matcher = Matcher::new(&grammar);
            matcher.accept_bytes(&document).unwrap();
            matcher.is_accepting()
        })
    });
    group.finish();
}

fn ambiguous_grammar(criterion: &mut Criterion) {
    let grammar = CompiledGrammar::from_gbnf(r#"root ::= "a" root "b" | "a" root |"#).unwrap();
    let mut group = criterion.benchmark_group("anbn");
    group.sample_size(10);
    for n in [100usize, 400, 1600] {
        let text = format!("{}{}", "a".repeat(n), "b".repeat(n));
        group.bench_with_input(BenchmarkId::from_parameter(n), &text, |bench, text| {
            bench.iter(|| {
                let mut matcher = Matcher::new(&grammar);
                matcher.accept_str(text).unwrap();
                assert!(matcher.is_accepting());
            })
        });
    }
    group.finish();
    // aⁿbⁿ⁄², streamed as `grail match` does (a history of 4 steps): every `a` may stay
    // unpaired, so the parse keeps one frame per `a` to the end. Tail calls made jumps
    // once kept the rule's start in every older frame (issue 48: cubic, 14 s at 1,600).
    let mut group = criterion.benchmark_group("anbn_half");
    group.sample_size(10);
    for n in [400usize, 1600] {
        let text = format!("{}{}", "a".repeat(n), "b".repeat(n / 2));
        group.bench_with_input(BenchmarkId::from_parameter(n), &text, |bench, text| {
            bench.iter(|| {
                let mut matcher = Matcher::new(&grammar);
                matcher.set_history_limit(Some(4));
                matcher.accept_str(text).unwrap();
                assert!(matcher.is_accepting());
            })
        });
    }
    group.finish();
}

fn next_characters(criterion: &mut Criterion) {
    let grammar = CompiledGrammar::from_gbnf(&json_grammar()).unwrap();
    let mut group = criterion.benchmark_group("next_characters");
    for (name, prefix) in [
        (
            "json_after_key",
            r#"{"name": "x", "count": 12, "tags": [1, 2], "key""#,
        ),
        ("json_in_string", r#"{"name": "some text"#),
        ("json_after_value", r#"{"name": "x", "count": 12"#),
    ] {
        let mut matcher = Matcher::new(&grammar);
        matcher.accept_str(prefix).unwrap();
        group.bench_function(name, |bench| bench.iter(|| matcher.next_characters()));
    }
    group.finish();
}

fn compile(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("compile");
    let json = json_grammar();
    group.bench_function("json", |bench| {
        bench.iter(|| CompiledGrammar::from_gbnf(&json).unwrap())
    });
    let c_path = repository_root().join("../shared/conformance/llama.cpp/grammars/c.gbnf");
    if let Ok(c) = std::fs::read_to_string(c_path) {
        group.bench_function("c", |bench| {
            bench.iter(|| CompiledGrammar::from_gbnf(&c).unwrap())
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    matching_throughput,
    ambiguous_grammar,
    next_characters,
    compile
);
criterion_main!(benches);
