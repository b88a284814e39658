//! The grammar and the validator agree on real tool registries (`testdata/tools/registries`
//! and the registries of `testdata/tools`), in every wire format, with every tool choice
//! (`auto`, `required`, `none`, one named tool), one call or several. For each, texts
//! sampled from the grammar, crafted invalid calls (an unknown tool, another tool's
//! arguments, a required argument missing, a wrong type, trailing garbage, an empty list,
//! `[`, `{`, whitespace) and mutated samples (a character deleted, inserted or replaced)
//! are given to both:
//!
//! - what the grammar matches, the validator accepts, and every accepted call's
//!   arguments satisfy the tool's schema as written under the `jsonschema` crate. The one
//!   exception: where the grammar cannot say something (a keyword lenient mode weakened,
//!   keys written twice in an object whose keys are free), the validator may refuse;
//! - what the validator accepts and the grammar does not match differs from a text the
//!   grammar matches only in layout: rewritten as the grammar writes it (no whitespace
//!   around the answer or between JSON tokens, each call as `{name, arguments}`, strings in
//!   canonical form, integral numbers as integers, the text before or after the calls),
//!   the grammar matches it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use grail_engine::{CompiledGrammar, Matcher, Sampler, Segment};
use grail_schema::{Mode, SchemaOptions};
use grail_tools::{
    CallOptions, Checked, Think, ToolChoice, ToolRegistry, WireFormat, tool_call_grammar,
    validate_output,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

/// Samples drawn from each grammar, and mutations made of each sample.
const SAMPLES: usize = 4;
const MUTATIONS: usize = 4;
/// The length budget of a sample, in characters.
const SAMPLE_CHARS: usize = 240;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/tools")
}

/// Every registry: the corpus of `registries/` and the registries beside it.
fn registries() -> Vec<(String, ToolRegistry)> {
    let mut found = Vec::new();
    for directory in [testdata().join("registries"), testdata()] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&directory)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| {
                path.extension()
                    .is_some_and(|extension| extension == "json")
            })
            .collect();
        paths.sort();
        for path in paths {
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            // The case corpus beside the registries is not one.
            if let Ok(registry) = ToolRegistry::from_json_text(&text) {
                found.push((name, registry));
            } else {
                assert_eq!(name, "cases.json", "{name} is not a registry");
            }
        }
    }
    found
}

/// The grammar compiled, and whether it took lenient mode (strict refused a keyword).
fn grammar(registry: &ToolRegistry, options: &mut CallOptions) -> (CompiledGrammar, bool) {
    let (grammar, lenient) = match tool_call_grammar(registry, options) {
        Ok(grammar) => (grammar, false),
        Err(grail_tools::ToolsError::SchemaRefused { .. }) => {
            options.schema = SchemaOptions {
                mode: Mode::Lenient,
                ..options.schema.clone()
            };
            (tool_call_grammar(registry, options).unwrap(), true)
        }
        Err(error) => panic!("{error}"),
    };
    let compiled = CompiledGrammar::compile(&grammar.grammar, &Default::default()).unwrap();
    (compiled, lenient)
}

fn matches(grammar: &CompiledGrammar, text: &str) -> bool {
    let mut matcher = Matcher::new(grammar);
    matcher.accept_str(text).is_ok() && matcher.is_accepting()
}

/// A call: the tool's name and its arguments' JSON text.
type CallText = (String, String);

fn call_text(name: &str, arguments: &str) -> CallText {
    (name.to_string(), arguments.to_string())
}

/// A call as a bare JSON object with the wire's keys.
fn call_object(wire: WireFormat, (name, arguments): &CallText) -> String {
    format!(
        "{{\"{}\":{},\"{}\":{arguments}}}",
        wire.name_key(),
        Value::String(name.clone()),
        wire.arguments_key()
    )
}

/// Calls as the wire format writes them (the formats' shapes are pinned apart, in
/// `cases.rs`).
fn render_calls(registry: &ToolRegistry, options: &CallOptions, calls: &[CallText]) -> String {
    let calls: Vec<(&str, &str)> = calls
        .iter()
        .map(|(name, arguments)| (name.as_str(), arguments.as_str()))
        .collect();
    options
        .wire
        .write_calls_for(registry, &calls, options.parallel())
}

