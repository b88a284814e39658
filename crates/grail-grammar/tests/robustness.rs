//! Bounded time and memory on hostile grammars: deep nesting, huge inputs, long rule chains,
//! and every limit of `Limits` answered with an error naming it.

use std::time::Instant;

use grail_grammar::{CheckOptions, Limits, Target, check};
use grail_syntax::{ParseLimits, format, parse};

fn codes(source: &str, options: &CheckOptions) -> Vec<&'static str> {
    check(source, options)
        .diagnostics
        .iter()
        .map(|diagnostic| diagnostic.code)
        .collect()
}

#[test]
fn nesting_past_the_limit_is_refused_without_overflowing_the_stack() {
    let source = format!(
        "root ::= {}\"a\"{}\n",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    assert_eq!(
        codes(&source, &CheckOptions::default()),
        ["nesting-too-deep"]
    );
}

#[test]
fn nesting_up_to_the_limit_is_checked_and_formatted() {
    // llama.cpp's JSON Schema converters nest one group per `maxLength` character, so
    // real grammars are thousands deep; the recursive walks grow their stack as needed.
    let depth = ParseLimits::default().max_nesting_depth as usize;
    let source = format!(
        "root ::= {}\"a\"{}\n",
        "(\"a\" ".repeat(depth),
        ")?".repeat(depth)
    );
    // Run where the stack is as small as a test thread's by default.
    std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || {
            let report = check(&source, &CheckOptions::default());
            assert!(report.is_ok(), "{:?}", report.diagnostics);
            let parsed = parse(&source);
            assert_eq!(format(&source, &parsed.grammar), source);
            // llama.cpp accepts such nesting until a repeated group holds 2000 generated
            // rules (its repetition budget); 1,000 deep is within it.
            let shallower = format!(
                "root ::= {}\"a\"{}\n",
                "(\"a\" ".repeat(1000),
                ")?".repeat(1000)
            );
            let report = check(
                &shallower,
                &CheckOptions {
                    target: Target::LlamaCpp,
                    ..CheckOptions::default()
                },
            );
            assert!(report.is_ok(), "{:?}", report.diagnostics);
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn stacked_quantifiers_past_the_limit_are_refused() {
    let source = format!("root ::= \"a\"{}\n", "?".repeat(100_000));
    assert_eq!(
        codes(&source, &CheckOptions::default()),
        ["nesting-too-deep"]
    );
}

#[test]
fn a_one_megabyte_grammar_is_checked_in_bounded_time() {
    // 12,000 rules, each referring to the next (a chain as deep as the grammar is long).
    let mut source = String::from("root ::= rule-0\n");
    let mut index = 0;
    while source.len() < 1024 * 1024 {
        source.push_str(&format!(
            "rule-{index} ::= \"item {index}\" [a-z0-9]{{1,3}} (\"x\" | \"y\")? rule-{} | \"end\" # note {index}\n",
            index + 1
        ));
        index += 1;
    }
    source.push_str(&format!("rule-{index} ::= \"last\"\n"));
    let started = Instant::now();
    let report = check(
        &source,
        &CheckOptions {
            target: Target::LlamaCpp,
            ..CheckOptions::default()
        },
    );
    println!(
        "checked {} bytes, {} rules in {:?}",
        source.len(),
        index + 2,
        started.elapsed()
    );
    assert!(
        report.is_ok(),
        "{:?}",
        &report.diagnostics[..report.diagnostics.len().min(3)]
    );
    let parsed = parse(&source);
    assert_eq!(format(&source, &parsed.grammar), source);
}

#[test]
fn a_long_left_recursive_cycle_is_found_without_recursion() {
    let count = 20_000;
    let mut source = String::from("root ::= rule-0\n");
    for index in 0..count {
        source.push_str(&format!(
            "rule-{index} ::= rule-{} \"a\" | \"b\"\n",
            (index + 1) % count
        ));
    }
    let options = CheckOptions {
        target: Target::LlamaCpp,
        ..CheckOptions::default()
    };
    assert_eq!(codes(&source, &options), ["left-recursion"]);
}

#[test]
fn limits_are_enforced_and_named() {
    let tiny = CheckOptions {
        limits: Limits {
            parse: ParseLimits {
                max_source_bytes: 10,
                ..ParseLimits::default()
            },
            ..Limits::default()
        },
        ..CheckOptions::default()
    };
    assert_eq!(
        codes("root ::= \"long enough\"\n", &tiny),
        ["source-too-large"]
    );

    let few_rules = CheckOptions {
        limits: Limits {
            max_rules: 2,
            ..Limits::default()
        },
        ..CheckOptions::default()
    };
    assert_eq!(
        codes("root ::= a b\na ::= \"a\"\nb ::= \"b\"\n", &few_rules),
        ["too-many-rules"]
    );

    let few_diagnostics = CheckOptions {
        limits: Limits {
            max_diagnostics: 2,
            ..Limits::default()
        },
        ..CheckOptions::default()
    };
    let report = check("root ::= a b c d\n", &few_diagnostics);
    assert_eq!(report.error_count, 4);
    assert!(!report.is_ok());
    let listed: Vec<&str> = report.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(
        listed,
        ["rule-undefined", "rule-undefined", "diagnostics-truncated"]
    );

    let few_errors = CheckOptions {
        limits: Limits {
            parse: ParseLimits {
                max_errors: 2,
                ..ParseLimits::default()
            },
            ..Limits::default()
        },
        ..CheckOptions::default()
    };
    assert_eq!(
        codes("a ::= (\nb ::= (\nc ::= (\nd ::= (\n", &few_errors).len(),
        2
    );
}
