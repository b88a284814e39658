//! The `format` keyword: grammars of the formats Grail enforces.
//!
//! The reference is the `jsonschema` crate (0.61, draft 2020-12, format validation on):
//! a format's grammar accepts exactly the strings its validator accepts, written between
//! the quotes of a JSON string in canonical form (see [`crate::json_text`]). Where no
//! grammar of reasonable size can do that, the format is [`FormatGrammar::Unsupported`];
//! names the validator does not check are [`FormatGrammar::Annotation`].
//!
//! What the validator accepts, format by format:
//!
//! - `date`: `YYYY-MM-DD`, the day checked against the month, leap years Gregorian
//!   (year `0000` is one).
//! - `time`: `HH:MM:SS`, hour `00`-`23`, an optional `.` and one or more digits, then `Z`,
//!   `z` or `+HH:MM`/`-HH:MM` (offset hour `00`-`23`). Second `60` only where the time,
//!   taken back to UTC by its offset, is `23:59`.
//! - `date-time`: a `date`, `T` or `t`, a `time`.
//! - `duration`: RFC 3339's grammar: `P` and weeks alone, or years-months-days (no
//!   years with days but no months) with an optional `T` and hours-minutes-seconds (no
//!   hours with seconds but no minutes), or the time part alone; any number of digits.
//! - `ipv4`: four decimal octets `0`-`255` without leading zeros.
//! - `ipv6`: RFC 4291's text forms (groups of one to four hex digits, one `::`, a
//!   trailing IPv4 address), no zone.
//! - `uuid`: 8-4-4-4-12 hex digits in either case, no version check.
//! - `uri`, `uri-reference`: RFC 3986; `iri`, `iri-reference`: RFC 3987.
//! - `json-pointer`, `relative-json-pointer`: RFC 6901 and its relative draft.
//! - `uri-template`: RFC 6570 level 4 (literals of any character but controls, space,
//!   DEL and `"<>\^{|}`, backquote and `%` unless percent-encoded; prefix lengths
//!   `1`-`9999`).
//!
//! Unsupported: `hostname` (Punycode labels, a 253-character total), `email` (its
//! domain is a hostname, a 64-byte local part), `idn-hostname` and `idn-email` (IDNA),
//! `regex` (ECMA-262). [`format_superset`] gives the first two as supersets for lenient
//! compilation.

use grail_grammar::{CharSet, Expr};

use crate::json_text;

/// What Grail can do with a `format` value.
#[derive(Debug, Clone, PartialEq)]
pub enum FormatGrammar {
    /// The characters (between the quotes) of exactly the strings the format accepts.
    Exact(Expr),
    /// Not a format the validator checks (unknown names like "int32", "uri-template" if it
    /// doesn't check it...): an annotation, no constraint.
    Annotation,
    /// A format the validator checks that no grammar here enforces exactly; the reason.
    Unsupported(&'static str),
}

/// Why `hostname` has no exact grammar.
const HOSTNAME_REASON: &str = "format `hostname`: labels starting with `xn--` must decode as \
    valid Punycode (IDNA), and the 253-character total over labels of up to 63 would need a \
    length-counting grammar of tens of thousands of states";

/// Why `email` has no exact grammar.
const EMAIL_REASON: &str = "format `email`: the domain is checked as a hostname (Punycode \
    labels, 253-character total) and the local part is limited to 64 bytes across escapes, \
    which would need length-counting grammars of thousands of states";

/// Why the internationalized formats have no grammar.
const IDN_REASON: &str = "formats `idn-hostname` and `idn-email`: checked by IDNA (UTS #46) \
    mapping and Unicode properties, which no grammar here mirrors";

/// Why `regex` has no grammar.
const REGEX_REASON: &str = "format `regex`: whether a string is a valid ECMA-262 regular \
    expression (nested groups, the regex engine's own rules) is not a grammar here";

/// The formats the validator checks, each one Grail enforces exactly or calls
/// unsupported: what a name in [`CHECKED_FORMATS`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Date,
    Time,
    DateTime,
    Duration,
    Ipv4,
    Ipv6,
    Uuid,
    Uri,
    UriReference,
    Iri,
    IriReference,
    JsonPointer,
    RelativeJsonPointer,
    UriTemplate,
    Hostname,
    Email,
    IdnHostname,
    IdnEmail,
    Regex,
}

