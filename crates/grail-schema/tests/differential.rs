//! Grail's grammars against the `jsonschema` crate (draft 2020-12), on generated schemas
//! and instances: whenever strict mode compiles a schema, the grammar must match an
//! instance's JSON text exactly when `jsonschema` calls the value of that text valid.
//!
//! Schemas come from a grammar of fragments, nested at most 3 deep: `type` (one name or
//! several), `enum`/`const` of small values, `minimum`/`maximum`/`exclusive*` (small
//! integers and halves), `multipleOf`, `minLength`/`maxLength`, a few fixed `pattern`s,
//! `items`, `prefixItems`, `minItems`/`maxItems`, `properties`/`required`/
//! `additionalProperties` (boolean or schema), `allOf`/`anyOf`/`oneOf` of 1-3 schemas,
//! `not` of a type or an enum, `$ref` to a `$defs` entry; less often `contains`
//! (`minContains`), `uniqueItems`, `minProperties`/`maxProperties`, `propertyNames`,
//! `patternProperties`. Schemas the converter refuses are counted and skipped.
//!
//! Texts judged per schema:
//! - random values over a small domain (null, booleans, small integers, `2.5`-like
//!   decimals, `1e2`, short strings over `abcxy`, arrays and objects of up to 3 entries
//!   keyed by the schema's property names and one more) and the schema's own constants,
//!   bounds give or take a little, and steps, written by `tests/support/corpus.rs`'s
//!   `serialize` (as a JSON writer writes them);
//! - texts sampled from the grammar (`grail_engine::Sampler`), so valid instances are well
//!   represented; their values written by `serialize`; near misses of those values (a
//!   leaf swapped, a character, item or key dropped, an item repeated, a key added); and
//!   each of those written with every non-ASCII character escaped, as Python's
//!   `json.dumps` does by default.
//!
//! Like with like: `jsonschema` always judges the value parsed back from the very text
//! the grammar saw (serde_json writes the value `1e2` as `100.0`; that text is what both
//! sides judge).
//!
//! Not counted as disagreements:
//! - a valid text rejected for a documented narrowing (`tests/support/narrowings.rs`:
//!   integers written `100.0` or `-0.0`, DEL or escapes where canonical strings are
//!   required, key order), shown by a rewritten text that matches;
//! - sampled texts serde_json refuses (lone surrogate escapes, exponents past f64), and
//!   sampled texts with numbers an f64 may not hold exactly (`jsonschema` compares f64s,
//!   the grammars exact decimals): only numbers of at most 15 significant digits and
//!   magnitudes within 1e±15 are kept;
//! - failures a known converter bug explains ([`KNOWN_BUGS`], each with its minimal case,
//!   which `known_bugs_still_reproduce` checks still fails: a fixed bug fails that test
//!   until its entry is removed, so no stale predicate hides a regression).
//!
//! A converter panic is a failure too. Failures are shrunk by proptest to a minimal
//! schema. The seed is fixed, so runs repeat; to explore further:
//!
//! ```text
//! CARGO_TARGET_DIR=/work/target-suite cargo test -j2 -p grail-schema --test differential -- --nocapture
//! GRAIL_DIFFERENTIAL_SEED=7 GRAIL_DIFFERENTIAL_CASES=5000 CARGO_TARGET_DIR=/work/target-suite cargo test -j2 -p grail-schema --test differential -- --nocapture
//! ```

#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/narrowings.rs"]
mod narrowings;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Once;
use std::time::Instant;

use corpus::serialize;
use grail_engine::{CompiledGrammar, Sampler, Segment};
use grail_schema::{SchemaError, SchemaOptions, schema_to_grammar};
use narrowings::{DecimalText, Narrowing, explain_rejection, grammar_matches, rewrite_numbers};
use proptest::prelude::*;
use proptest::sample::{select, subsequence};
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestError, TestRunner};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};

/// Cases per run (`GRAIL_DIFFERENTIAL_CASES` overrides).
const DEFAULT_CASES: u32 = 1000;
/// The proptest seed (`GRAIL_DIFFERENTIAL_SEED` overrides).
const DEFAULT_SEED: u64 = 202_012;
/// Texts sampled from each compiled grammar.
const SAMPLES_PER_SCHEMA: usize = 8;
/// Cases of each narrowing printed.
const NARROWING_EXAMPLES: usize = 3;
/// Near misses judged per sample.
const MUTATIONS_PER_SAMPLE: usize = 2;
/// About how long a sampled text may be.
const SAMPLE_MAX_CHARS: usize = 40;

/// Property names of generated schemas; instances use these and [`EXTRA_KEY`].
const PROPERTY_NAMES: &[&str] = &["a", "b", "c"];
const EXTRA_KEY: &str = "z";
const DEFINITION_NAMES: &[&str] = &["d0", "d1"];
const TYPE_NAMES: &[&str] = &[
    "null", "boolean", "integer", "number", "string", "array", "object",
];
const PATTERNS: &[&str] = &["^[a-c]+$", "ab", "^x?y$", "^a", "c$", "^[abc]*$", "x|y"];

