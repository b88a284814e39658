//! Tool-call grammars are the same whether the tools' schemas take the schema converter's
//! direct path (plain schemas written straight from their JSON) or its general one: every
//! registry of `testdata/tools` and `testdata/tools/registries`, in every wire format,
//! with calls required or optional, one or several, with and without a reasoning block,
//! gives the same GBNF byte for byte and the same diagnostics (or the same refusal).

use std::path::{Path, PathBuf};

use grail_schema::without_direct_path;
use grail_tools::{CallOptions, Think, ToolChoice, ToolRegistry, WireFormat, tool_call_grammar};

fn registries() -> Vec<(PathBuf, ToolRegistry)> {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/tools");
    let mut paths: Vec<PathBuf> = [directory.clone(), directory.join("registries")]
        .iter()
        .flat_map(|directory| {
            std::fs::read_dir(directory)
                .unwrap_or_else(|error| panic!("{}: {error}", directory.display()))
        })
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "json")
        })
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            // Files that are not registries (the case corpus) are left out.
            let registry = ToolRegistry::from_json_text(&text).ok()?;
            Some((path, registry))
        })
        .collect()
}

/// The grammar (or the refusal) and the diagnostics, sorted (the direct path may find
/// two of one severity in another order).
fn outcome(registry: &ToolRegistry, options: &CallOptions) -> String {
    match tool_call_grammar(registry, options) {
        Ok(grammar) => {
            let mut diagnostics: Vec<String> = grammar
                .diagnostics
                .iter()
                .map(|diagnostic| format!("{diagnostic:?}"))
                .collect();
            diagnostics.sort();
            format!("{}\n{}", grammar.gbnf(), diagnostics.join("\n"))
        }
        Err(error) => format!("refused: {error:?}"),
    }
}

#[test]
fn tool_call_grammars_are_the_same_on_both_paths() {
    let registries = registries();
    assert!(registries.len() >= 24, "{} registries", registries.len());
    let mut compared = 0;
    for (path, registry) in &registries {
        for wire in WireFormat::ALL {
            for (choice, max_calls, think) in [
                (ToolChoice::Required, Some(1), Think::Off),
                (ToolChoice::Auto, None, Think::Optional),
                (ToolChoice::Auto, Some(3), Think::Forced),
            ] {
                let options = CallOptions {
                    wire,
                    choice,
                    max_calls,
                    think,
                    ..CallOptions::default()
                };
                let direct = outcome(registry, &options);
                let general = without_direct_path(|| outcome(registry, &options));
                assert_eq!(
                    direct,
                    general,
                    "{} in {wire:?}: the direct path (left) differs from the general one",
                    path.display()
                );
                compared += 1;
            }
        }
    }
    println!("tool-call grammars compared on both paths: {compared}");
}