/// Every `format` value the validator checks, with the format it names: the one list both
/// [`is_annotation`] and [`format_grammar`] read (every other name is an annotation).
const CHECKED_FORMATS: &[(&str, Format)] = &[
    ("date", Format::Date),
    ("time", Format::Time),
    ("date-time", Format::DateTime),
    ("duration", Format::Duration),
    ("ipv4", Format::Ipv4),
    ("ipv6", Format::Ipv6),
    ("uuid", Format::Uuid),
    ("uri", Format::Uri),
    ("uri-reference", Format::UriReference),
    ("iri", Format::Iri),
    ("iri-reference", Format::IriReference),
    ("json-pointer", Format::JsonPointer),
    ("relative-json-pointer", Format::RelativeJsonPointer),
    ("uri-template", Format::UriTemplate),
    ("hostname", Format::Hostname),
    ("email", Format::Email),
    ("idn-hostname", Format::IdnHostname),
    ("idn-email", Format::IdnEmail),
    ("regex", Format::Regex),
];

impl Format {
    /// The checked format named `name`, `None` for an annotation.
    fn named(name: &str) -> Option<Format> {
        CHECKED_FORMATS
            .iter()
            .find(|(checked, _)| *checked == name)
            .map(|&(_, format)| format)
    }

    /// The grammar of this format, or why there is none.
    fn grammar(self) -> FormatGrammar {
        match self {
            Format::Date => FormatGrammar::Exact(date()),
            Format::Time => FormatGrammar::Exact(time()),
            Format::DateTime => FormatGrammar::Exact(date_time()),
            Format::Duration => FormatGrammar::Exact(duration()),
            Format::Ipv4 => FormatGrammar::Exact(ipv4()),
            Format::Ipv6 => FormatGrammar::Exact(ipv6()),
            Format::Uuid => FormatGrammar::Exact(uuid()),
            Format::Uri => FormatGrammar::Exact(Uri::ASCII.absolute()),
            Format::UriReference => FormatGrammar::Exact(Uri::ASCII.reference()),
            Format::Iri => FormatGrammar::Exact(Uri::INTERNATIONAL.absolute()),
            Format::IriReference => FormatGrammar::Exact(Uri::INTERNATIONAL.reference()),
            Format::JsonPointer => FormatGrammar::Exact(json_pointer()),
            Format::RelativeJsonPointer => FormatGrammar::Exact(relative_json_pointer()),
            Format::UriTemplate => FormatGrammar::Exact(uri_template()),
            Format::Hostname => FormatGrammar::Unsupported(HOSTNAME_REASON),
            Format::Email => FormatGrammar::Unsupported(EMAIL_REASON),
            Format::IdnHostname | Format::IdnEmail => FormatGrammar::Unsupported(IDN_REASON),
            Format::Regex => FormatGrammar::Unsupported(REGEX_REASON),
        }
    }
}

/// True when the format named `name` asserts nothing (see [`FormatGrammar::Annotation`]):
/// what [`format_grammar`] says, without building a grammar.
pub fn is_annotation(name: &str) -> bool {
    Format::named(name).is_none()
}

/// The grammar of the JSON Schema `format` named `name`.
pub fn format_grammar(name: &str) -> FormatGrammar {
    Format::named(name).map_or(FormatGrammar::Annotation, Format::grammar)
}

/// For a format [`format_grammar`] calls unsupported, a grammar accepting every string
/// the validator accepts (and some it rejects): the closest superset this module knows,
/// for compiling leniently. `None` when it knows none tighter than any string.
///
/// - `hostname`: labels of 1 to 63 letters, digits and hyphens, no hyphen first or last,
///   `--` third and fourth only after `xn`, at most 127 labels; neither the Punycode of
///   `xn--` labels nor the 253-character total is checked.
/// - `email`: the validator's forms (dot-atom or quoted local part, hostname or
///   bracketed IPv4 / `IPv6:` domain, `""@domain`, and `display name <address>`), with
///   the domain read as the `hostname` superset and lengths checked only per item.
pub fn format_superset(name: &str) -> Option<Expr> {
    match name {
        "hostname" => Some(hostname_superset()),
        "email" => Some(email_superset()),
        _ => None,
    }
}