/// A converter bug that explains some failures, with its minimal case.
struct KnownBug {
    name: &'static str,
    explanation: &'static str,
    schema: &'static str,
    /// The instance's text as it reaches the grammar; `None` when the converter panics.
    text: Option<&'static str>,
    /// Whether the bug explains this failure.
    explains: fn(&Failure) -> bool,
}

const KNOWN_BUGS: &[KnownBug] = &[KnownBug {
    name: "min-properties-counts-duplicate-keys",
    explanation: "`minProperties` counts keys as written, so a key written twice counts twice: the grammar accepts `{\"a\": 1, \"a\": 2}`, an object of one property, for `minProperties: 2`",
    schema: r#"{"minProperties": 2}"#,
    text: Some(r#"{"a": 1, "a": 2}"#),
    explains: |failure| match &failure.kind {
        FailureKind::Disagreement {
            text,
            grammar_accepts: true,
            ..
        } => {
            has_duplicate_keys(text)
                && has_keyword(&failure.schema, &|name, _| name == "minProperties")
        }
        _ => false,
    },
}];

/// Whether the text has a `\uD8xx\uDCxx`-style surrogate pair escape.
fn has_surrogate_pair_escape(text: &str) -> bool {
    let lowercase = text.to_ascii_lowercase();
    lowercase.match_indices("\\ud").any(|(position, _)| {
        let high = lowercase.as_bytes().get(position + 3).copied();
        let low = lowercase.get(position + 6..position + 10);
        matches!(high, Some(b'8' | b'9' | b'a' | b'b'))
            && low.is_some_and(|low| {
                low.starts_with("\\ud") && matches!(low.as_bytes()[3], b'c' | b'd' | b'e' | b'f')
            })
    })
}

/// Whether some object of a JSON text has a key twice.
fn has_duplicate_keys(text: &str) -> bool {
    /// Reads one value from `position`; returns the position after it.
    fn value(bytes: &[u8], mut position: usize, duplicate: &mut bool) -> usize {
        position = skip_space(bytes, position);
        match bytes.get(position) {
            Some(b'{') => {
                let mut keys: Vec<&[u8]> = Vec::new();
                position = skip_space(bytes, position + 1);
                while bytes.get(position) == Some(&b'"') {
                    let end = string_end(bytes, position);
                    let key = &bytes[position..end];
                    *duplicate |= keys.contains(&key);
                    keys.push(key);
                    position = skip_space(bytes, end) + 1; // the colon
                    position = skip_space(bytes, value(bytes, position, duplicate));
                    if bytes.get(position) == Some(&b',') {
                        position = skip_space(bytes, position + 1);
                    }
                }
                position + 1
            }
            Some(b'[') => {
                position = skip_space(bytes, position + 1);
                while bytes.get(position).is_some_and(|&byte| byte != b']') {
                    let before = position;
                    position = skip_space(bytes, value(bytes, position, duplicate));
                    if bytes.get(position) == Some(&b',') {
                        position += 1;
                    }
                    if position == before {
                        break; // not JSON: stop rather than loop
                    }
                }
                position + 1
            }
            Some(b'"') => string_end(bytes, position),
            _ => {
                while bytes
                    .get(position)
                    .is_some_and(|byte| !b",]} \t\n\r".contains(byte))
                {
                    position += 1;
                }
                position
            }
        }
    }
    fn skip_space(bytes: &[u8], mut position: usize) -> usize {
        while bytes
            .get(position)
            .is_some_and(|byte| b" \t\n\r".contains(byte))
        {
            position += 1;
        }
        position
    }
    /// The position after the string starting at `position`.
    fn string_end(bytes: &[u8], mut position: usize) -> usize {
        position += 1;
        while let Some(&byte) = bytes.get(position) {
            position += if byte == b'\\' { 2 } else { 1 };
            if byte == b'"' {
                break;
            }
        }
        position
    }
    let mut duplicate = false;
    value(text.as_bytes(), 0, &mut duplicate);
    duplicate
}

/// Whether `schema` or any schema or value inside it has a keyword `test` holds for.
fn has_keyword(schema: &Value, test: &dyn Fn(&str, &Value) -> bool) -> bool {
    match schema {
        Value::Object(entries) => entries
            .iter()
            .any(|(name, value)| test(name, value) || has_keyword(value, test)),
        Value::Array(items) => items.iter().any(|item| has_keyword(item, test)),
        _ => false,
    }
}

/// Where an instance's text came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextSource {
    /// A random value, written by `corpus::serialize`.
    Written,
    /// A value written by `corpus::serialize`, then every non-ASCII character escaped
    /// (as Python's `json.dumps` does by default: `\ud83d\ude00` for U+1F600).
    AsciiEscaped,
    /// Sampled from the grammar.
    Sampled,
}

