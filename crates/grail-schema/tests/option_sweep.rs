//! Every schema Grail has at hand, converted under several option sets (depth caps of 0 to
//! 3 among them), gets an answer and never a panic: the cases of `testdata/schema`, each
//! tool's arguments and each whole registry (as one union of calls) of `testdata/tools`
//! and `testdata/tools/registries`, the JSON Schema Test Suite's draft 2020-12 schemas
//! and a sample of MaskBench (each skipped with a message when `../shared/corpora` lacks
//! it). A grammar must compile; a refusal must carry an error.
//!
//! ```text
//! cargo test -j2 -p grail-schema --test option_sweep -- --nocapture
//! ```

#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/outcome.rs"]
mod outcome;

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Once;

use corpus::{maskbench_directory, maskbench_groups};
use grail_engine::CompiledGrammar;
use grail_grammar::{Expr, GrammarBuilder};
use grail_schema::{
    Call, CallKeys, Dialect, KeyOrder, Literals, Mode, SchemaError, SchemaGrammar, SchemaOptions,
    Severity, Whitespace, calls_to_grammar_framed, schema_to_grammar,
};
use outcome::read_json;
use serde_json::Value;

/// The option sets, each with a label.
fn option_sets() -> Vec<(&'static str, SchemaOptions)> {
    let capped = |cap, mode| SchemaOptions {
        depth_cap: Some(cap),
        mode,
        ..SchemaOptions::default()
    };
    vec![
        ("default", SchemaOptions::default()),
        (
            "lenient",
            SchemaOptions {
                mode: Mode::Lenient,
                ..SchemaOptions::default()
            },
        ),
        ("llama.cpp", SchemaOptions::llama_cpp()),
        (
            "python literals, llama.cpp",
            SchemaOptions {
                literals: Literals::Python,
                ..SchemaOptions::llama_cpp()
            },
        ),
        (
            "any key order, no whitespace, closed objects",
            SchemaOptions {
                key_order: KeyOrder::Any,
                whitespace: Whitespace::None,
                additional_properties_default: false,
                ..SchemaOptions::default()
            },
        ),
        ("depth cap 0", capped(0, Mode::Strict)),
        ("depth cap 1", capped(1, Mode::Strict)),
        ("depth cap 2, lenient", capped(2, Mode::Lenient)),
        (
            "depth cap 3, llama.cpp, any key order",
            SchemaOptions {
                depth_cap: Some(3),
                dialect: Dialect::LlamaCpp,
                key_order: KeyOrder::Any,
                ..SchemaOptions::default()
            },
        ),
    ]
}

thread_local! {
    /// Whether a panic on this thread is being caught (and is not printed).
    static CATCHING: Cell<bool> = const { Cell::new(false) };
}

/// What is wrong with a conversion's answer, if anything: a panic, a grammar that does
/// not compile (with `compile`), or a refusal without an error.
fn fault(
    convert: impl FnOnce() -> Result<SchemaGrammar, SchemaError>,
    compile: bool,
) -> Option<String> {
    static QUIET_HOOK: Once = Once::new();
    QUIET_HOOK.call_once(|| {
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !CATCHING.with(Cell::get) {
                default_hook(info);
            }
        }));
    });
    CATCHING.with(|catching| catching.set(true));
    let answer = catch_unwind(AssertUnwindSafe(convert));
    CATCHING.with(|catching| catching.set(false));
    let answer = match answer {
        Ok(answer) => answer,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|text| text.to_string()))
                .unwrap_or_default();
            return Some(format!("panicked: {message}"));
        }
    };
    match answer {
        Ok(converted) if compile => {
            CompiledGrammar::compile(&converted.grammar, &Default::default())
                .err()
                .map(|error| format!("the grammar does not compile: {error}"))
        }
        Ok(_) => None,
        Err(SchemaError::Refused { diagnostics })
            if !diagnostics
                .iter()
                .any(|diagnostic| diagnostic.severity == Severity::Error) =>
        {
            Some("refused without an error".to_string())
        }
        Err(_) => None,
    }
}

/// Tallies of one sweep.
#[derive(Default)]
struct Sweep {
    conversions: usize,
    faults: Vec<String>,
}

impl Sweep {
    /// Converts `schema` under every option set.
    fn schema(&mut self, id: &str, schema: &Value, compile: bool) {
        for (label, options) in option_sets() {
            self.conversions += 1;
            if let Some(fault) = fault(|| schema_to_grammar(schema, &options), compile) {
                self.faults.push(format!("{id} ({label}): {fault}"));
            }
        }
    }

