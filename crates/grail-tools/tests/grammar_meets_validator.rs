//! Where the grammar and the validator used to disagree (issue 48, findings 1 to 4), one
//! test each: the grammar's full match and the validator's verdict are the same on
//! every wire format the finding concerns. (Finding 5, format `uri` with `minLength`,
//! is grail-schema's `format_with_implied_lengths` test and the MCP fetch registry in
//! `registry_agreement.rs`.)

use grail_engine::{CompiledGrammar, Matcher};
use grail_tools::{
    CallOptions, ToolChoice, ToolRegistry, WireFormat, tool_call_grammar, validate_output,
};

/// A code-running tool, a tool of numbers and a tool without arguments.
const REGISTRY: &str = r#"[
  {"name": "python", "parameters": {"type": "object",
    "properties": {"code": {"type": "string"}}, "required": ["code"]}},
  {"name": "measure", "parameters": {"type": "object",
    "properties": {"value": {"type": "number"}, "count": {"type": "integer"}}}},
  {"name": "now", "parameters": {"type": "object", "properties": {}}},
  {"name": "rate", "parameters": {"type": "object",
    "properties": {"above": {"type": "number", "exclusiveMinimum": 0.1},
                   "at_most": {"type": "number", "maximum": 0.3}}}}
]"#;

fn registry() -> ToolRegistry {
    ToolRegistry::from_json_text(REGISTRY).unwrap()
}

fn options(wire: WireFormat, choice: ToolChoice, parallel: bool) -> CallOptions {
    CallOptions {
        wire,
        choice,
        max_calls: if parallel { None } else { Some(1) },
        ..CallOptions::default()
    }
}

/// Whether the grammar matches `text` whole, and whether the validator accepts it.
fn verdicts(options: &CallOptions, text: &str) -> (bool, Result<grail_tools::Checked, String>) {
    let grammar = tool_call_grammar(&registry(), options).unwrap();
    let compiled = CompiledGrammar::compile(&grammar.grammar, &Default::default()).unwrap();
    let mut matcher = Matcher::new(&compiled);
    let matched = matcher.accept_str(text).is_ok() && matcher.is_accepting();
    let checked = validate_output(&registry(), options, text).map_err(|fault| {
        fault
            .faults
            .iter()
            .map(|fault| format!("{}: {}", fault.code, fault.message))
            .collect::<Vec<_>>()
            .join("\n")
    });
    (matched, checked)
}

/// A call of `tool` in `wire`, written as that format writes it (the formats' shapes
/// are pinned apart, in `cases.rs`).
fn call(wire: WireFormat, tool: &str, arguments: &str, parallel: bool) -> String {
    wire.write_calls(&[(tool, arguments)], parallel)
}

const JSON_WIRES: [WireFormat; 3] = [WireFormat::OpenAi, WireFormat::ToolArgs, WireFormat::Llama3];

/// Finding 1: an empty list of calls is refused by both, whatever the choice.
#[test]
fn an_empty_list_of_calls_is_refused_by_both() {
    for choice in [
        ToolChoice::Required,
        ToolChoice::Named("python".into()),
        ToolChoice::Auto,
    ] {
        for (wire, text) in [
            (WireFormat::OpenAi, "[]"),
            (WireFormat::ToolArgs, "[ ]"),
            (WireFormat::Llama3, "[]"),
            (WireFormat::Mistral, "[TOOL_CALLS][]"),
            (WireFormat::Granite, "<|tool_call|>[ ]"),
        ] {
            for parallel in [true, false] {
                let options = options(wire, choice.clone(), parallel);
                let (matched, checked) = verdicts(&options, text);
                assert!(!matched, "{choice:?} {wire:?}: the grammar takes {text:?}");
                let fault = checked.expect_err(text);
                assert!(
                    fault.starts_with("calls-empty") || fault.starts_with("call-malformed"),
                    "{choice:?} {wire:?} {text:?}: {fault}"
                );
            }
        }
    }
}

