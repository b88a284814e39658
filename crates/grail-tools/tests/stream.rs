//! Streamed calls against the validator: answers sampled from the tool-call grammar of
//! the corpus' registries, in every wire format that streams live, with every choice,
//! one call or several and a reasoning block, pushed to a `CallStream` in random pieces.
//! The deltas, joined, must be the validator's reading of the whole answer: the same
//! reasoning and text, the same tools in order, arguments equal as JSON; and a delta once
//! sent is never taken back (the joined text of each part only grows).

use std::path::Path;

use grail_engine::{CompiledGrammar, Sampler, Segment};
use grail_tools::{
    CallOptions, CallStream, StreamDelta, Think, ToolChoice, ToolRegistry, WireFormat,
    tool_call_grammar, validate_output,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

/// Samples drawn per grammar, and their length budget in characters.
const SAMPLES: usize = 6;
const SAMPLE_CHARS: usize = 300;

fn registry() -> ToolRegistry {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/tools/seeds.tools.json");
    ToolRegistry::from_json_text(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// What the deltas of one answer join into.
#[derive(Debug, Default)]
struct Joined {
    reasoning: String,
    content: String,
    calls: Vec<(String, String)>,
}

fn join(deltas: impl IntoIterator<Item = StreamDelta>, joined: &mut Joined) {
    for delta in deltas {
        match delta {
            StreamDelta::Reasoning(text) => joined.reasoning.push_str(&text),
            StreamDelta::Content(text) => joined.content.push_str(&text),
            StreamDelta::Call { index, name } => {
                assert_eq!(index, joined.calls.len(), "calls arrive in order");
                joined.calls.push((name, String::new()));
            }
            StreamDelta::Arguments { index, piece } => joined.calls[index].1.push_str(&piece),
        }
    }
}

#[test]
fn streamed_deltas_join_into_what_the_validator_reads() {
    let registry = registry();
    let mut rng = SmallRng::seed_from_u64(53);
    let mut answers = 0;
    let variants = [
        (ToolChoice::Required, Some(1), Think::Off),
        (ToolChoice::Required, Some(3), Think::Off),
        (ToolChoice::Auto, Some(1), Think::Off),
        (ToolChoice::Auto, Some(3), Think::Optional),
        (ToolChoice::Named("file".into()), Some(1), Think::Required),
        (ToolChoice::None, Some(1), Think::Off),
    ];
    for wire in WireFormat::ALL {
        for (choice, max_calls, think) in &variants {
            let options = CallOptions {
                wire,
                choice: choice.clone(),
                max_calls: *max_calls,
                think: *think,
                ..CallOptions::default()
            };
            let too_many = wire
                .most_calls()
                .is_some_and(|most| max_calls.is_none_or(|max| max > most));
            if !CallStream::streams_live(&options) || too_many {
                continue;
            }
            let grammar = tool_call_grammar(&registry, &options).unwrap();
            let compiled = CompiledGrammar::compile(&grammar.grammar, &Default::default()).unwrap();
            let sampler = Sampler::new(&compiled);
            for _ in 0..SAMPLES {
                let answer = match sampler.sample(&mut rng, SAMPLE_CHARS).unwrap().as_slice() {
                    [Segment::Text(text)] => text.clone(),
                    other => panic!("{other:?}"),
                };
                let Ok(checked) = validate_output(&registry, &options, &answer) else {
                    // The grammar matches what the validator may refuse only where the
                    // grammar cannot say it (registry_agreement.rs); not streamed live.
                    continue;
                };
                let label = format!(
                    "{} {choice:?} {max_calls:?} {think:?}: {answer:?}",
                    wire.label()
                );
                let mut stream = CallStream::new(&options);
                let mut joined = Joined::default();
                let mut at = 0;
                while at < answer.len() {
                    let mut end = (at + rng.random_range(1..12)).min(answer.len());
                    while !answer.is_char_boundary(end) {
                        end += 1;
                    }
                    join(stream.push(&answer[at..end]), &mut joined);
                    at = end;
                }
                join(stream.finish(), &mut joined);
                assert_eq!(
                    joined.reasoning,
                    checked.reasoning.clone().unwrap_or_default(),
                    "{label}"
                );
                assert_eq!(
                    joined.content,
                    checked.text.clone().unwrap_or_default(),
                    "{label}"
                );
                assert_eq!(joined.calls.len(), checked.calls.len(), "{label}");
                for ((name, arguments), call) in joined.calls.iter().zip(&checked.calls) {
                    assert_eq!(name, &call.name, "{label}");
                    let streamed: Value = serde_json::from_str(arguments)
                        .unwrap_or_else(|error| panic!("{label}: {arguments:?}: {error}"));
                    assert_eq!(&streamed, call.arguments.value(), "{label}");
                }
                answers += 1;
            }
        }
    }
    assert!(answers > 300, "{answers} answers streamed");
}

#[test]
fn text_that_may_start_a_call_waits_for_the_next_piece() {
    let options = CallOptions {
        wire: WireFormat::Hermes,
        choice: ToolChoice::Auto,
        ..CallOptions::default()
    };
    let mut stream = CallStream::new(&options);
    assert_eq!(
        stream.push("Let me look <tool_"),
        [StreamDelta::Content("Let me look".into())]
    );
    // Not a call after all: the held text goes out.
    assert_eq!(
        stream.push("s> here."),
        [StreamDelta::Content(" <tool_s> here.".into())]
    );
    let mut stream = CallStream::new(&options);
    let deltas = stream.push("Sure.\n<tool_call>\n{\"name\": \"navigate\", \"arguments\": {\"act");
    assert_eq!(
        deltas,
        [
            StreamDelta::Content("Sure.".into()),
            StreamDelta::Call {
                index: 0,
                name: "navigate".into()
            },
            StreamDelta::Arguments {
                index: 0,
                piece: "{\"act".into()
            },
        ]
    );
    assert_eq!(
        stream.push("ion\": \"get_tree\"}}\n</tool_call>"),
        [StreamDelta::Arguments {
            index: 0,
            piece: "ion\": \"get_tree\"}".into()
        }]
    );
}
