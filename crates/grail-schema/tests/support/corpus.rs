//! Running schemas with labelled instances through Grail: compile each schema, match each
//! instance's JSON text against the grammar, and tally what went right and wrong. Shared
//! by the MaskBench and JSON Schema Test Suite runners.
//!
//! Instances are written as `json.dumps` writes them by default (`", "` between items,
//! `": "` after keys, no other whitespace, characters as themselves). JSON objects are
//! unordered and Grail's grammars write properties in one order (the schema's, required
//! ones first), so an instance is accepted when its keys can be written in some order the
//! grammar takes: the instance's own order, then the order of the schema's declarations
//! ([`serialize`]: required properties first), then a search of orders within a budget of
//! attempts per instance; and, for an instance labelled valid that none of these orders
//! fits (the search takes the first order of a nested object that fits there, which may
//! not be the one that lets the rest fit), the grammar of the same schema and options in
//! any key order ([`grail_schema::KeyOrder::Any`]) decides.
//!
//! Also the one reader of the MaskBench corpus ([`maskbench_groups`]), for its test and
//! for the `maskbench_compile_times` example.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use grail_engine::{CompiledGrammar, Matcher};
use grail_schema::{SchemaError, SchemaOptions, schema_to_grammar};
use serde_json::{Map, Value};

/// What happened to one schema.
#[derive(Debug, Clone)]
pub struct SchemaOutcome {
    /// The grammar compiled.
    pub compiled: bool,
    /// Why not: the first error's code and keyword pointer.
    pub refusal: Option<String>,
    /// Instances labelled valid that the grammar rejects.
    pub valid_rejected: Vec<usize>,
    /// Instances labelled invalid that the grammar accepts.
    pub invalid_accepted: Vec<usize>,
    /// Valid and invalid instances checked.
    pub instances: (usize, usize),
    /// Time to convert and compile.
    pub compile_time: Duration,
    /// Of which converting the schema to a grammar.
    pub convert_time: Duration,
    /// For each wrong verdict, the instance text and where matching stopped.
    pub details: Vec<String>,
    /// `grail check --target llama.cpp` refuses the emitted grammar.
    pub llama_cpp_refuses: bool,
}

impl SchemaOutcome {
    /// Compiled, and every instance judged right.
    pub fn passes(&self) -> bool {
        self.compiled
            && self.valid_rejected.is_empty()
            && self.invalid_accepted.is_empty()
            && !self.llama_cpp_refuses
    }
}

