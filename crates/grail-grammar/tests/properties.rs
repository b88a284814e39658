//! Property tests: no input makes checking panic; printing the IR and reading it back gives
//! the same IR; formatting is idempotent and keeps the grammar and its comments, whatever
//! escapes the characters are written with; `fix` is a fixed point.

use grail_grammar::{
    CharSet, CheckOptions, Expr, Grammar, GrammarBuilder, RuleId, Symbol, SymbolKind, check, fix,
    print_grammar,
};
use grail_syntax::{FormatError, Span, format_verified};
use proptest::prelude::*;

/// Real grammars to mutate.
const SEEDS: &[&str] = &[
    include_str!("../../../testdata/check/valid/tool-call.gbnf"),
    include_str!("../../../testdata/check/valid/escapes-and-classes.gbnf"),
    include_str!("../../../testdata/check/valid/multiline.gbnf"),
    include_str!("../../../testdata/fmt/messy.gbnf"),
    include_str!("../../../testdata/fmt/chess-comments.gbnf"),
];

/// Characters that matter to the GBNF lexer, to make mutations interesting.
const ALPHABET: &[char] = &[
    '"', '[', ']', '(', ')', '|', '*', '+', '?', '{', '}', ',', ':', '=', '^', '-', '\\', 'x', 'u',
    '#', '\n', '\r', ' ', '\t', 'a', 'b', '_', '<', '>', '!', '.', '0', '1', '9', 'é', '\0',
];

/// Checks `source`; when it parses, formatting must keep its grammar and comments and be
/// a fixed point. Fixing it must leave nothing more to fix.
fn check_and_format(source: &str) {
    let _ = check(source, &CheckOptions::default());
    let fixed = fix(source);
    let again = fix(&fixed.source);
    assert!(
        again.fixes.is_empty(),
        "fixing twice: {:?}\n--- source\n{source}\n--- fixed\n{}",
        again.fixes,
        fixed.source
    );
    match format_verified(source) {
        Ok(formatted) => assert_eq!(
            format_verified(&formatted).as_ref(),
            Ok(&formatted),
            "not idempotent\n--- source\n{source}"
        ),
        Err(FormatError::Syntax(_)) => {}
        Err(error) => panic!("{error}\n--- source\n{source}"),
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize, usize),
    Insert(usize, char),
    Duplicate(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1..8usize).prop_map(|(at, length)| Mutation::Delete(at, length)),
        (any::<usize>(), proptest::sample::select(ALPHABET))
            .prop_map(|(at, character)| Mutation::Insert(at, character)),
        (any::<usize>(), 1..40usize).prop_map(|(at, length)| Mutation::Duplicate(at, length)),
    ]
}