/// What went wrong with a schema.
#[derive(Debug, Clone)]
enum FailureKind {
    /// The converter (or the engine compiling its grammar) panicked, with this message.
    Panic(String),
    /// The grammar and `jsonschema` judge `text` differently.
    Disagreement {
        text: String,
        source: TextSource,
        grammar_accepts: bool,
    },
}

#[derive(Debug, Clone)]
struct Failure {
    schema: Value,
    kind: FailureKind,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            FailureKind::Panic(message) => write!(
                formatter,
                "schema {} — the converter panicked: {message}",
                self.schema
            ),
            FailureKind::Disagreement {
                text,
                source,
                grammar_accepts,
            } => {
                let (grammar, validator) = if *grammar_accepts {
                    ("accepts", "invalid")
                } else {
                    ("rejects", "valid")
                };
                write!(
                    formatter,
                    "schema {} — grammar {grammar} {text:?} ({source:?}), jsonschema says {validator}",
                    self.schema
                )
            }
        }
    }
}

/// What the runs saw.
#[derive(Debug, Default)]
struct Tally {
    schemas: usize,
    compiled: usize,
    refusals: BTreeMap<String, usize>,
    panics: usize,
    validator_refused: usize,
    texts_written: usize,
    texts_sampled: usize,
    valid: usize,
    invalid: usize,
    narrowed: BTreeMap<Vec<Narrowing>, usize>,
    /// The first few cases of each narrowing, to read.
    narrowed_examples: BTreeMap<Vec<Narrowing>, Vec<String>>,
    known_bugs: BTreeMap<&'static str, usize>,
    samples_not_json: usize,
    samples_not_json_examples: Vec<String>,
    samples_not_f64_exact: usize,
    samples_unmatched: usize,
}

// ---- schemas ----------------------------------------------------------------------

type Fragment = Vec<(String, Value)>;

fn keyword(name: &str, value: Value) -> Fragment {
    vec![(name.to_string(), value)]
}

/// A schema object made of fragments (a later keyword replaces an earlier one).
fn merge_fragments(fragments: Vec<Fragment>) -> Value {
    let mut object = Map::new();
    for (name, value) in fragments.into_iter().flatten() {
        object.insert(name, value);
    }
    Value::Object(object)
}

fn type_keyword() -> BoxedStrategy<Fragment> {
    prop_oneof![
        select(TYPE_NAMES).prop_map(|name| keyword("type", json!(name))),
        subsequence(TYPE_NAMES, 1..=3).prop_map(|names| keyword("type", json!(names))),
    ]
    .boxed()
}

/// Small constants for `enum` and `const`.
fn constant() -> BoxedStrategy<Value> {
    select(vec![
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(1),
        json!(-1),
        json!(2),
        json!(2.0),
        json!(2.5),
        json!(""),
        json!("a"),
        json!("ab"),
        json!("x"),
        json!([]),
        json!([1]),
        json!({"a": 1}),
    ])
    .boxed()
}

fn value_keywords() -> BoxedStrategy<Fragment> {
    prop_oneof![
        prop::collection::vec(constant(), 1..=3).prop_map(|values| keyword("enum", json!(values))),
        constant().prop_map(|value| keyword("const", value)),
    ]
    .boxed()
}

fn numeric_keywords() -> BoxedStrategy<Fragment> {
    let bound = select(vec![
        json!(-2),
        json!(-1),
        json!(0),
        json!(1),
        json!(2),
        json!(3),
        json!(10),
        json!(-0.5),
        json!(1.5),
        json!(2.5),
    ]);
    let bound_keyword = select(&["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"][..]);
    let multiple_of = select(vec![
        json!(1),
        json!(2),
        json!(3),
        json!(0.5),
        json!(0.25),
        json!(1.5),
    ]);
    (
        prop::collection::vec((bound_keyword, bound), 0..=2),
        prop::option::of(multiple_of),
    )
        .prop_map(|(bounds, multiple_of)| {
            let mut fragment: Fragment = bounds
                .into_iter()
                .map(|(name, value)| (name.to_string(), value))
                .collect();
            if let Some(step) = multiple_of {
                fragment.push(("multipleOf".into(), step));
            }
            if fragment.is_empty() {
                fragment.push(("minimum".into(), json!(0)));
            }
            fragment
        })
        .boxed()
}

fn string_keywords() -> BoxedStrategy<Fragment> {
    prop_oneof![
        (0u64..=3).prop_map(|count| keyword("minLength", json!(count))),
        (0u64..=4).prop_map(|count| keyword("maxLength", json!(count))),
        select(PATTERNS).prop_map(|pattern| keyword("pattern", json!(pattern))),
    ]
    .boxed()
}