/// The least and the most characters of the strings `expr` writes between a string's
/// quotes (`None` for no most), when every character written is one character of the
/// string: `expr` can write no `\` (so no escape) and refers to no rule. `None`
/// otherwise, or when `expr` writes nothing.
pub fn char_lengths(expr: &Expr) -> Option<(u64, Option<u64>)> {
    let add = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a.saturating_add(b));
    match expr {
        Expr::Empty => Some((0, Some(0))),
        Expr::Literal(text) => {
            let count = text.chars().count() as u64;
            (!text.contains('\\')).then_some((count, Some(count)))
        }
        Expr::Chars(set) => {
            (!set.contains('\\' as u32) && !set.matches_nothing()).then_some((1, Some(1)))
        }
        Expr::Any | Expr::Rule(_) | Expr::Token(_) => None,
        Expr::Sequence(items) => items.iter().try_fold((0, Some(0)), |(least, most), item| {
            let (item_least, item_most) = char_lengths(item)?;
            Some((least + item_least, add(most, item_most)))
        }),
        Expr::Choice(choices) => {
            let mut lengths = choices.iter().map(char_lengths);
            let first = lengths.next()??;
            lengths.try_fold(first, |(least, most), lengths| {
                let (item_least, item_most) = lengths?;
                Some((
                    least.min(item_least),
                    most.zip(item_most).map(|(a, b)| a.max(b)),
                ))
            })
        }
        Expr::Repeat(item, min, max) => {
            let (least, most) = char_lengths(item)?;
            let most = match (max, most) {
                (Some(0), _) | (_, Some(0)) => Some(0),
                (Some(max), Some(most)) => Some(most.saturating_mul(u64::from(*max))),
                _ => None,
            };
            Some((least.saturating_mul(u64::from(*min)), most))
        }
    }
}

// ---------------------------------------------------------------------------------------
// Building blocks.

/// One character in the inclusive ranges.
fn class(ranges: &[(char, char)]) -> Expr {
    Expr::chars(ranges.iter().copied())
}

/// One of the listed characters.
fn one_of(characters: &str) -> Expr {
    Expr::chars(characters.chars().map(|character| (character, character)))
}

/// `[0-9]`.
fn digit() -> Expr {
    class(&[('0', '9')])
}

/// `[0-9a-fA-F]`.
fn hex_digit() -> Expr {
    json_text::hex_digit()
}

/// `expr{count}`.
fn exactly(expr: Expr, count: u32) -> Expr {
    between(expr, count, Some(count))
}

/// `expr{min,max}`, written plainly when it is nothing (`{0}`) or `expr` once (`{1}`).
fn between(expr: Expr, min: u32, max: Option<u32>) -> Expr {
    match (min, max) {
        (_, Some(0)) => Expr::Empty,
        (1, Some(1)) => expr,
        _ => expr.repeat(min, max),
    }
}

/// The numbers `low..=high` written with exactly `width` decimal digits (zero-padded).
fn padded_number_range(low: u32, high: u32, width: u32) -> Expr {
    if width <= 1 {
        return class(&[(decimal_digit(low), decimal_digit(high))]);
    }
    let unit = 10u32.pow(width - 1);
    let (first_low, first_high) = (low / unit, high / unit);
    let (rest_low, rest_high) = (low % unit, high % unit);
    if first_low == first_high {
        return Expr::sequence([
            Expr::literal(decimal_digit(first_low).to_string()),
            padded_number_range(rest_low, rest_high, width - 1),
        ]);
    }
    let mut choices = Vec::new();
    let middle_low = if rest_low == 0 {
        first_low
    } else {
        choices.push(Expr::sequence([
            Expr::literal(decimal_digit(first_low).to_string()),
            padded_number_range(rest_low, unit - 1, width - 1),
        ]));
        first_low + 1
    };
    let middle_high = if rest_high == unit - 1 {
        first_high
    } else {
        first_high - 1
    };
    if middle_low <= middle_high {
        choices.push(Expr::sequence([
            class(&[(decimal_digit(middle_low), decimal_digit(middle_high))]),
            exactly(digit(), width - 1),
        ]));
    }
    if rest_high != unit - 1 {
        choices.push(Expr::sequence([
            Expr::literal(decimal_digit(first_high).to_string()),
            padded_number_range(0, rest_high, width - 1),
        ]));
    }
    single_or_choice(choices)
}

/// The character of a decimal digit value (`0`-`9`; larger values clamp to `9`).
fn decimal_digit(value: u32) -> char {
    char::from_digit(value.min(9), 10).unwrap_or('9')
}

/// The one expression, or a choice of several.
fn single_or_choice(mut choices: Vec<Expr>) -> Expr {
    if choices.len() == 1 {
        choices.pop().unwrap_or(Expr::Empty)
    } else {
        Expr::Choice(choices)
    }
}

/// A set of code points from inclusive ranges of characters.
fn char_set(ranges: &[(char, char)]) -> CharSet {
    CharSet::new(
        ranges
            .iter()
            .map(|&(first, last)| (first as u32, last as u32)),
        false,
    )
}

