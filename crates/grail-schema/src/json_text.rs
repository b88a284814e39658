//! JSON text as grammar expressions: how the characters of a string value are written
//! between its quotes.
//!
//! A plain string (no `pattern`, `format` or `enum`) takes llama.cpp's `char` rule: any
//! character but `"`, `\`, DEL and the C0 controls as itself, or any escape (`\n`,
//! `\u00e9`, ...). A constrained string is written in canonical form instead: each
//! character as itself, except `"` and `\` (`\"`, `\\`) and the controls and DEL (their
//! short escape where JSON has one, `\u00XX` in either case of hex digits otherwise).
//! Serializers write that form (`json.dumps(..., ensure_ascii=False)`, `serde_json`), and
//! it keeps the grammar of a set of characters a set of characters.

use grail_grammar::{CharSet, Expr};

/// The highest control character JSON requires escaped (U+001F), and DEL, which llama.cpp's
/// `char` rule escapes too.
const DEL: u32 = 0x7F;

/// Code points that are never written as themselves inside a JSON string here.
pub fn escaped_set() -> CharSet {
    CharSet::new(ESCAPED_RANGES, false)
}

/// The characters of [`escaped_set`], as sorted ranges.
pub(crate) const ESCAPED_RANGES: [(u32, u32); 4] = [
    (0, 0x1F),
    ('"' as u32, '"' as u32),
    ('\\' as u32, '\\' as u32),
    (DEL, DEL),
];

/// One character of a JSON string as written: as itself, a short escape, a `\u` escape
/// of a character, or a surrogate pair of `\u` escapes (one character, as decoders read
/// it); a lone surrogate escape is not a character, so it is not here.
pub fn any_string_char_exact() -> Expr {
    let hex = hex_digit;
    let surrogate_high = || {
        Expr::sequence([
            Expr::chars([('d', 'd'), ('D', 'D')]),
            Expr::chars([('8', '9'), ('a', 'b'), ('A', 'B')]),
            hex(),
            hex(),
        ])
    };
    let surrogate_low = || {
        Expr::sequence([
            Expr::chars([('d', 'd'), ('D', 'D')]),
            Expr::chars([('c', 'f'), ('C', 'F')]),
            hex(),
            hex(),
        ])
    };
    let not_surrogate = not_surrogate_hex();
    Expr::choice([
        Expr::Chars(CharSet::new(escaped_set().members(), true)),
        Expr::sequence([
            Expr::literal("\\"),
            Expr::choice([
                Expr::chars([
                    ('"', '"'),
                    ('\\', '\\'),
                    ('/', '/'),
                    ('b', 'b'),
                    ('f', 'f'),
                    ('n', 'n'),
                    ('r', 'r'),
                    ('t', 't'),
                ]),
                Expr::sequence([Expr::literal("u"), not_surrogate]),
                Expr::sequence([
                    Expr::literal("u"),
                    surrogate_high(),
                    Expr::literal("\\u"),
                    surrogate_low(),
                ]),
            ]),
        ]),
    ])
}

/// One character of a string as written where it must read as the same character in
/// JSON and as a Python literal: as itself, a short escape but `\/`, or a `\u` escape
/// of a character outside the surrogates (a pair of surrogate escapes is one character in
/// JSON and two in Python).
pub fn python_string_char() -> Expr {
    string_char_escaping(not_surrogate_hex())
}

/// The four hex digits of a `\u` escape of a character outside the surrogates.
fn not_surrogate_hex() -> Expr {
    let hex = hex_digit;
    Expr::choice([
        Expr::sequence([
            Expr::chars([('0', '9'), ('a', 'c'), ('A', 'C'), ('e', 'f'), ('E', 'F')]),
            hex(),
            hex(),
            hex(),
        ]),
        Expr::sequence([
            Expr::chars([('d', 'd'), ('D', 'D')]),
            Expr::chars([('0', '7')]),
            hex(),
            hex(),
        ]),
    ])
}

/// llama.cpp's `char`: one character of a JSON string as written, escapes included.
pub fn any_string_char() -> Expr {
    string_char_escaping(hex_digit().repeat(4, Some(4)))
}

/// One character of a string as written: as itself, a short escape but `\/`, or `\u`
/// and `unicode` (the hex digits a `\u` escape may have).
fn string_char_escaping(unicode: Expr) -> Expr {
    Expr::choice([
        Expr::Chars(CharSet::new(escaped_set().members(), true)),
        Expr::sequence([
            Expr::literal("\\"),
            Expr::choice([
                Expr::chars([
                    ('"', '"'),
                    ('\\', '\\'),
                    ('b', 'b'),
                    ('f', 'f'),
                    ('n', 'n'),
                    ('r', 'r'),
                    ('t', 't'),
                ]),
                Expr::sequence([Expr::literal("u"), unicode]),
            ]),
        ]),
    ])
}