fn item_count_keywords() -> BoxedStrategy<Fragment> {
    prop_oneof![
        (0u64..=3).prop_map(|count| keyword("minItems", json!(count))),
        (0u64..=3).prop_map(|count| keyword("maxItems", json!(count))),
    ]
    .boxed()
}

/// Keywords beyond the core list, less often: what the converter does with them is
/// checked too (refusals are skipped like any other).
fn other_leaf_keywords() -> BoxedStrategy<Fragment> {
    prop_oneof![
        (0u64..=2).prop_map(|count| keyword("minProperties", json!(count))),
        (0u64..=2).prop_map(|count| keyword("maxProperties", json!(count))),
        Just(keyword("uniqueItems", json!(true))),
    ]
    .boxed()
}

fn reference() -> BoxedStrategy<Fragment> {
    select(DEFINITION_NAMES)
        .prop_map(|name| keyword("$ref", json!(format!("#/$defs/{name}"))))
        .boxed()
}

/// Keywords without subschemas.
fn leaf_fragment(with_references: bool) -> BoxedStrategy<Fragment> {
    let fragments = prop_oneof![
        3 => type_keyword(),
        2 => value_keywords(),
        2 => numeric_keywords(),
        2 => string_keywords(),
        1 => item_count_keywords(),
        1 => other_leaf_keywords(),
    ];
    if with_references {
        prop_oneof![6 => fragments, 1 => reference()].boxed()
    } else {
        fragments.boxed()
    }
}

fn leaf_schema(with_references: bool) -> BoxedStrategy<Value> {
    prop_oneof![
        12 => prop::collection::vec(leaf_fragment(with_references), 1..=3).prop_map(merge_fragments),
        1 => Just(json!(true)),
        1 => Just(json!(false)),
    ]
    .boxed()
}

/// Keywords whose values hold `inner` schemas.
fn composite_fragment(inner: BoxedStrategy<Value>) -> BoxedStrategy<Fragment> {
    let properties = (
        subsequence(PROPERTY_NAMES, 1..=3),
        prop::collection::vec(inner.clone(), 3),
    )
        .prop_map(|(names, schemas)| {
            let properties: Map<String, Value> =
                names.into_iter().map(str::to_string).zip(schemas).collect();
            keyword("properties", Value::Object(properties))
        });
    let required_names: Vec<&str> = PROPERTY_NAMES.iter().copied().chain([EXTRA_KEY]).collect();
    let required =
        subsequence(required_names, 1..=2).prop_map(|names| keyword("required", json!(names)));
    let additional = prop_oneof![any::<bool>().prop_map(Value::Bool), inner.clone()]
        .prop_map(|schema| keyword("additionalProperties", schema));
    let combination = (
        select(&["allOf", "anyOf", "oneOf"][..]),
        prop::collection::vec(inner.clone(), 1..=3),
    )
        .prop_map(|(name, schemas)| keyword(name, json!(schemas)));
    let negation = prop_oneof![type_keyword(), value_keywords()]
        .prop_map(|fragment| keyword("not", merge_fragments(vec![fragment])));
    let contains = (inner.clone(), prop::option::of(0u64..=2)).prop_map(|(schema, minimum)| {
        let mut fragment = keyword("contains", schema);
        if let Some(minimum) = minimum {
            fragment.push(("minContains".into(), json!(minimum)));
        }
        fragment
    });
    let property_names = prop_oneof![string_keywords(), value_keywords()]
        .prop_map(|fragment| keyword("propertyNames", merge_fragments(vec![fragment])));
    let pattern_properties = (select(PATTERNS), inner.clone())
        .prop_map(|(pattern, schema)| keyword("patternProperties", json!({ pattern: schema })));
    prop_oneof![
        2 => inner.clone().prop_map(|schema| keyword("items", schema)),
        1 => contains,
        1 => property_names,
        1 => pattern_properties,
        1 => prop::collection::vec(inner, 1..=2).prop_map(|schemas| keyword("prefixItems", json!(schemas))),
        3 => properties,
        1 => required,
        2 => additional,
        3 => combination,
        1 => negation,
    ]
    .boxed()
}

/// Schemas nested at most `depth` deep.
fn schema_of_depth(depth: u32, with_references: bool) -> BoxedStrategy<Value> {
    if depth == 0 {
        return leaf_schema(with_references);
    }
    let inner = schema_of_depth(depth - 1, with_references);
    prop_oneof![
        1 => leaf_schema(with_references),
        2 => prop::collection::vec(
            prop_oneof![leaf_fragment(with_references), composite_fragment(inner)],
            1..=3,
        )
        .prop_map(merge_fragments),
    ]
    .boxed()
}