/// `number` as an integer when its value is one (`1.0`, `1e2`), else as it is.
fn integral(number: &str) -> String {
    let (negative, unsigned) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (
            &unsigned[..at],
            unsigned[at + 1..].parse::<i64>().unwrap_or(0),
        ),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    let shift = exponent - fraction.len() as i64;
    // Zero as the grammar writes it (`-0` is the same value, which bounds such as
    // `minimum: 0` grammars write only as `0`).
    if digits.bytes().all(|digit| digit == b'0') {
        return "0".to_string();
    }
    let integer = if shift >= 0 {
        format!("{digits}{}", "0".repeat(shift as usize))
    } else {
        let cut = digits.len() as i64 + shift;
        if cut < 0
            || !digits[cut.max(0) as usize..]
                .bytes()
                .all(|byte| byte == b'0')
        {
            return number.to_string();
        }
        digits[..cut as usize].to_string()
    };
    let integer = integer.trim_start_matches('0');
    let integer = if integer.is_empty() { "0" } else { integer };
    match negative {
        true => format!("-{integer}"),
        false => integer.to_string(),
    }
}

/// Compact JSON with its integral numbers written as integers.
fn integral_numbers(json: &str) -> String {
    let mut out = String::new();
    let mut chars = json.char_indices().peekable();
    let mut in_string = false;
    while let Some((at, c)) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.push(chars.next().unwrap().1),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '-' | '0'..='9' => {
                let mut end = at + c.len_utf8();
                while let Some(&(next_at, next)) = chars.peek() {
                    if next.is_ascii_digit() || matches!(next, '.' | 'e' | 'E' | '+' | '-') {
                        end = next_at + 1;
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push_str(&integral(&json[at..end]));
            }
            c => out.push(c),
        }
    }
    out
}

/// An accepted output written as the grammar writes it: its text before its calls, and
/// (where text may follow calls, as the validator joins the texts around them) after.
fn as_grammar_writes(
    registry: &ToolRegistry,
    options: &CallOptions,
    checked: &Checked,
) -> Vec<String> {
    let markers = options.wire.reasoning();
    let mut text = match (&checked.reasoning, options.think) {
        (Some(reasoning), Think::Forced) => format!("{reasoning}{}", markers.close),
        (Some(reasoning), _) => format!("{}{reasoning}{}", markers.open, markers.close),
        (None, _) => String::new(),
    };
    // Harmony writes its text in the final channel.
    if options.wire.frames_text() && checked.calls.is_empty() {
        text.push_str("<|channel|>final<|message|>");
    }
    let answer_text = checked.text.as_deref().unwrap_or_default();
    if checked.calls.is_empty() {
        return vec![text + answer_text];
    }
    let calls: Vec<CallText> = checked
        .calls
        .iter()
        .map(|call| call_text(&call.name, &integral_numbers(call.arguments.text())))
        .collect();
    let calls = render_calls(registry, options, &calls);
    let mut forms = vec![format!("{text}{answer_text}{calls}")];
    if options.wire.text_after_calls() {
        forms.push(format!("{text}{calls}{answer_text}"));
    }
    forms
}

