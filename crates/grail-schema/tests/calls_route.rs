//! `calls_to_grammar_framed` writes, rule for rule, the grammar that
//! `schema_to_grammar_framed` gives for the calls' schema it documents (an `anyOf` of
//! `$ref`s to one call object per tool under `$defs`, each tool's arguments mounted in its
//! call): the same GBNF text, byte for byte, and the same diagnostics (sorted: the order
//! within a severity may differ), or the same refusal. Over the tool registries of
//! `testdata/tools` and MaskBench's schemas taken eight at a time as tools (a sample in
//! unoptimized builds; skipped with a message where `../shared/corpora/maskbench` is
//! absent), with the call keys of the wire formats, under several option sets.

#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/outcome.rs"]
mod outcome;

use std::path::PathBuf;

use corpus::{maskbench_directory, maskbench_groups};
use grail_grammar::{Expr, GrammarBuilder};
use grail_schema::{
    Call, CallKeys, Dialect, KeyOrder, Mode, Mount, SchemaOptions, Whitespace,
    calls_to_grammar_framed, schema_to_grammar_framed,
};
use outcome::{outcome_text, read_json};
use serde_json::{Map, Value, json};

/// The keys of the wire formats' call objects.
const KEYS: [(&str, &str); 3] = [
    ("name", "arguments"),
    ("tool", "args"),
    ("name", "parameters"),
];

/// The option sets the calls are written under.
fn option_sets() -> Vec<(&'static str, SchemaOptions)> {
    let closed = SchemaOptions {
        additional_properties_default: false,
        ..SchemaOptions::default()
    };
    vec![
        ("closed objects (tool calls)", closed.clone()),
        ("default", SchemaOptions::default()),
        (
            "closed, lenient, any key order, no whitespace",
            SchemaOptions {
                mode: Mode::Lenient,
                key_order: KeyOrder::Any,
                whitespace: Whitespace::None,
                ..closed.clone()
            },
        ),
        (
            "llama.cpp's dialect",
            SchemaOptions {
                dialect: Dialect::LlamaCpp,
                ..closed.clone()
            },
        ),
        (
            "closed, depth cap 2, lenient",
            SchemaOptions {
                depth_cap: Some(2),
                mode: Mode::Lenient,
                ..closed
            },
        ),
    ]
}

