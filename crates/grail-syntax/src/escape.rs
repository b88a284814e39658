//! Canonical spelling of characters inside string literals and character classes.
//!
//! Printed text always parses back to the same code points, in llama.cpp at the
//! conformance commit too (so `-` is never written as `\-`, a later escape).
//!
//! A character is written raw when it reads as itself: an assigned, visible character
//! that does not combine with what is printed before it (a combining mark is raw only
//! inside a literal, after a raw character it can sit on). Everything else is an escape.
//! The `_keeping` writers take the source text the characters were parsed from and keep
//! the author's escape for every character that is not [plain](is_plain), so `\uD7FF`
//! stays `\uD7FF` rather than becoming an invisible raw code point.

use unicode_general_category::{GeneralCategory, get_general_category};

use crate::ast::{CharClass, ClassItem};

/// Where a character is printed, which decides what must be escaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    Literal,
    Class,
}

/// True for a character that reads as itself wherever it is printed: assigned, visible
/// (a letter, number, punctuation or symbol) and not a combining mark. Spaces, controls,
/// format characters, combining marks, private-use, surrogate and unassigned code points
/// are not plain.
pub fn is_plain(code_point: u32) -> bool {
    // ASCII and Latin-1 without the table (whose lookup copies it in debug builds).
    if code_point < 0x100 {
        return matches!(code_point, 0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF);
    }
    let Some(character) = char::from_u32(code_point) else {
        return false;
    };
    use GeneralCategory::*;
    matches!(
        get_general_category(character),
        UppercaseLetter
            | LowercaseLetter
            | TitlecaseLetter
            | ModifierLetter
            | OtherLetter
            | DecimalNumber
            | LetterNumber
            | OtherNumber
            | ConnectorPunctuation
            | DashPunctuation
            | OpenPunctuation
            | ClosePunctuation
            | InitialPunctuation
            | FinalPunctuation
            | OtherPunctuation
            | MathSymbol
            | CurrencySymbol
            | ModifierSymbol
            | OtherSymbol
    ) && !is_invisible(code_point)
}

/// True for a combining mark (it joins the character printed before it).
fn is_combining(code_point: u32) -> bool {
    // The first combining marks are at U+0300.
    code_point >= 0x300
        && char::from_u32(code_point).is_some_and(|character| {
            matches!(
                get_general_category(character),
                GeneralCategory::NonspacingMark
                    | GeneralCategory::SpacingMark
                    | GeneralCategory::EnclosingMark
            )
        })
}

/// The character spelled at the start of `text` (inside a literal or class): a raw
/// character or an escape (`\n`, `\xHH`, `\uHHHH`, ...). Returns its code point and the
/// length of its spelling in bytes, or `None` for an empty text or a malformed escape.
pub fn spelling_at(text: &str) -> Option<(u32, usize)> {
    let mut characters = text.chars();
    let first = characters.next()?;
    if first != '\\' {
        return Some((first as u32, first.len_utf8()));
    }
    let escape = characters.next()?;
    let simple = match escape {
        't' => Some('\t'),
        'r' => Some('\r'),
        'n' => Some('\n'),
        '\\' | '"' | '[' | ']' | '-' => Some(escape),
        _ => None,
    };
    if let Some(character) = simple {
        return Some((character as u32, 2));
    }
    let digits = match escape {
        'x' => 2,
        'u' => 4,
        'U' => 8,
        _ => return None,
    };
    let hex = text.get(2..2 + digits)?;
    if !hex.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return None;
    }
    Some((u32::from_str_radix(hex, 16).ok()?, 2 + digits))
}

/// The spellings of a literal's characters as written in `written` (the literal's source,
/// quotes included), when they decode to exactly `characters`.
fn literal_spellings<'s>(characters: &[u32], written: &'s str) -> Option<Vec<&'s str>> {
    let mut rest = written.strip_prefix('"')?.strip_suffix('"')?;
    let mut spellings = Vec::with_capacity(characters.len());
    for &expected in characters {
        let (code_point, length) = spelling_at(rest)?;
        if code_point != expected {
            return None;
        }
        spellings.push(&rest[..length]);
        rest = &rest[length..];
    }
    rest.is_empty().then_some(spellings)
}

