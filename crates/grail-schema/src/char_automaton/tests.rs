use super::*;
use proptest::prelude::*;
use std::time::{Duration, Instant};

/// The automaton of a pattern the test knows to be fine.
fn dfa(pattern: &str) -> CharDfa {
    CharDfa::from_pattern(pattern).unwrap_or_else(|error| panic!("{pattern:?}: {error}"))
}

/// The canonical JSON encoding of a string's characters, written independently of
/// json_text.
fn json_encoded(text: &str) -> String {
    let mut encoded = String::new();
    for character in text.chars() {
        match character {
            '"' => encoded.push_str("\\\""),
            '\\' => encoded.push_str("\\\\"),
            '\u{8}' => encoded.push_str("\\b"),
            '\u{C}' => encoded.push_str("\\f"),
            '\n' => encoded.push_str("\\n"),
            '\r' => encoded.push_str("\\r"),
            '\t' => encoded.push_str("\\t"),
            control if (control as u32) < 0x20 || control == '\u{7F}' => {
                encoded.push_str(&format!("\\u{:04x}", control as u32))
            }
            other => encoded.push(other),
        }
    }
    encoded
}

/// The automaton's grammar as a JSON string (quotes included), printed as GBNF.
fn string_grammar_text(automaton: &CharDfa) -> String {
    let mut builder = GrammarBuilder::new();
    let expr = automaton
        .to_expr(&mut builder, "key", &Expr::literal("\""))
        .unwrap();
    let root = builder.root();
    let string = Expr::sequence([Expr::literal("\""), expr]);
    builder.define(root, string).unwrap();
    grail_grammar::print_grammar(&builder.build().unwrap())
}

/// llama.cpp accepts the automaton's grammar (by Grail's llama.cpp checks).
fn assert_llama_cpp_accepts(automaton: &CharDfa) {
    let text = string_grammar_text(automaton);
    let options = grail_grammar::CheckOptions {
        target: grail_grammar::Target::LlamaCpp,
        ..Default::default()
    };
    let report = grail_grammar::check(&text, &options);
    assert!(report.is_ok(), "{:?}\n{text}", report.diagnostics);
}

/// The automaton's grammar (between the quotes), compiled.
fn compiled(automaton: &CharDfa) -> grail_engine::CompiledGrammar {
    let mut builder = GrammarBuilder::new();
    let expr = automaton
        .to_expr(&mut builder, "key", &Expr::Empty)
        .unwrap();
    let root = builder.root();
    builder.define(root, expr).unwrap();
    let grammar = builder.build().unwrap();
    grail_engine::CompiledGrammar::compile(&grammar, &Default::default()).unwrap()
}

/// True when the grammar accepts the text exactly.
fn accepts(grammar: &grail_engine::CompiledGrammar, encoded: &str) -> bool {
    let mut matcher = grail_engine::Matcher::new(grammar);
    matcher.accept_str(encoded).is_ok() && matcher.is_accepting()
}

/// Every code-point range some transition of the automaton is on.
fn transition_ranges(automaton: &CharDfa) -> Vec<(u32, u32)> {
    let class_ranges = automaton.alphabet.class_ranges();
    let mut ranges = Vec::new();
    for state in 0..automaton.state_count() {
        for (class, &next) in automaton.row(state).iter().enumerate() {
            if next != NO_STATE {
                ranges.extend(code_point_ranges(&class_ranges[class]));
            }
        }
    }
    ranges
}