/// `[0-9a-fA-F]`.
pub fn hex_digit() -> Expr {
    Expr::chars([('0', '9'), ('a', 'f'), ('A', 'F')])
}

/// One code point as written in canonical form inside a JSON string.
pub fn encoded_char(character: char) -> Expr {
    match character {
        '"' => Expr::literal("\\\""),
        '\\' => Expr::literal("\\\\"),
        '\u{8}' => Expr::literal("\\b"),
        '\u{C}' => Expr::literal("\\f"),
        '\n' => Expr::literal("\\n"),
        '\r' => Expr::literal("\\r"),
        '\t' => Expr::literal("\\t"),
        control if (control as u32) < 0x20 || control as u32 == DEL => unicode_escape(control),
        plain => Expr::literal(plain.to_string()),
    }
}

/// `\u00XX` for a control character, hex digits in either case.
fn unicode_escape(character: char) -> Expr {
    let code_point = character as u32;
    let third = char::from_digit(code_point >> 4, 16).expect("a hex digit");
    let fourth = char::from_digit(code_point & 0xF, 16).expect("a hex digit");
    Expr::sequence([
        Expr::literal(format!("\\u00{third}")),
        hex_digits_either_case(&[fourth]),
    ])
}

/// A text written in canonical form inside a JSON string (without the quotes).
pub fn encoded_text(text: &str) -> Expr {
    if is_written_as_itself(text) {
        return Expr::literal(text.to_string());
    }
    Expr::sequence(text.chars().map(encoded_char))
}

/// True when `text` has no character that a JSON string escapes (its canonical form
/// inside the quotes is `text` itself).
pub fn is_written_as_itself(text: &str) -> bool {
    text.chars().all(is_written_as_itself_char)
}

/// True when `character` is not one a JSON string escapes (the same test as
/// `escaped_set().contains`, negated, without building the set).
pub(crate) fn is_written_as_itself_char(character: char) -> bool {
    let code = character as u32;
    !(code <= 0x1F || code == DEL || character == '"' || character == '\\')
}

