//! Values under the same constraints share one grammar: a second property with the same
//! string or number constraints adds its key, not another copy of the value's rules; and a
//! weakened constraint is still reported at every place it is written.

use grail_engine::{CompiledGrammar, Matcher};
use grail_schema::{Mode, SchemaOptions, schema_to_grammar};
use serde_json::{Value, json};

fn rule_count(schema: &Value) -> usize {
    schema_to_grammar(schema, &SchemaOptions::default())
        .expect("converts")
        .grammar
        .rules
        .len()
}

fn object_of(value: &Value, names: &[&str]) -> Value {
    let properties: serde_json::Map<String, Value> = names
        .iter()
        .map(|name| (name.to_string(), value.clone()))
        .collect();
    json!({"type": "object", "properties": properties, "required": names, "additionalProperties": false})
}

#[test]
fn repeated_constraints_add_no_rules_for_their_values() {
    let values = [
        json!({"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$", "maxLength": 30}),
        json!({"type": "string", "maxLength": 255}),
        json!({"type": "string", "format": "date-time"}),
        json!({"type": "number", "multipleOf": 0.01, "minimum": 0}),
    ];
    for value in &values {
        let one = rule_count(&object_of(value, &["a"]));
        let three = rule_count(&object_of(value, &["a", "b", "c"]));
        // Each further property adds at most three rules: its key-value pair, the rest of
        // the object after it, and its value's own (a reference to the shared grammar).
        assert!(
            three <= one + 2 * 3,
            "{value}: {one} rules for one, {three} for three"
        );
    }
}

#[test]
fn shared_values_still_match_at_every_place() {
    let schema = object_of(
        &json!({"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$", "maxLength": 12}),
        &["a", "b"],
    );
    let converted = schema_to_grammar(&schema, &SchemaOptions::default()).expect("converts");
    let compiled = CompiledGrammar::compile(&converted.grammar, &Default::default()).unwrap();
    let accepts = |text: &str| {
        let mut matcher = Matcher::new(&compiled);
        matcher.accept_str(text).is_ok() && matcher.is_accepting()
    };
    assert!(accepts(r#"{"a": "ab-cd", "b": "x"}"#));
    assert!(!accepts(r#"{"a": "ab-cd", "b": "x-"}"#));
    assert!(!accepts(r#"{"a": "abcdefghijklm", "b": "x"}"#));
}

#[test]
fn a_weakened_constraint_is_reported_at_each_place() {
    let schema = object_of(&json!({"type": "string", "format": "email"}), &["a", "b"]);
    let options = SchemaOptions {
        mode: Mode::Lenient,
        ..SchemaOptions::default()
    };
    let converted = schema_to_grammar(&schema, &options).expect("converts leniently");
    let pointers: Vec<&str> = converted
        .diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.keyword.as_deref() == Some("format"))
        .map(|diagnostic| diagnostic.pointer.as_str())
        .collect();
    assert_eq!(pointers, ["/properties/a", "/properties/b"]);
}