/// A root schema (depth ≤ 3) with `$defs` its `$ref`s may name (depth ≤ 1, no `$ref`).
fn root_schema() -> BoxedStrategy<Value> {
    (
        prop::collection::vec(
            prop_oneof![
                leaf_fragment(true),
                composite_fragment(schema_of_depth(2, true))
            ],
            1..=3,
        ),
        prop::collection::vec(schema_of_depth(1, false), DEFINITION_NAMES.len()),
    )
        .prop_map(|(fragments, definitions)| {
            let mut root = merge_fragments(fragments);
            let definitions: Map<String, Value> = DEFINITION_NAMES
                .iter()
                .map(|name| name.to_string())
                .zip(definitions)
                .collect();
            root.as_object_mut()
                .expect("an object")
                .insert("$defs".into(), Value::Object(definitions));
            root
        })
        .boxed()
}

// ---- instances --------------------------------------------------------------------

/// Keys of instance objects: the property names schemas use, and one more.
fn instance_keys() -> Vec<&'static str> {
    PROPERTY_NAMES.iter().copied().chain([EXTRA_KEY]).collect()
}

/// A number as a JSON value: integers as integers (a writer writes `2`, not `2.0`).
fn number_value(number: f64) -> Value {
    if number.fract() == 0.0 && number.abs() < 1e15 {
        json!(number as i64)
    } else {
        json!(number)
    }
}

/// Values near the schema's edges: its constants (and their items), its numeric bounds
/// and steps give or take a little, a few strings around its lengths and patterns.
fn schema_atoms(schema: &Value) -> Vec<Value> {
    let mut atoms: Vec<Value> = ["y", "xy", "aab", "abc", "cab", "abcd", "xyz"]
        .iter()
        .map(|text| json!(text))
        .collect();
    let mut add = |value: Value| {
        if !atoms.contains(&value) {
            atoms.push(value);
        }
    };
    fn walk(schema: &Value, add: &mut dyn FnMut(Value)) {
        match schema {
            Value::Object(entries) => {
                for (name, value) in entries {
                    match (name.as_str(), value) {
                        ("const", constant) => add_constant(constant, add),
                        ("enum", Value::Array(values)) => {
                            values.iter().for_each(|value| add_constant(value, add))
                        }
                        (
                            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum",
                            Value::Number(bound),
                        ) => {
                            let bound = bound.as_f64().unwrap_or(0.0);
                            for delta in [-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0] {
                                add(number_value(bound + delta));
                            }
                        }
                        ("multipleOf", Value::Number(step)) => {
                            let step = step.as_f64().unwrap_or(1.0);
                            for factor in [-1.0, 1.0, 2.0, 3.0, 5.0] {
                                add(number_value(step * factor));
                            }
                        }
                        _ => walk(value, add),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, add)),
            _ => {}
        }
    }
    fn add_constant(value: &Value, add: &mut dyn FnMut(Value)) {
        add(value.clone());
        match value {
            Value::Array(items) => items.iter().for_each(|item| add_constant(item, add)),
            Value::Object(entries) => entries.values().for_each(|item| add_constant(item, add)),
            _ => {}
        }
    }
    walk(schema, &mut add);
    atoms
}

/// Random instances over a small domain and the schema's atoms.
fn instance_value(atoms: Vec<Value>) -> BoxedStrategy<Value> {
    let keys = instance_keys();
    let leaf = prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        2 => select(vec![-2i64, -1, 0, 1, 2, 3, 10]).prop_map(|number| json!(number)),
        // 100.0 is `1e2`: serde_json writes it `100.0`.
        1 => select(vec![2.5f64, -0.5, 1.5, 0.25, 100.0]).prop_map(|number| json!(number)),
        2 => "[abcxy]{0,3}".prop_map(Value::String),
        4 => select(atoms),
    ];
    leaf.prop_recursive(2, 16, 3, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..=3).prop_map(Value::Array),
            prop::collection::vec((select(keys.clone()), inner), 0..=3).prop_map(|entries| {
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(key, value)| (key.to_string(), value))
                        .collect(),
                )
            }),
        ]
    })
    .boxed()
}