/// Finding 2: with `auto` and several calls, a bare call object is not text, and `{`
/// alone is no answer.
#[test]
fn a_bare_call_is_not_text_with_several_calls() {
    for wire in JSON_WIRES {
        let options = options(wire, ToolChoice::Auto, true);
        let bare = call(wire, "python", r#"{"code": 5}"#, false);
        let truncated = format!("Let me run it. {}", &bare[..bare.len() - 1]);
        let opened = format!("Sure: {{\"{}\":", wire.name_key());
        for text in [bare.as_str(), "{", truncated.as_str(), opened.as_str()] {
            let (matched, checked) = verdicts(&options, text);
            assert!(!matched, "{wire:?}: the grammar takes {text:?}");
            assert!(checked.is_err(), "{wire:?}: the validator takes {text:?}");
        }
        // A valid call after text is read as text, then the call.
        let text = format!(
            "Let me run it. {}",
            call(wire, "python", r#"{"code": "1"}"#, true)
        );
        let (matched, checked) = verdicts(&options, &text);
        let checked = checked.unwrap();
        assert!(matched, "{wire:?}: {text}");
        assert_eq!(checked.text.as_deref(), Some("Let me run it."));
        assert_eq!(checked.calls.len(), 1);
    }
}

/// Finding 3: under `auto`, text that starts like calls (`[`, `{`, `<`) gets the same
/// answer from both on every wire; whitespace around the answer is layout, which the
/// grammar never writes and the validator reads past.
#[test]
fn text_that_starts_like_calls_gets_one_answer() {
    let texts = [
        "[1, 2]",
        "{\"a\": 1}",
        "<b>hi</b>",
        "[TOOL_CALLS]",
        "{",
        "[",
        "hello [1]",
    ];
    // Formats that frame their text (harmony) have no bare text to tell from calls.
    let bare_text = WireFormat::ALL
        .into_iter()
        .filter(|wire| !wire.frames_text());
    for wire in bare_text {
        for parallel in [false, true] {
            let options = options(wire, ToolChoice::Auto, parallel);
            for text in texts {
                let (matched, checked) = verdicts(&options, text);
                assert_eq!(
                    matched,
                    checked.is_ok(),
                    "{wire:?} parallel {parallel}: {text:?}: grammar {matched}, validator {checked:?}"
                );
            }
            let (matched, checked) = verdicts(&options, " hello");
            assert!(
                !matched,
                "{wire:?}: the grammar writes no leading whitespace"
            );
            assert_eq!(checked.unwrap().text.as_deref(), Some("hello"));
            assert!(verdicts(&options, "hello").0);
        }
    }
    // What the validator and the grammar say about those texts, stated once.
    let openai = options(WireFormat::OpenAi, ToolChoice::Auto, false);
    assert!(!verdicts(&openai, "[1, 2]").0);
    let mistral = options(WireFormat::Mistral, ToolChoice::Auto, false);
    assert!(verdicts(&mistral, "[1, 2]").1.is_err());
    let hermes = options(WireFormat::Hermes, ToolChoice::Auto, false);
    assert!(verdicts(&hermes, "{\"a\": 1}").0);
}

/// Finding 4: numbers keep their text, a number beyond the doubles is refused by both as
/// out of range, never called invalid JSON, and a value within a double's rounding of a
/// bound that meets it is not refused.
#[test]
fn numbers_keep_their_text_and_stay_within_doubles() {
    for wire in WireFormat::ALL {
        let options = options(wire, ToolChoice::Required, false);
        let big = call(wire, "measure", r#"{"count": 18446744073709551617}"#, false);
        let (matched, checked) = verdicts(&options, &big);
        assert!(matched, "{wire:?}: {big}");
        let checked = checked.unwrap();
        assert_eq!(
            checked.tool_calls()[0]["function"]["arguments"],
            r#"{"count":18446744073709551617}"#
        );
        let digits = "9".repeat(400);
        for arguments in [
            r#"{"value": 1e400}"#.to_string(),
            format!(r#"{{"value": {digits}}}"#),
            format!(r#"{{"count": {digits}}}"#),
        ] {
            let text = call(wire, "measure", &arguments, false);
            let (matched, checked) = verdicts(&options, &text);
            assert!(!matched, "{wire:?}: the grammar writes {arguments}");
            let fault = checked.unwrap_err();
            assert!(fault.starts_with("arguments-invalid"), "{fault}");
            assert!(!fault.contains("not valid JSON"), "{fault}");
        }
        let small = call(wire, "measure", r#"{"value": -1.5e-99, "count": 0}"#, false);
        let (matched, checked) = verdicts(&options, &small);
        assert!(matched && checked.is_ok(), "{wire:?}: {small}");
        // Bounds are read as exact decimals by both, not at a double's precision.
        for (arguments, valid) in [
            (r#"{"above": 0.10000000000000000001}"#, true),
            (r#"{"above": 0.1}"#, false),
            (r#"{"at_most": 0.3}"#, true),
            (r#"{"at_most": 0.29999999999999999999}"#, true),
        ] {
            let text = call(wire, "rate", arguments, false);
            let (matched, checked) = verdicts(&options, &text);
            assert_eq!(matched, valid, "{wire:?}: grammar on {arguments}");
            assert_eq!(checked.is_ok(), valid, "{wire:?}: {arguments}: {checked:?}");
        }
    }
}

/// The tool-call number caps keep the grammars of bounds small (scientific exponents):
/// with any mantissa before a two-digit exponent, `rate`'s two bounds took 233 KB.
#[test]
fn bounded_numbers_keep_small_grammars() {
    for wire in WireFormat::ALL {
        let options = options(wire, ToolChoice::Named("rate".into()), false);
        let gbnf = tool_call_grammar(&registry(), &options).unwrap().gbnf();
        assert!(gbnf.len() < 4000, "{wire:?}: {} bytes", gbnf.len());
    }
}
