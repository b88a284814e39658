//! Documents mounted into a schema (`schema_to_grammar_framed` with `Mount`s) read as if
//! copied there, except that their `$ref`s stay relative to themselves; diagnostics name
//! places in the combined schema; bad mount points are refused.

use grail_engine::{CompiledGrammar, Matcher};
use grail_grammar::Expr;
use grail_schema::{Mount, SchemaOptions, schema_to_grammar_framed};
use serde_json::{Value, json};

/// The grammar of `root` with `mounts`, framed as the bare schema.
fn convert(
    root: &Value,
    mounts: &[Mount<'_>],
) -> Result<grail_schema::SchemaGrammar, grail_schema::SchemaError> {
    let mut frame = |_: &mut grail_grammar::GrammarBuilder, schema: Expr, _: Expr| schema;
    schema_to_grammar_framed(root, mounts, &SchemaOptions::default(), "s", &mut frame)
}

/// `first` mounted at `/properties/a`, `second` at `/properties/b`.
fn at_a_and_b<'v>(first: &'v Value, second: &'v Value) -> [Mount<'v>; 2] {
    [
        Mount {
            at: "/properties/a",
            schema: first,
        },
        Mount {
            at: "/properties/b",
            schema: second,
        },
    ]
}

fn accepts(grammar: &grail_grammar::Grammar, text: &str) -> bool {
    let compiled = CompiledGrammar::compile(grammar, &Default::default()).unwrap();
    let mut matcher = Matcher::new(&compiled);
    matcher.accept_str(text).is_ok() && matcher.is_accepting()
}

#[test]
fn mounted_documents_keep_their_own_references() {
    // Both the root and each mounted document define `#/$defs/v`, differently.
    let root = json!({
        "type": "object",
        "properties": {"a": true, "b": true, "c": {"$ref": "#/$defs/v"}},
        "required": ["a", "b", "c"],
        "additionalProperties": false,
        "$defs": {"v": {"type": "boolean"}}
    });
    let first = json!({"$defs": {"v": {"type": "integer"}}, "$ref": "#/$defs/v"});
    let second = json!({
        "$id": "https://example.com/second.json",
        "$defs": {"v": {"$anchor": "word", "enum": ["x", "y"]}},
        "type": "array",
        "items": {"$ref": "#word"}
    });
    let mounts = at_a_and_b(&first, &second);
    let converted = convert(&root, &mounts).expect("converts");
    let grammar = &converted.grammar;
    assert!(accepts(grammar, r#"{"a": 3, "b": ["x", "y"], "c": true}"#));
    assert!(!accepts(grammar, r#"{"a": true, "b": ["x"], "c": true}"#));
    assert!(!accepts(grammar, r#"{"a": 3, "b": ["z"], "c": true}"#));
    assert!(!accepts(grammar, r#"{"a": 3, "b": [], "c": 3}"#));
}

#[test]
fn the_same_relative_id_in_two_mounted_documents_names_two_resources() {
    let root = json!({
        "type": "object",
        "properties": {"a": true, "b": true},
        "required": ["a", "b"],
        "additionalProperties": false
    });
    let first = json!({"$id": "args.json", "$defs": {"v": {"type": "integer"}}, "$ref": "args.json#/$defs/v"});
    let second = json!({"$id": "args.json", "$defs": {"v": {"type": "boolean"}}, "$ref": "args.json#/$defs/v"});
    let mounts = at_a_and_b(&first, &second);
    let converted = convert(&root, &mounts).expect("converts");
    assert!(accepts(&converted.grammar, r#"{"a": 3, "b": true}"#));
    assert!(!accepts(&converted.grammar, r#"{"a": true, "b": true}"#));
    assert!(!accepts(&converted.grammar, r#"{"a": 3, "b": 3}"#));
}

#[test]
fn diagnostics_inside_a_mount_name_its_place_in_the_root() {
    let root = json!({"type": "object", "properties": {"args": true}});
    let mounted =
        json!({"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": true}}});
    let mounts = [Mount {
        at: "/properties/args",
        schema: &mounted,
    }];
    let refused = convert(&root, &mounts).expect_err("uniqueItems is refused");
    let pointers: Vec<String> = refused
        .diagnostics()
        .iter()
        .map(|diagnostic| diagnostic.keyword_pointer())
        .collect();
    assert_eq!(pointers, ["/properties/args/properties/tags/uniqueItems"]);
}

#[test]
fn mount_points_must_be_below_the_root_and_apart() {
    let root = json!({"type": "object", "properties": {"a": true}});
    let mounted = json!({"type": "string"});
    for places in [
        vec![""],
        vec!["properties/a"],
        vec!["/properties/a", "/properties/a/items"],
        vec!["/properties/a", "/properties/a"],
    ] {
        let mounts: Vec<Mount<'_>> = places
            .iter()
            .map(|at| Mount {
                at,
                schema: &mounted,
            })
            .collect();
        let refused = convert(&root, &mounts).expect_err("refused");
        assert_eq!(refused.diagnostics()[0].code, "mount-invalid", "{places:?}");
    }
}