/// A small change somewhere in `value`: a leaf replaced by an atom, a character dropped
/// from a string, an item dropped or repeated, a key dropped or added.
fn mutate(value: &Value, atoms: &[Value], rng: &mut SmallRng) -> Value {
    let mut mutated = value.clone();
    let mut node = &mut mutated;
    // Walk down a random path, stopping at random.
    loop {
        let children = match node {
            Value::Array(items) => items.len(),
            Value::Object(entries) => entries.len(),
            _ => 0,
        };
        if children == 0 || rng.random_range(0..3) == 0 {
            break;
        }
        let index = rng.random_range(0..children);
        node = match node {
            Value::Array(items) => &mut items[index],
            Value::Object(entries) => entries.values_mut().nth(index).expect("in range"),
            _ => unreachable!("has children"),
        };
    }
    let atom = atoms[rng.random_range(0..atoms.len())].clone();
    match node {
        Value::Array(items) if !items.is_empty() && rng.random_bool(0.7) => {
            let index = rng.random_range(0..items.len());
            if rng.random_bool(0.5) {
                items.remove(index);
            } else {
                let copy = items[index].clone();
                items.insert(index, copy);
            }
        }
        Value::String(text) if !text.is_empty() && rng.random_bool(0.5) => {
            let mut characters: Vec<char> = text.chars().collect();
            characters.remove(rng.random_range(0..characters.len()));
            *text = characters.into_iter().collect();
        }
        Value::Object(entries) if rng.random_bool(0.7) => {
            if !entries.is_empty() && rng.random_bool(0.5) {
                let index = rng.random_range(0..entries.len());
                let key = entries.keys().nth(index).expect("in range").clone();
                entries.shift_remove(&key);
            } else {
                let keys = instance_keys();
                let key = keys[rng.random_range(0..keys.len())];
                entries.insert(key.to_string(), atom);
            }
        }
        other => *other = atom,
    }
    mutated
}

// ---- judging ----------------------------------------------------------------------

fn validator_for(schema: &Value) -> Option<jsonschema::Validator> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema)
        .ok()
}

/// Whether every number of the text is one an f64 holds exactly enough for `jsonschema`
/// to compare it like exact decimals do (see the module docs).
fn numbers_fit_f64(text: &str) -> bool {
    let fits = RefCell::new(true);
    rewrite_numbers(text, |token| {
        let exact = DecimalText::parse(token).is_some_and(|number| {
            number.significant_digits() <= 15 && (-15..=15).contains(&number.magnitude())
        });
        if !exact {
            *fits.borrow_mut() = false;
        }
        None
    });
    fits.into_inner()
}

/// The JSON text with every non-ASCII character escaped (`\u00e9`, `\ud83d\ude00`).
fn ascii_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        if character.is_ascii() {
            out.push(character);
        } else {
            let mut units = [0u16; 2];
            for unit in character.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

fn samples(grammar: &CompiledGrammar, seed: u64) -> Vec<String> {
    let sampler = Sampler::new(grammar);
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..SAMPLES_PER_SCHEMA)
        .filter_map(|_| sampler.sample(&mut rng, SAMPLE_MAX_CHARS))
        .filter_map(|segments| match segments.as_slice() {
            [Segment::Text(text)] => Some(text.clone()),
            [] => Some(String::new()),
            _ => None,
        })
        .collect()
}

/// The known bug that explains a failure, if one does.
fn known_bug(failure: &Failure) -> Option<&'static KnownBug> {
    KNOWN_BUGS.iter().find(|bug| (bug.explains)(failure))
}

/// Reports a failure unless a known bug explains it.
fn unless_known(failure: Failure, tally: &mut Tally) -> Result<(), Failure> {
    match known_bug(&failure) {
        Some(bug) => {
            *tally.known_bugs.entry(bug.name).or_default() += 1;
            Ok(())
        }
        None => Err(failure),
    }
}

thread_local! {
    static QUIET_PANICS: Cell<bool> = const { Cell::new(false) };
}

/// Runs `work`, turning a panic into its message without printing it.
fn catch_quietly<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    static INSTALL_HOOK: Once = Once::new();
    INSTALL_HOOK.call_once(|| {
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET_PANICS.with(Cell::get) {
                default_hook(info);
            }
        }));
    });
    QUIET_PANICS.with(|quiet| quiet.set(true));
    let result = std::panic::catch_unwind(AssertUnwindSafe(work));
    QUIET_PANICS.with(|quiet| quiet.set(false));
    result.map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|message| message.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default()
    })
}

/// The schema compiled, or why not (`Ok(Err(reason))` for a refusal).
fn compile(schema: &Value) -> Result<Result<CompiledGrammar, String>, String> {
    catch_quietly(
        || match schema_to_grammar(schema, &SchemaOptions::default()) {
            Ok(converted) => CompiledGrammar::compile(&converted.grammar, &Default::default())
                .map_err(|error| format!("engine: {error}")),
            Err(SchemaError::Refused { diagnostics }) => Err(format!(
                "{} {}",
                diagnostics[0].code,
                diagnostics[0].keyword.as_deref().unwrap_or("-")
            )),
            Err(other) => Err(other.to_string()),
        },
    )
}