/// The schema `calls_to_grammar_framed` documents, with a placeholder where each tool's
/// arguments are mounted, and the mount points.
fn calls_schema(calls: &[Call<'_>], keys: CallKeys<'_>) -> (Value, Vec<String>) {
    let mut definitions = Map::new();
    let mut branches = Vec::new();
    let mut places = Vec::new();
    for call in calls {
        definitions.insert(
            call.name.to_string(),
            json!({
                "type": "object",
                "properties": {keys.name: {"const": call.name}, keys.arguments: true},
                "required": [keys.name, keys.arguments],
                "additionalProperties": false,
            }),
        );
        branches.push(json!({"$ref": format!("#/$defs/{}", call.name)}));
        places.push(format!(
            "/$defs/{}/properties/{}",
            call.name, keys.arguments
        ));
    }
    let mut schema = json!({"anyOf": branches, "$defs": definitions});
    let drafts: Vec<&Value> = calls
        .iter()
        .filter_map(|call| call.arguments.get("$schema"))
        .collect();
    if let Some(&first) = drafts.first()
        && drafts.iter().all(|&draft| draft == first)
    {
        schema["$schema"] = first.clone();
    }
    (schema, places)
}

/// Calls in a frame of several, as tool calls write them.
fn frame(_: &mut GrammarBuilder, call: Expr, space: Expr) -> Expr {
    Expr::sequence([
        call.clone(),
        Expr::sequence([space, call]).repeat(0, Some(2)),
    ])
}

/// Compares the two routes on `calls`; a description of the first difference.
fn differs(calls: &[Call<'_>]) -> Option<String> {
    for (name_key, arguments_key) in KEYS {
        let keys = CallKeys {
            name: name_key,
            arguments: arguments_key,
        };
        let (schema, places) = calls_schema(calls, keys);
        let mounts: Vec<Mount<'_>> = calls
            .iter()
            .zip(&places)
            .map(|(call, at)| Mount {
                at,
                schema: call.arguments,
            })
            .collect();
        for (label, options) in option_sets() {
            let direct = outcome_text(calls_to_grammar_framed(
                calls,
                keys,
                &options,
                "tool-call",
                &mut frame,
            ));
            let through_schema = outcome_text(schema_to_grammar_framed(
                &schema,
                &mounts,
                &options,
                "tool-call",
                &mut frame,
            ));
            if direct != through_schema {
                return Some(format!(
                    "keys {keys:?}, options: {label}\n--- calls_to_grammar_framed\n{direct}\n--- through the schema\n{through_schema}"
                ));
            }
        }
    }
    None
}

/// Each registry of `testdata/tools` as (file, [(tool name, arguments schema)]).
fn registries() -> Vec<(PathBuf, Vec<(String, Value)>)> {
    let directory = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/tools");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&directory)
        .unwrap_or_else(|error| panic!("{}: {error}", directory.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "json")
        })
        .collect();
    paths.sort();
    let mut registries = Vec::new();
    for path in paths {
        // A list of tools, or an MCP `tools/list` result.
        let mut registry = read_json(&path);
        let Value::Array(tools) = registry
            .get_mut("tools")
            .map(Value::take)
            .unwrap_or(registry)
        else {
            continue;
        };
        let mut calls = Vec::new();
        for tool in &tools {
            let function = tool.get("function").unwrap_or(tool);
            let name = function.get("name").and_then(Value::as_str);
            let parameters = function
                .get("parameters")
                .or_else(|| function.get("inputSchema"));
            if let (Some(name), Some(parameters)) = (name, parameters)
                && !calls.iter().any(|(other, _)| other == name)
            {
                calls.push((name.to_string(), parameters.clone()));
            }
        }
        if !calls.is_empty() {
            registries.push((path, calls));
        }
    }
    registries
}

fn as_calls(tools: &[(String, Value)]) -> Vec<Call<'_>> {
    tools
        .iter()
        .map(|(name, arguments)| Call { name, arguments })
        .collect()
}

#[test]
fn calls_are_written_as_their_schema_for_the_tool_registries() {
    let registries = registries();
    assert!(registries.len() >= 3, "{} registries", registries.len());
    let mut failures = Vec::new();
    for (path, tools) in &registries {
        if let Some(difference) = differs(&as_calls(tools)) {
            failures.push(format!("{}\n{difference}", path.display()));
        }
    }
    println!(
        "calls route, tool registries: {} registries, {} differ",
        registries.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn calls_are_written_as_their_schema_for_maskbench() {
    let Ok(groups) = maskbench_groups(&maskbench_directory()) else {
        eprintln!("skipped: ../shared/corpora/maskbench is absent");
        return;
    };
    // Three key pairs, five option sets, two routes: a sample keeps the unoptimized run
    // short.
    let sample_every = if cfg!(debug_assertions) { 64 } else { 1 };
    let (mut compared, mut failures) = (0, Vec::new());
    for group in &groups {
        let schemas: Vec<(String, Value)> = group
            .schemas(sample_every)
            .enumerate()
            .map(|(index, entry)| (format!("tool_{index}"), entry.schema))
            .collect();
        for tools in schemas.chunks(8) {
            compared += tools.len();
            if let Some(difference) = differs(&as_calls(tools)) {
                failures.push(format!("{}: {}\n{difference}", group.name, tools[0].0));
            }
        }
    }
    println!(
        "calls route, MaskBench (every {sample_every}th schema, 8 to a registry): {compared} schemas, {} registries differ",
        failures.len()
    );
    let shown: Vec<&String> = failures.iter().take(2).collect();
    assert!(
        failures.is_empty(),
        "{} differ; the first:\n{shown:?}",
        failures.len()
    );
}
