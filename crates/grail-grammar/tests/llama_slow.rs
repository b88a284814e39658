//! `llama-slow` on the grammars of `testdata/llama-slow/` (shapes that take llama.cpp's
//! matcher seconds to minutes; docs/performance.md has the measurements): each
//! diagnostic's code, location, message and help, as snapshots.

use std::fmt::Write;
use std::path::PathBuf;

use grail_grammar::{CheckOptions, Target, check};

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `llama-slow` diagnostics of a grammar under `--target llama.cpp`, written out.
fn slow_diagnostics(name: &str) -> String {
    let path = repository_root().join("testdata/llama-slow").join(name);
    let source = std::fs::read_to_string(&path).expect("the grammar");
    let options = CheckOptions {
        target: Target::LlamaCpp,
        ..CheckOptions::default()
    };
    let report = check(&source, &options);
    assert!(report.is_ok(), "{name}: {:?}", report.diagnostics);
    let mut out = String::new();
    for diagnostic in &report.diagnostics {
        if diagnostic.code != "llama-slow" {
            continue;
        }
        let line = source[..diagnostic.span.start as usize]
            .matches('\n')
            .count()
            + 1;
        let written = &source[diagnostic.span.range()];
        writeln!(
            out,
            "{:?}[{}] line {line} `{written}`: {}",
            diagnostic.severity, diagnostic.code, diagnostic.message
        )
        .unwrap();
        if let Some(help) = &diagnostic.help {
            writeln!(out, "  help: {help}").unwrap();
        }
    }
    out
}

#[test]
fn xml_dtd_content_models() {
    insta::assert_snapshot!(slow_diagnostics("xml-dtd.gbnf"));
}

#[test]
fn hcl_expression_precedence_chain() {
    insta::assert_snapshot!(slow_diagnostics("hcl-expressions.gbnf"));
}

/// The same languages with their shared starts written once: llama.cpp reads them without
/// the multiplication (docs/performance.md), and `llama-slow` says nothing.
#[test]
fn the_factored_grammars_are_not_reported() {
    for name in ["xml-dtd-factored.gbnf", "hcl-expressions-factored.gbnf"] {
        assert_eq!(slow_diagnostics(name), "", "{name}");
    }
}