/// Checks minimality independently (Moore's refinement, to a fixed point) and that
/// every state is reachable and, but for the empty language's, can reach acceptance.
fn assert_minimal(automaton: &CharDfa) {
    let count = automaton.state_count();
    let classes = automaton.class_count();
    let mut block: Vec<usize> = automaton
        .accepting
        .iter()
        .map(|&accepts| usize::from(accepts))
        .collect();
    loop {
        let mut signatures: HashMap<(usize, Vec<Option<usize>>), usize> = HashMap::default();
        let refined: Vec<usize> = (0..count)
            .map(|state| {
                let row = automaton
                    .row(state)
                    .iter()
                    .map(|&next| (next != NO_STATE).then(|| block[next as usize]))
                    .collect();
                let next = signatures.len();
                *signatures.entry((block[state], row)).or_insert(next)
            })
            .collect();
        let stable =
            signatures.len() == block.iter().collect::<std::collections::HashSet<_>>().len();
        block = refined;
        if stable {
            break;
        }
    }
    let distinct: std::collections::HashSet<_> = block.iter().collect();
    assert_eq!(
        distinct.len(),
        count,
        "two states are equivalent: {automaton:?}"
    );
    // Reachable from the start.
    let mut seen = vec![false; count];
    seen[0] = true;
    let mut stack = vec![0usize];
    while let Some(state) = stack.pop() {
        for &next in automaton.row(state) {
            if next != NO_STATE && !seen[next as usize] {
                seen[next as usize] = true;
                stack.push(next as usize);
            }
        }
    }
    assert!(seen.iter().all(|&seen| seen), "{automaton:?}");
    // Co-reachable: every state reaches an accepting one.
    if !automaton.is_empty() {
        let mut live: Vec<bool> = automaton.accepting.clone();
        let mut changed = true;
        while changed {
            changed = false;
            for state in 0..count {
                if !live[state]
                    && automaton
                        .row(state)
                        .iter()
                        .any(|&next| next != NO_STATE && live[next as usize])
                {
                    live[state] = true;
                    changed = true;
                }
            }
        }
        assert!(live.iter().all(|&live| live), "{automaton:?}");
    }
    // No class twice in a row, and classes partition the alphabet in order.
    assert_eq!(automaton.alphabet.starts.first(), Some(&0));
    assert!(
        automaton
            .alphabet
            .classes
            .windows(2)
            .all(|pair| pair[0] != pair[1])
    );
    assert!(
        automaton
            .alphabet
            .classes
            .iter()
            .all(|&class| (class as usize) < classes)
    );
}

#[test]
fn typical_key_patterns_are_small() {
    for (pattern, states, classes) in [
        ("^[a-z][a-z0-9_]*$", 2, 3),
        ("^x-", 3, 3),
        ("^[0-9]+$", 2, 2),
        ("^[A-Za-z_][A-Za-z0-9_]*$", 2, 3),
        ("foo", 4, 3),
        ("^\\p{L}+$", 2, 2),
        ("^[a-z]{1,64}$", 65, 2),
        ("^(?:get|set)_[a-z]+$", 6, 6),
        ("^[0-9]{4}-[0-9]{2}-[0-9]{2}$", 11, 3),
        ("", 1, 1),
        ("[]", 1, 1),
    ] {
        let automaton = dfa(pattern);
        assert_minimal(&automaton);
        assert_eq!(
            (automaton.state_count(), automaton.class_count()),
            (states, classes),
            "{pattern:?}"
        );
        assert_llama_cpp_accepts(&automaton);
    }
}

#[test]
fn grammars_are_one_compact_rule_per_state() {
    // The closing quote inside the rules; a state's own loop as `c*` inside its rule.
    let automaton = dfa("^[a-z][a-z0-9_]*$");
    let text = string_grammar_text(&automaton);
    assert_eq!(
        text,
        "root ::= \"\\\"\" key\nkey ::= [a-z] key-1\nkey-1 ::= [0-9_a-z]* \"\\\"\"\n"
    );
    // A state that accepts and goes nowhere is no rule of its own.
    let text = string_grammar_text(&dfa("^(?:ab|c)$"));
    assert_eq!(
        text,
        "root ::= \"\\\"\" key\nkey ::= \"a\" key-1 | \"c\" \"\\\"\"\nkey-1 ::= \"b\" \"\\\"\"\n"
    );
    // Characters JSON escapes, in their canonical escapes.
    let automaton = dfa("^[\"\\\\\\n\\x01]x$");
    let grammar = compiled(&automaton);
    for (encoded, expected) in [
        ("\\\"x", true),
        ("\\\\x", true),
        ("\\nx", true),
        ("\\u0001x", true),
        ("\"x", false),
        ("\\u0022x", false),
    ] {
        assert_eq!(accepts(&grammar, encoded), expected, "{encoded:?}");
    }
    assert_eq!(
        CharDfa::from_strings(&[""]).unwrap().to_expr(
            &mut GrammarBuilder::new(),
            "k",
            &Expr::Empty
        ),
        Ok(Expr::Empty)
    );
    assert_eq!(
        CharDfa::nothing().to_expr(&mut GrammarBuilder::new(), "k", &Expr::Empty),
        Ok(Expr::Chars(CharSet::new([], false)))
    );
}