fn apply(source: &str, mutations: &[Mutation]) -> String {
    let mut characters: Vec<char> = source.chars().collect();
    for mutation in mutations {
        let length = characters.len().max(1);
        match *mutation {
            Mutation::Delete(at, count) => {
                let start = at % length;
                let end = (start + count).min(characters.len());
                characters.drain(start.min(end)..end);
            }
            Mutation::Insert(at, character) => {
                characters.insert(at % (characters.len() + 1), character)
            }
            Mutation::Duplicate(at, count) => {
                let start = at % length;
                let end = (start + count).min(characters.len());
                let copy: Vec<char> = characters[start.min(end)..end].to_vec();
                characters.splice(end..end, copy);
            }
        }
    }
    characters.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(source) = grail_syntax::source_from_bytes(&bytes) {
            check_and_format(source);
        }
    }

    #[test]
    fn arbitrary_gbnf_like_text_never_panics(text in proptest::collection::vec(proptest::sample::select(ALPHABET), 0..200)) {
        let source: String = text.into_iter().collect();
        check_and_format(&source);
        check_and_format(&format!("root ::= {source}"));
    }

    #[test]
    fn mutated_real_grammars_never_panic(seed in 0..SEEDS.len(), mutations in proptest::collection::vec(mutation(), 1..6)) {
        check_and_format(&apply(SEEDS[seed], &mutations));
    }

    #[test]
    fn printed_ir_reads_back_to_the_same_ir(spec in grammar_spec()) {
        let grammar = build(&spec);
        let printed = print_grammar(&grammar);
        let report = check(&printed, &CheckOptions::default());
        let reread = report.grammar.unwrap_or_else(|| panic!("printed grammar does not check:\n{printed}\n{:?}", report.diagnostics));
        prop_assert_eq!(normalized(&reread), normalized(&grammar), "\n{}", printed);
        // Printing the IR writes the canonical format: the formatter leaves it as it is.
        prop_assert_eq!(format_verified(&printed), Ok(printed.clone()));
        // Printing is also what `fmt` produces for it: a fixed point.
        check_and_format(&printed);
    }

    #[test]
    fn formatting_keeps_the_grammar_whatever_the_escapes(
        literal in proptest::collection::vec((code_point(), 0..4usize), 0..6),
        class in proptest::collection::vec((code_point(), code_point(), any::<bool>(), 0..4usize), 1..4),
    ) {
        let mut source = String::from("root ::= \"");
        for &(character, style) in &literal {
            source.push_str(&spelled(character, style, '"'));
        }
        source.push_str("\" [");
        for &(first, last, is_range, style) in &class {
            source.push_str(&spelled(first, style, ']'));
            if is_range {
                source.push('-');
                source.push_str(&spelled(last, style, ']'));
            }
        }
        source.push_str("]\n");
        let formatted = format_verified(&source)
            .unwrap_or_else(|error| panic!("{error}\n--- source\n{source}"));
        let reformatted = format_verified(&formatted);
        prop_assert_eq!(reformatted.as_ref(), Ok(&formatted));
        // Same language: the checked grammars are equal.
        let before = check(&source, &CheckOptions::default()).grammar.map(|grammar| normalized(&grammar));
        let after = check(&formatted, &CheckOptions::default()).grammar.map(|grammar| normalized(&grammar));
        prop_assert_eq!(before, after, "\n{}\n{}", source, formatted);
    }

    #[test]
    fn formatting_keeps_comments_anywhere_they_are_allowed(spec in grammar_spec(), picks in proptest::collection::vec(any::<u16>(), 0..6)) {
        let printed = print_grammar(&build(&spec));
        let mut lines: Vec<String> = printed.lines().map(str::to_string).collect();
        for pick in picks {
            let index = pick as usize % lines.len();
            if pick % 2 == 0 {
                lines[index].push_str(" # trailing");
            } else {
                lines.insert(index, "# own line".to_string());
            }
        }
        check_and_format(&(lines.join("\n") + "\n"));
    }
}

/// Code points worth spelling in several ways: plain, spaces, controls, combining marks,
/// private-use, unassigned, noncharacters, astral, and characters GBNF escapes.
fn code_point() -> impl Strategy<Value = u32> {
    prop_oneof![
        proptest::sample::select(vec![
            0x41, 0x7A, 0x20, 0x0A, 0x09, 0x00, 0x7F, 0x85, 0xA0, 0xE9, 0x300, 0x301, 0x36F,
            0x200C, 0x2028, 0xD7FF, 0xE000, 0xFEFF, 0xFFFD, 0xFFFF, 0x10000, 0x10FFFF, 0x22, 0x5C,
            0x5D, 0x5B, 0x2D, 0x5E, 0x23,
        ]),
        (0u32..0x110000).prop_filter("not a surrogate", |c| !(0xD800..0xE000).contains(c)),
    ]
}

/// `character` spelled raw (style 0, where that is safe) or as `\x`, `\u` or `\U`
/// escapes (styles 1 to 3, the smallest that fits); `closing` ends the literal or class.
fn spelled(character: u32, style: usize, closing: char) -> String {
    let raw = char::from_u32(character).filter(|&raw| {
        !raw.is_control() && !matches!(raw, '\\' | '-' | '^' | '#') && raw != closing
    });
    match (style, raw) {
        (0, Some(raw)) => raw.to_string(),
        _ if style <= 1 && character <= 0xFF => format!("\\x{character:02X}"),
        _ if style <= 2 && character <= 0xFFFF => format!("\\u{character:04x}"),
        _ => format!("\\U{character:08X}"),
    }
}

/// A grammar as data for the generator: per rule, alternatives of expressions.
type GrammarSpec = Vec<Vec<ExprSpec>>;

