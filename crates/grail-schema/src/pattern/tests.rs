use super::*;
use proptest::prelude::*;

fn compile(expr: Expr) -> grail_engine::CompiledGrammar {
    let mut builder = grail_grammar::GrammarBuilder::new();
    let root = builder.root();
    builder.define(root, expr).unwrap();
    let grammar = builder.build().unwrap();
    grail_engine::CompiledGrammar::compile(&grammar, &Default::default()).unwrap()
}

/// The expression as a JSON string's grammar passes Grail's llama.cpp checks (which
/// refuse, for one, an unbounded repetition of something that can be empty): llama.cpp
/// accepts it.
fn assert_llama_cpp_accepts(pattern: &str, expr: &Expr) {
    let mut builder = grail_grammar::GrammarBuilder::new();
    let root = builder.root();
    let string = Expr::sequence([Expr::literal("\""), expr.clone(), Expr::literal("\"")]);
    builder.define(root, string).unwrap();
    let text = grail_grammar::print_grammar(&builder.build().unwrap());
    let options = grail_grammar::CheckOptions {
        target: grail_grammar::Target::LlamaCpp,
        ..Default::default()
    };
    let report = grail_grammar::check(&text, &options);
    assert!(
        report.is_ok(),
        "{pattern:?}: {:?}\n{text}",
        report.diagnostics
    );
}

