//! A strict, incremental UTF-8 decoder whose state fits in a `u32`.
//!
//! The matcher consumes bytes (token pieces may end in the middle of a character), while
//! grammars speak code points. Each matcher item carries one [`Partial`]: the bytes of the
//! character begun so far. Only well-formed UTF-8 is accepted (Unicode Table 3-7: no
//! overlong forms, no surrogates, nothing above U+10FFFF), so invalid UTF-8 never matches.

/// The largest Unicode scalar value.
const MAX_SCALAR: u32 = 0x10FFFF;

/// The character begun so far: no bytes (`Partial::NONE`) or 1–3 bytes of a 2–4 byte
/// sequence. Packed as `value | seen << 21 | length << 23`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Partial(u32);

/// What one more byte does to a [`Partial`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The byte completes the code point.
    Complete(u32),
    /// The byte starts or continues a character that is still incomplete.
    Incomplete(Partial),
    /// The byte cannot appear here in well-formed UTF-8.
    Invalid,
}

impl Partial {
    /// No character begun.
    pub const NONE: Partial = Partial(0);

    /// The packed form (for keys).
    pub(crate) fn to_bits(self) -> u32 {
        self.0
    }

    /// True when no character is begun.
    pub fn is_none(self) -> bool {
        self.0 == 0
    }

    fn value(self) -> u32 {
        self.0 & 0x1F_FFFF
    }

    /// How many bytes of the character are in (0 for `NONE`).
    pub(crate) fn bytes_seen(self) -> usize {
        self.seen() as usize
    }

    fn seen(self) -> u32 {
        (self.0 >> 21) & 0b11
    }

    fn length(self) -> u32 {
        self.0 >> 23
    }

    const fn pack(value: u32, seen: u32, length: u32) -> Partial {
        Partial(value | seen << 21 | length << 23)
    }