/// The set of the listed characters.
fn set_of(characters: &str) -> CharSet {
    CharSet::new(
        characters
            .chars()
            .map(|character| (character as u32, character as u32)),
        false,
    )
}

// ---------------------------------------------------------------------------------------
// Dates and times.

/// `date`: `YYYY-MM-DD` with the day checked against the month and leap years.
fn date() -> Expr {
    Expr::choice([
        Expr::sequence([
            exactly(digit(), 4),
            Expr::literal("-"),
            month_and_day_but_leap_day(),
        ]),
        Expr::sequence([leap_year(), Expr::literal("-02-29")]),
    ])
}

/// `MM-DD` for every day of the calendar but February 29.
fn month_and_day_but_leap_day() -> Expr {
    let day_from_01_to = |last: u32| padded_number_range(1, last, 2);
    Expr::choice([
        Expr::sequence([
            Expr::choice([
                Expr::sequence([Expr::literal("0"), one_of("13578")]),
                Expr::sequence([Expr::literal("1"), one_of("02")]),
            ]),
            Expr::literal("-"),
            day_from_01_to(31),
        ]),
        Expr::sequence([
            Expr::choice([
                Expr::sequence([Expr::literal("0"), one_of("469")]),
                Expr::literal("11"),
            ]),
            Expr::literal("-"),
            day_from_01_to(30),
        ]),
        Expr::sequence([Expr::literal("02-"), day_from_01_to(28)]),
    ])
}

/// Four-digit years divisible by 4, except centuries not divisible by 400.
fn leap_year() -> Expr {
    // Two digits divisible by 4: an even tens digit with 0, 4 or 8, an odd one with 2 or 6.
    let divisible_by_four_but_00 = Expr::choice([
        Expr::sequence([one_of("02468"), one_of("48")]),
        Expr::sequence([one_of("13579"), one_of("26")]),
        Expr::sequence([one_of("2468"), Expr::literal("0")]),
    ]);
    let divisible_by_four = Expr::choice([
        Expr::sequence([one_of("02468"), one_of("048")]),
        Expr::sequence([one_of("13579"), one_of("26")]),
    ]);
    Expr::choice([
        Expr::sequence([exactly(digit(), 2), divisible_by_four_but_00]),
        Expr::sequence([divisible_by_four, Expr::literal("00")]),
    ])
}

/// Minutes in a day.
const MINUTES_PER_DAY: u32 = 24 * 60;

/// `time`: `HH:MM:SS[.fraction]` and a zone, second 60 only at 23:59 UTC.
fn time() -> Expr {
    let hour = padded_number_range(0, 23, 2);
    let minute = padded_number_range(0, 59, 2);
    let zone = Expr::choice([
        one_of("Zz"),
        Expr::sequence([
            one_of("+-"),
            hour.clone(),
            Expr::literal(":"),
            minute.clone(),
        ]),
    ]);
    let ordinary_second = Expr::sequence([
        hour,
        Expr::literal(":"),
        minute,
        Expr::literal(":"),
        padded_number_range(0, 59, 2),
        fraction(),
        zone,
    ]);
    Expr::choice([ordinary_second, leap_second()])
}

/// `(\.[0-9]+)?`
fn fraction() -> Expr {
    Expr::sequence([Expr::literal("."), digit().one_or_more()]).optional()
}

/// `HH:MM:60[.fraction]` with each zone that puts `HH:MM` at 23:59 UTC: one choice per
/// minute of the day (the fraction lies between the minute and its zones, so the grammar
/// must remember the minute across it).
fn leap_second() -> Expr {
    /// Built once per process (1,440 minutes of formatted text, about 6 M instructions)
    /// and cloned for each schema that uses `date-time` or `time`.
    static LEAP_SECOND: std::sync::LazyLock<Expr> = std::sync::LazyLock::new(build_leap_second);
    LEAP_SECOND.clone()
}