/// The invalid calls and answers made for `options` (`samples` are texts of the grammar).
fn crafted(registry: &ToolRegistry, options: &CallOptions, samples: &[String]) -> Vec<String> {
    let wire = options.wire;
    let tool = |index: usize| &registry.tools[index % registry.tools.len()];
    let mut texts: Vec<String> = [
        "",
        " ",
        "\n",
        "[",
        "{",
        "<",
        "[]",
        "{}",
        "<tool_call>",
        "[TOOL_CALLS]",
        "[TOOL_CALLS][]",
        "<tool_call>\n</tool_call>",
        "<think>",
        "<thin",
        "<think>a</think>",
        "<think>a</think> b",
        "a</think>b",
        "<b>hi</b>",
    ]
    .iter()
    .map(|text| text.to_string())
    .collect();
    let mut calls = vec![
        call_text("no_such_tool", "{}"),
        call_text(&tool(0).name, "{}"),
        call_text(&tool(0).name, "{\"__invented\":1}"),
    ];
    for (index, tool) in registry.tools.iter().enumerate().take(3) {
        let properties = tool.parameters["properties"].as_object();
        let first = properties.and_then(|properties| properties.keys().next());
        if let Some(first) = first {
            let key = Value::String(first.clone());
            for wrong in ["5", "\"x\"", "[[[]]]", "1e400", "18446744073709551617"] {
                calls.push(call_text(&tool.name, &format!("{{{key}:{wrong}}}")));
            }
        }
        // Another tool's arguments under this tool's name.
        let other = &registry.tools[(index + 1) % registry.tools.len()];
        if let Some(properties) = other.parameters["properties"].as_object() {
            let arguments: serde_json::Map<String, Value> = properties
                .keys()
                .map(|key| (key.clone(), Value::String("x".into())))
                .collect();
            calls.push(call_text(&tool.name, &Value::Object(arguments).to_string()));
        }
    }
    for (index, call) in calls.iter().enumerate() {
        texts.push(render_calls(registry, options, std::slice::from_ref(call)));
        if index >= 3 {
            continue;
        }
        texts.push(call_object(wire, call));
        texts.push(format!(
            "Sure. {}",
            render_calls(registry, options, std::slice::from_ref(call))
        ));
    }
    texts.push(render_calls(registry, options, &calls[1..3]));
    for sample in samples {
        texts.push(format!("{sample}x"));
        texts.push(format!("{sample}}}"));
        texts.push(format!("{sample} "));
        texts.push(format!(" {sample}"));
    }
    texts
}

/// `text` with one character deleted, inserted or replaced.
fn mutate(rng: &mut SmallRng, text: &str) -> String {
    const ALPHABET: &[char] = &[
        '{', '}', '[', ']', '"', ',', ':', ' ', '\n', '0', '9', 'e', '.', '-', 'a', '\\', '<', 'é',
    ];
    let mut chars: Vec<char> = text.chars().collect();
    let at = rng.random_range(0..=chars.len());
    let new = ALPHABET[rng.random_range(0..ALPHABET.len())];
    match rng.random_range(0..3) {
        0 if at < chars.len() => {
            chars.remove(at);
        }
        1 if at < chars.len() => chars[at] = new,
        _ => chars.insert(at, new),
    }
    chars.into_iter().collect()
}

/// How many texts each verdict had: both took it, the validator alone was stricter, the
/// grammar alone refused it (layout), both refused it.
#[derive(Debug, Default)]
struct Tally {
    /// The first text the validator alone refused, with why.
    stricter_example: Option<String>,
    both: usize,
    validator_stricter: usize,
    layout: usize,
    neither: usize,
}

/// The failures of one text, if any.
fn judge(
    registry: &ToolRegistry,
    options: &CallOptions,
    grammar: &CompiledGrammar,
    lenient: bool,
    text: &str,
    tally: &mut Tally,
) -> Option<String> {
    let matched = matches(grammar, text);
    let verdict = validate_output(registry, options, text);
    match (matched, &verdict) {
        (true, Ok(_)) => tally.both += 1,
        (true, Err(fault)) => {
            tally.validator_stricter += 1;
            tally
                .stricter_example
                .get_or_insert_with(|| format!("{text:?}: {}", fault.feedback()));
        }
        (false, Ok(_)) => tally.layout += 1,
        (false, Err(_)) => tally.neither += 1,
    }
    match (matched, verdict) {
        (true, Ok(checked)) => {
            for call in &checked.calls {
                let schema = &registry.get(&call.name).unwrap().parameters;
                let judge = jsonschema::options()
                    .should_validate_formats(true)
                    .build(schema)
                    .unwrap();
                if let Some(error) = judge.iter_errors(call.arguments.value()).next() {
                    return Some(format!(
                        "{text:?}: accepted by both, but jsonschema says: {error}"
                    ));
                }
            }
            None
        }
        (true, Err(fault)) => {
            let grammar_cannot_say = fault.faults.iter().all(|fault| {
                fault.code == "key-duplicate" || (lenient && fault.code == "arguments-invalid")
            });
            (!grammar_cannot_say).then(|| {
                format!(
                    "{text:?}: the grammar matches, the validator says {}",
                    fault.feedback()
                )
            })
        }
        (false, Ok(checked)) => {
            let rewritten = as_grammar_writes(registry, options, &checked);
            (!rewritten.iter().any(|form| matches(grammar, form))).then(|| {
                format!(
                    "{text:?}: the validator accepts, the grammar matches neither it nor {rewritten:?}"
                )
            })
        }
        (false, Err(_)) => None,
    }
}