/// Compiles `schema` and checks each `(instance, valid)`.
pub fn run_schema(
    schema: &Value,
    instances: &[(Value, bool)],
    options: &SchemaOptions,
) -> SchemaOutcome {
    let started = Instant::now();
    let converted = schema_to_grammar(schema, options);
    let convert_time = started.elapsed();
    let compiled = converted
        .as_ref()
        .ok()
        .map(|converted| CompiledGrammar::compile(&converted.grammar, &Default::default()));
    let compile_time = started.elapsed();
    let mut outcome = SchemaOutcome {
        compiled: false,
        refusal: None,
        valid_rejected: Vec::new(),
        invalid_accepted: Vec::new(),
        instances: (0, 0),
        compile_time,
        convert_time,
        details: Vec::new(),
        llama_cpp_refuses: false,
    };
    let (grammar, converted_grammar) = match (converted, compiled) {
        (Ok(converted), Some(Ok(grammar))) => (grammar, converted.grammar),
        (Ok(_), Some(Err(error))) => {
            outcome.refusal = Some(format!("engine: {error}"));
            return outcome;
        }
        (Err(SchemaError::Refused { diagnostics }), _) => {
            let first = &diagnostics[0];
            let keyword = first.keyword.as_deref().unwrap_or("-");
            outcome.refusal = Some(format!("{} {keyword}", first.code));
            return outcome;
        }
        (Err(other), _) => {
            outcome.refusal = Some(other.to_string());
            return outcome;
        }
        (Ok(_), None) => unreachable!("compiled when converted"),
    };
    outcome.compiled = true;
    // Every emitted grammar must be one llama.cpp accepts.
    let gbnf = grail_grammar::print_grammar(&converted_grammar);
    let check = grail_grammar::check(
        &gbnf,
        &grail_grammar::CheckOptions {
            target: grail_grammar::Target::LlamaCpp,
            ..Default::default()
        },
    );
    if !check.is_ok() {
        outcome.llama_cpp_refuses = true;
        let first = check
            .diagnostics
            .iter()
            .find(|diagnostic| diagnostic.severity == grail_syntax::Severity::Error)
            .map(|diagnostic| diagnostic.message.clone())
            .unwrap_or_default();
        outcome
            .details
            .push(format!("llama.cpp would refuse the grammar: {first}"));
    }
    let mut any_order: Option<Option<CompiledGrammar>> = None;
    for (index, (instance, valid)) in instances.iter().enumerate() {
        let mut accepted = accepted_in_some_order(&grammar, instance, schema);
        if !accepted && *valid {
            let any_order = any_order.get_or_insert_with(|| {
                let options = SchemaOptions {
                    key_order: grail_schema::KeyOrder::Any,
                    ..options.clone()
                };
                schema_to_grammar(schema, &options)
                    .ok()
                    .and_then(|converted| {
                        CompiledGrammar::compile(&converted.grammar, &Default::default()).ok()
                    })
            });
            if let Some(any_order) = any_order {
                let mut matcher = Matcher::new(any_order);
                accepted = matcher.accept_str(&compact(instance)).is_ok() && matcher.is_accepting();
            }
        }
        if accepted != *valid {
            let text = serialize(instance, schema, schema);
            let mut matcher = Matcher::new(&grammar);
            let stopped = match matcher.accept_str(&text) {
                Err(grail_engine::AcceptError::Rejected { consumed }) => {
                    format!("in schema order, refused at byte {consumed}")
                }
                Err(other) => format!("{other}"),
                Ok(()) if !matcher.is_accepting() => "ended early".to_string(),
                Ok(()) => "accepted in schema order".to_string(),
            };
            let shown: String = text.chars().take(600).collect();
            outcome.details.push(format!(
                "instance {index} ({}): {stopped}: {shown}",
                if *valid { "valid" } else { "invalid" }
            ));
        }
        if *valid {
            outcome.instances.0 += 1;
            if !accepted {
                outcome.valid_rejected.push(index);
            }
        } else {
            outcome.instances.1 += 1;
            if accepted {
                outcome.invalid_accepted.push(index);
            }
        }
    }
    outcome
}

/// Feeds attempted per instance while looking for a key order the grammar takes, after
/// the instance's own order and the schema's have failed.
const ORDER_ATTEMPTS: u32 = 3000;

/// Whether the grammar takes the instance with its keys in some order: its own, the
/// schema's, or one found by a bounded search.
fn accepted_in_some_order(grammar: &CompiledGrammar, instance: &Value, schema: &Value) -> bool {
    let complete = |text: &str| {
        let mut matcher = Matcher::new(grammar);
        matcher.accept_str(text).is_ok() && matcher.is_accepting()
    };
    if complete(&compact(instance)) || complete(&serialize(instance, schema, schema)) {
        return true;
    }
    let mut matcher = Matcher::new(grammar);
    let mut budget = ORDER_ATTEMPTS;
    feed_value(&mut matcher, instance, &mut budget) && matcher.is_accepting()
}