/// The spellings of a class item's first and last characters as written in `source`
/// (which holds the item at `item.span`), when they decode to the item's code points.
/// The last is `None` for a single character.
pub fn class_item_spellings<'s>(
    item: &ClassItem,
    source: &'s str,
) -> Option<(&'s str, Option<&'s str>)> {
    let written = source.get(item.span.range())?;
    let (first, first_length) = spelling_at(written)?;
    if first != item.first {
        return None;
    }
    let first_spelling = &written[..first_length];
    if !item.is_range {
        return (first_length == written.len()).then_some((first_spelling, None));
    }
    let rest = written[first_length..].strip_prefix('-')?;
    let (last, last_length) = spelling_at(rest)?;
    (last == item.last && last_length == rest.len())
        .then_some((first_spelling, Some(&rest[..last_length])))
}

/// An author's spelling worth keeping: an escape of a character that is not plain.
fn kept(spelling: Option<&str>, code_point: u32) -> Option<&str> {
    spelling.filter(|spelling| spelling.starts_with('\\') && !is_plain(code_point))
}

/// Appends `"..."` holding `characters` to `out`.
pub fn write_literal(out: &mut String, characters: &[u32]) {
    write_literal_spelled(out, characters, None);
}

/// Appends `"..."` holding `text` to `out`, as [`write_literal`] writes its characters
/// (printable ASCII other than `"` and `\\` is copied as it is, without decoding).
pub fn write_literal_text(out: &mut String, text: &str) {
    if text
        .bytes()
        .all(|byte| (0x20..=0x7E).contains(&byte) && byte != b'"' && byte != b'\\')
    {
        out.reserve(text.len() + 2);
        out.push('"');
        out.push_str(text);
        out.push('"');
    } else {
        let characters: Vec<u32> = text.chars().map(u32::from).collect();
        write_literal(out, &characters);
    }
}

/// Appends `"..."` holding `characters` to `out`, keeping the escapes of `written` (the
/// literal's source text, quotes included) for characters that are not plain. Falls back
/// to [`write_literal`] when `written` does not spell `characters`.
pub fn write_literal_keeping(out: &mut String, characters: &[u32], written: &str) {
    write_literal_spelled(
        out,
        characters,
        literal_spellings(characters, written).as_deref(),
    );
}

fn write_literal_spelled(out: &mut String, characters: &[u32], spellings: Option<&[&str]>) {
    out.push('"');
    let mut after_raw = false;
    for (index, &character) in characters.iter().enumerate() {
        let spelling = spellings.map(|spellings| spellings[index]);
        after_raw = match kept(spelling, character) {
            Some(spelling) => {
                out.push_str(spelling);
                false
            }
            None => write_character(out, character, Context::Literal, after_raw),
        };
    }
    out.push('"');
}

/// Appends a character class to `out`, items in the order given.
pub fn write_class(out: &mut String, class: &CharClass) {
    write_class_items(
        out,
        class.negated,
        class
            .items
            .iter()
            .map(|item: &ClassItem| (item.first, item.last, item.is_range, None, None)),
    );
}

/// Appends a character class to `out`, keeping the escapes `source` (the text the class
/// was parsed from) has for characters that are not plain.
pub fn write_class_keeping(out: &mut String, class: &CharClass, source: &str) {
    write_class_items(
        out,
        class.negated,
        class.items.iter().map(|item: &ClassItem| {
            let (first, last) = class_item_spellings(item, source).unzip();
            (item.first, item.last, item.is_range, first, last.flatten())
        }),
    );
}

/// Appends a character class made of inclusive `(first, last)` ranges to `out`.
pub fn write_class_ranges(out: &mut String, negated: bool, ranges: &[(u32, u32)]) {
    write_class_items(
        out,
        negated,
        ranges
            .iter()
            .map(|&(first, last)| (first, last, first != last, None, None)),
    );
}