#[test]
fn patterns_properties_and_names() {
    let declared = CharDfa::from_strings(&["x-id", "name", "x-"]).unwrap();
    assert_minimal(&declared);
    let prefixed = dfa("^x-");
    let undeclared_prefixed = prefixed.difference(&declared).unwrap();
    assert_minimal(&undeclared_prefixed);
    for (key, expected) in [
        ("x-id", false),
        ("x-", false),
        ("x-a", true),
        ("name", false),
    ] {
        assert_eq!(undeclared_prefixed.matches(key), expected, "{key:?}");
    }
    // Keys matching no pattern.
    let identifiers = dfa("^[a-z]+$");
    let neither = prefixed.union(&identifiers).unwrap().complement();
    assert_minimal(&neither);
    for (key, expected) in [
        ("x-a", false),
        ("abc", false),
        ("", true),
        ("A", true),
        ("x", false),
    ] {
        assert_eq!(neither.matches(key), expected, "{key:?}");
    }
    // Keys matching both of two patterns.
    let both = dfa("^a").intersection(&dfa("b$")).unwrap();
    assert!(both.matches("ab") && both.matches("axb") && !both.matches("ba"));
    assert_eq!(both, dfa("^a.*b$").union(&dfa("^a[\\s\\S]*b$")).unwrap());
    // Lengths.
    let short = dfa("^[a-z]+$")
        .intersection(&CharDfa::lengths(2, Some(3)).unwrap())
        .unwrap();
    assert_eq!(short, dfa("^[a-z]{2,3}$"));
    assert!(
        dfa("^a{5}$")
            .intersection(&CharDfa::lengths(0, Some(4)).unwrap())
            .unwrap()
            .is_empty()
    );
    assert_eq!(CharDfa::lengths(3, Some(2)).unwrap(), CharDfa::nothing());
    assert_eq!(CharDfa::lengths(0, None).unwrap(), CharDfa::everything());
    assert!(CharDfa::everything().is_everything() && !CharDfa::nothing().is_everything());
    assert_eq!(CharDfa::nothing().complement(), CharDfa::everything());
    assert_eq!(CharDfa::everything().complement(), CharDfa::nothing());
    assert!(CharDfa::nothing().is_empty() && !CharDfa::everything().is_empty());
    // Literals against patterns, non-ASCII included.
    assert!(dfa("^\\p{Lu}").matches("Élan") && !dfa("^\\p{Lu}").matches("élan"));
    assert!(dfa("😀$").matches("a😀") && !dfa("😀$").matches("😀a"));
    // Errors of the pattern pass through.
    assert!(matches!(
        CharDfa::from_pattern("(?=a)"),
        Err(AutomatonError::Pattern(PatternError::Unsupported { .. }))
    ));
    assert!(matches!(
        CharDfa::from_pattern("(a"),
        Err(AutomatonError::Pattern(PatternError::Syntax { .. }))
    ));
}