/// [`leap_second`], built.
fn build_leap_second() -> Expr {
    let last_minute = MINUTES_PER_DAY - 1;
    let as_offset = |minutes: u32| format!("{:02}:{:02}", minutes / 60, minutes % 60);
    let hours = (0..24)
        .map(|hour| {
            let minutes = (0..60)
                .map(|minute| {
                    let local = hour * 60 + minute;
                    // UTC = local - offset: `+` offsets of local + 1 minute, `-` offsets of
                    // 23:59 - local (both modulo a day).
                    let ahead = (local + 1) % MINUTES_PER_DAY;
                    let behind = last_minute - local;
                    let mut zones = vec![
                        Expr::literal(format!("+{}", as_offset(ahead))),
                        Expr::literal(format!("-{}", as_offset(behind))),
                    ];
                    if local == last_minute {
                        zones.push(one_of("Zz"));
                    }
                    Expr::sequence([
                        Expr::literal(format!("{minute:02}:60")),
                        fraction(),
                        Expr::Choice(zones),
                    ])
                })
                .collect::<Vec<_>>();
            Expr::sequence([Expr::literal(format!("{hour:02}:")), Expr::Choice(minutes)])
        })
        .collect::<Vec<_>>();
    Expr::Choice(hours)
}

/// `date-time`: a date, `T` or `t`, a time.
fn date_time() -> Expr {
    Expr::sequence([date(), one_of("Tt"), time()])
}

/// `duration`: RFC 3339 Appendix A.
fn duration() -> Expr {
    let number = || digit().one_or_more();
    let unit = |letter: &'static str| Expr::sequence([number(), Expr::literal(letter)]);
    // `a [b [c]]`, `b [c]` or `c`: units in order, none skipped between two present.
    let in_order = |first: &'static str, second: &'static str, third: &'static str| {
        let third_part = || unit(third);
        let second_part = || Expr::sequence([unit(second), third_part().optional()]);
        Expr::choice([
            Expr::sequence([unit(first), second_part().optional()]),
            second_part(),
            third_part(),
        ])
    };
    let time_part = Expr::sequence([Expr::literal("T"), in_order("H", "M", "S")]);
    Expr::sequence([
        Expr::literal("P"),
        Expr::choice([
            unit("W"),
            Expr::sequence([in_order("Y", "M", "D"), time_part.clone().optional()]),
            time_part,
        ]),
    ])
}

// ---------------------------------------------------------------------------------------
// Addresses and identifiers.

/// `0`-`255` without leading zeros.
fn decimal_octet() -> Expr {
    Expr::choice([
        Expr::literal("0"),
        Expr::sequence([class(&[('1', '9')]), digit().optional()]),
        Expr::sequence([Expr::literal("1"), digit(), digit()]),
        Expr::sequence([Expr::literal("2"), class(&[('0', '4')]), digit()]),
        Expr::sequence([Expr::literal("25"), class(&[('0', '5')])]),
    ])
}

/// `ipv4`: dotted quad, no leading zeros.
fn ipv4() -> Expr {
    Expr::sequence([
        decimal_octet(),
        exactly(Expr::sequence([Expr::literal("."), decimal_octet()]), 3),
    ])
}

/// `ipv6`: eight groups, or fewer around one `::`, the last two groups possibly an IPv4
/// address.
fn ipv6() -> Expr {
    let group = || hex_digit().repeat(1, Some(4));
    let group_then_colon = || Expr::sequence([group(), Expr::literal(":")]);
    let colon_then_group = || Expr::sequence([Expr::literal(":"), group()]);
    let mut forms = vec![Expr::sequence([
        exactly(group_then_colon(), 6),
        Expr::choice([
            Expr::sequence([group(), Expr::literal(":"), group()]),
            ipv4(),
        ]),
    ])];
    // `::` stands for at least one zero group: `head` groups before it, at most
    // `7 - head` after it.
    for head in 0..=7u32 {
        let before = if head == 0 {
            Expr::Empty
        } else {
            Expr::sequence([group(), exactly(colon_then_group(), head - 1)])
        };
        let room = 7 - head;
        let mut after = vec![Expr::Empty];
        if room >= 1 {
            after.push(Expr::sequence([
                group(),
                between(colon_then_group(), 0, Some(room - 1)),
            ]));
        }
        if room >= 2 {
            after.push(Expr::sequence([
                between(group_then_colon(), 0, Some(room - 2)),
                ipv4(),
            ]));
        }
        forms.push(Expr::sequence([
            before,
            Expr::literal("::"),
            single_or_choice(after),
        ]));
    }
    Expr::Choice(forms)
}

/// `uuid`: 8-4-4-4-12 hex digits.
fn uuid() -> Expr {
    let hex_run = |count: u32| exactly(hex_digit(), count);
    Expr::sequence([
        hex_run(8),
        Expr::literal("-"),
        hex_run(4),
        Expr::literal("-"),
        hex_run(4),
        Expr::literal("-"),
        hex_run(4),
        Expr::literal("-"),
        hex_run(12),
    ])
}