    /// Converts the union of `calls` under every option set.
    fn calls(&mut self, id: &str, calls: &[Call<'_>]) {
        let keys = CallKeys {
            name: "name",
            arguments: "arguments",
        };
        for (label, options) in option_sets() {
            self.conversions += 1;
            let mut frame = |_: &mut GrammarBuilder, call: Expr, _: Expr| call;
            let convert = || calls_to_grammar_framed(calls, keys, &options, "call", &mut frame);
            if let Some(fault) = fault(convert, true) {
                self.faults.push(format!("{id} (calls, {label}): {fault}"));
            }
        }
    }

    /// Prints the tally and fails on any fault.
    fn finish(self, what: &str) {
        println!(
            "{what}: {} conversions, {} faults",
            self.conversions,
            self.faults.len()
        );
        assert!(self.conversions > 0, "{what}: nothing converted");
        assert!(self.faults.is_empty(), "{:#?}", self.faults);
    }
}

/// The `.json` files in `directory`, in name order.
fn json_files(directory: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(directory)
        .unwrap_or_else(|error| panic!("{}: {error}", directory.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "json")
        })
        .collect();
    paths.sort();
    paths
}

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// `path` from `base` on, for messages.
fn short(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn testdata_schemas_and_tools_convert_under_every_option_set() {
    let mut sweep = Sweep::default();
    let cases = json_files(&testdata().join("schema"));
    assert!(!cases.is_empty(), "no schema cases");
    for path in &cases {
        sweep.schema(&short(path, &testdata()), &read_json(path)["schema"], true);
    }
    let mut registries = json_files(&testdata().join("tools"));
    registries.extend(json_files(&testdata().join("tools/registries")));
    let mut tool_count = 0;
    for path in &registries {
        // A list of tools, or an MCP `tools/list` result; other files are not registries.
        let registry = read_json(path);
        let Some(tools) = registry
            .get("tools")
            .unwrap_or(&registry)
            .as_array()
            .cloned()
        else {
            continue;
        };
        let mut calls: Vec<(String, Value)> = Vec::new();
        for tool in &tools {
            let function = tool.get("function").unwrap_or(tool);
            let name = function.get("name").and_then(Value::as_str);
            let arguments = function
                .get("parameters")
                .or_else(|| function.get("inputSchema"));
            if let (Some(name), Some(arguments)) = (name, arguments)
                && !calls.iter().any(|(other, _)| other == name)
            {
                calls.push((name.to_string(), arguments.clone()));
            }
        }
        let id = short(path, &testdata());
        for (name, arguments) in &calls {
            sweep.schema(&format!("{id} {name}"), arguments, true);
        }
        tool_count += calls.len();
        if !calls.is_empty() {
            let calls: Vec<Call<'_>> = calls
                .iter()
                .map(|(name, arguments)| Call { name, arguments })
                .collect();
            sweep.calls(&id, &calls);
        }
    }
    assert!(tool_count >= 100, "only {tool_count} tools found");
    sweep.finish("testdata schemas and tools");
}

#[test]
fn json_schema_test_suite_converts_under_every_option_set() {
    let directory =
        testdata().join("../../shared/corpora/json-schema-test-suite/tests/draft2020-12");
    if !directory.is_dir() {
        eprintln!("skipped: {} is absent", directory.display());
        return;
    }
    let mut files = json_files(&directory);
    files.extend(json_files(&directory.join("optional")));
    files.extend(json_files(&directory.join("optional/format")));
    let mut sweep = Sweep::default();
    for path in &files {
        let groups = read_json(path);
        for (index, group) in groups.as_array().into_iter().flatten().enumerate() {
            let id = format!("{}#{index}", short(path, &directory));
            sweep.schema(&id, &group["schema"], false);
        }
    }
    sweep.finish("JSON Schema Test Suite");
}

#[test]
fn maskbench_sample_converts_under_every_option_set() {
    let Ok(groups) = maskbench_groups(&maskbench_directory()) else {
        eprintln!("skipped: ../shared/corpora/maskbench is absent");
        return;
    };
    // Eight option sets: a sample keeps the unoptimized run short.
    let sample_every = if cfg!(debug_assertions) { 16 } else { 1 };
    let mut sweep = Sweep::default();
    for group in &groups {
        for entry in group.schemas(sample_every) {
            sweep.schema(&entry.id, &entry.schema, false);
        }
    }
    sweep.finish("MaskBench");
}