    /// Partials of the same shape as this one (as many bytes still to come, each in
    /// 80–BF), in a fixed order; empty for `NONE` and for the narrowed second bytes after
    /// E0, ED, F0 and F4. Two partials of one shape whose completions a node all takes go
    /// on alike, so either may stand for the other (see the matcher's
    /// `canonical_partial`). Several per shape, so some lies in a class of one script.
    pub(crate) fn representatives(self) -> &'static [Partial] {
        // One byte to come: C2, E1 80, E4 B8, F0 90 80.
        const ONE: [Partial; 4] = [
            Partial::pack(0x02, 1, 2),
            Partial::pack(0x40, 2, 3),
            Partial::pack(0x138, 2, 3),
            Partial::pack(0x400, 3, 4),
        ];
        // Two bytes to come: E1, E4, F0 90.
        const TWO: [Partial; 3] = [
            Partial::pack(0x1, 1, 3),
            Partial::pack(0x4, 1, 3),
            Partial::pack(0x10, 2, 4),
        ];
        // Three bytes to come: F1.
        const THREE: [Partial; 1] = [Partial::pack(0x1, 1, 4)];
        if self.is_none() || self.continuation_range() != (0x80, 0xBF) {
            return &[];
        }
        match self.length() - self.seen() {
            1 => &ONE,
            2 => &TWO,
            _ => &THREE,
        }
    }

    /// The lead bytes (bit `byte - 0x80`) that begin a character of the same shape as
    /// `lead` does (the same first of [`Partial::representatives`]): C2..=DF, E1..=EC with
    /// EE..=EF, F1..=F3; E0, ED, F0 and F4 narrow their second byte, so each is its own.
    pub(crate) fn lead_bytes_of_shape(lead: u8) -> u128 {
        let range = |first: u8, last: u8| {
            (first..=last).fold(0u128, |bytes, byte| bytes | 1 << (byte - 0x80))
        };
        match lead {
            0xC2..=0xDF => range(0xC2, 0xDF),
            0xE1..=0xEC | 0xEE..=0xEF => range(0xE1, 0xEC) | range(0xEE, 0xEF),
            0xF1..=0xF3 => range(0xF1, 0xF3),
            _ => 1 << (lead - 0x80),
        }
    }

    /// Feeds one byte.
    pub fn push(self, byte: u8) -> Step {
        if self.is_none() {
            return match byte {
                0x00..=0x7F => Step::Complete(u32::from(byte)),
                0xC2..=0xDF => Step::Incomplete(Partial::pack(u32::from(byte & 0x1F), 1, 2)),
                0xE0..=0xEF => Step::Incomplete(Partial::pack(u32::from(byte & 0x0F), 1, 3)),
                0xF0..=0xF4 => Step::Incomplete(Partial::pack(u32::from(byte & 0x07), 1, 4)),
                _ => Step::Invalid,
            };
        }
        let (low, high) = self.continuation_range();
        if byte < low || byte > high {
            return Step::Invalid;
        }
        let value = self.value() << 6 | u32::from(byte & 0x3F);
        let seen = self.seen() + 1;
        if seen == self.length() {
            Step::Complete(value)
        } else {
            Step::Incomplete(Partial::pack(value, seen, self.length()))
        }
    }

    /// For a character begun: the continuation bytes still expected and the range of the
    /// next one.
    pub(crate) fn expected(self) -> Option<(u8, u8, u8)> {
        if self.is_none() {
            return None;
        }
        let (low, high) = self.continuation_range();
        Some(((self.length() - self.seen()) as u8, low, high))
    }

    /// The bytes allowed next (Unicode Table 3-7): the second byte after E0, ED, F0 and F4
    /// is narrowed to rule out overlong forms, surrogates and values above U+10FFFF.
    fn continuation_range(self) -> (u8, u8) {
        if self.seen() == 1 {
            match (self.length(), self.value()) {
                (3, 0x0) => return (0xA0, 0xBF),
                (3, 0xD) => return (0x80, 0x9F),
                (4, 0x0) => return (0x90, 0xBF),
                (4, 0x4) => return (0x80, 0x8F),
                _ => {}
            }
        }
        (0x80, 0xBF)
    }

    /// The inclusive range of code points whose well-formed encoding starts with the
    /// bytes seen so far. It is exact: UTF-8 keeps code point order, overlong forms are
    /// cut off by the length's minimum, and the only prefix reaching the surrogates is the
    /// lone lead byte ED, whose range stops at U+D7FF.
    pub fn code_point_range(self) -> (u32, u32) {
        if self.is_none() {
            return (0, MAX_SCALAR);
        }
        let missing_bits = 6 * (self.length() - self.seen());
        let low = self.value() << missing_bits;
        let mut high = low | ((1 << missing_bits) - 1);
        let shortest = match self.length() {
            2 => 0x80,
            3 => 0x800,
            _ => 0x10000,
        };
        if (self.length(), self.seen(), self.value()) == (3, 1, 0xD) {
            high = 0xD7FF;
        }
        (low.max(shortest), high.min(MAX_SCALAR))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> Option<u32> {
        let mut partial = Partial::NONE;
        for (index, &byte) in bytes.iter().enumerate() {
            match partial.push(byte) {
                Step::Complete(code_point) => {
                    return (index + 1 == bytes.len()).then_some(code_point);
                }
                Step::Incomplete(next) => partial = next,
                Step::Invalid => return None,
            }
        }
        None
    }

    /// Every representative is the partial of its bytes, and has the shape it stands for.
    #[test]
    fn representatives_are_the_partials_they_name() {
        let begun = |bytes: &[u8]| {
            bytes
                .iter()
                .fold(Partial::NONE, |partial, &byte| match partial.push(byte) {
                    Step::Incomplete(next) => next,
                    other => panic!("{bytes:02X?} does not leave a character begun: {other:?}"),
                })
        };
        let named: [&[u8]; 8] = [
            &[0xC2],
            &[0xE1, 0x80],
            &[0xE4, 0xB8],
            &[0xF0, 0x90, 0x80],
            &[0xE1],
            &[0xE4],
            &[0xF0, 0x90],
            &[0xF1],
        ];
        let named: Vec<Partial> = named.iter().map(|bytes| begun(bytes)).collect();
        // C5, E5 80 and F2 90 80 have one byte to come; E5 and F2 90 two; F2 three.
        for begun_so_far in [&[0xC5u8][..], &[0xE5, 0x80], &[0xF2, 0x90, 0x80]] {
            assert_eq!(begun(begun_so_far).representatives(), &named[..4]);
        }
        for begun_so_far in [&[0xE5u8][..], &[0xF2, 0x90]] {
            assert_eq!(begun(begun_so_far).representatives(), &named[4..7]);
        }
        assert_eq!(begun(&[0xF2]).representatives(), &named[7..]);
        for representative in &named {
            assert_eq!(representative.continuation_range(), (0x80, 0xBF));
        }
        assert!(begun(&[0xE0]).representatives().is_empty());
        assert!(begun(&[0xED]).representatives().is_empty());
        assert!(begun(&[0xF0]).representatives().is_empty());
        assert!(begun(&[0xF4]).representatives().is_empty());
    }

    #[test]
    fn agrees_with_the_standard_library_on_every_scalar() {
        for code_point in (0..=MAX_SCALAR)
            .step_by(7)
            .chain([0x7F, 0x80, 0x7FF, 0x800, 0xFFFF])
        {
            if let Some(character) = char::from_u32(code_point) {
                let mut buffer = [0; 4];
                let encoded = character.encode_utf8(&mut buffer);
                assert_eq!(decode(encoded.as_bytes()), Some(code_point));
            }
        }
    }

    #[test]
    fn refuses_overlong_surrogate_and_out_of_range_sequences() {
        for bad in [
            &[0xC0, 0x80][..],
            &[0xC1, 0xBF],
            &[0xE0, 0x80, 0x80],
            &[0xED, 0xA0, 0x80],
            &[0xF0, 0x80, 0x80, 0x80],
            &[0xF4, 0x90, 0x80, 0x80],
            &[0xF5, 0x80, 0x80, 0x80],
            &[0x80],
            &[0xFF],
        ] {
            assert_eq!(decode(bad), None, "{bad:x?}");
        }
    }

    #[test]
    fn code_point_ranges_of_prefixes_are_exact() {
        let range_after = |bytes: &[u8]| {
            let mut partial = Partial::NONE;
            for &byte in bytes {
                match partial.push(byte) {
                    Step::Incomplete(next) => partial = next,
                    other => panic!("{other:?}"),
                }
            }
            partial.code_point_range()
        };
        assert_eq!(range_after(&[0xE0]), (0x800, 0xFFF));
        assert_eq!(range_after(&[0xED]), (0xD000, 0xD7FF));
        assert_eq!(range_after(&[0xF0]), (0x10000, 0x3FFFF));
        assert_eq!(range_after(&[0xE0, 0xA0]), (0x800, 0x83F));
        assert_eq!(range_after(&[0xF4]), (0x100000, 0x10FFFF));
        assert_eq!(range_after(&[0xC3]), (0xC0, 0xFF));
        // Brute force over every scalar: for each lead byte, the scalars starting with
        // it are exactly the range.
        let mut seen_per_lead = std::collections::BTreeMap::<u8, (u32, u32, u32)>::new();
        for character in (0..=MAX_SCALAR).filter_map(char::from_u32) {
            let mut buffer = [0; 4];
            let lead = character.encode_utf8(&mut buffer).as_bytes()[0];
            let code_point = u32::from(character);
            let entry = seen_per_lead
                .entry(lead)
                .or_insert((code_point, code_point, 0));
            entry.1 = code_point;
            entry.2 += 1;
        }
        for (lead, (first, last, count)) in
            seen_per_lead.into_iter().filter(|(lead, _)| *lead >= 0xC2)
        {
            assert_eq!(range_after(&[lead]), (first, last), "{lead:x}");
            assert_eq!(count, last - first + 1, "{lead:x}");
        }
    }
}