#[derive(Debug, Clone)]
enum ExprSpec {
    Literal(String),
    Chars(Vec<(u32, u32)>, bool),
    Any,
    Rule(usize),
    Token(u32),
    Sequence(Vec<ExprSpec>),
    Choice(Vec<ExprSpec>),
    Repeat(Box<ExprSpec>, u32, Option<u32>),
    Empty,
}

fn expr_spec() -> impl Strategy<Value = ExprSpec> {
    let literal_character = prop_oneof![
        proptest::sample::select(vec![
            'a',
            'b',
            '"',
            '\\',
            '\n',
            '\t',
            '-',
            ']',
            '[',
            '^',
            '#',
            ' ',
            'é',
            '日',
            '\u{1F600}',
            '\u{7F}',
            '\u{0}'
        ]),
        any::<char>(),
    ];
    let range = (0u32..0x110000, 0u32..300)
        .prop_map(|(first, width)| (first, (first + width).min(0x10FFFF)));
    let leaf = prop_oneof![
        proptest::collection::vec(literal_character, 1..5)
            .prop_map(|characters| ExprSpec::Literal(characters.into_iter().collect())),
        (proptest::collection::vec(range, 1..4), any::<bool>())
            .prop_map(|(ranges, negated)| ExprSpec::Chars(ranges, negated)),
        Just(ExprSpec::Any),
        (0usize..4).prop_map(ExprSpec::Rule),
        (0u32..100).prop_map(ExprSpec::Token),
        Just(ExprSpec::Empty),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 1..4).prop_map(ExprSpec::Sequence),
            proptest::collection::vec(inner.clone(), 1..4).prop_map(ExprSpec::Choice),
            (inner, 0u32..4, proptest::option::of(1u32..4)).prop_map(|(item, min, extra)| {
                ExprSpec::Repeat(Box::new(item), min, extra.map(|extra| min + extra))
            }),
        ]
    })
}

fn grammar_spec() -> impl Strategy<Value = GrammarSpec> {
    proptest::collection::vec(proptest::collection::vec(expr_spec(), 1..4), 1..4)
}

fn build(spec: &GrammarSpec) -> Grammar {
    let mut builder = GrammarBuilder::new();
    let mut ids = vec![builder.root()];
    for index in 1..spec.len() {
        ids.push(builder.declare(&format!("rule_{index}")));
    }
    for (index, alternatives) in spec.iter().enumerate() {
        let body = Expr::choice(alternatives.iter().map(|expr| to_expr(expr, &ids)));
        builder.define(ids[index], body).expect("valid definition");
    }
    builder.build().expect("every rule is defined")
}

fn to_expr(spec: &ExprSpec, ids: &[RuleId]) -> Expr {
    match spec {
        ExprSpec::Literal(text) => Expr::literal(text.clone()),
        ExprSpec::Chars(ranges, negated) => {
            Expr::Chars(CharSet::new(ranges.iter().copied(), *negated))
        }
        ExprSpec::Any => Expr::Any,
        ExprSpec::Rule(index) => Expr::Rule(ids[index % ids.len()]),
        ExprSpec::Token(id) => Expr::token_id(*id),
        ExprSpec::Sequence(items) => Expr::sequence(items.iter().map(|item| to_expr(item, ids))),
        ExprSpec::Choice(items) => Expr::choice(items.iter().map(|item| to_expr(item, ids))),
        ExprSpec::Repeat(item, min, max) => to_expr(item, ids).repeat(*min, *max),
        ExprSpec::Empty => Expr::Empty,
    }
}

/// The grammar without spans, with empty alternatives first (as printing orders them).
fn normalized(grammar: &Grammar) -> Grammar {
    let mut grammar = grammar.clone();
    for rule in &mut grammar.rules {
        rule.span = Span::default();
        normalize_alternatives(&mut rule.alternatives);
    }
    grammar
}

fn normalize_alternatives(alternatives: &mut Vec<Vec<Symbol>>) {
    alternatives.sort_by_key(|sequence| !sequence.is_empty());
    for sequence in alternatives {
        for symbol in sequence {
            normalize_symbol(symbol);
        }
    }
}

fn normalize_symbol(symbol: &mut Symbol) {
    symbol.span = Span::default();
    match &mut symbol.kind {
        SymbolKind::Group(alternatives) => normalize_alternatives(alternatives),
        SymbolKind::Repeat(repetition) => normalize_symbol(&mut repetition.symbol),
        _ => {}
    }
}