/// Judges one text: `Err` with the disagreement when no narrowing or known bug explains
/// it.
fn judge(
    schema: &Value,
    grammar: &CompiledGrammar,
    validator: &jsonschema::Validator,
    text: &str,
    source: TextSource,
    tally: &mut Tally,
) -> Result<(), Failure> {
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(_) => {
            tally.samples_not_json += 1;
            if tally.samples_not_json_examples.len() < NARROWING_EXAMPLES {
                tally.samples_not_json_examples.push(format!("{text:?}"));
            }
            return Ok(());
        }
    };
    if source == TextSource::Sampled && !numbers_fit_f64(text) {
        tally.samples_not_f64_exact += 1;
        return Ok(());
    }
    let grammar_accepts = grammar_matches(grammar, text);
    if source == TextSource::Sampled && !grammar_accepts {
        tally.samples_unmatched += 1;
    }
    let valid = validator.is_valid(&value);
    match source {
        TextSource::Written | TextSource::AsciiEscaped => tally.texts_written += 1,
        TextSource::Sampled => tally.texts_sampled += 1,
    }
    if valid {
        tally.valid += 1;
    } else {
        tally.invalid += 1;
    }
    if grammar_accepts == valid {
        return Ok(());
    }
    let explanation = match source {
        TextSource::Sampled => None,
        TextSource::Written => explain_rejection(grammar, &value, schema),
        // Escapes are a narrowing where the grammar takes the characters as themselves.
        TextSource::AsciiEscaped => {
            if grammar_matches(grammar, &serialize(&value, schema, schema)) {
                Some(vec![Narrowing::StringEscaping])
            } else {
                explain_rejection(grammar, &value, schema).map(|mut narrowings| {
                    if !narrowings.contains(&Narrowing::StringEscaping) {
                        narrowings.insert(0, Narrowing::StringEscaping);
                    }
                    narrowings
                })
            }
        }
    };
    if valid && let Some(narrowings) = explanation {
        let examples = tally
            .narrowed_examples
            .entry(narrowings.clone())
            .or_default();
        if examples.len() < NARROWING_EXAMPLES {
            examples.push(format!("schema {schema} rejects {text:?}"));
        }
        *tally.narrowed.entry(narrowings).or_default() += 1;
        return Ok(());
    }
    let failure = Failure {
        schema: schema.clone(),
        kind: FailureKind::Disagreement {
            text: text.to_string(),
            source,
            grammar_accepts,
        },
    };
    unless_known(failure, tally)
}

/// Compiles `schema` and judges the instances and samples of its grammar.
fn check_schema(
    schema: &Value,
    instances: &[Value],
    sample_seed: u64,
    tally: &mut Tally,
) -> Result<(), Failure> {
    tally.schemas += 1;
    let grammar = match compile(schema) {
        Ok(Ok(grammar)) => grammar,
        Ok(Err(reason)) => {
            *tally.refusals.entry(reason).or_default() += 1;
            return Ok(());
        }
        Err(message) => {
            tally.panics += 1;
            let failure = Failure {
                schema: schema.clone(),
                kind: FailureKind::Panic(message),
            };
            return unless_known(failure, tally);
        }
    };
    tally.compiled += 1;
    let Some(validator) = validator_for(schema) else {
        tally.validator_refused += 1;
        return Ok(());
    };
    for instance in instances {
        let text = serialize(instance, schema, schema);
        judge(
            schema,
            &grammar,
            &validator,
            &text,
            TextSource::Written,
            tally,
        )?;
    }
    let atoms = schema_atoms(schema);
    let mut rng = SmallRng::seed_from_u64(sample_seed ^ 0x5eed);
    for text in samples(&grammar, sample_seed) {
        judge(
            schema,
            &grammar,
            &validator,
            &text,
            TextSource::Sampled,
            tally,
        )?;
        // The sample's value as a writer writes it, and near misses of it.
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        if !numbers_fit_f64(&text) {
            continue;
        }
        let mut variants = vec![value.clone()];
        variants.extend((0..MUTATIONS_PER_SAMPLE).map(|_| mutate(&value, &atoms, &mut rng)));
        for variant in variants {
            let written = serialize(&variant, schema, schema);
            judge(
                schema,
                &grammar,
                &validator,
                &written,
                TextSource::Written,
                tally,
            )?;
            let escaped = ascii_escaped(&written);
            if escaped != written {
                judge(
                    schema,
                    &grammar,
                    &validator,
                    &escaped,
                    TextSource::AsciiEscaped,
                    tally,
                )?;
            }
        }
    }
    Ok(())
}

fn env_number<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok()?.parse().ok()
}