/// A class item to write: first, last, whether it is a range, and the author's
/// spellings of first and last when known.
type ItemToWrite<'s> = (u32, u32, bool, Option<&'s str>, Option<&'s str>);

fn write_class_items<'s>(
    out: &mut String,
    negated: bool,
    items: impl ExactSizeIterator<Item = ItemToWrite<'s>>,
) {
    out.push('[');
    if negated {
        out.push('^');
    }
    let content_start = out.len();
    let count = items.len();
    for (index, (first, last, is_range, first_spelling, last_spelling)) in items.enumerate() {
        let is_last_item = index + 1 == count;
        let at_start = out.len() == content_start;
        match kept(first_spelling, first) {
            Some(spelling) => out.push_str(spelling),
            None => write_class_character(out, first, at_start, is_last_item && !is_range, negated),
        }
        if is_range {
            out.push('-');
            match kept(last_spelling, last) {
                Some(spelling) => out.push_str(spelling),
                None => write_class_character(out, last, false, is_last_item, negated),
            }
        }
    }
    out.push(']');
}

/// Writes one class character. A raw `-` is only safe first or last in the class, and a
/// raw `^` only where it cannot read as negation.
fn write_class_character(out: &mut String, character: u32, first: bool, last: bool, negated: bool) {
    match character {
        0x2D if !(first || last) => out.push_str("\\x2D"),
        0x5E if first && !negated => out.push_str("\\x5E"),
        _ => {
            write_character(out, character, Context::Class, false);
        }
    }
}

/// Writes one character canonically; returns whether it was written raw. A combining
/// mark is raw only in a literal right after a raw character (`after_raw`).
fn write_character(out: &mut String, character: u32, context: Context, after_raw: bool) -> bool {
    match character {
        0x0A => out.push_str("\\n"),
        0x0D => out.push_str("\\r"),
        0x09 => out.push_str("\\t"),
        0x5C => out.push_str("\\\\"),
        0x22 if context == Context::Literal => out.push_str("\\\""),
        0x5D if context == Context::Class => out.push_str("\\]"),
        _ if character <= 0xFF && is_invisible(character) => {
            out.push_str(&format!("\\x{character:02X}"))
        }
        _ => match char::from_u32(character) {
            Some(raw) if reads_as_itself(character, context, after_raw) => {
                out.push(raw);
                return true;
            }
            _ if character > 0xFFFF => out.push_str(&format!("\\U{character:08X}")),
            _ => out.push_str(&format!("\\u{character:04X}")),
        },
    }
    false
}

/// True when a raw `character` is readable where it is printed: visible, assigned, and a
/// combining mark only after a raw character of a literal.
fn reads_as_itself(character: u32, context: Context, after_raw: bool) -> bool {
    if is_invisible(character) {
        return false;
    }
    // Below U+0300 every code point is assigned and none combines.
    if character < 0x300 {
        return true;
    }
    let Some(raw) = char::from_u32(character) else {
        return false;
    };
    match get_general_category(raw) {
        GeneralCategory::Unassigned | GeneralCategory::PrivateUse | GeneralCategory::Surrogate => {
            false
        }
        _ if is_combining(character) => context == Context::Literal && after_raw,
        _ => true,
    }
}