/// One character of `set`, written in canonical form inside a JSON string: the characters
/// written as themselves as one class, the short escapes as one, the `\u00XX` ones grouped
/// by their third hex digit.
pub fn encoded_set(set: &CharSet) -> Expr {
    // Most sets (the letters of keys and patterns) hold no escaped character: written
    // as themselves, without the set operations below.
    let escapes_nothing = |&(first, last): &(u32, u32)| {
        ESCAPED_RANGES
            .iter()
            .all(|&(low, high)| last < low || first > high)
    };
    if !set.is_negated() && !set.matches_nothing() && set.ranges().iter().all(escapes_nothing) {
        return Expr::Chars(set.clone());
    }
    let escaped = escaped_set();
    let plain = set.difference(&escaped);
    let mut choices = Vec::new();
    if !plain.matches_nothing() {
        choices.push(Expr::Chars(plain));
    }
    let mut short = Vec::new();
    // Second hex digits of `\u000X`, `\u001X` and `\u007X`.
    let mut long: [Vec<char>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for (first, last) in set.intersection(&escaped).members() {
        for code_point in first..=last {
            match char::from_u32(code_point) {
                Some(character @ ('"' | '\\')) => short.push(character),
                Some('\u{8}') => short.push('b'),
                Some('\u{C}') => short.push('f'),
                Some('\n') => short.push('n'),
                Some('\r') => short.push('r'),
                Some('\t') => short.push('t'),
                _ => {
                    let group = match code_point >> 4 {
                        0 => 0,
                        1 => 1,
                        _ => 2,
                    };
                    let digit = char::from_digit(code_point & 0xF, 16).expect("a hex digit");
                    long[group].push(digit);
                }
            }
        }
    }
    // After the backslash: the short escapes, `u00` and the long ones' last two digits.
    let mut after_backslash = Vec::new();
    if !short.is_empty() {
        after_backslash.push(Expr::chars(
            short.iter().map(|&character| (character, character)),
        ));
    }
    let groups: Vec<Expr> = long
        .iter()
        .zip(['0', '1', '7'])
        .filter(|(digits, _)| !digits.is_empty())
        .map(|(digits, third)| {
            Expr::sequence([
                Expr::literal(third.to_string()),
                hex_digits_either_case(digits),
            ])
        })
        .collect();
    if !groups.is_empty() {
        after_backslash.push(Expr::sequence([Expr::literal("u00"), Expr::Choice(groups)]));
    }
    // One backslash for both kinds: a matcher holding the set (a key trie's every
    // state does) then holds one item for it, not one per kind.
    match after_backslash.len() {
        0 => {}
        1 => choices.push(Expr::sequence([
            Expr::literal("\\"),
            after_backslash.pop().expect("one kind"),
        ])),
        _ => choices.push(Expr::sequence([
            Expr::literal("\\"),
            Expr::Choice(after_backslash),
        ])),
    }
    match choices.len() {
        1 => choices.pop().expect("one choice"),
        _ => Expr::Choice(choices),
    }
}

/// One of the hex digits, letters in either case.
fn hex_digits_either_case(digits: &[char]) -> Expr {
    Expr::chars(digits.iter().flat_map(|&digit| {
        let upper = digit.to_ascii_uppercase();
        [(digit, digit), (upper, upper)]
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(expr: Expr, text: &str) -> bool {
        let mut builder = grail_grammar::GrammarBuilder::new();
        let root = builder.root();
        builder.define(root, expr).unwrap();
        let grammar = builder.build().unwrap();
        let compiled =
            grail_engine::CompiledGrammar::compile(&grammar, &Default::default()).unwrap();
        let mut matcher = grail_engine::Matcher::new(&compiled);
        matcher.accept_str(text).is_ok() && matcher.is_accepting()
    }

    #[test]
    fn special_characters_are_escaped_in_canonical_form() {
        assert!(matches(
            encoded_text("a\"b\\c\nd\u{1}"),
            "a\\\"b\\\\c\\nd\\u0001"
        ));
        assert!(matches(encoded_char('\u{7F}'), "\\u007F"));
        assert!(matches(encoded_char('\u{7F}'), "\\u007f"));
        assert!(!matches(encoded_char('\u{7F}'), "\u{7F}"));
        assert!(matches(encoded_text("é日"), "é日"));
    }

    #[test]
    fn a_set_is_its_plain_members_and_its_escapes() {
        let set = CharSet::new(
            [
                ('\n' as u32, '\n' as u32),
                ('a' as u32, 'c' as u32),
                ('"' as u32, '"' as u32),
            ],
            false,
        );
        for (text, expected) in [
            ("a", true),
            ("c", true),
            ("\\n", true),
            ("\\\"", true),
            ("\"", false),
            ("\n", false),
            ("d", false),
        ] {
            assert_eq!(matches(encoded_set(&set), text), expected, "{text:?}");
        }
        let everything_but_a = CharSet::new([('a' as u32, 'a' as u32)], true);
        assert!(matches(encoded_set(&everything_but_a), "\\\\"));
        assert!(matches(encoded_set(&everything_but_a), "é"));
        assert!(!matches(encoded_set(&everything_but_a), "a"));
    }

    #[test]
    fn short_and_long_escapes_share_one_backslash() {
        // Alternatives of the set's expression that begin with a backslash.
        let backslash_starts = |expr: &Expr| {
            let choices = match expr {
                Expr::Choice(choices) => choices.as_slice(),
                other => std::slice::from_ref(other),
            };
            choices
                .iter()
                .filter(|choice| match choice {
                    Expr::Sequence(parts) => {
                        matches!(parts.first(), Some(Expr::Literal(text)) if text.starts_with('\\'))
                    }
                    _ => false,
                })
                .count()
        };
        let everything_but_a = CharSet::new([('a' as u32, 'a' as u32)], true);
        for set in [escaped_set(), everything_but_a] {
            let expr = encoded_set(&set);
            assert_eq!(backslash_starts(&expr), 1, "{expr:?}");
            for text in ["\\n", "\\\"", "\\u001f", "\\u007F"] {
                assert!(matches(expr.clone(), text), "{text:?}");
            }
            assert!(!matches(expr, "\\u0020"));
        }
    }

    #[test]
    fn any_string_char_is_llama_cpps_char() {
        for (text, expected) in [
            ("a", true),
            ("\\u00e9", true),
            ("\\n", true),
            ("\"", false),
            ("\\x", false),
            ("\u{7F}", false),
            ("\u{1F}", false),
        ] {
            assert_eq!(matches(any_string_char(), text), expected, "{text:?}");
        }
    }
}
