// Building the tool-call grammar of the seeds' eight tools (seed 001 reports ~2 ms for
// its generator on such a pool; the goal here is under 100 µs), with and without
// compiling it for the engine, and validating a call, with the system allocator (what a
// program linking grail-tools gets by default):
//
//     cargo bench -p grail-tools --bench grammar
//
// `--bench grammar_mimalloc` runs the same with mimalloc, the allocator of the `grail`
// binary and `grail serve` (plain comments: that bench includes this file).

use criterion::{Criterion, criterion_group, criterion_main};
use grail_tools::{CallOptions, ToolChoice, ToolRegistry, tool_call_grammar, validate_output};

fn seeds() -> ToolRegistry {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/tools/seeds.tools.json"
    );
    ToolRegistry::from_json_text(&std::fs::read_to_string(path).expect("the seeds' tools"))
        .expect("a registry")
}

fn bench(criterion: &mut Criterion) {
    let registry = seeds();
    let options = CallOptions {
        choice: ToolChoice::Required,
        ..CallOptions::default()
    };
    criterion.bench_function("tool_call_grammar/seeds-8-tools", |bench| {
        bench.iter(|| tool_call_grammar(&registry, &options).expect("a grammar"))
    });
    criterion.bench_function("tool_call_grammar+gbnf/seeds-8-tools", |bench| {
        bench.iter(|| {
            tool_call_grammar(&registry, &options)
                .expect("a grammar")
                .gbnf()
        })
    });
    criterion.bench_function("tool_call_grammar+compile/seeds-8-tools", |bench| {
        bench.iter(|| {
            let grammar = tool_call_grammar(&registry, &options).expect("a grammar");
            grail_engine::CompiledGrammar::compile(&grammar.grammar, &Default::default())
                .expect("compiles")
        })
    });
    let output = r#"{"name": "get_inputs", "arguments": {"title": "Slots", "dialog": [{"var": "slot", "prompt": "Pick a slot", "schema": {"kind": "choice", "options": ["Mon 9:00", "Tue 9:30"]}}]}}"#;
    criterion.bench_function("validate_output/get_inputs", |bench| {
        bench.iter(|| validate_output(&registry, &options, output).expect("valid"))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
