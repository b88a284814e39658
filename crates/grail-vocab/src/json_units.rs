//! How many characters of a JSON string each token starts with.
//!
//! A bounded repetition of one JSON string character (`char{0,32}` for a `maxLength` of
//! 32) takes one copy per character, whether the character is written as itself (one to
//! four bytes) or as an escape (`\n`, `\u00e9`, a surrogate pair `\ud83d\ude00`). Near the
//! bound, a token is allowed when the unbounded loop allows it and it starts with no more
//! characters than copies remain (the engine's `counted.rs`). This module counts those
//! characters ("units") per token: the units a token's bytes begin with, read from a
//! character boundary, up to the first byte that cannot start one (`"` or a control
//! character) or the first byte no JSON string could take there. A unit the token ends
//! inside of counts: it needs a copy too. Past a byte no string could take the count
//! stops; such tokens are refused by the loop anyway, so their count does not matter.
//! Whether the reading stopped tells a token that ends the string (too early, under a
//! `minLength`) from one that only ends inside it.

/// Where the reading of a token's units stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Between characters.
    Boundary,
    /// Inside a character written as itself: this many continuation bytes to go.
    Continuation(u8),
    /// After `\`.
    Escape,
    /// In the hex digits of `\u`: this many to go, and the value so far.
    Hex(u8, u16),
    /// After a high surrogate escape, expecting its low half: how many of `\`, `u`,
    /// `D`, `C`-`F` have been read.
    LowHalf(u8),
    /// In the last two hex digits of the low half: this many to go.
    LowHex(u8),
    /// A byte no JSON string character takes here (or a string's end): no more units.
    Stopped,
}

/// One byte of reading; returns the new state and whether the byte starts a unit.
fn read(reading: Reading, byte: u8) -> (Reading, bool) {
    use Reading::*;
    match reading {
        Stopped => (Stopped, false),
        Boundary => match byte {
            b'"' | 0x00..=0x1F => (Stopped, false),
            b'\\' => (Escape, true),
            0x20..=0x7F => (Boundary, true),
            0xC2..=0xDF => (Continuation(1), true),
            0xE0..=0xEF => (Continuation(2), true),
            0xF0..=0xF4 => (Continuation(3), true),
            _ => (Stopped, false),
        },
        Continuation(left) => match byte {
            0x80..=0xBF if left == 1 => (Boundary, false),
            0x80..=0xBF => (Continuation(left - 1), false),
            _ => (Stopped, false),
        },
        Escape => match byte {
            b'u' => (Hex(4, 0), false),
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => (Boundary, false),
            _ => (Stopped, false),
        },
        Hex(left, value) => match hex_value(byte) {
            Some(digit) => {
                let value = value << 4 | u16::from(digit);
                match left {
                    1 if (0xD800..=0xDBFF).contains(&value) => (LowHalf(0), false),
                    1 => (Boundary, false),
                    _ => (Hex(left - 1, value), false),
                }
            }
            None => (Stopped, false),
        },
        LowHalf(read_so_far) => match (read_so_far, byte) {
            (0, b'\\') | (1, b'u') | (2, b'D' | b'd') => (LowHalf(read_so_far + 1), false),
            (3, b'C'..=b'F' | b'c'..=b'f') => (LowHex(2), false),
            _ => (Stopped, false),
        },
        LowHex(left) => match hex_value(byte) {
            Some(_) if left == 1 => (Boundary, false),
            Some(_) => (LowHex(left - 1), false),
            None => (Stopped, false),
        },
    }
}

fn hex_value(byte: u8) -> Option<u8> {
    (byte as char).to_digit(16).map(|digit| digit as u8)
}

/// Most units counted (a count saturates there).
pub const MAX_JSON_UNITS: u8 = 127;

/// What the start of a token's bytes holds, read as the inside of a JSON string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonUnits {
    /// The characters it starts with (see the module doc), at most [`MAX_JSON_UNITS`].
    pub units: u8,
    /// True when the reading stopped at a byte that does not go on with a string's
    /// characters (its closing `"`, a control character, or a byte no string takes
    /// there); false when every byte was read.
    pub stops: bool,
}

impl JsonUnits {
    /// Reads `bytes` (see the module doc).
    pub fn read(bytes: &[u8]) -> JsonUnits {
        let mut reading = Reading::Boundary;
        let mut units: u8 = 0;
        for &byte in bytes {
            let (next, starts_unit) = read(reading, byte);
            if next == Reading::Stopped {
                return JsonUnits { units, stops: true };
            }
            if starts_unit {
                units = (units + 1).min(MAX_JSON_UNITS);
            }
            reading = next;
        }
        JsonUnits {
            units,
            stops: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::JsonUnits;

    fn json_units(bytes: &[u8]) -> u8 {
        JsonUnits::read(bytes).units
    }

    #[test]
    fn counts_characters_however_they_are_written() {
        let cases: &[(&[u8], u8)] = &[
            (b"", 0),
            (b"abc", 3),
            (b" hello", 6),
            ("é中😀".as_bytes(), 3),
            (b"\\n\\t", 2),
            (b"\\u00e9x", 2),
            (b"\\ud83d\\ude00", 1),
            (b"\\ud83d\\ude00a", 2),
            (b"ab\"cd", 2),
            (b"\",", 0),
            (b"a\nb", 1),
        ];
        for &(bytes, expected) in cases {
            assert_eq!(
                json_units(bytes),
                expected,
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    #[test]
    fn a_character_the_token_ends_inside_counts() {
        assert_eq!(json_units(b"a\\"), 2);
        assert_eq!(json_units(b"a\\u00"), 2);
        assert_eq!(json_units(b"\\ud83d"), 1);
        assert_eq!(json_units(b"\\ud83d\\u"), 1);
        assert_eq!(json_units(&"中".as_bytes()[..2]), 1);
    }

    #[test]
    fn counting_stops_at_what_no_string_takes() {
        assert_eq!(json_units(b"a\\x"), 2);
        assert_eq!(json_units(b"a\\xbcd"), 2);
        assert_eq!(json_units(&[b'a', 0x80, b'b']), 1);
        assert_eq!(json_units(&[b'a'; 300]), 127);
        assert_eq!(
            JsonUnits::read(b"ab\","),
            JsonUnits {
                units: 2,
                stops: true
            }
        );
        assert_eq!(
            JsonUnits::read(b"ab"),
            JsonUnits {
                units: 2,
                stops: false
            }
        );
    }
}