// ---------------------------------------------------------------------------------------
// URIs and IRIs.

/// RFC 3986 (URIs) or RFC 3987 (IRIs: `ucschar` in most components, `iprivate` in the
/// query too).
#[derive(Debug, Clone, Copy)]
struct Uri {
    international: bool,
}

impl Uri {
    /// RFC 3986.
    const ASCII: Uri = Uri {
        international: false,
    };
    /// RFC 3987.
    const INTERNATIONAL: Uri = Uri {
        international: true,
    };

    /// RFC 3987's `ucschar`.
    fn ucschar() -> CharSet {
        let mut ranges = vec![(0xA0, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF)];
        ranges.extend((1..=0xDu32).map(|plane| (plane << 16, (plane << 16) | 0xFFFD)));
        ranges.push((0xE1000, 0xEFFFD));
        CharSet::new(ranges, false)
    }

    /// RFC 3987's `iprivate`.
    fn iprivate() -> CharSet {
        CharSet::new(
            [(0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD)],
            false,
        )
    }

    /// `unreserved / sub-delims` and the listed extra characters.
    fn ascii_with(extra: &str) -> CharSet {
        char_set(&[('a', 'z'), ('A', 'Z'), ('0', '9')])
            .union(&set_of("-._~!$&'()*+,;="))
            .union(&set_of(extra))
    }

    /// One character of a component: the ASCII set (`ucschar` added for IRIs) or a
    /// percent-encoded octet.
    fn component_char(&self, extra: &str) -> Expr {
        let mut set = Uri::ascii_with(extra);
        if self.international {
            set = set.union(&Uri::ucschar());
        }
        Expr::choice([Expr::Chars(set), percent_encoded()])
    }

    /// `pchar` (`ipchar`).
    fn path_char(&self) -> Expr {
        self.component_char(":@")
    }

    /// `pchar / "/"`.
    fn path_or_slash(&self) -> Expr {
        self.component_char(":@/")
    }

    /// `scheme ":"`.
    fn scheme() -> Expr {
        Expr::sequence([
            class(&[('a', 'z'), ('A', 'Z')]),
            Expr::Chars(char_set(&[('a', 'z'), ('A', 'Z'), ('0', '9')]).union(&set_of("+-.")))
                .zero_or_more(),
            Expr::literal(":"),
        ])
    }

    /// `[ userinfo "@" ] host [ ":" port ]`.
    fn authority(&self) -> Expr {
        let ip_future = Expr::sequence([
            one_of("vV"),
            hex_digit().one_or_more(),
            Expr::literal("."),
            Expr::Chars(Uri::ascii_with(":")).one_or_more(),
        ]);
        let host = Expr::choice([
            Expr::sequence([
                Expr::literal("["),
                Expr::choice([ipv6(), ip_future]),
                Expr::literal("]"),
            ]),
            self.component_char("").zero_or_more(),
        ]);
        Expr::sequence([
            Expr::sequence([self.component_char(":").zero_or_more(), Expr::literal("@")])
                .optional(),
            host,
            Expr::sequence([Expr::literal(":"), digit().zero_or_more()]).optional(),
        ])
    }

    /// `"//" authority path-abempty`.
    fn network_path(&self) -> Expr {
        Expr::sequence([
            Expr::literal("//"),
            self.authority(),
            Expr::sequence([Expr::literal("/"), self.path_or_slash().zero_or_more()]).optional(),
        ])
    }

    /// `path-absolute`: `/` not followed by `/`.
    fn absolute_path(&self) -> Expr {
        Expr::sequence([
            Expr::literal("/"),
            Expr::sequence([self.path_char(), self.path_or_slash().zero_or_more()]).optional(),
        ])
    }

    /// `[ "?" query ] [ "#" fragment ]`.
    fn query_and_fragment(&self) -> Expr {
        let mut query_set = Uri::ascii_with(":@/?");
        let mut fragment_set = query_set.clone();
        if self.international {
            query_set = query_set.union(&Uri::ucschar()).union(&Uri::iprivate());
            fragment_set = fragment_set.union(&Uri::ucschar());
        }
        let run = |set: CharSet| Expr::choice([Expr::Chars(set), percent_encoded()]).zero_or_more();
        Expr::sequence([
            Expr::sequence([Expr::literal("?"), run(query_set)]).optional(),
            Expr::sequence([Expr::literal("#"), run(fragment_set)]).optional(),
        ])
    }

