//! The direct path (plain schemas written straight from their JSON, `src/direct.rs`) gives
//! exactly the grammar of the general path: the same GBNF text, byte for byte, and the
//! same diagnostics (in an order that may differ within a severity), for every schema of `testdata/schema`, `testdata/tools` (each tool's
//! parameters) and a sample of MaskBench (skipped with a message where
//! `../shared/corpora/maskbench` is absent), each under several option sets.

#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/outcome.rs"]
mod outcome;

use std::path::{Path, PathBuf};

use corpus::{maskbench_directory, maskbench_groups};
use grail_schema::{
    KeyOrder, Mode, SchemaOptions, Whitespace, schema_to_grammar, without_direct_path,
};
use outcome::{outcome_text, read_json};
use serde_json::Value;

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The option sets each schema is converted under.
fn option_sets() -> Vec<(&'static str, SchemaOptions)> {
    let closed = SchemaOptions {
        additional_properties_default: false,
        ..SchemaOptions::default()
    };
    vec![
        ("default", SchemaOptions::default()),
        ("closed objects (tool calls)", closed.clone()),
        (
            "closed, any key order, no whitespace, lenient",
            SchemaOptions {
                key_order: KeyOrder::Any,
                whitespace: Whitespace::None,
                mode: Mode::Lenient,
                ..closed.clone()
            },
        ),
        (
            "closed, compact separators, free whitespace",
            SchemaOptions {
                item_separator: ",".into(),
                key_separator: ":".into(),
                whitespace: Whitespace::Free,
                ..closed
            },
        ),
    ]
}

/// The conversion's outcome as text (see `outcome_text`).
fn outcome(schema: &Value, options: &SchemaOptions) -> String {
    outcome_text(schema_to_grammar(schema, options))
}

/// Compares the two paths on `schema`; returns a description of the first difference.
fn differs(schema: &Value) -> Option<String> {
    for (label, options) in option_sets() {
        let direct = outcome(schema, &options);
        let general = without_direct_path(|| outcome(schema, &options));
        if direct != general {
            return Some(format!(
                "options: {label}\n--- direct\n{direct}\n--- general\n{general}"
            ));
        }
    }
    None
}

fn json_files(directory: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(directory)
        .unwrap_or_else(|error| panic!("{}: {error}", directory.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "json")
        })
        .collect();
    files.sort();
    files
}

/// The schemas of the test corpora: schema cases (`schema` of each case file, or the file
/// itself) and every tool's parameters.
fn corpus_schemas() -> Vec<(String, Value)> {
    let mut schemas = Vec::new();
    for path in json_files(&repository_root().join("testdata/schema")) {
        let value = read_json(&path);
        let schema = value.get("schema").cloned().unwrap_or(value);
        schemas.push((path.display().to_string(), schema));
    }
    for path in json_files(&repository_root().join("testdata/tools")) {
        let Value::Array(tools) = read_json(&path) else {
            continue;
        };
        for (index, tool) in tools.iter().enumerate() {
            let function = tool.get("function").unwrap_or(tool);
            let parameters = function
                .get("parameters")
                .or_else(|| function.get("inputSchema"));
            if let Some(parameters) = parameters {
                schemas.push((
                    format!("{} tool {index}", path.display()),
                    parameters.clone(),
                ));
            }
        }
    }
    schemas
}

#[test]
fn the_direct_path_writes_the_general_paths_grammar_for_the_test_corpora() {
    let schemas = corpus_schemas();
    assert!(
        schemas.len() > 20,
        "the corpora hold {} schemas",
        schemas.len()
    );
    let mut failures = Vec::new();
    for (id, schema) in &schemas {
        if let Some(difference) = differs(schema) {
            failures.push(format!("{id}\n{difference}"));
        }
    }
    println!(
        "direct path, test corpora: {} schemas, {} differ",
        schemas.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_direct_path_writes_the_general_paths_grammar_for_maskbench() {
    let Ok(groups) = maskbench_groups(&maskbench_directory()) else {
        eprintln!("skipped: ../shared/corpora/maskbench is absent");
        return;
    };
    // Four option sets, two paths: a sample keeps the unoptimized run short.
    let sample_every = if cfg!(debug_assertions) { 16 } else { 1 };
    let (mut compared, mut failures) = (0, Vec::new());
    for group in &groups {
        for entry in group.schemas(sample_every) {
            compared += 1;
            if let Some(difference) = differs(&entry.schema) {
                failures.push(format!("{}\n{difference}", entry.id));
            }
        }
    }
    println!(
        "direct path, MaskBench (every {sample_every}th schema): {compared} schemas, {} differ",
        failures.len()
    );
    let shown: Vec<&String> = failures.iter().take(3).collect();
    assert!(
        failures.is_empty(),
        "{} differ; the first:\n{shown:?}",
        failures.len()
    );
}
