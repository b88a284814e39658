//! Canonical spelling of characters inside string literals and character classes.
//!
//! Printed text always parses back to the same code points, in llama.cpp at the
//! conformance commit too (so `-` is never written as `\-`, a later escape).

use crate::ast::{CharClass, ClassItem};

/// Where a character is printed, which decides what must be escaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    Literal,
    Class,
}

/// Appends `"..."` holding `characters` to `out`.
pub fn write_literal(out: &mut String, characters: &[u32]) {
    out.push('"');
    for &character in characters {
        write_character(out, character, Context::Literal);
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
            .map(|item: &ClassItem| (item.first, item.last, item.is_range)),
    );
}

/// Appends a character class made of inclusive `(first, last)` ranges to `out`.
pub fn write_class_ranges(out: &mut String, negated: bool, ranges: &[(u32, u32)]) {
    write_class_items(
        out,
        negated,
        ranges
            .iter()
            .map(|&(first, last)| (first, last, first != last)),
    );
}

fn write_class_items(
    out: &mut String,
    negated: bool,
    items: impl ExactSizeIterator<Item = (u32, u32, bool)>,
) {
    out.push('[');
    if negated {
        out.push('^');
    }
    let content_start = out.len();
    let count = items.len();
    for (index, (first, last, is_range)) in items.enumerate() {
        let is_last_item = index + 1 == count;
        write_class_character(
            out,
            first,
            out.len() == content_start,
            is_last_item && !is_range,
            negated,
        );
        if is_range {
            out.push('-');
            write_class_character(out, last, false, is_last_item, negated);
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
        _ => write_character(out, character, Context::Class),
    }
}

fn write_character(out: &mut String, character: u32, context: Context) {
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
        _ if character > 0x10FFFF => out.push_str(&format!("\\U{character:08X}")),
        _ => match char::from_u32(character) {
            Some(printable) if !is_invisible(character) => out.push(printable),
            _ => out.push_str(&format!("\\u{character:04X}")),
        },
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
}
