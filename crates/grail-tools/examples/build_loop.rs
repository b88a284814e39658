//! Builds the seeds' tool-call grammar N times (default 2000), for `perf stat` and
//! `perf record` (a plain loop: no harness frames in the profile); with `gbnf` after N,
//! each build is also printed as GBNF. `BUILD_LOOP_TOOLS=FILE` builds another registry:
//!
//!     cargo build --profile bench -p grail-tools --example build_loop
//!     perf stat -e instructions target/release/examples/build_loop 2000 [gbnf]

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use grail_tools::{CallOptions, ToolChoice, ToolRegistry, tool_call_grammar};

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|text| text.parse().expect("a number of rounds"))
        .unwrap_or(2000);
    let print = std::env::args().nth(2).is_some_and(|mode| mode == "gbnf");
    let seeds = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/tools/seeds.tools.json"
    );
    let path = std::env::var("BUILD_LOOP_TOOLS").unwrap_or_else(|_| seeds.to_string());
    let text = std::fs::read_to_string(&path).expect("a tool registry file");
    let registry = ToolRegistry::from_json_text(&text).expect("a registry");
    let options = CallOptions {
        choice: ToolChoice::Required,
        ..CallOptions::default()
    };
    let started = std::time::Instant::now();
    let (mut rules, mut printed_bytes) = (0, 0);
    for _ in 0..rounds {
        let grammar = tool_call_grammar(&registry, &options).expect("a grammar");
        rules += grammar.grammar.rule_ids().count();
        if print {
            printed_bytes += grammar.gbnf().len();
        }
    }
    let elapsed = started.elapsed();
    println!(
        "{rounds} builds, {} rules each ({} bytes of GBNF printed each), {:.1} us per build",
        rules / rounds.max(1),
        printed_bytes / rounds.max(1),
        elapsed.as_secs_f64() * 1e6 / rounds.max(1) as f64
    );
}