#[test]
fn surrogates_are_never_accepted() {
    for automaton in [
        CharDfa::everything(),
        CharDfa::nothing().complement(),
        dfa("^a$").complement(),
        dfa("^[^a]$"),
        dfa("[\\uD000-\\uE000]"),
        CharDfa::lengths(1, Some(2)).unwrap(),
    ] {
        for (first, last) in transition_ranges(&automaton) {
            assert!(last < 0xD800 || first > 0xDFFF, "{first:X}-{last:X}");
        }
        assert!(!string_grammar_text(&automaton).contains("\\uD8"));
    }
    // The whole alphabet is one class, its ranges either side of the surrogates.
    let everything = CharDfa::everything();
    assert_eq!(
        transition_ranges(&everything),
        vec![(0, 0xD7FF), (0xE000, 0x10FFFF)]
    );
    assert!(dfa("^[\\uD7FF-\\uE000]$").matches("\u{D7FF}"));
    assert!(dfa("^[\\uD7FF-\\uE000]$").matches("\u{E000}"));
    assert_eq!(dfa("^[\\uD7FF-\\uE000]$").class_count(), 2);
}

#[test]
fn equal_languages_give_equal_automata() {
    for group in [
        &["^(a|b)*$", "^[ab]*$", "^(a*b*)*$", "^(?:a|b|ab)*$"][..],
        &["a", "a.*", ".*a", "^[\\s\\S]*a"],
        &["^a{2,4}$", "^aaa?a?$", "^(?:aa|aaa|aaaa)$"],
        &["[]", "a^", "$a", "^(?:b[]|[])$"],
        &["", "^", "$", "a*", "^.*|\\n"],
    ] {
        let first = dfa(group[0]);
        assert_minimal(&first);
        for pattern in &group[1..] {
            assert_eq!(dfa(pattern), first, "{pattern:?} and {:?}", group[0]);
        }
    }
    let a = dfa("^[ab]*a[ab]{2}$");
    let b = dfa("b$|^.{2}$");
    let de_morgan = a.complement().union(&b.complement()).unwrap().complement();
    assert_eq!(a.intersection(&b).unwrap(), de_morgan);
    assert_eq!(a.complement().complement(), a);
    // The DFA of "an a three from the end" needs 2^3 states.
    assert_eq!(dfa("^[ab]*a[ab]{2}$").state_count(), 8);
}

#[test]
fn strings_and_lengths() {
    let names = ["", "a", "ab", "abc", "b\"\\", "é😀", "\u{10FFFF}"];
    let automaton = CharDfa::from_strings(&names).unwrap();
    assert_minimal(&automaton);
    for name in names {
        assert!(automaton.matches(name), "{name:?}");
    }
    for other in ["abcd", "b", "\"", "é", "\u{10FFFE}"] {
        assert!(!automaton.matches(other), "{other:?}");
    }
    assert_eq!(CharDfa::from_strings(&[]).unwrap(), CharDfa::nothing());
    let grammar = compiled(&automaton);
    assert!(accepts(&grammar, "b\\\"\\\\"));
    assert!(!accepts(&grammar, "b\"\\"));
    // Lengths count code points.
    let two = CharDfa::lengths(2, Some(2)).unwrap();
    assert!(two.matches("😀é") && !two.matches("😀") && !two.matches("abc"));
    let at_least_two = CharDfa::lengths(2, None).unwrap();
    assert_eq!(at_least_two.state_count(), 3);
    assert!(at_least_two.matches("abcdef") && !at_least_two.matches("a"));
    assert!(matches!(
        CharDfa::lengths(0, Some(STATE_LIMIT as u64)),
        Err(AutomatonError::TooLarge { .. })
    ));
    assert!(CharDfa::lengths(0, Some(STATE_LIMIT as u64 - 1)).is_ok());
    assert!(matches!(
        CharDfa::lengths(u64::MAX, None),
        Err(AutomatonError::TooLarge { .. })
    ));
}

/// Runs `build`, checks it fails with a size or work limit, and soon.
fn assert_refused_soon(what: &str, build: impl FnOnce() -> Result<CharDfa, AutomatonError>) {
    let began = Instant::now();
    let result = build();
    let elapsed = began.elapsed();
    assert!(
        matches!(
            result,
            Err(AutomatonError::TooLarge { .. } | AutomatonError::TooComplex { .. })
        ),
        "{what}: {result:?}"
    );
    assert!(elapsed < Duration::from_secs(20), "{what} took {elapsed:?}");
}