fn accepts(grammar: &grail_engine::CompiledGrammar, encoded: &str) -> bool {
    let mut matcher = grail_engine::Matcher::new(grammar);
    matcher.accept_str(encoded).is_ok() && matcher.is_accepting()
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

fn grammar_of(pattern: &str) -> grail_engine::CompiledGrammar {
    compile(pattern_expr(pattern).unwrap_or_else(|error| panic!("{pattern:?}: {error}")))
}

fn check_lengths_cover(pattern: &str, text: &str) {
    let (min, max) = pattern_char_lengths(pattern).unwrap();
    let length = text.chars().count() as u64;
    assert!(
        min <= length && max.is_none_or(|max| length <= max),
        "{pattern:?} matches {text:?} of length {length} outside ({min}, {max:?})"
    );
}

/// (pattern, strings it matches, strings it does not), strings as decoded text.
const CASES: &[(&str, &[&str], &[&str])] = &[
    // A search, not a full match.
    (
        "abc",
        &["abc", "xabcx", "ab\nabc", "abcabc"],
        &["", "ab", "acb", "ABC"],
    ),
    ("", &["", "anything"], &[]),
    ("a*", &["", "bbb"], &[]),
    ("a|", &["", "b"], &[]),
    // Anchors: the ends of the string; `$` allows no trailing newline.
    ("^abc", &["abc", "abcx", "abc\n"], &["xabc", "\nabc", "ab"]),
    ("abc$", &["abc", "xabc"], &["abcx", "abc\n"]),
    ("^abc$", &["abc"], &["", "abc\n", "xabc", "abcabc"]),
    ("^$", &[""], &["a", "\n"]),
    ("^a|b$", &["a", "ax", "b", "xb", "ab"], &["", "xa", "bx"]),
    ("^(?:a|b)$", &["a", "b"], &["ab", ""]),
    ("^(a$|b)", &["a", "b", "bx"], &["ax", "xa"]),
    // Anchors anywhere, exactly.
    ("a^b", &[], &["", "ab", "a^b", "b"]),
    ("a$b", &[], &["", "ab", "a$b"]),
    ("(^|,)x", &["x", "xy", "a,x", ",x"], &["ax", "", ","]),
    ("x($|,)", &["x", "ax", "x,", "yx,z"], &["xa", ""]),
    ("^(^a)*b$", &["b", "ab"], &["aab", "a"]),
    ("(?:^a)+b", &["ab", "abx"], &["b", "xab", "aab"]),
    (
        "^(a|^b)*$",
        &["", "a", "aaa", "b", "ba", "baa"],
        &["ab", "bb"],
    ),
    ("(a|$)+$", &["", "x", "a"], &[]),
    ("^(?:$|a)b", &["ab"], &["b", ""]),
    ("(^)*a", &["a", "ba"], &["", "b"]),
    ("^a?^b", &["b", "bx"], &["ab", "xb"]),
    // ECMA classes are ASCII (\d, \w) and ECMA white space (\s).
    ("^\\d+$", &["0123456789"], &["", "a", "\u{663}", "\u{FF11}"]),
    ("^\\w+$", &["aZ_9"], &["é", "-", "\u{17F}", "\u{212A}"]),
    (
        "^\\s$",
        &[
            " ", "\t", "\n", "\u{B}", "\u{C}", "\r", "\u{A0}", "\u{1680}", "\u{2000}", "\u{200A}",
            "\u{2028}", "\u{2029}", "\u{202F}", "\u{205F}", "\u{3000}", "\u{FEFF}",
        ],
        &["a", "\u{85}", "\u{180E}", "\u{200B}", "\u{1C}"],
    ),
    ("^\\S\\D\\W$", &["aa-"], &[" a-", "a1-", "aa_"]),
    ("^[^\\d\\s]$", &["a", "-"], &["1", " "]),
    // `.` is any character but the line terminators.
    (
        "^.$",
        &[
            "a", "é", "\t", "😀", "\u{0}", "\"", "\\", "\u{7F}", "\u{85}",
        ],
        &["\n", "\r", "\u{2028}", "\u{2029}", "", "ab"],
    ),
    // Escapes.
    ("^[\\b]$", &["\u{8}"], &["b", "\\b"]),
    ("^\\cJ\\cj\\ca$", &["\n\n\u{1}"], &["cJcjca"]),
    ("^\\/\\.\\*\\\\$", &["/.*\\"], &["/a*\\"]),
    (
        "^\\u0041\\u{1F600}\\uD83D\\uDE00\\x41\\u{000041}$",
        &["A😀😀AA"],
        &[],
    ),
    ("^\\f\\n\\r\\t\\v\\0$", &["\u{C}\n\r\t\u{B}\u{0}"], &[]),
    ("\\uD800", &[], &["", "\u{D7FF}", "\u{E000}"]),
    ("^[\\uD800-\\uDBFF]$", &[], &["a", ""]),
    (
        "^[\\uD7FF-\\uE000]$",
        &["\u{D7FF}", "\u{E000}"],
        &["\u{E001}"],
    ),
    // Lenient: unambiguous identity escapes, literal `]`, `}` and non-quantifier `{`.
    ("^\\-\\@\\ \\\"\\'$", &["-@ \"'"], &[]),
    ("^]}$", &["]}"], &[]),
    ("^a{,2}b{x}c{1,2x$", &["a{,2}b{x}c{1,2x"], &["a", "aa"]),
    // Groups, named groups, quantifiers (lazy ones match the same strings).
    (
        "^(?<year>\\d{4})-(?<month>\\d{2})$",
        &["2024-01"],
        &["2024-1", "224-01"],
    ),
    ("^a{2,3}$", &["aa", "aaa"], &["a", "aaaa"]),
    ("^a{2}$", &["aa"], &["a", "aaa"]),
    ("^a{2,}$", &["aa", "aaaaaa"], &["a"]),
    ("^a{0}$", &[""], &["a"]),
    ("^a*?b+?c??d{1,2}?$", &["bd", "aabbcdd"], &["abccd"]),
    ("^(ab)+$", &["ab", "abab"], &["aba", ""]),
    ("^(a?)*$", &["", "a", "aa"], &["b"]),
    ("^(a*b*)*$", &["", "ab", "ba", "abba"], &["c"]),
    (
        "^(a?b?){2,3}$",
        &["", "ab", "abab", "ababab", "ba"],
        &["abababab", "bbbb"],
    ),
    // Classes: ECMA ranges, `-`, `[`, `[]`, `[^]`.
    ("^[a-c-e]$", &["a", "b", "c", "-", "e"], &["d"]),
    ("^[\\d-]$", &["5", "-"], &["a"]),
    ("^[-a]$", &["-", "a"], &["b"]),
    ("^[--/]$", &["-", ".", "/"], &[","]),
    ("^[[]$", &["["], &["]"]),
    ("^[\\]]$", &["]"], &["["]),
    ("^[^]$", &["\n", "a"], &["", "ab"]),
    ("[]", &[], &["", "a", "[]"]),
    ("^[^abc]$", &["d", "\"", "\n"], &["a", ""]),
    (
        "^[\\w.+-]+@[a-z]+\\.com$",
        &["john.doe+x@mail.com"],
        &["john@mail.org", "@mail.com"],
    ),
    // Unicode properties.
    ("^\\p{L}+$", &["héllo", "Ωmega"], &["a1", ""]),
    ("^\\P{L}$", &["1"], &["a"]),
    ("^\\p{Script=Greek}$", &["α"], &["a"]),
    ("^\\p{gc=Lu}$", &["A", "Ω"], &["a"]),
    ("^[\\p{N}x]$", &["1", "x", "\u{663}"], &["a"]),
    // Characters JSON escapes, matched in their canonical encoding.
    ("^\"\\\\\\n$", &["\"\\\n"], &["\"\\"]),
    (
        "^[\\x00-\\x1f]$",
        &["\u{0}", "\u{1F}", "\n", "\u{8}"],
        &[" "],
    ),
    ("^\\x7f$", &["\u{7F}"], &["\u{7E}"]),
    // Date-time and other patterns seen in real schemas.
    (
        "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$",
        &["2024-01-02T03:04:05Z", "2024-01-02T03:04:05.123+01:00"],
        &["2024-01-02 03:04:05Z", "2024-01-02T03:04:05"],
    ),
    (
        "^[A-Z]{2}-\\d{3,}$",
        &["AB-123", "XY-12345"],
        &["AB-12", "ab-123"],
    ),
];

/// Anchors inside repetitions, one case per way iterations can meet the ends; the
/// regex crate reads these patterns alike and is checked too.
const ANCHOR_CASES: &[(&str, &[&str], &[&str])] = &[
    ("^(?:^|b){3}$", &["", "b", "bb", "bbb"], &["bbbb", "a"]),
    ("^(?:b|$){3}$", &["", "b", "bb", "bbb"], &["bbbb", "a"]),
    ("^(?:^a$|$){2}", &["", "a"], &["b", "aa", "ab"]),
    (
        "^(?:^a|b$|^){3}$",
        &["", "a", "b", "ab"],
        &["aab", "abb", "ba", "aa"],
    ),
    ("(?:^$|a){2}", &["", "aa", "xaax"], &["a", "x"]),
    (
        "(?:^a|b){2,3}$",
        &["ab", "abb", "bb", "xbbb", "bbbb"],
        &["a", "b", "xab", "ba"],
    ),
    (
        "^(?:a|b$){2,}",
        &["aa", "ab", "aab", "aaax"],
        &["a", "b", "ba", "abx"],
    ),
    (
        "(?:^|a)(?:b|$)",
        &["", "b", "ab", "xab", "xa", "bx"],
        &["x", "xb", "ax"],
    ),
];

#[test]
fn anchors_in_repetitions() {
    for &(pattern, matching, failing) in ANCHOR_CASES {
        assert_llama_cpp_accepts(pattern, &pattern_expr(pattern).unwrap());
        let grammar = grammar_of(pattern);
        let regex = regex::Regex::new(pattern).unwrap();
        for text in matching {
            assert!(
                regex.is_match(text),
                "regex {pattern:?} should match {text:?}"
            );
            assert!(
                accepts(&grammar, &json_encoded(text)),
                "{pattern:?} should match {text:?}"
            );
            check_lengths_cover(pattern, text);
        }
        for text in failing {
            assert!(
                !regex.is_match(text),
                "regex {pattern:?} should not match {text:?}"
            );
            assert!(
                !accepts(&grammar, &json_encoded(text)),
                "{pattern:?} should not match {text:?}"
            );
        }
    }
}

#[test]
fn table_of_patterns_and_strings() {
    for &(pattern, matching, failing) in CASES {
        assert_llama_cpp_accepts(pattern, &pattern_expr(pattern).unwrap());
        let grammar = grammar_of(pattern);
        for text in matching {
            assert!(
                accepts(&grammar, &json_encoded(text)),
                "{pattern:?} should match {text:?}"
            );
            check_lengths_cover(pattern, text);
        }
        for text in failing {
            assert!(
                !accepts(&grammar, &json_encoded(text)),
                "{pattern:?} should not match {text:?}"
            );
        }
    }
}

#[test]
fn characters_are_matched_only_in_canonical_encoding() {
    let grammar = grammar_of("^\"$");
    assert!(accepts(&grammar, "\\\""));
    assert!(!accepts(&grammar, "\""));
    assert!(!accepts(&grammar, "\\u0022"));
    let grammar = grammar_of("^\\n$");
    assert!(accepts(&grammar, "\\n"));
    assert!(!accepts(&grammar, "\n"));
    assert!(!accepts(&grammar, "\\u000a"));
    let grammar = grammar_of("^\\x7f\\x01$");
    assert!(accepts(&grammar, "\\u007f\\u0001"));
    assert!(accepts(&grammar, "\\u007F\\u0001"));
    assert!(!accepts(&grammar, "\u{7F}\\u0001"));
    let grammar = grammar_of("^.$");
    assert!(accepts(&grammar, "\\\\"));
    assert!(accepts(&grammar, "\\t"));
    assert!(!accepts(&grammar, "\\"));
    assert!(!accepts(&grammar, "\t"));
    // Unanchored, the padding around the match is any encoded character too.
    let grammar = grammar_of("b");
    assert!(accepts(&grammar, "\\\"b\\n"));
    assert!(!accepts(&grammar, "\"b"));
}

#[test]
fn lengths_in_characters() {
    for (pattern, expected) in [
        ("abc", (3, None)),
        ("^abc$", (3, Some(3))),
        ("^abc", (3, None)),
        ("^a{2,5}$", (2, Some(5))),
        ("^(ab|c)?$", (0, Some(2))),
        ("^\\u{1F600}é$", (2, Some(2))),
        ("^\\n\"$", (2, Some(2))),
        ("^a*$", (0, None)),
        ("", (0, None)),
        ("[]", (0, Some(0))),
        ("a^b", (0, Some(0))),
        ("^a|b$", (1, None)),
        ("^(a{1000}){1000}$", (1_000_000, Some(1_000_000))),
        ("^(?:a|bc$)", (1, None)),
        ("^(?:bc$|a$)", (1, Some(2))),
        (
            "^(a{4294967295}){4294967295}(b{4294967295}){4294967295}$",
            (u64::MAX, None),
        ),
    ] {
        assert_eq!(pattern_char_lengths(pattern), Ok(expected), "{pattern:?}");
    }
}

#[test]
fn output_is_compact() {
    assert_eq!(pattern_expr("^abc$"), Ok(Expr::literal("abc")));
    assert_eq!(pattern_expr("^a\"b\\n$"), Ok(Expr::literal("a\\\"b\\n")));
    assert_eq!(
        pattern_expr("^[a-z]{2,40}$"),
        Ok(Expr::chars([('a', 'z')]).repeat(2, Some(40)))
    );
    assert_eq!(
        pattern_expr("^(?:ab|cd)$"),
        Ok(Expr::choice([Expr::literal("ab"), Expr::literal("cd")]))
    );
    assert_eq!(pattern_expr("[]"), Ok(Expr::Chars(CharSet::new([], false))));
    // A big bound stays a bound.
    assert_eq!(
        pattern_expr("^x{100000}$"),
        Ok(Expr::literal("x").repeat(100_000, Some(100_000)))
    );
    // Unbounded repetitions never repeat something that can be empty (llama.cpp
    // reads that as left recursion).
    for pattern in [
        "^(a?)*$",
        "^(a*b*)+$",
        "^(a|)*x$",
        "^(?:(a?){2,3})+$",
        "^(?:(a?){2,3}b?)*$",
        "^(^a?)*b$",
        "^x(a?$)*",
        "^(?:a|b?|(?:c?d?)*)+$",
    ] {
        let expr = pattern_expr(pattern).unwrap();
        assert!(no_nullable_star(&expr), "{pattern:?}: {expr:?}");
    }
}

/// True when no unbounded repetition in `expr` repeats something that can be empty.
fn no_nullable_star(expr: &Expr) -> bool {
    fn nullable(expr: &Expr) -> bool {
        match expr {
            Expr::Empty => true,
            Expr::Literal(text) => text.is_empty(),
            Expr::Sequence(items) => items.iter().all(nullable),
            Expr::Choice(items) => items.iter().any(nullable),
            Expr::Repeat(item, min, _) => *min == 0 || nullable(item),
            _ => false,
        }
    }
    match expr {
        Expr::Sequence(items) | Expr::Choice(items) => items.iter().all(no_nullable_star),
        Expr::Repeat(item, _, max) => !(max.is_none() && nullable(item)) && no_nullable_star(item),
        _ => true,
    }
}

/// The kind of an error, for tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Unsupported,
    Syntax,
    TooLarge,
}