    /// `uri` / `iri`: `scheme ":" hier-part [ "?" query ] [ "#" fragment ]`.
    fn absolute(&self) -> Expr {
        let rootless = Expr::sequence([self.path_char(), self.path_or_slash().zero_or_more()]);
        Expr::sequence([
            Uri::scheme(),
            Expr::choice([
                self.network_path(),
                self.absolute_path(),
                rootless,
                Expr::Empty,
            ]),
            self.query_and_fragment(),
        ])
    }

    /// `uri-reference` / `iri-reference`: a URI or a relative reference (whose first
    /// segment has no colon). The authority and absolute-path forms are shared by both,
    /// with or without a scheme.
    fn reference(&self) -> Expr {
        let rootless = Expr::sequence([self.path_char(), self.path_or_slash().zero_or_more()]);
        let no_colon_segment = Expr::sequence([
            self.component_char("@").one_or_more(),
            Expr::sequence([Expr::literal("/"), self.path_or_slash().zero_or_more()]).optional(),
        ]);
        Expr::sequence([
            Expr::choice([
                Expr::sequence([
                    Uri::scheme().optional(),
                    Expr::choice([self.network_path(), self.absolute_path(), Expr::Empty]),
                ]),
                Expr::sequence([Uri::scheme(), rootless]),
                no_colon_segment,
            ]),
            self.query_and_fragment(),
        ])
    }
}

/// `"%" HEXDIG HEXDIG`.
fn percent_encoded() -> Expr {
    Expr::sequence([Expr::literal("%"), hex_digit(), hex_digit()])
}

// ---------------------------------------------------------------------------------------
// JSON pointers and URI templates.

/// One character of a JSON pointer's reference token: anything but `/` and `~` (in
/// canonical JSON form), or `~0` / `~1`.
fn pointer_token_char() -> Expr {
    let plain = CharSet::new([('/' as u32, '/' as u32), ('~' as u32, '~' as u32)], true);
    let mut choices = match json_text::encoded_set(&plain) {
        Expr::Choice(choices) => choices,
        single => vec![single],
    };
    choices.push(Expr::literal("~0"));
    choices.push(Expr::literal("~1"));
    Expr::Choice(choices)
}

/// `json-pointer`: empty, or `/`-separated reference tokens.
fn json_pointer() -> Expr {
    non_empty_json_pointer().optional()
}

/// A JSON pointer that is not empty: `/` and then tokens and separators.
fn non_empty_json_pointer() -> Expr {
    Expr::sequence([
        Expr::literal("/"),
        Expr::choice([pointer_token_char(), Expr::literal("/")]).zero_or_more(),
    ])
}

/// `relative-json-pointer`: a non-negative integer without leading zeros, then `#` or a
/// JSON pointer.
fn relative_json_pointer() -> Expr {
    Expr::sequence([
        Expr::choice([
            Expr::literal("0"),
            Expr::sequence([class(&[('1', '9')]), digit().zero_or_more()]),
        ]),
        Expr::choice([Expr::literal("#"), non_empty_json_pointer()]).optional(),
    ])
}

/// `uri-template`: literals and `{...}` expressions.
fn uri_template() -> Expr {
    // Not a literal: controls, space, `"`, `<`, `>`, `%` (unless encoded), `\`, `^`, `` ` ``,
    // `{`, `|`, `}` and DEL.
    let literal = Expr::choice([
        Expr::Chars(CharSet::new(
            char_set(&[('\0', ' '), ('\u{7F}', '\u{7F}')])
                .union(&set_of("\"<>%\\^`{|}"))
                .members(),
            true,
        )),
        percent_encoded(),
    ]);
    let variable_char = Expr::choice([
        class(&[('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')]),
        percent_encoded(),
    ]);
    let variable_name = Expr::sequence([
        variable_char.clone().one_or_more(),
        Expr::sequence([Expr::literal("."), variable_char.one_or_more()]).zero_or_more(),
    ]);
    let variable = Expr::sequence([
        variable_name,
        Expr::choice([
            Expr::sequence([
                Expr::literal(":"),
                class(&[('1', '9')]),
                digit().repeat(0, Some(3)),
            ]),
            Expr::literal("*"),
        ])
        .optional(),
    ]);
    let expression = Expr::sequence([
        Expr::literal("{"),
        one_of("+#./;?&=,!@|").optional(),
        variable.clone(),
        Expr::sequence([Expr::literal(","), variable]).zero_or_more(),
        Expr::literal("}"),
    ]);
    Expr::choice([literal, expression]).zero_or_more()
}

// ---------------------------------------------------------------------------------------
// Supersets of the unsupported formats.