/// The instance as `json.dumps` writes it, keys in its own order.
fn compact(value: &Value) -> String {
    match value {
        Value::Object(entries) => {
            let members: Vec<String> = entries
                .iter()
                .map(|(key, item)| format!("{}: {}", Value::String(key.clone()), compact(item)))
                .collect();
            format!("{{{}}}", members.join(", "))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(compact).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

/// Feeds `text`; on failure the matcher is back where it was.
fn feed(matcher: &mut Matcher, text: &str) -> bool {
    match matcher.accept_str(text) {
        Ok(()) => true,
        Err(grail_engine::AcceptError::Rejected { consumed }) => {
            matcher.rollback(consumed);
            false
        }
        Err(_) => false,
    }
}

/// Feeds `value` as JSON, choosing for each object an order of its keys the grammar
/// takes (the value's own order first, backtracking); false when none is found within
/// the budget. On false the matcher may be anywhere: callers roll it back.
fn feed_value(matcher: &mut Matcher, value: &Value, budget: &mut u32) -> bool {
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    match value {
        Value::Object(entries) => {
            if !feed(matcher, "{") {
                return false;
            }
            let keys: Vec<&String> = entries.keys().collect();
            if !feed_members(matcher, entries, &keys, true, budget) {
                return false;
            }
            feed(matcher, "}")
        }
        Value::Array(items) => {
            if !feed(matcher, "[") {
                return false;
            }
            for (position, item) in items.iter().enumerate() {
                if position > 0 && !feed(matcher, ", ") {
                    return false;
                }
                if !feed_value(matcher, item, budget) {
                    return false;
                }
            }
            feed(matcher, "]")
        }
        other => feed(matcher, &other.to_string()),
    }
}

/// Feeds the members named in `remaining`, in some order the grammar takes.
fn feed_members(
    matcher: &mut Matcher,
    entries: &Map<String, Value>,
    remaining: &[&String],
    first: bool,
    budget: &mut u32,
) -> bool {
    if remaining.is_empty() {
        return true;
    }
    let mark = matcher.offset();
    for (position, key) in remaining.iter().enumerate() {
        if *budget == 0 {
            return false;
        }
        let separator = if first { "" } else { ", " };
        let member = format!("{separator}{}: ", Value::String((*key).clone()));
        if feed(matcher, &member) && feed_value(matcher, &entries[*key], budget) {
            let rest: Vec<&String> = remaining
                .iter()
                .enumerate()
                .filter(|&(other, _)| other != position)
                .map(|(_, key)| *key)
                .collect();
            if feed_members(matcher, entries, &rest, false, budget) {
                return true;
            }
        }
        // Back to where this member started, to try the next.
        let fed = matcher.offset() - mark;
        matcher.rollback(fed as usize);
    }
    false
}

/// The instance written with keys in the schema's declared order (see the module docs).
pub fn serialize(value: &Value, root: &Value, schema: &Value) -> String {
    let mut out = String::new();
    write_value(value, root, Some(schema), &mut out, 0);
    out
}

fn write_value(
    value: &Value,
    root: &Value,
    schema: Option<&Value>,
    out: &mut String,
    depth: usize,
) {
    let schema = schema.map(|schema| resolve(root, schema, depth));
    match value {
        Value::Object(entries) => {
            let order = declared_order(root, schema, 0);
            let mut keys: Vec<&String> = entries.keys().collect();
            keys.sort_by_key(
                |key| match order.iter().position(|(name, _)| name == *key) {
                    Some(position) => (if order[position].1 { 0 } else { 1 }, position),
                    None => (2, 0),
                },
            );
            out.push('{');
            for (position, key) in keys.iter().enumerate() {
                if position > 0 {
                    out.push_str(", ");
                }
                out.push_str(&Value::String((*key).clone()).to_string());
                out.push_str(": ");
                let property_schema =
                    schema.and_then(|schema| property_schema(root, schema, key, 0));
                write_value(&entries[*key], root, property_schema, out, depth + 1);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (position, item) in items.iter().enumerate() {
                if position > 0 {
                    out.push_str(", ");
                }
                let item_schema = schema.and_then(|schema| item_schema(schema, position));
                write_value(item, root, item_schema, out, depth + 1);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Follows local `$ref`s (`#/...`).
fn resolve<'v>(root: &'v Value, schema: &'v Value, depth: usize) -> &'v Value {
    let mut current = schema;
    for _ in 0..16 {
        let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let Some(pointer) = reference.strip_prefix('#') else {
            break;
        };
        match root.pointer(pointer) {
            Some(target) => current = target,
            None => break,
        }
    }
    let _ = depth;
    current
}

/// Declared property names with whether they are required, in declaration order,
/// including those of `allOf`/`anyOf`/`oneOf` branches.
fn declared_order(root: &Value, schema: Option<&Value>, depth: usize) -> Vec<(String, bool)> {
    let mut order: Vec<(String, bool)> = Vec::new();
    let Some(schema) = schema else {
        return order;
    };
    if depth > 8 {
        return order;
    }
    let schema = resolve(root, schema, depth);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for name in properties.keys() {
            order.push((name.clone(), required.contains(&name.as_str())));
        }
    }
    for name in &required {
        if !order.iter().any(|(known, _)| known == name) {
            order.push((name.to_string(), true));
        }
    }
    for keyword in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(keyword) {
            for branch in branches {
                for (name, required) in declared_order(root, Some(branch), depth + 1) {
                    match order.iter_mut().find(|(known, _)| *known == name) {
                        Some(entry) => entry.1 |= required,
                        None => order.push((name, required)),
                    }
                }
            }
        }
    }
    order
}

fn property_schema<'v>(
    root: &'v Value,
    schema: &'v Value,
    name: &str,
    depth: usize,
) -> Option<&'v Value> {
    if depth > 8 {
        return None;
    }
    let schema = resolve(root, schema, depth);
    if let Some(found) = schema
        .get("properties")
        .and_then(|properties| properties.get(name))
    {
        return Some(found);
    }
    for keyword in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(keyword) {
            for branch in branches {
                if let Some(found) = property_schema(root, branch, name, depth + 1) {
                    return Some(found);
                }
            }
        }
    }
    schema
        .get("additionalProperties")
        .filter(|additional| additional.is_object())
}

fn item_schema(schema: &Value, position: usize) -> Option<&Value> {
    if let Some(Value::Array(prefix)) = schema.get("prefixItems")
        && let Some(found) = prefix.get(position)
    {
        return Some(found);
    }
    match schema.get("items") {
        Some(Value::Array(tuple)) => tuple
            .get(position)
            .or_else(|| schema.get("additionalItems")),
        Some(items) => Some(items),
        None => None,
    }
}

/// Per-group tallies for the report.
#[derive(Debug, Default)]
pub struct GroupTally {
    pub schemas: usize,
    pub compiled: usize,
    pub passing: usize,
    pub valid: usize,
    pub invalid: usize,
    pub valid_rejected: usize,
    pub invalid_accepted: usize,
    /// Grammars `grail check --target llama.cpp` refuses.
    pub llama_cpp_refused: usize,
    pub refusals: BTreeMap<String, usize>,
}

impl GroupTally {
    /// Adds one schema's outcome.
    pub fn add(&mut self, outcome: &SchemaOutcome) {
        self.schemas += 1;
        if outcome.compiled {
            self.compiled += 1;
        }
        if outcome.passes() {
            self.passing += 1;
        }
        self.valid += outcome.instances.0;
        self.invalid += outcome.instances.1;
        self.valid_rejected += outcome.valid_rejected.len();
        self.invalid_accepted += outcome.invalid_accepted.len();
        if outcome.llama_cpp_refuses {
            self.llama_cpp_refused += 1;
        }
        if let Some(refusal) = &outcome.refusal {
            *self.refusals.entry(refusal.clone()).or_default() += 1;
        }
    }

    /// One line of the report.
    pub fn line(&self, name: &str) -> String {
        let mut reasons: Vec<(&String, &usize)> = self.refusals.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1));
        let top: Vec<String> = reasons
            .iter()
            .take(3)
            .map(|(reason, count)| format!("{count}× {reason}"))
            .collect();
        format!(
            "{name:<28} {:>5} schemas, {:>5} compiled ({:>5.1}%), {:>5} refused; valid rejected {}/{}, invalid accepted {}/{}, llama.cpp refuses {}; top refusals: {}",
            self.schemas,
            self.compiled,
            100.0 * self.compiled as f64 / self.schemas.max(1) as f64,
            self.schemas - self.compiled,
            self.valid_rejected,
            self.valid,
            self.invalid_accepted,
            self.invalid,
            self.llama_cpp_refused,
            top.join(", ")
        )
    }
}

/// The median, p99 and maximum of compile times, in milliseconds.
pub fn percentiles(times: &mut [Duration]) -> (f64, f64, f64) {
    if times.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    times.sort();
    let at = |fraction: f64| {
        let index = ((times.len() as f64 - 1.0) * fraction).round() as usize;
        times[index].as_secs_f64() * 1e3
    };
    (at(0.5), at(0.99), at(1.0))
}

/// An object of a corpus file, as a map (for the runners' JSON reading).
pub fn object(value: &Value) -> &Map<String, Value> {
    value.as_object().expect("a JSON object")
}

/// Where MaskBench lives: `../shared/corpora/maskbench` beside the repository, one
/// gzipped JSON Lines file per group.
pub fn maskbench_directory() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora/maskbench")
}