fn kind_and_offset(error: &PatternError) -> (Kind, usize) {
    match error {
        PatternError::Unsupported { offset, .. } => (Kind::Unsupported, *offset),
        PatternError::Syntax { offset, .. } => (Kind::Syntax, *offset),
        PatternError::TooLarge { offset, .. } => (Kind::TooLarge, *offset),
    }
}

#[test]
fn refused_features_and_syntax_errors_have_offsets() {
    use Kind::*;
    for (pattern, expected) in [
        ("(?=a)", (Unsupported, 0)),
        ("ab(?!b)", (Unsupported, 2)),
        ("(?<=a)b", (Unsupported, 0)),
        ("x(?<!a)", (Unsupported, 1)),
        ("(a)\\1", (Unsupported, 3)),
        ("\\1(a)", (Unsupported, 0)),
        ("(?<n>a)\\k<n>", (Unsupported, 7)),
        ("a\\b", (Unsupported, 1)),
        ("é\\B", (Unsupported, 2)),
        ("[a]\\b", (Unsupported, 3)),
        ("(?i:a)", (Unsupported, 0)),
        ("a(?-i:a)", (Unsupported, 1)),
        ("(", (Syntax, 0)),
        ("a)", (Syntax, 1)),
        ("[a", (Syntax, 0)),
        ("*", (Syntax, 0)),
        ("a**", (Syntax, 2)),
        ("a{2}{3}", (Syntax, 4)),
        ("a|?", (Syntax, 2)),
        ("^*", (Syntax, 1)),
        ("$+", (Syntax, 1)),
        ("\\", (Syntax, 0)),
        ("[z-a]", (Syntax, 1)),
        ("a{3,2}", (Syntax, 1)),
        ("\\1", (Syntax, 0)),
        ("(a)\\2", (Syntax, 3)),
        ("\\k<x>", (Syntax, 0)),
        ("\\k", (Syntax, 0)),
        ("ab\\q", (Syntax, 2)),
        ("\\u12", (Syntax, 0)),
        ("\\u{110000}", (Syntax, 0)),
        ("\\u{}", (Syntax, 0)),
        ("\\x4", (Syntax, 0)),
        ("\\p{Nope}", (Syntax, 0)),
        ("\\pL", (Syntax, 0)),
        ("\\p{L", (Syntax, 0)),
        ("[\\d-z]", (Syntax, 1)),
        ("[a-\\d]", (Syntax, 1)),
        ("[\\1]", (Syntax, 1)),
        ("(?<1a>x)", (Syntax, 3)),
        ("(?<a>x", (Syntax, 0)),
        ("(?x)", (Syntax, 0)),
        ("\\c1", (Syntax, 0)),
        ("\\01", (Syntax, 0)),
        ("a{4294967296}", (TooLarge, 1)),
        ("a{1,99999999999}", (TooLarge, 1)),
    ] {
        let error = pattern_expr(pattern).expect_err(pattern);
        assert_eq!(
            kind_and_offset(&error),
            expected,
            "{pattern:?} gave {error:?}"
        );
        assert_eq!(pattern_char_lengths(pattern), Err(error), "{pattern:?}");
    }
    let deep = format!(
        "{}a{}",
        "(".repeat(MAX_GROUP_DEPTH + 1),
        ")".repeat(MAX_GROUP_DEPTH + 1)
    );
    assert!(matches!(
        pattern_expr(&deep),
        Err(PatternError::TooLarge { .. })
    ));
    let fine = format!(
        "{}a{}",
        "(".repeat(MAX_GROUP_DEPTH),
        ")".repeat(MAX_GROUP_DEPTH)
    );
    assert!(pattern_expr(&fine).is_ok());
}

