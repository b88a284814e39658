//! Continuous batching on the tiny model: sequences decoded together write exactly what
//! each writes alone (whatever their grammars, settings, lengths and arrival), shared
//! prompt prefixes are not read again, and cancellation, a full cache and requests that
//! can never fit give clear outcomes. Jump-forward appends the forced tokens, counts them,
//! and keeps every output in its grammar.

use std::collections::HashMap;

use grail_engine::CompiledGrammar;
use grail_gen::testing::TinyModel;
use grail_gen::{
    Admission, BatchDecoder, DecodeError, DecodeOptions, Finish, Generation, Model, ModelError,
    SamplingParams, SequenceId, decode,
};

/// One request of a test: its prompt, grammar and options.
struct Request {
    prompt: String,
    grammar: Option<CompiledGrammar>,
    options: DecodeOptions,
}

fn request(prompt: &str, grammar: Option<&str>, max_tokens: usize, seed: u64) -> Request {
    let sampling = if seed == 0 {
        SamplingParams::default()
    } else {
        SamplingParams {
            temperature: 0.9,
            top_k: 20,
            seed,
            ..SamplingParams::default()
        }
    };
    Request {
        prompt: prompt.to_string(),
        grammar: grammar.map(|text| CompiledGrammar::from_gbnf(text).unwrap()),
        options: DecodeOptions {
            max_tokens,
            sampling,
            ..DecodeOptions::default()
        },
    }
}