#[test]
fn grammar_validator_and_jsonschema_agree_on_real_registries() {
    let started = Instant::now();
    let registries = registries();
    assert!(registries.len() >= 20, "{} registries", registries.len());
    let mut texts = 0usize;
    let mut lenient_grammars = Vec::new();
    let mut failures = Vec::new();
    let mut tally = Tally::default();
    let mut rng = SmallRng::seed_from_u64(48);
    for (file, registry) in &registries {
        let named = registry.tools[registry.tools.len() / 2].name.clone();
        // Every choice with one call or up to three, then some with a reasoning block.
        let mut variants: Vec<(ToolChoice, Option<u32>, Think)> = Vec::new();
        for choice in [
            ToolChoice::Auto,
            ToolChoice::Required,
            ToolChoice::None,
            ToolChoice::Named(named.clone()),
        ] {
            for max_calls in [Some(1), Some(3)] {
                variants.push((choice.clone(), max_calls, Think::Off));
            }
        }
        variants.extend([
            (ToolChoice::Auto, Some(1), Think::Optional),
            (ToolChoice::None, Some(1), Think::Optional),
            (ToolChoice::Auto, Some(3), Think::Required),
            (ToolChoice::Required, Some(1), Think::Forced),
        ]);
        for wire in WireFormat::ALL {
            for (choice, max_calls, think) in &variants {
                let (choice, max_calls, think) = (choice.clone(), *max_calls, *think);
                // A format that holds one call an answer refuses more (tests/cases.rs).
                if wire
                    .most_calls()
                    .is_some_and(|most| max_calls.is_none_or(|max| max > most))
                {
                    continue;
                }
                {
                    let mut options = CallOptions {
                        wire,
                        choice: choice.clone(),
                        max_calls,
                        think,
                        ..CallOptions::default()
                    };
                    let (compiled, lenient) = grammar(registry, &mut options);
                    if lenient {
                        lenient_grammars.push(file.clone());
                    }
                    let sampler = Sampler::new(&compiled);
                    let samples: Vec<String> = (0..SAMPLES)
                        .map(
                            |_| match sampler.sample(&mut rng, SAMPLE_CHARS).unwrap().as_slice() {
                                [Segment::Text(text)] => text.clone(),
                                other => panic!("{other:?}"),
                            },
                        )
                        .collect();
                    let mut all: Vec<String> = samples.clone();
                    all.extend(crafted(registry, &options, &samples));
                    for sample in &samples {
                        for _ in 0..MUTATIONS {
                            all.push(mutate(&mut rng, sample));
                        }
                    }
                    for text in &all {
                        texts += 1;
                        if let Some(failure) =
                            judge(registry, &options, &compiled, lenient, text, &mut tally)
                        {
                            failures.push(format!(
                                "{file}, {} {choice:?} max {max_calls:?} think {think:?}: {failure}",
                                wire.label()
                            ));
                        }
                    }
                }
            }
        }
    }
    lenient_grammars.dedup();
    println!(
        "{} registries, {texts} texts in {:.1} s ({tally:?}); compiled leniently: {lenient_grammars:?}",
        registries.len(),
        started.elapsed().as_secs_f64()
    );
    // Each kind of verdict was reached (the texts are not all alike).
    assert!(
        tally.both > 1000 && tally.neither > 1000 && tally.layout > 100,
        "{tally:?}"
    );
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
}

#[test]
fn integral_numbers_are_written_as_integers() {
    assert_eq!(integral("1.0"), "1");
    assert_eq!(integral("1e2"), "100");
    assert_eq!(integral("-2.50e1"), "-25");
    assert_eq!(integral("1.5"), "1.5");
    assert_eq!(integral("120e-1"), "12");
    assert_eq!(integral("0.0"), "0");
    assert_eq!(integral("-0e-5"), "0");
    assert_eq!(
        integral_numbers(r#"{"a":1.0,"b":"1.0","c":[2e1,0.5]}"#),
        r#"{"a":1,"b":"1.0","c":[20,0.5]}"#
    );
}