/// Control, format and separator characters that would be invisible or confusing raw.
fn is_invisible(character: u32) -> bool {
    matches!(character,
        0x00..=0x1F
        | 0x7F..=0x9F
        | 0xAD
        | 0x200B..=0x200F
        | 0x2028..=0x202E
        | 0x2060..=0x206F
        | 0xD800..=0xDFFF
        | 0xFEFF
        | 0xFFF9..=0xFFFB
        | 0xFFFE
        | 0xFFFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literal(text: &str) -> String {
        let mut out = String::new();
        write_literal(&mut out, &text.chars().map(u32::from).collect::<Vec<_>>());
        out
    }

    #[test]
    fn literal_escapes() {
        assert_eq!(literal("a\"b\\c\n\t\u{0}é"), r#""a\"b\\c\n\t\x00é""#);
    }

    #[test]
    fn class_dash_and_caret_positions() {
        let mut out = String::new();
        write_class_ranges(
            &mut out,
            false,
            &[(0x5E, 0x5E), (0x2D, 0x2D), (0x61, 0x7A), (0x2D, 0x2D)],
        );
        assert_eq!(out, r"[\x5E\x2Da-z-]");
        out.clear();
        write_class_ranges(&mut out, true, &[(0x5E, 0x5E), (0x5D, 0x5D)]);
        assert_eq!(out, r"[^^\]]");
    }

    #[test]
    fn spellings_decode_raw_characters_and_escapes() {
        assert_eq!(spelling_at("ab"), Some((0x61, 1)));
        assert_eq!(spelling_at("é"), Some((0xE9, 2)));
        assert_eq!(spelling_at(r"\x20-"), Some((0x20, 4)));
        assert_eq!(spelling_at(r"\uD7FF"), Some((0xD7FF, 6)));
        assert_eq!(spelling_at(r"\U0010FFFF"), Some((0x10FFFF, 10)));
        assert_eq!(spelling_at(r"\]"), Some((0x5D, 2)));
        assert_eq!(spelling_at(r"\q"), None);
        assert_eq!(spelling_at(r"\x2"), None);
        assert_eq!(spelling_at(""), None);
    }

    #[test]
    fn plain_characters() {
        for plain in ['a', 'Z', '0', '-', '~', 'é', '日', '\u{FFFD}', '\u{10000}'] {
            assert!(is_plain(plain as u32), "{plain:?}");
        }
        for not_plain in [
            0x20, 0x0A, 0xA0, 0x300, 0x200C, 0xD7FF, 0xE000, 0x10FFFF, 0xD800,
        ] {
            assert!(!is_plain(not_plain), "U+{not_plain:04X}");
        }
    }

    #[test]
    fn raw_combining_marks_and_unassigned_code_points_are_escaped() {
        assert_eq!(literal("e\u{301}"), "\"e\u{301}\"");
        assert_eq!(literal("\u{301}e"), r#""\u0301e""#);
        assert_eq!(literal("\u{D7FF}\u{E000}"), r#""\uD7FF\uE000""#);
        let mut out = String::new();
        write_class_ranges(&mut out, false, &[(0x300, 0x36F)]);
        assert_eq!(out, r"[\u0300-\u036F]");
        out.clear();
        write_class_ranges(&mut out, false, &[(0x2EE5E, 0x2EE5E), (0xF0000, 0x110000)]);
        assert_eq!(out, r"[\U0002EE5E\U000F0000-\U00110000]");
    }

    #[test]
    fn the_authors_escapes_are_kept_for_characters_that_are_not_plain() {
        let source = r#"[\x20-\uD7FF] [\U00010000-\U0010FFFF] [\x41-\x5A\u200C]"#;
        let parsed = crate::parse(&format!("root ::= {source}"));
        let offset = "root ::= ".len();
        let mut printed = Vec::new();
        for term in &parsed.grammar.rules[0].body.sequences[0].terms {
            let crate::ast::TermKind::Class(class) = &term.kind else {
                panic!("a class");
            };
            let mut out = String::new();
            write_class_keeping(&mut out, class, &format!("{}{source}", " ".repeat(offset)));
            printed.push(out);
        }
        assert_eq!(
            printed,
            [r"[\x20-\uD7FF]", r"[𐀀-\U0010FFFF]", r"[A-Z\u200C]"]
        );
        let mut out = String::new();
        write_literal_keeping(&mut out, &[0x20, 0x41, 0x300], r#""\x20\x41\u0300""#);
        assert_eq!(out, r#""\x20A\u0300""#);
        out.clear();
        // A spelling that does not match the characters is ignored.
        write_literal_keeping(&mut out, &[0x20], r#""\x21""#);
        assert_eq!(out, r#"" ""#);
    }
}