#[test]
fn searches_whose_subset_construction_explodes_are_built_in_reverse() {
    // Containing `a` and 20 more of `a` or `b`: 22 states, though the subset
    // construction would remember every `a` of the last 20 characters.
    let began = Instant::now();
    for (pattern, states) in [
        ("(a|b)*a(a|b){20}", 22),
        ("[a-z][a-z0-9]{30}", 32),
        ("^x|a[ab]{16}", 19),
    ] {
        let automaton = dfa(pattern);
        assert_minimal(&automaton);
        assert_eq!(automaton.state_count(), states, "{pattern:?}");
    }
    let automaton = dfa("(a|b)*a(a|b){20}");
    assert!(automaton.matches(&format!("xx{}yy", "a".repeat(21))));
    assert!(automaton.matches(&format!("b{}", "ab".repeat(11))));
    assert!(!automaton.matches(&format!("{}c{}", "a".repeat(20), "a".repeat(20))));
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
}

#[test]
fn hostile_inputs_fail_fast() {
    for pattern in [
        "^(a|b)*a(a|b){20}$".to_string(),
        "(a|b)*a(a|b){20}$".to_string(),
        "[ab]*a[ab]{5000}".to_string(),
        "^.{0,200000}$".to_string(),
        "^(?:.*a){10000}".to_string(),
        format!("^{}$", ('\u{4E00}'..'\u{5600}').collect::<String>()),
    ] {
        assert_refused_soon(&pattern.chars().take(30).collect::<String>(), || {
            CharDfa::from_pattern(&pattern)
        });
    }
    let cycle_150 = dfa("^(?:a{150})*$");
    let cycle_151 = dfa("^(?:a{151})*$");
    assert_refused_soon("product of coprime cycles", || {
        cycle_150.intersection(&cycle_151)
    });
    let many: Vec<String> = (0..30_000).map(|index| format!("name{index}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert_refused_soon("30000 names", || CharDfa::from_strings(&many));
    // Below the limits, big but fine.
    let began = Instant::now();
    assert_eq!(dfa("^.{0,5000}$").state_count(), 5001);
    assert_eq!(dfa("^(a|b)*a(a|b){10}$").state_count(), 2048);
    assert!(began.elapsed() < Duration::from_secs(20));
}

// -----------------------------------------------------------------------------
// Random patterns against the regex crate.
// -----------------------------------------------------------------------------

/// A generated pattern, rendered with the same meaning for ECMA and the regex crate.
#[derive(Debug, Clone)]
enum Piece {
    Char(char),
    Class(bool, Vec<char>),
    Dot,
    Start,
    End,
    Concat(Vec<Piece>),
    Alt(Vec<Piece>),
    Repeat(Box<Piece>, u32, Option<u32>),
}

/// Characters of generated patterns (some JSON escapes).
const PATTERN_CHARS: &[char] = &['a', 'b', '"', '\n', '\\'];
/// Characters of random texts: those of patterns and some no pattern names.
const TEXT_CHARS: &[char] = &['a', 'b', '"', '\n', '\\', 'é', '\u{7F}'];
/// Characters of the texts tried exhaustively.
const SHORT_TEXT_CHARS: &[char] = &['a', 'b', '\n'];

/// A character as written in a pattern, for both flavours.
fn escaped(character: char) -> String {
    match character {
        '\\' => "\\\\".to_string(),
        '\n' => "\\n".to_string(),
        other => other.to_string(),
    }
}

impl Piece {
    /// The pattern for ECMA (`ecma`) or the regex crate, meaning the same strings.
    fn render(&self, ecma: bool) -> String {
        match self {
            Piece::Char(character) => escaped(*character),
            Piece::Class(negated, characters) => {
                let items: String = characters.iter().map(|&c| escaped(c)).collect();
                format!("[{}{items}]", if *negated { "^" } else { "" })
            }
            Piece::Dot if ecma => ".".to_string(),
            Piece::Dot => "[^\\n\\r\\x{2028}\\x{2029}]".to_string(),
            Piece::Start => "^".to_string(),
            Piece::End => "$".to_string(),
            Piece::Concat(items) => items
                .iter()
                .map(|item| match item {
                    Piece::Alt(_) => format!("(?:{})", item.render(ecma)),
                    _ => item.render(ecma),
                })
                .collect(),
            Piece::Alt(items) => items
                .iter()
                .map(|item| item.render(ecma))
                .collect::<Vec<_>>()
                .join("|"),
            Piece::Repeat(inner, min, max) => {
                let atom = match **inner {
                    Piece::Char(_) | Piece::Class(..) | Piece::Dot => inner.render(ecma),
                    _ => format!("(?:{})", inner.render(ecma)),
                };
                let quantifier = match (min, max) {
                    (0, None) => "*".to_string(),
                    (1, None) => "+".to_string(),
                    (0, Some(1)) => "?".to_string(),
                    (min, None) => format!("{{{min},}}"),
                    (min, Some(max)) if min == max => format!("{{{min}}}"),
                    (min, Some(max)) => format!("{{{min},{max}}}"),
                };
                format!("{atom}{quantifier}")
            }
        }
    }
}

/// Small patterns over [`PATTERN_CHARS`], anchors included.
fn piece() -> impl Strategy<Value = Piece> {
    let leaf = prop_oneof![
        8 => prop::sample::select(PATTERN_CHARS).prop_map(Piece::Char),
        2 => (any::<bool>(), prop::collection::vec(prop::sample::select(PATTERN_CHARS), 1..3))
            .prop_map(|(negated, characters)| Piece::Class(negated, characters)),
        1 => Just(Piece::Dot),
        1 => Just(Piece::Start),
        1 => Just(Piece::End),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            3 => prop::collection::vec(inner.clone(), 0..4).prop_map(Piece::Concat),
            2 => prop::collection::vec(inner.clone(), 1..4).prop_map(Piece::Alt),
            2 => (inner, 0u32..3, prop::option::of(0u32..3)).prop_map(|(item, min, extra)| {
                Piece::Repeat(Box::new(item), min, extra.map(|extra| min + extra))
            }),
        ]
    })
}