#[test]
fn grammars_agree_with_jsonschema() {
    let cases = env_number("GRAIL_DIFFERENTIAL_CASES").unwrap_or(DEFAULT_CASES);
    let seed = env_number("GRAIL_DIFFERENTIAL_SEED").unwrap_or(DEFAULT_SEED);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed),
        ..Config::default()
    });
    let tally = RefCell::new(Tally::default());
    let started = Instant::now();
    let strategy = root_schema().prop_flat_map(|schema| {
        let atoms = schema_atoms(&schema);
        (
            Just(schema),
            prop::collection::vec(instance_value(atoms), 0..=12),
            any::<u64>(),
        )
    });
    let result = runner.run(&strategy, |(schema, instances, sample_seed)| {
        check_schema(&schema, &instances, sample_seed, &mut tally.borrow_mut())
            .map_err(|failure| TestCaseError::fail(failure.to_string()))
    });
    let tally = tally.into_inner();
    let mut refusals: Vec<(&String, &usize)> = tally.refusals.iter().collect();
    refusals.sort_by(|a, b| b.1.cmp(a.1));
    let top: Vec<String> = refusals
        .iter()
        .take(6)
        .map(|(reason, count)| format!("{count}× {reason}"))
        .collect();
    println!(
        "{} schemas (seed {seed}, {cases} cases): {} compiled, {} refused (top: {}), {} panicked; jsonschema refused {}",
        tally.schemas,
        tally.compiled,
        tally.schemas - tally.compiled - tally.panics,
        top.join(", "),
        tally.panics,
        tally.validator_refused
    );
    println!(
        "texts judged: {} written, {} sampled; {} valid, {} invalid",
        tally.texts_written, tally.texts_sampled, tally.valid, tally.invalid
    );
    for (narrowings, count) in &tally.narrowed {
        let names: Vec<String> = narrowings.iter().map(ToString::to_string).collect();
        println!(
            "  valid but rejected for a narrowing: {count} × {}, e.g.",
            names.join(" + ")
        );
        for example in &tally.narrowed_examples[narrowings] {
            println!("    {example}");
        }
    }
    for (name, count) in &tally.known_bugs {
        println!("  explained by known bug {name}: {count}");
    }
    println!(
        "samples left out: {} not JSON to serde_json, {} with numbers past f64; samples the grammar did not match: {}",
        tally.samples_not_json, tally.samples_not_f64_exact, tally.samples_unmatched
    );
    for example in &tally.samples_not_json_examples {
        println!("  not JSON to serde_json, e.g. {example}");
    }
    println!("took {:.1} s", started.elapsed().as_secs_f64());
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, (schema, instances, sample_seed))) => panic!(
            "{reason}\nminimal case: schema {schema}\ninstances {}\nsample seed {sample_seed}",
            json!(instances)
        ),
        Err(TestError::Abort(reason)) => panic!("aborted: {reason}"),
    }
    assert_eq!(
        tally.samples_unmatched, 0,
        "the grammar rejected texts sampled from itself"
    );
}

#[test]
fn surrogate_pair_escapes_are_recognized() {
    assert!(has_surrogate_pair_escape(r#""x\ud83d\ude00""#));
    assert!(has_surrogate_pair_escape(r#""\uD83D\uDE00""#));
    assert!(!has_surrogate_pair_escape(r#""\ud83d""#));
    assert!(!has_surrogate_pair_escape(r#""\u00e9\ude00""#));
}

#[test]
fn duplicate_keys_are_found_at_any_depth() {
    assert!(has_duplicate_keys(r#"{"a": 1, "a": 2}"#));
    assert!(has_duplicate_keys(r#"[1, {"b": {"x\"": [], "x\"": {}}}]"#));
    assert!(!has_duplicate_keys(r#"{"a": {"a": 1}, "b": ["a", "a"]}"#));
    assert!(!has_duplicate_keys(r#"{ "a" : 1 , "ab" : 2 }"#));
}

/// Every known bug's minimal case still fails as it describes; when one no longer does,
/// the bug is fixed and its entry should go (so that its predicate hides nothing).
#[test]
fn known_bugs_still_reproduce() {
    let mut fixed = Vec::new();
    for bug in KNOWN_BUGS {
        let schema: Value = serde_json::from_str(bug.schema).expect("the schema is JSON");
        let failure = match (compile(&schema), bug.text) {
            (Err(message), _) => Some(Failure {
                schema: schema.clone(),
                kind: FailureKind::Panic(message),
            }),
            (Ok(Ok(grammar)), Some(text)) => {
                let value: Value = serde_json::from_str(text).expect("the text is JSON");
                let validator = validator_for(&schema).expect("jsonschema reads the schema");
                let grammar_accepts = grammar_matches(&grammar, text);
                (grammar_accepts != validator.is_valid(&value)).then(|| Failure {
                    schema: schema.clone(),
                    kind: FailureKind::Disagreement {
                        text: text.to_string(),
                        source: TextSource::Written,
                        grammar_accepts,
                    },
                })
            }
            _ => None,
        };
        match failure {
            Some(failure) => assert!(
                (bug.explains)(&failure),
                "{}: its predicate does not cover its own case ({failure})",
                bug.name
            ),
            None => fixed.push(format!("{}: {}", bug.name, bug.explanation)),
        }
    }
    assert!(
        fixed.is_empty(),
        "fixed (remove from KNOWN_BUGS): {fixed:#?}"
    );
}
