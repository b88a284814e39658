//! Hostile schemas get an answer, never a crash or a hang: deep nesting, `$ref` loops with
//! no base case, huge enums, objects with very many properties, oversized text, and
//! sizes past llama.cpp's repetition threshold. Each case checks the answer (the error
//! code naming the limit, or a grammar that still compiles and matches); time and memory
//! are bounded by the limits, not asserted here.

use grail_engine::{CompiledGrammar, Matcher};
use grail_schema::{SchemaError, SchemaOptions, schema_text_to_grammar, schema_to_grammar};
use serde_json::{Value, json};

/// The codes of the errors a refused schema carries.
fn refusal_codes(schema: &Value) -> Vec<&'static str> {
    match schema_to_grammar(schema, &SchemaOptions::default()) {
        Err(SchemaError::Refused { diagnostics }) => diagnostics
            .iter()
            .map(|diagnostic| diagnostic.code)
            .collect(),
        Err(other) => panic!("unexpected error: {other}"),
        Ok(_) => Vec::new(),
    }
}

/// The schema's grammar, compiled, after checking that llama.cpp would accept it.
fn compiled(schema: &Value) -> CompiledGrammar {
    let converted = schema_to_grammar(schema, &SchemaOptions::default())
        .unwrap_or_else(|error| panic!("refused: {error}"));
    let report = grail_grammar::check(
        &grail_grammar::print_grammar(&converted.grammar),
        &grail_grammar::CheckOptions {
            target: grail_grammar::Target::LlamaCpp,
            ..Default::default()
        },
    );
    assert!(
        report.is_ok(),
        "llama.cpp would refuse: {:?}",
        report.diagnostics
    );
    CompiledGrammar::compile(&converted.grammar, &Default::default()).expect("compiles")
}

fn matches(grammar: &CompiledGrammar, text: &str) -> bool {
    let mut matcher = Matcher::new(grammar);
    matcher.accept_str(text).is_ok() && matcher.is_accepting()
}

#[test]
fn nesting_past_the_depth_limit_is_refused_without_overflowing_the_stack() {
    // Past the default limit of 128 (a `Value` this deep is built in code: serde_json's
    // parser stops at 128 levels of JSON).
    let mut schema = json!({"type": "integer"});
    for _ in 0..300 {
        schema = json!({"type": "array", "items": schema});
    }
    assert!(refusal_codes(&schema).contains(&"schema-too-deep"));
}

#[test]
fn ref_loops_without_a_schema_in_between_are_refused() {
    assert!(refusal_codes(&json!({"$ref": "#"})).contains(&"ref-cycle"));
    let schema = json!({
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        "$ref": "#/$defs/a"
    });
    assert!(refusal_codes(&schema).contains(&"ref-cycle"));
}

#[test]
fn recursion_with_no_base_case_gives_a_grammar_that_matches_nothing() {
    // Every instance must contain another instance: no finite JSON value is valid.
    let schema = json!({
        "type": "object",
        "properties": {"next": {"$ref": "#"}},
        "required": ["next"],
        "additionalProperties": false
    });
    match schema_to_grammar(&schema, &SchemaOptions::default()) {
        Ok(converted) => {
            if let Ok(grammar) = CompiledGrammar::compile(&converted.grammar, &Default::default()) {
                assert!(!matches(&grammar, r#"{"next": {}}"#));
            }
        }
        Err(SchemaError::Refused { diagnostics }) => assert!(!diagnostics.is_empty()),
        Err(other) => panic!("unexpected error: {other}"),
    }
}

#[test]
fn enums_past_the_limit_are_refused() {
    let values: Vec<Value> = (0..20_000).map(|value| json!(value)).collect();
    assert!(refusal_codes(&json!({"enum": values})).contains(&"enum-too-large"));
}

#[test]
fn an_object_with_many_properties_is_answered() {
    let properties: serde_json::Map<String, Value> = (0..3_000)
        .map(|index| (format!("p{index}"), json!({"type": "integer"})))
        .collect();
    let schema = json!({"type": "object", "properties": properties});
    match schema_to_grammar(&schema, &SchemaOptions::default()) {
        Ok(converted) => {
            let grammar = CompiledGrammar::compile(&converted.grammar, &Default::default())
                .expect("compiles");
            assert!(matches(&grammar, r#"{"p0": 1, "p2999": 2, "other": true}"#));
            assert!(!matches(&grammar, r#"{"p0": "x"}"#));
        }
        Err(SchemaError::Refused { diagnostics }) => {
            assert!(
                diagnostics
                    .iter()
                    .any(|diagnostic| diagnostic.code == "rules-too-many")
            );
        }
        Err(other) => panic!("unexpected error: {other}"),
    }
}

#[test]
fn text_over_the_size_limit_is_refused_before_parsing() {
    let options = SchemaOptions {
        limits: grail_schema::SchemaLimits {
            max_schema_bytes: 1_000,
            ..Default::default()
        },
        ..SchemaOptions::default()
    };
    let text = format!(r#"{{"description": "{}"}}"#, "x".repeat(2_000));
    assert!(matches!(
        schema_text_to_grammar(&text, &options),
        Err(SchemaError::TooLarge { .. })
    ));
}

#[test]
fn lengths_past_llama_cpps_threshold_stay_exact() {
    let grammar = compiled(&json!({"type": "string", "maxLength": 10_000}));
    assert!(matches(&grammar, &format!("\"{}\"", "a".repeat(10_000))));
    assert!(!matches(&grammar, &format!("\"{}\"", "a".repeat(10_001))));
    let grammar = compiled(&json!({"type": "array", "items": {"const": 1}, "minItems": 3000}));
    let items = |count: usize| format!("[{}]", vec!["1"; count].join(","));
    assert!(matches(&grammar, &items(3000)));
    assert!(!matches(&grammar, &items(2999)));
}