#[test]
fn pathological_patterns_end_soon_with_an_answer() {
    let deepest_accepted = "(a?$|b)".repeat(400);
    for (pattern, accepted) in [
        ("(a?$|b)".repeat(600), false),
        ("(^a?|b?$)".repeat(3000), false),
        ("(^|a)".repeat(3000), false),
        ("(?:|a$)".repeat(5000), true),
        ("(^|a?)".repeat(5000), true),
        (format!("^{}$", "[a-z]\\d".repeat(5000)), true),
        (
            format!("{}^|a|${}", "(?:".repeat(200), "){2,3}".repeat(200)),
            false,
        ),
        (deepest_accepted.clone(), true),
    ] {
        let result = pattern_expr(&pattern);
        match &result {
            Ok(_) => assert!(accepted, "{:?}...", &pattern[..20]),
            Err(error) => {
                assert!(!accepted, "{:?}...: {error}", &pattern[..20]);
                assert!(matches!(error, PatternError::TooLarge { .. }), "{error}");
            }
        }
    }
    // The deepest expression given out can be printed, cloned and dropped on a test
    // thread's stack.
    let expr = pattern_expr(&deepest_accepted).unwrap();
    assert!(format!("{:?}", expr.clone()).len() > 1000);
}

// -----------------------------------------------------------------------------
// Random patterns against the regex crate.
// -----------------------------------------------------------------------------