/// `[a-zA-Z0-9]`.
fn letter_or_digit() -> Expr {
    class(&[('a', 'z'), ('A', 'Z'), ('0', '9')])
}

/// `[a-zA-Z0-9-]`.
fn letter_digit_or_hyphen() -> Expr {
    class(&[('a', 'z'), ('A', 'Z'), ('0', '9'), ('-', '-')])
}

/// A hostname label as the validator checks it, but for the Punycode of `xn--` labels:
/// 1 to 63 letters, digits and hyphens, no hyphen first or last, `--` in third and fourth
/// place only after `xn`.
fn hostname_label_superset() -> Expr {
    let inner = letter_digit_or_hyphen;
    let edge = letter_or_digit;
    Expr::choice([
        edge(),
        Expr::sequence([edge(), edge()]),
        Expr::sequence([edge(), inner(), edge()]),
        // Four or more, third and fourth not both hyphens.
        Expr::sequence([
            edge(),
            inner(),
            Expr::choice([
                Expr::sequence([edge(), inner().repeat(0, Some(59)), edge()]),
                Expr::sequence([
                    Expr::literal("-"),
                    edge(),
                    Expr::sequence([inner().repeat(0, Some(58)), edge()]).optional(),
                ]),
            ]),
        ]),
        Expr::sequence([Expr::literal("xn--"), inner().repeat(0, Some(58)), edge()]),
    ])
}

/// `hostname` without the Punycode and total-length checks (at most 127 labels).
fn hostname_superset() -> Expr {
    Expr::sequence([
        hostname_label_superset(),
        Expr::sequence([Expr::literal("."), hostname_label_superset()]).repeat(0, Some(126)),
    ])
}

/// Unicode white space (`char::is_whitespace`), as written in canonical form.
fn white_space() -> Expr {
    json_text::encoded_set(&CharSet::new(
        [
            (0x09, 0x0D),
            (0x20, 0x20),
            (0x85, 0x85),
            (0xA0, 0xA0),
            (0x1680, 0x1680),
            (0x2000, 0x200A),
            (0x2028, 0x2029),
            (0x202F, 0x202F),
            (0x205F, 0x205F),
            (0x3000, 0x3000),
        ],
        false,
    ))
}

/// `email` with the domain as the hostname superset and lengths counted in items.
fn email_superset() -> Expr {
    // ASCII `atext`.
    let atom_char = || {
        Expr::Chars(
            char_set(&[('a', 'z'), ('A', 'Z'), ('0', '9')]).union(&set_of("!#$%&'*+-/=?^_`{|}~")),
        )
    };
    let dot_atom = Expr::sequence([
        atom_char(),
        Expr::choice([
            atom_char(),
            Expr::sequence([Expr::literal("."), atom_char()]),
        ])
        .repeat(0, Some(63)),
    ]);
    // `qtext`, space and tab, or `\` and a visible character.
    let quoted_item = Expr::choice([
        json_text::encoded_set(&CharSet::new(
            [(0x09, 0x09), (0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E)],
            false,
        )),
        Expr::sequence([
            json_text::encoded_char('\\'),
            json_text::encoded_set(&CharSet::new([(0x21, 0x7E)], false)),
        ]),
    ]);
    let quote = || json_text::encoded_char('"');
    let quoted = Expr::sequence([quote(), quoted_item.repeat(1, Some(62)), quote()]);
    let domain = || {
        Expr::choice([
            hostname_superset(),
            Expr::sequence([Expr::literal("["), ipv4(), Expr::literal("]")]),
            Expr::sequence([
                Expr::literal("["),
                one_of("Ii"),
                one_of("Pp"),
                one_of("Vv"),
                Expr::literal("6:"),
                ipv6(),
                Expr::literal("]"),
            ]),
        ])
    };
    let address = Expr::sequence([
        Expr::choice([dot_atom, quoted]),
        Expr::literal("@"),
        domain(),
    ]);
    let any_char = json_text::encoded_set(&CharSet::new([], true));
    Expr::choice([
        address.clone(),
        // The validator reads `""@domain` as `"a"@domain`.
        Expr::sequence([quote(), quote(), Expr::literal("@"), domain()]),
        // `display name <address>`, split at the last ` <`, white space trimmed.
        Expr::sequence([
            any_char.zero_or_more(),
            Expr::literal(" <"),
            white_space().zero_or_more(),
            address,
            Expr::literal(">"),
            white_space().zero_or_more(),
        ]),
    ])
}

#[cfg(test)]
mod tests;