/// Requests with different grammars, settings, lengths and prompts, some sharing a
/// prefix.
fn mixed_requests() -> Vec<Request> {
    let call = r#"root ::= "{\"name\": \"" ("get_weather" | "search") "\", \"arguments\": {" ([a-z]{1,6} "\": " [0-9]{1,4})? "}}""#;
    let list = r#"root ::= "[" [0-9]+ ("," [0-9]+)* "]""#;
    vec![
        request("System: tools. User: weather?", Some(call), 80, 0),
        request("System: tools. User: search!", Some(call), 80, 7),
        request("Numbers please", Some(list), 30, 0),
        request("Free text", None, 12, 3),
        request("System: tools. User: weather?", Some(call), 80, 11),
        request("Yes or no", Some(r#"root ::= "yes" | "no""#), 10, 0),
        request("Numbers please, many", Some(list), 60, 5),
    ]
}

/// What `request` writes alone (the lone decode loop, a fresh model).
fn alone(seed: u64, request: &Request) -> Generation {
    let mut model = TinyModel::new(seed);
    let prompt = model.tokenize(&request.prompt).unwrap();
    decode(
        &mut model,
        &prompt,
        request.grammar.as_ref(),
        &request.options,
    )
    .unwrap()
}

/// Runs `requests` through `decoder`, admitting each as soon as there is room, in order;
/// returns each one's output, its reused prompt tokens and the bytes it streamed.
fn run_all(decoder: &mut BatchDecoder, requests: &[Request]) -> Vec<(Generation, usize, Vec<u8>)> {
    let mut waiting: Vec<usize> = (0..requests.len()).collect();
    let mut ids: HashMap<SequenceId, usize> = HashMap::new();
    let mut streamed: HashMap<SequenceId, Vec<u8>> = HashMap::new();
    let mut done: Vec<Option<(Generation, usize, Vec<u8>)>> =
        (0..requests.len()).map(|_| None).collect();
    let mut steps = 0;
    while done.iter().any(Option::is_none) {
        while let Some(&next) = waiting.first() {
            let request = &requests[next];
            let prompt = decoder.model().tokenize(&request.prompt).unwrap();
            match decoder
                .admit(&prompt, request.grammar.as_ref(), &request.options)
                .unwrap()
            {
                Admission::Started(id) => {
                    ids.insert(id, next);
                    waiting.remove(0);
                }
                Admission::Busy => break,
            }
        }
        let report = decoder.step();
        for (id, bytes) in report.written {
            streamed.entry(id).or_default().extend(bytes);
        }
        for (id, result) in report.finished {
            let index = ids[&id];
            let bytes = streamed.remove(&id).unwrap_or_default();
            let generation = result.unwrap();
            let cached = generation.stats.prompt_tokens - generation.stats.prompt_tokens_read;
            done[index] = Some((generation, cached, bytes));
        }
        steps += 1;
        assert!(steps < 10_000, "the batch does not finish");
    }
    done.into_iter().map(Option::unwrap).collect()
}

#[test]
fn a_batch_writes_what_each_sequence_writes_alone() {
    for seed in 0..3 {
        let requests = mixed_requests();
        // Fewer sequences than requests: some wait, and join as others finish.
        let mut decoder = BatchDecoder::new(Box::new(TinyModel::new(seed).with_sequences(3, 4096)));
        let outputs = run_all(&mut decoder, &requests);
        for (request, (generation, _, streamed)) in requests.iter().zip(&outputs) {
            let lone = alone(seed, request);
            assert_eq!(
                (generation.text(), generation.finish),
                (lone.text(), lone.finish),
                "seed {seed}, prompt {:?}",
                request.prompt
            );
            assert_eq!(generation.tokens, lone.tokens);
            assert_eq!(streamed, &generation.bytes, "the stream is the output");
        }
        assert_eq!(decoder.running(), 0);
    }
}

#[test]
fn one_model_call_serves_every_running_sequence() {
    let requests: Vec<Request> = (0..4)
        .map(|index| request(&format!("prompt {index}"), None, 20, index + 1))
        .collect();
    let model = TinyModel::new(1)
        .with_end_bias(-100.0)
        .with_sequences(4, 4096);
    let mut decoder = BatchDecoder::new(Box::new(model));
    for request in &requests {
        let prompt = decoder.model().tokenize(&request.prompt).unwrap();
        let admission = decoder.admit(&prompt, None, &request.options).unwrap();
        assert!(matches!(admission, Admission::Started(_)));
    }
    let mut steps = 0;
    let mut finished = 0;
    while decoder.running() > 0 {
        let report = decoder.step();
        finished += report.finished.len();
        steps += 1;
    }
    // The prompts are read in the first step, then one step per token for all four.
    assert_eq!(finished, 4);
    assert_eq!(steps, 20);
}

#[test]
fn a_shared_prompt_prefix_is_not_read_again() {
    let system = "System: the tools are get_weather and search, use them well. ";
    let first = request(&format!("{system}User: weather in Paris?"), None, 5, 0);
    let second = request(&format!("{system}User: search for cats"), None, 5, 0);
    let mut decoder = BatchDecoder::new(Box::new(TinyModel::new(4).with_sequences(2, 4096)));
    let outputs = run_all(&mut decoder, std::slice::from_ref(&first));
    assert_eq!(
        outputs[0].1, 0,
        "nothing was cached before the first request"
    );
    let shared = {
        let model = decoder.model();
        let a = model.tokenize(&first.prompt).unwrap();
        let b = model.tokenize(&second.prompt).unwrap();
        a.iter().zip(&b).take_while(|(a, b)| a == b).count()
    };
    assert!(shared > 10);
    let outputs = run_all(&mut decoder, std::slice::from_ref(&second));
    let (generation, cached, _) = &outputs[0];
    assert_eq!(*cached, shared);
    assert_eq!(
        generation.stats.prompt_tokens_read,
        generation.stats.prompt_tokens - shared
    );
    assert_eq!(generation.text(), alone(4, &second).text());
    // The same prompt again reuses all of it but its last token (read for the logits).
    let outputs = run_all(&mut decoder, std::slice::from_ref(&second));
    assert_eq!(outputs[0].1, outputs[0].0.stats.prompt_tokens - 1);
    assert_eq!(outputs[0].0.text(), alone(4, &second).text());
}

#[test]
fn requests_arriving_together_share_their_common_prefix() {
    let system =
        "System: the tools are get_weather and search, use them well, and answer briefly. ";
    let requests: Vec<Request> = ["weather in Paris?", "search for cats", "weather in Rome?"]
        .iter()
        .map(|question| request(&format!("{system}User: {question}"), None, 6, 0))
        .collect();
    let mut decoder = BatchDecoder::new(Box::new(TinyModel::new(6).with_sequences(3, 4096)));
    let outputs = run_all(&mut decoder, &requests);
    let system_tokens = decoder.model().tokenize(system).unwrap().len();
    assert_eq!(outputs[0].1, 0);
    for (request, (generation, cached, _)) in requests.iter().zip(&outputs).skip(1) {
        assert!(*cached >= system_tokens - 1, "{cached} of {system_tokens}");
        assert_eq!(generation.text(), alone(6, request).text());
    }
}

#[test]
fn a_cancelled_sequence_ends_with_what_it_wrote() {
    let model = TinyModel::new(2)
        .with_end_bias(-100.0)
        .with_sequences(2, 4096);
    let mut decoder = BatchDecoder::new(Box::new(model));
    let prompt = decoder.model().tokenize("go on").unwrap();
    let options = DecodeOptions {
        max_tokens: 100,
        ..DecodeOptions::default()
    };
    let Admission::Started(id) = decoder.admit(&prompt, None, &options).unwrap() else {
        panic!("busy with no one running");
    };
    let mut written = Vec::new();
    for _ in 0..5 {
        for (_, bytes) in decoder.step().written {
            written.extend(bytes);
        }
    }
    decoder.cancel(id);
    let report = decoder.step();
    let (ended, result) = report.finished.into_iter().next().expect("it ended");
    let generation = result.unwrap();
    assert_eq!(ended, id);
    assert_eq!(generation.finish, Finish::Interrupted);
    assert_eq!(generation.bytes, written);
    assert_eq!(generation.tokens.len(), 5);
    assert_eq!(decoder.running(), 0);
}

#[test]
fn a_full_cache_makes_a_request_wait_and_one_too_large_is_refused() {
    let model = TinyModel::new(3).with_sequences(4, 100);
    let mut decoder = BatchDecoder::new(Box::new(model));
    let prompt = decoder.model().tokenize("0123456789").unwrap();
    let options = DecodeOptions {
        max_tokens: 50,
        ..DecodeOptions::default()
    };
    assert!(matches!(
        decoder.admit(&prompt, None, &options).unwrap(),
        Admission::Started(_)
    ));
    // 60 tokens are set aside for the first; 60 more do not fit in 100.
    assert_eq!(
        decoder.admit(&prompt, None, &options).unwrap(),
        Admission::Busy
    );
    while decoder.running() > 0 {
        decoder.step();
    }
    assert!(matches!(
        decoder.admit(&prompt, None, &options).unwrap(),
        Admission::Started(_)
    ));
    let too_long = DecodeOptions {
        max_tokens: 95,
        ..DecodeOptions::default()
    };
    let error = decoder.admit(&prompt, None, &too_long).unwrap_err();
    assert!(
        matches!(
            error,
            DecodeError::Model(ModelError::ContextFull { needed, limit: 100 })
                if needed == prompt.len() + 95
        ),
        "{error}"
    );
}

#[test]
fn a_request_that_cannot_run_is_an_error_not_a_wait() {
    let mut decoder = BatchDecoder::new(Box::new(TinyModel::new(1).with_sequences(2, 4096)));
    let prompt = decoder.model().tokenize("x").unwrap();
    let empty = CompiledGrammar::from_gbnf(r#"root ::= [^\x00-\U0010FFFF]"#);
    if let Ok(empty) = empty {
        assert!(matches!(
            decoder.admit(&prompt, Some(&empty), &DecodeOptions::default()),
            Err(DecodeError::EmptyLanguage)
        ));
    }
    let zero = DecodeOptions {
        max_tokens: 0,
        ..DecodeOptions::default()
    };
    assert!(matches!(
        decoder.admit(&prompt, None, &zero),
        Err(DecodeError::Options(_))
    ));
    assert!(decoder.admit(&[], None, &DecodeOptions::default()).is_err());
    assert_eq!(decoder.running(), 0);
}

#[test]
fn jump_forward_appends_the_forced_tokens_without_drawing_them() {
    let grammar =
        r#"root ::= "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"" [a-z]{1,8} "\"}}""#;
    let compiled = CompiledGrammar::from_gbnf(grammar).unwrap();
    for seed in 0..4 {
        let mut model = TinyModel::ascii_only(seed);
        let prompt = model.tokenize("call: ").unwrap();
        let stepwise = decode(
            &mut model,
            &prompt,
            Some(&compiled),
            &DecodeOptions::default(),
        )
        .unwrap();
        let jumping = decode(
            &mut TinyModel::ascii_only(seed),
            &prompt,
            Some(&compiled),
            &DecodeOptions {
                jump_forward: true,
                ..DecodeOptions::default()
            },
        )
        .unwrap();
        for generation in [&stepwise, &jumping] {
            let mut matcher = grail_engine::Matcher::new(&compiled);
            assert!(
                matcher.accept_bytes(&generation.bytes).is_ok() && matcher.is_accepting(),
                "{:?}",
                generation.text()
            );
        }
        assert_eq!(stepwise.stats.forced_tokens, 0);
        assert!(jumping.stats.forced_tokens > 5, "{:?}", jumping.stats);
        // One grammar-time entry per drawn token; every output token counted once.
        assert_eq!(
            jumping.stats.grammar_us.len() + jumping.stats.forced_tokens,
            jumping.tokens.len()
        );
        assert!(jumping.text().starts_with("{\"name\": \"get_weather\""));
    }
}

#[test]
fn jump_forward_in_a_batch_writes_what_it_writes_alone() {
    let grammar =
        r#"root ::= "{\"name\": \"" ("get_weather" | "search_the_web") "\", \"arguments\": {}}""#;
    let mut requests: Vec<Request> = (0..4)
        .map(|index| request(&format!("call {index}: "), Some(grammar), 60, index))
        .collect();
    for request in &mut requests {
        request.options.jump_forward = true;
    }
    let mut decoder = BatchDecoder::new(Box::new(TinyModel::new(5).with_sequences(4, 4096)));
    let outputs = run_all(&mut decoder, &requests);
    for (request, (generation, _, streamed)) in requests.iter().zip(&outputs) {
        let lone = alone(5, request);
        assert_eq!(generation.text(), lone.text());
        assert_eq!(generation.stats.forced_tokens, lone.stats.forced_tokens);
        assert!(generation.stats.forced_tokens > 0);
        assert_eq!(streamed, &generation.bytes);
    }
}

#[test]
fn jump_forward_writes_the_stepwise_output_where_the_model_spells_the_forced_text_alike() {
    // Forced text with one spelling in the tiny vocabulary (single bytes, no word): the
    // model drawing greedily step by step can only write those tokens, so jump-forward's
    // output is the same, token for token. (Sampled outputs part: the forced tokens take
    // no draw from the random stream, so later draws use other numbers.)
    let grammar =
        CompiledGrammar::from_gbnf(r#"root ::= "xyzzy-" [0-9]{1,3} "-qvwk-" [b-d]{1,4} "!""#)
            .unwrap();
    for seed in 0..4 {
        for repeat_penalty in [1.0, 1.3] {
            let mut options = request("", None, 60, 0).options;
            options.sampling.repeat_penalty = repeat_penalty;
            let mut model = TinyModel::ascii_only(seed);
            let prompt = model.tokenize("write: ").unwrap();
            let stepwise = decode(&mut model, &prompt, Some(&grammar), &options).unwrap();
            options.jump_forward = true;
            let mut model = TinyModel::ascii_only(seed);
            let jumping = decode(&mut model, &prompt, Some(&grammar), &options).unwrap();
            assert_eq!(jumping.text(), stepwise.text());
            assert_eq!(jumping.tokens, stepwise.tokens);
            assert!(jumping.stats.forced_tokens >= 9, "{:?}", jumping.stats);
        }
    }
}