/// A generated pattern, rendered with the same meaning for ECMA and the regex crate.
#[derive(Debug, Clone)]
enum Piece {
    Char(char),
    Class(bool, Vec<(char, char)>),
    Dot,
    Digit,
    Word,
    Space,
    Start,
    End,
    Group(Box<Piece>, bool),
    Concat(Vec<Piece>),
    Alt(Vec<Piece>),
    Repeat(Box<Piece>, String),
}

const PATTERN_ALPHABET: &[char] = &['a', 'b', '1', '\n', '"', '\\', 'é', '.', ' '];
const SHORT_ALPHABET: &[char] = &['a', 'b', '1', '\n'];
const TEXT_ALPHABET: &[char] = &[
    'a', 'b', '1', '\n', '"', '\\', 'é', '.', ' ', '\r', '\u{2028}', '_', '\u{7F}',
];

fn escaped(character: char) -> String {
    match character {
        '\\' | '.' | ']' | '-' | '^' | '[' => format!("\\{character}"),
        other => other.to_string(),
    }
}

impl Piece {
    fn render(&self, ecma: bool) -> String {
        match self {
                Piece::Char(character) => escaped(*character),
                Piece::Class(negated, items) if items.is_empty() => match (ecma, negated) {
                    (true, false) => "[]".to_string(),
                    (true, true) => "[^]".to_string(),
                    (false, false) => "[^\\x{0}-\\x{10FFFF}]".to_string(),
                    (false, true) => "[\\x{0}-\\x{10FFFF}]".to_string(),
                },
                Piece::Class(negated, items) => {
                    let mut text = String::from(if *negated { "[^" } else { "[" });
                    for &(first, last) in items {
                        text.push_str(&escaped(first));
                        if first != last {
                            text.push('-');
                            text.push_str(&escaped(last));
                        }
                    }
                    text.push(']');
                    text
                }
                Piece::Dot if ecma => ".".to_string(),
                Piece::Dot => "[^\\n\\r\\x{2028}\\x{2029}]".to_string(),
                Piece::Digit if ecma => "\\d".to_string(),
                Piece::Digit => "[0-9]".to_string(),
                Piece::Word if ecma => "\\w".to_string(),
                Piece::Word => "[A-Za-z0-9_]".to_string(),
                Piece::Space if ecma => "\\s".to_string(),
                Piece::Space => "[\\t-\\r \\xA0\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}]".to_string(),
                Piece::Start => "^".to_string(),
                Piece::End => "$".to_string(),
                Piece::Group(inner, true) => format!("({})", inner.render(ecma)),
                Piece::Group(inner, false) => format!("(?:{})", inner.render(ecma)),
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
                Piece::Repeat(inner, quantifier) => {
                    let atom = match **inner {
                        Piece::Char(_)
                        | Piece::Class(..)
                        | Piece::Dot
                        | Piece::Digit
                        | Piece::Word
                        | Piece::Space
                        | Piece::Group(..) => inner.render(ecma),
                        _ => format!("(?:{})", inner.render(ecma)),
                    };
                    format!("{atom}{quantifier}")
                }
            }
    }
}