/// A generated pattern: its automaton and the regex crate's reading of it.
fn both(piece: &Piece) -> (String, CharDfa, regex::Regex) {
    let ecma = piece.render(true);
    let automaton = dfa(&ecma);
    let regex = regex::Regex::new(&piece.render(false)).unwrap();
    (ecma, automaton, regex)
}

/// Every string over `alphabet` up to `longest` characters.
fn all_strings(alphabet: &[char], longest: usize) -> Vec<String> {
    let mut all = vec![String::new()];
    let mut previous = vec![String::new()];
    for _ in 0..longest {
        let next: Vec<String> = previous
            .iter()
            .flat_map(|text| {
                alphabet.iter().map(move |&character| {
                    let mut longer = text.clone();
                    longer.push(character);
                    longer
                })
            })
            .collect();
        all.extend(next.iter().cloned());
        previous = next;
    }
    all
}

/// Random short texts over [`TEXT_CHARS`].
fn texts() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop::collection::vec(prop::sample::select(TEXT_CHARS), 0..7)
            .prop_map(|characters| characters.into_iter().collect::<String>()),
        24,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn operations_agree_with_the_regex_crate(
        first in piece(),
        second in piece(),
        random_texts in texts(),
        names in prop::collection::vec(
            prop::collection::vec(prop::sample::select(SHORT_TEXT_CHARS), 0..4)
                .prop_map(|characters| characters.into_iter().collect::<String>()),
            0..4,
        ),
        min in 0u64..4,
        extra in prop::option::of(0u64..3),
    ) {
        let (first_ecma, first_dfa, first_regex) = both(&first);
        let (second_ecma, second_dfa, second_regex) = both(&second);
        let max = extra.map(|extra| min + extra);
        let name_list: Vec<&str> = names.iter().map(String::as_str).collect();
        let listed = CharDfa::from_strings(&name_list).unwrap();
        let complement = first_dfa.complement();
        let intersection = first_dfa.intersection(&second_dfa).unwrap();
        let union = first_dfa.union(&second_dfa).unwrap();
        let difference = first_dfa.difference(&second_dfa).unwrap();
        let bounded = first_dfa.intersection(&CharDfa::lengths(min, max).unwrap()).unwrap();
        let unlisted = first_dfa.difference(&listed).unwrap();
        for automaton in [&first_dfa, &complement, &intersection, &union, &difference, &bounded, &unlisted, &listed] {
            assert_minimal(automaton);
        }
        let short = all_strings(SHORT_TEXT_CHARS, 3);
        for text in short.iter().chain(&random_texts).chain(&names) {
            let in_first = first_regex.is_match(text);
            let in_second = second_regex.is_match(text);
            let length = text.chars().count() as u64;
            let context = format!("{first_ecma:?} and {second_ecma:?} on {text:?}");
            prop_assert_eq!(first_dfa.matches(text), in_first, "{}", context);
            prop_assert_eq!(complement.matches(text), !in_first, "complement: {}", context);
            prop_assert_eq!(intersection.matches(text), in_first && in_second, "intersection: {}", context);
            prop_assert_eq!(union.matches(text), in_first || in_second, "union: {}", context);
            prop_assert_eq!(difference.matches(text), in_first && !in_second, "difference: {}", context);
            prop_assert_eq!(
                bounded.matches(text),
                in_first && min <= length && max.is_none_or(|max| length <= max),
                "lengths {}..{:?}: {}", min, max, context
            );
            let is_listed = names.contains(text);
            prop_assert_eq!(listed.matches(text), is_listed, "{:?} on {:?}", names, text);
            prop_assert_eq!(unlisted.matches(text), in_first && !is_listed, "minus {:?}: {}", names, context);
        }
        // Equal languages, equal automata.
        prop_assert_eq!(&complement.complement(), &first_dfa);
        let de_morgan = complement.union(&second_dfa.complement()).unwrap().complement();
        prop_assert_eq!(&de_morgan, &intersection);
        prop_assert_eq!(intersection.is_empty(), first_dfa.difference(&second_dfa.complement()).unwrap().is_empty());
    }

    #[test]
    fn the_reverse_route_builds_the_same_automaton(piece in piece()) {
        let ecma = piece.render(true);
        let language = pattern::search_language(&ecma).unwrap();
        let nfa = Nfa::from_node(&language, &mut Budget::new()).unwrap();
        let forward = nfa.determinize(&mut Budget::new()).unwrap();
        let mut budget = Budget::new();
        let reversed = nfa.reversed(&mut budget).unwrap().determinize(&mut budget).unwrap();
        let reverse_route = reversed.reversed_nfa().determinize(&mut Budget::new()).unwrap();
        prop_assert_eq!(&reverse_route, &forward, "{:?}", ecma);
        prop_assert_eq!(reverse_route, dfa(&ecma));
    }

    #[test]
    fn grammars_match_exactly_what_the_automaton_accepts(
        first in piece(),
        second in piece(),
        random_texts in texts(),
    ) {
        let (_, first_dfa, _) = both(&first);
        let (_, second_dfa, _) = both(&second);
        let short = all_strings(SHORT_TEXT_CHARS, 3);
        for automaton in [first_dfa.difference(&second_dfa).unwrap(), first_dfa.complement()] {
            assert_llama_cpp_accepts(&automaton);
            let grammar = compiled(&automaton);
            for text in short.iter().chain(&random_texts) {
                prop_assert_eq!(
                    accepts(&grammar, &json_encoded(text)),
                    automaton.matches(text),
                    "{:?} on {:?}", automaton, text
                );
            }
        }
    }
}