/// One group of MaskBench: its name (the file's, without `.jsonl.gz`) and its file.
#[derive(Debug, Clone)]
pub struct MaskBenchGroup {
    /// The group's name, the first part of its schemas' ids.
    pub name: String,
    /// The gzipped JSON Lines file.
    pub path: PathBuf,
}

/// One MaskBench schema with its labelled instances.
#[derive(Debug, Clone)]
pub struct MaskBenchSchema {
    /// `group/file`.
    pub id: String,
    /// The schema.
    pub schema: Value,
    /// Each instance with whether it is valid.
    pub instances: Vec<(Value, bool)>,
}

/// The groups (`*.jsonl.gz`) in `directory`, in name order; the error of reading the
/// directory when it cannot be read (absent).
pub fn maskbench_groups(directory: &Path) -> std::io::Result<Vec<MaskBenchGroup>> {
    let mut groups = Vec::new();
    for entry in std::fs::read_dir(directory)? {
        let path = entry?.path();
        let file_name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(name) = file_name.strip_suffix(".jsonl.gz") {
            groups.push(MaskBenchGroup {
                name: name.to_string(),
                path,
            });
        }
    }
    groups.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(groups)
}

impl MaskBenchGroup {
    /// The group's schemas in file order, only the first of every `sample_every` lines
    /// (1: all; the lines skipped are not parsed). Panics on a file that cannot be read.
    pub fn schemas(&self, sample_every: usize) -> impl Iterator<Item = MaskBenchSchema> + '_ {
        let file = std::fs::File::open(&self.path)
            .unwrap_or_else(|error| panic!("{}: {error}", self.path.display()));
        let reader = BufReader::new(flate2::read::GzDecoder::new(file));
        reader.lines().step_by(sample_every).map(move |line| {
            let line = line.unwrap_or_else(|error| panic!("{}: {error}", self.path.display()));
            let mut entry: Value = serde_json::from_str(&line)
                .unwrap_or_else(|error| panic!("{}: {error}", self.path.display()));
            let id = format!("{}/{}", self.name, entry["file"].as_str().unwrap_or("?"));
            let instances = entry["tests"]
                .as_array_mut()
                .expect("a MaskBench entry has tests")
                .iter_mut()
                .map(|test| {
                    let valid = test["valid"].as_bool().expect("a test is valid or not");
                    (test["data"].take(), valid)
                })
                .collect();
            MaskBenchSchema {
                id,
                schema: entry["schema"].take(),
                instances,
            }
        })
    }
}