fn quantifier() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("*".to_string()),
        Just("+".to_string()),
        Just("?".to_string()),
        Just("*?".to_string()),
        Just("+?".to_string()),
        (0u32..4).prop_map(|n| format!("{{{n}}}")),
        (0u32..3).prop_map(|n| format!("{{{n},}}")),
        (0u32..3, 0u32..3).prop_map(|(n, extra)| format!("{{{n},{}}}", n + extra)),
    ]
}

fn class_item() -> impl Strategy<Value = (char, char)> {
    prop_oneof![
        4 => prop::sample::select(PATTERN_ALPHABET).prop_map(|c| (c, c)),
        1 => Just(('a', 'c')),
        1 => Just(('0', '9')),
    ]
}

/// Patterns over the wide alphabet with every kind of piece.
fn piece() -> impl Strategy<Value = Piece> {
    let leaf = prop_oneof![
        8 => prop::sample::select(PATTERN_ALPHABET).prop_map(Piece::Char),
        2 => (any::<bool>(), prop::collection::vec(class_item(), 0..3))
            .prop_map(|(negated, items)| Piece::Class(negated, items)),
        1 => Just(Piece::Dot),
        1 => Just(Piece::Digit),
        1 => Just(Piece::Word),
        1 => Just(Piece::Space),
        2 => Just(Piece::Start),
        2 => Just(Piece::End),
    ];
    compose(leaf.boxed())
}

/// Patterns over `a` and `b` thick with anchors, where matches are common.
fn anchored_piece() -> impl Strategy<Value = Piece> {
    let leaf = prop_oneof![
        3 => Just(Piece::Char('a')),
        2 => Just(Piece::Char('b')),
        1 => Just(Piece::Dot),
        2 => Just(Piece::Start),
        2 => Just(Piece::End),
    ];
    compose(leaf.boxed())
}

fn compose(leaf: BoxedStrategy<Piece>) -> impl Strategy<Value = Piece> {
    leaf.prop_recursive(5, 40, 4, |inner| {
        prop_oneof![
            3 => prop::collection::vec(inner.clone(), 0..5).prop_map(Piece::Concat),
            2 => prop::collection::vec(inner.clone(), 1..4).prop_map(Piece::Alt),
            1 => (inner.clone(), any::<bool>())
                .prop_map(|(item, capturing)| Piece::Group(Box::new(item), capturing)),
            3 => (inner, quantifier())
                .prop_map(|(item, quantifier)| Piece::Repeat(Box::new(item), quantifier)),
        ]
    })
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

/// The grammar of `piece` accepts exactly the texts its regex finds a match in, and
/// the lengths of those lie in `pattern_char_lengths`.
fn check_against_regex<'t>(
    piece: &Piece,
    texts: impl IntoIterator<Item = &'t String>,
) -> Result<(), TestCaseError> {
    let ecma = piece.render(true);
    let regex = regex::Regex::new(&piece.render(false)).unwrap();
    let expr = pattern_expr(&ecma).unwrap();
    prop_assert!(no_nullable_star(&expr), "pattern {:?}: {:?}", ecma, expr);
    assert_llama_cpp_accepts(&ecma, &expr);
    let nothing = expr == Expr::Chars(CharSet::new([], false));
    let grammar = compile(expr);
    let (min, max) = pattern_char_lengths(&ecma).unwrap();
    let mut shortest: Option<u64> = None;
    for text in texts {
        let expected = regex.is_match(text);
        prop_assert_eq!(
            accepts(&grammar, &json_encoded(text)),
            expected,
            "pattern {:?} on {:?}",
            ecma,
            text
        );
        if expected {
            let length = text.chars().count() as u64;
            shortest = Some(shortest.map_or(length, |shortest| shortest.min(length)));
            prop_assert!(
                min <= length && max.is_none_or(|max| length <= max),
                "pattern {:?} matches {:?} outside ({}, {:?})",
                ecma,
                text,
                min,
                max
            );
        }
    }
    if nothing {
        prop_assert!(shortest.is_none(), "pattern {:?} matches nothing", ecma);
        prop_assert_eq!((min, max), (0, Some(0)));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn grammar_matches_exactly_what_the_regex_finds(
        piece in piece(),
        texts in prop::collection::vec(
            prop::collection::vec(prop::sample::select(TEXT_ALPHABET), 0..7)
                .prop_map(|characters| characters.into_iter().collect::<String>()),
            24,
        ),
    ) {
        let short = all_strings(SHORT_ALPHABET, 3);
        check_against_regex(&piece, short.iter().chain(&texts))?;
    }

    #[test]
    fn anchors_anywhere_match_exactly_what_the_regex_finds(piece in anchored_piece()) {
        let texts = all_strings(&['a', 'b', '\n'], 4);
        check_against_regex(&piece, &texts)?;
        // Every string over the two letters up to four: the shortest match is the
        // least length whenever one that short exists.
        let ecma = piece.render(true);
        let regex = regex::Regex::new(&piece.render(false)).unwrap();
        let (min, _) = pattern_char_lengths(&ecma).unwrap();
        if let Some(shortest) = texts
            .iter()
            .filter(|text| regex.is_match(text))
            .map(|text| text.chars().count() as u64)
            .min()
            && shortest < 4
        {
            prop_assert_eq!(min, shortest, "pattern {:?}", ecma);
        }
    }

    #[test]
    fn no_panic_on_pattern_like_text(
        pattern in "[ab()\\[\\]{}|*+?^$.,0-9dDwWsSbBpPkuxc<>=!:\\\\-]{0,16}",
    ) {
        check_no_panic(&pattern);
    }

    #[test]
    fn no_panic_on_any_text(pattern in any::<String>()) {
        check_no_panic(&pattern);
    }
}

/// Both functions answer; a grammar built from an answer compiles.
fn check_no_panic(pattern: &str) {
    let expr = pattern_expr(pattern);
    let lengths = pattern_char_lengths(pattern);
    assert_eq!(expr.is_ok(), lengths.is_ok(), "{pattern:?}");
    if let Ok(expr) = expr {
        assert!(no_nullable_star(&expr), "{pattern:?}: {expr:?}");
        compile(expr);
    }
}
