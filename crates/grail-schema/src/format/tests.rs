use super::*;
use grail_engine::{CompiledGrammar, Matcher};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A format's grammar, compiled once.
struct Recognizer {
    compiled: CompiledGrammar,
}

impl Recognizer {
    fn new(expr: Expr) -> Recognizer {
        let mut builder = grail_grammar::GrammarBuilder::new();
        let root = builder.root();
        builder.define(root, expr).expect("defined");
        let grammar = builder.build().expect("built");
        let compiled = CompiledGrammar::compile(&grammar, &Default::default()).expect("compiled");
        Recognizer { compiled }
    }

    /// Whether the grammar accepts the string `raw` (written in canonical JSON form).
    fn accepts(&self, raw: &str) -> bool {
        let mut matcher = Matcher::new(&self.compiled);
        matcher.accept_str(&canonical(raw)).is_ok() && matcher.is_accepting()
    }
}

/// The characters of `raw` as written between the quotes of a canonical JSON string.
fn canonical(raw: &str) -> String {
    let mut text = String::new();
    for character in raw.chars() {
        match character {
            '"' => text.push_str("\\\""),
            '\\' => text.push_str("\\\\"),
            '\u{8}' => text.push_str("\\b"),
            '\u{C}' => text.push_str("\\f"),
            '\n' => text.push_str("\\n"),
            '\r' => text.push_str("\\r"),
            '\t' => text.push_str("\\t"),
            control if (control as u32) < 0x20 || control == '\u{7F}' => {
                text.push_str(&format!("\\u{:04x}", control as u32))
            }
            plain => text.push(plain),
        }
    }
    text
}

/// The `jsonschema` crate's verdict for `{"type": "string", "format": name}`.
struct Oracle {
    validator: jsonschema::Validator,
}

impl Oracle {
    fn new(name: &str) -> Oracle {
        let schema = serde_json::json!({"type": "string", "format": name});
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(&schema)
            .expect("schema");
        Oracle { validator }
    }

    fn accepts(&self, raw: &str) -> bool {
        self.validator
            .is_valid(&serde_json::Value::String(raw.to_string()))
    }
}

fn exact(name: &str) -> Expr {
    match format_grammar(name) {
        FormatGrammar::Exact(expr) => expr,
        other => panic!("{name} is not exact: {other:?}"),
    }
}

/// Checks the table against both the validator and the grammar.
fn check_table(name: &str, accepted: &[&str], rejected: &[&str]) {
    let oracle = Oracle::new(name);
    let recognizer = Recognizer::new(exact(name));
    for (texts, expected) in [(accepted, true), (rejected, false)] {
        for text in texts {
            assert_eq!(
                oracle.accepts(text),
                expected,
                "validator, {name}: {text:?}"
            );
            assert_eq!(
                recognizer.accepts(text),
                expected,
                "grammar, {name}: {text:?}"
            );
        }
    }
}

/// Edits `text` a few times with pieces of `alphabet` (half the time not at all).
fn mutate(rng: &mut SmallRng, text: String, alphabet: &[&str]) -> String {
    if rng.random_bool(0.5) {
        return text;
    }
    let mut characters: Vec<char> = text.chars().collect();
    for _ in 0..rng.random_range(1..=3) {
        let at = rng.random_range(0..=characters.len());
        let piece: Vec<char> = alphabet[rng.random_range(0..alphabet.len())]
            .chars()
            .collect();
        match rng.random_range(0..5) {
            0 => {
                characters.splice(at..at, piece);
            }
            1 if at < characters.len() => {
                characters.remove(at);
            }
            2 if at < characters.len() => {
                characters.splice(at..at + 1, piece);
            }
            3 => characters.truncate(at),
            _ => {
                let end = rng.random_range(at..=characters.len());
                let copy: Vec<char> = characters[at..end].to_vec();
                characters.splice(end..end, copy);
            }
        }
    }
    characters.into_iter().collect()
}

/// How many times the usual number of cases to run: `GRAIL_FORMAT_CASE_SCALE` (1 by
/// default; a deeper run: `GRAIL_FORMAT_CASE_SCALE=50 cargo test --release ...`).
fn case_scale() -> usize {
    std::env::var("GRAIL_FORMAT_CASE_SCALE")
        .ok()
        .and_then(|scale| scale.parse().ok())
        .unwrap_or(1)
}

/// Runs `cases` (times [`case_scale`]) generated strings through the validator and the grammar; returns how
/// many the validator accepted and rejected, and fails on the first disagreement.
fn differential(
    name: &str,
    seed: u64,
    cases: usize,
    mut generate: impl FnMut(&mut SmallRng) -> String,
) -> (usize, usize) {
    let oracle = Oracle::new(name);
    let recognizer = Recognizer::new(exact(name));
    let mut rng = SmallRng::seed_from_u64(seed);
    let cases = cases * case_scale();
    let (mut valid, mut invalid) = (0, 0);
    let mut disagreements = Vec::new();
    for _ in 0..cases {
        let text = generate(&mut rng);
        let expected = oracle.accepts(&text);
        if expected {
            valid += 1;
        } else {
            invalid += 1;
        }
        if recognizer.accepts(&text) != expected {
            disagreements.push((text, expected));
        }
    }
    eprintln!("differential {name}: {cases} cases, {valid} valid, {invalid} invalid");
    assert!(
        disagreements.is_empty(),
        "{name}: {} disagreements (text, validator's verdict): {:?}",
        disagreements.len(),
        &disagreements[..disagreements.len().min(20)]
    );
    (valid, invalid)
}

fn pick<'a>(rng: &mut SmallRng, items: &[&'a str]) -> &'a str {
    items[rng.random_range(0..items.len())]
}

fn random_digits(rng: &mut SmallRng, count: usize) -> String {
    (0..count)
        .map(|_| char::from(b'0' + rng.random_range(0..10u8)))
        .collect()
}

fn random_digits_up_to(rng: &mut SmallRng, most: usize) -> String {
    let count = rng.random_range(1..=most);
    random_digits(rng, count)
}

fn random_hex(rng: &mut SmallRng, count: usize) -> String {
    const HEX: &[u8] = b"0123456789abcdefABCDEF";
    (0..count)
        .map(|_| char::from(HEX[rng.random_range(0..HEX.len())]))
        .collect()
}

const DATE_TIME_ALPHABET: &[&str] = &[
    "0", "1", "2", "9", "-", ":", ".", "T", "t", "Z", "z", "+", " ", "60", "a", "é",
];

fn random_date(rng: &mut SmallRng) -> String {
    let year = if rng.random_bool(0.5) {
        random_digits(rng, 4)
    } else {
        pick(
            rng,
            &[
                "2000", "1900", "2100", "2400", "2024", "2023", "0000", "0004", "1600", "1700",
                "9996", "9999", "0100", "0400", "1996",
            ],
        )
        .to_string()
    };
    let month = rng.random_range(0..=13);
    let day = if rng.random_bool(0.5) {
        rng.random_range(27..=32)
    } else {
        rng.random_range(0..=32)
    };
    format!("{year}-{month:02}-{day:02}")
}

fn random_time(rng: &mut SmallRng) -> String {
    let latest_hour = if rng.random_bool(0.8) { 23 } else { 25 };
    let latest_minute = if rng.random_bool(0.8) { 59 } else { 61 };
    let mut hour = rng.random_range(0..=latest_hour);
    let mut minute = rng.random_range(0..=latest_minute);
    let second = match rng.random_range(0..4) {
        0 => 60,
        1 => 59,
        _ => rng.random_range(0..=61),
    };
    let fraction = match rng.random_range(0..4) {
        0 => format!(".{}", random_digits_up_to(rng, 4)),
        1 if rng.random_bool(0.2) => ".".to_string(),
        _ => String::new(),
    };
    let zone = match rng.random_range(0..6) {
        0 => "Z".to_string(),
        1 => "z".to_string(),
        2 if rng.random_bool(0.2) => String::new(),
        _ => {
            let sign = if rng.random_bool(0.5) { '+' } else { '-' };
            let offset = if rng.random_bool(0.2) {
                rng.random_range(0..2) * 1439
            } else {
                rng.random_range(0..MINUTES_PER_DAY)
            };
            if second == 60 && rng.random_bool(0.7) {
                // Local time at 23:59 UTC for this offset, sometimes a minute off.
                let utc_last = MINUTES_PER_DAY - 1;
                let mut local = if sign == '+' {
                    (utc_last + offset) % MINUTES_PER_DAY
                } else {
                    (utc_last + MINUTES_PER_DAY - offset) % MINUTES_PER_DAY
                };
                if rng.random_bool(0.2) {
                    local =
                        (local + MINUTES_PER_DAY + rng.random_range(0..3) - 1) % MINUTES_PER_DAY;
                }
                hour = local / 60;
                minute = local % 60;
            }
            let (offset_hour, offset_minute) = if rng.random_bool(0.1) {
                (rng.random_range(20..=25), rng.random_range(55..=61))
            } else {
                (offset / 60, offset % 60)
            };
            format!("{sign}{offset_hour:02}:{offset_minute:02}")
        }
    };
    if second == 60 && zone.eq_ignore_ascii_case("z") && rng.random_bool(0.7) {
        hour = 23;
        minute = 59;
    }
    format!("{hour:02}:{minute:02}:{second:02}{fraction}{zone}")
}

#[test]
fn date_table() {
    check_table(
        "date",
        &[
            "2024-02-29",
            "2000-02-29",
            "1600-02-29",
            "0000-02-29",
            "0004-02-29",
            "2023-02-28",
            "2023-01-31",
            "2023-04-30",
            "2023-12-31",
            "9999-12-31",
        ],
        &[
            "2023-02-29",
            "1900-02-29",
            "2100-02-29",
            "2023-02-30",
            "2023-04-31",
            "2023-06-31",
            "2023-13-01",
            "2023-00-10",
            "2023-01-00",
            "2023-1-01",
            "023-01-01",
            "20230-01-01",
            "2023-01-01T",
            "2023/01/01",
            "",
            "2023-01-32",
            "२०२३-01-01",
        ],
    );
}

#[test]
fn time_table() {
    check_table(
        "time",
        &[
            "00:00:00Z",
            "23:59:59z",
            "12:34:56.789Z",
            "12:34:56.0+01:00",
            "12:34:56-23:59",
            "23:59:60Z",
            "23:59:60.5z",
            "23:59:60+00:00",
            "23:59:60-00:00",
            "00:59:60+01:00",
            "22:59:60-01:00",
            "15:59:60-08:00",
            "00:00:60+00:01",
            "23:58:60-00:01",
        ],
        &[
            "24:00:00Z",
            "23:60:00Z",
            "23:59:61Z",
            "22:59:60Z",
            "23:59:60+01:00",
            "00:59:60-01:00",
            "12:00:00",
            "12:00:00.Z",
            "12:00:00+24:00",
            "12:00:00+23:60",
            "12:00:00+1:00",
            "12:00:00+01:00:00",
            "12:00:00 Z",
            "12:00Z",
            "1:00:00Z",
            "12:00:00ZZ",
            "12:00:00GMT",
        ],
    );
}

#[test]
fn date_time_table() {
    check_table(
        "date-time",
        &[
            "2024-02-29T23:59:60Z",
            "1990-12-31t15:59:60-08:00",
            "2023-01-01T00:00:00.123456789+05:30",
            "2023-01-01t00:00:00z",
        ],
        &[
            "2023-02-29T00:00:00Z",
            "2023-01-01 00:00:00Z",
            "2023-01-01T00:00:00",
            "2023-01-01TT00:00:00Z",
            "2023-01-01T24:00:00Z",
            "2023-01-01",
        ],
    );
}

#[test]
fn duration_table() {
    check_table(
        "duration",
        &[
            "P1W",
            "PT1M",
            "P1Y2M",
            "P1Y",
            "P1M",
            "P1D",
            "P1Y2M3D",
            "P1M2D",
            "PT1H",
            "PT1S",
            "PT1H2M",
            "PT1M2S",
            "PT1H2M3S",
            "P1DT1H",
            "P1Y2M3DT4H5M6S",
            "P0D",
            "P007Y",
            "PT36H",
        ],
        &[
            "P", "PT", "P1YT", "P1Y1D", "PT1H1S", "P1W1D", "P1WT1H", "P1D1Y", "P1M1Y", "PT1S1M",
            "P1Y1Y", "P1", "1Y", "P1.5Y", "PT1D", "P1H", "p1Y", "P1y", "PT1HT1M", "P-1Y", "P1YM",
            " P1Y",
        ],
    );
}

#[test]
fn ipv4_table() {
    check_table(
        "ipv4",
        &[
            "0.0.0.0",
            "255.255.255.255",
            "192.168.1.1",
            "1.2.3.4",
            "10.0.0.255",
        ],
        &[
            "256.0.0.0",
            "01.2.3.4",
            "1.02.3.4",
            "1.2.3.00",
            "1.2.3",
            "1.2.3.4.5",
            "1.2.3.4 ",
            "1..2.3",
            "",
            "0x1.2.3.4",
            "1.2.3.-4",
            "1000.2.3.4",
        ],
    );
}

#[test]
fn ipv6_table() {
    check_table(
        "ipv6",
        &[
            "::",
            "::1",
            "1::",
            "1:2:3:4:5:6:7:8",
            "1:2:3:4:5:6:7::",
            "::2:3:4:5:6:7:8",
            "1::8",
            "0001:0DB8::ABCD",
            "fe80::1:2",
            "::ffff:192.168.1.1",
            "1:2:3:4:5:6:1.2.3.4",
            "1:2:3:4:5::1.2.3.4",
            "::1.2.3.4",
            "1::1.2.3.4",
        ],
        &[
            "",
            ":",
            ":::",
            "1:2:3:4:5:6:7",
            "1:2:3:4:5:6:7:8:9",
            "1:2:3:4:5:6:7:8::",
            "1::2::3",
            "12345::",
            "::g",
            "1:2:3:4:5:6:7:1.2.3.4",
            "1:2:3:4:5:6::1.2.3.4",
            "::01.2.3.4",
            "::256.1.1.1",
            "1.2.3.4::",
            ":1::2",
            "1::2:",
            "[::1]",
            "::1%eth0",
            "fe80::1/64",
        ],
    );
}

#[test]
fn uuid_table() {
    check_table(
        "uuid",
        &[
            "00000000-0000-0000-0000-000000000000",
            "123e4567-e89b-12d3-a456-426614174000",
            "123E4567-E89B-12D3-A456-426614174000",
            "AbCdEf01-2345-6789-aBcD-eF0123456789",
            "ffffffff-ffff-ffff-ffff-ffffffffffff",
        ],
        &[
            "123e4567e89b12d3a456426614174000",
            "{123e4567-e89b-12d3-a456-426614174000}",
            "urn:uuid:123e4567-e89b-12d3-a456-426614174000",
            "123e4567-e89b-12d3-a456-42661417400",
            "123e4567-e89b-12d3-a456-4266141740000",
            "123e4567-e89b-12d3-a456_426614174000",
            "g23e4567-e89b-12d3-a456-426614174000",
            "123e456-7e89b-12d3-a456-426614174000",
        ],
    );
}

#[test]
fn uri_table() {
    check_table(
        "uri",
        &[
            "http://example.com",
            "https://user:pass@example.com:8080/path/to?q=1&r=2#frag",
            "urn:isbn:0451450523",
            "mailto:someone@example.com",
            "file:///etc/passwd",
            "a:",
            "http://[::1]:80/",
            "http://[v1.fe:80]/",
            "http://127.0.0.1/",
            "http://a/%20b",
            "A+b-c.9://",
            "http://@/",
            "http:/a//b",
            "tel:+1-816-555-1212",
        ],
        &[
            "",
            "//example.com",
            "/path",
            "example.com",
            "1http://a",
            "http://exa mple.com",
            "http://a/%2",
            "http://a/%zz",
            "http://[::1",
            "http://[1::2::3]/",
            "http://a:b:c/",
            "http://a@b@c/",
            "http://a/é",
            "http://a/b\\c",
            "http://a/\"",
            "http://a#b#c",
            "http://a/[x]",
            "http://[::1]x",
            "http://[vz.x]/",
        ],
    );
}

#[test]
fn uri_reference_table() {
    check_table(
        "uri-reference",
        &[
            "", "/path", "path/to", "./a:b", "?q", "#f", "//host", "//[::1]", "http://a", "a/b:c",
            "%41",
        ],
        &["a:b\\", "1a:b", "a_b:c", "ab:c d", "//a:b:c", "é", "%4"],
    );
}

#[test]
fn iri_tables() {
    check_table(
        "iri",
        &[
            "http://例え.テスト/パス?クエリ#断片",
            "http://a/?\u{E000}",
            "http://é@ü:1/",
            "http://[::1]/é",
        ],
        &[
            "http://a/#\u{E000}",
            "http://a/\u{E000}",
            "//é",
            "é:a",
            "http://a/ b",
        ],
    );
    check_table(
        "iri-reference",
        &["é", "//é/é", "?é", "#é", "http://a/é"],
        &["é:b", "\u{E000}", "a b"],
    );
}

#[test]
fn json_pointer_tables() {
    check_table(
        "json-pointer",
        &[
            "", "/", "//", "/a/b", "/a~0b~1c", "/\"\\\n", "/é", "/ ", "/~01",
        ],
        &["a", "/~", "/~2", "/a~", "#/a", "~0"],
    );
    check_table(
        "relative-json-pointer",
        &["0", "1", "10", "0#", "12#", "0/", "1/a/b", "0/~0"],
        &["", "01", "-1", "0##", "1#/a", "#", "/a", "1a", "0/~", "00"],
    );
}

#[test]
fn uri_template_table() {
    check_table(
        "uri-template",
        &[
            "",
            "http://example.com/{id}",
            "{+path}/here",
            "{#frag,x:3}",
            "{?a,b*,c:9999}",
            "{.a.b}",
            "{%41}",
            "é{x}'",
            "/%20{a}",
            "{=a}{,b}{!c}{@d}{|e}",
        ],
        &[
            "{",
            "}",
            "{}",
            "{a",
            "{a:0}",
            "{a:10000}",
            "{a.}",
            "{.}",
            "{a b}",
            "a b",
            "%2",
            "{a,}",
            "{++a}",
            "\"",
            "<",
            "{a*:1}",
            "^",
            "{-a}",
        ],
    );
}

#[test]
fn hostname_and_email_edge_cases_and_their_supersets() {
    let label_63 = "a".repeat(63);
    let label_64 = "a".repeat(64);
    // 63 + 1 + 63 + 1 + 63 + 1 + 61 = 253.
    let total_253 = format!("{label_63}.{label_63}.{label_63}.{}", "b".repeat(61));
    let total_254 = format!("{label_63}.{label_63}.{label_63}.{}", "b".repeat(62));
    let hostnames: &[(&str, bool)] = &[
        ("example.com", true),
        ("a", true),
        ("a-b.c0", true),
        ("xn--bcher-kva.example", true),
        (&label_63, true),
        (&total_253, true),
        (&label_64, false),
        (&total_254, false),
        ("xn--a", false),
        ("XN--bcher-kva", false),
        ("ab--c", false),
        ("-a", false),
        ("a-", false),
        ("a..b", false),
        ("a.", false),
        ("", false),
        ("a_b", false),
        ("é.com", false),
    ];
    let emails: &[(&str, bool)] = &[
        ("user@example.com", true),
        ("first.last@example.com", true),
        ("\"quoted string\"@example.com", true),
        ("\"a\\\"b\"@example.com", true),
        ("\"\"@example.com", true),
        ("a@[127.0.0.1]", true),
        ("a@[IPv6:::1]", true),
        ("a@[ipv6:2001:db8::1]", true),
        ("Name <user@example.com>", true),
        (" <user@example.com>", true),
        ("a <b> <user@example.com>  ", true),
        (&format!("{}@example.com", "a".repeat(64)), true),
        (&format!("{}@example.com", "a".repeat(65)), false),
        (&format!("a@{label_64}.com"), false),
        ("x <\"\"@example.com>", false),
        ("a@[::1]", false),
        ("a@[256.0.0.1]", false),
        (".a@example.com", false),
        ("a..b@example.com", false),
        ("a.@example.com", false),
        ("é@example.com", false),
        ("a@xn--a.com", false),
        ("a@example.com.", false),
        ("\"a <b\"@example.com", false),
        ("a@b@example.com", false),
        ("Name <user@example.com", false),
    ];
    for (name, table) in [("hostname", hostnames), ("email", emails)] {
        let oracle = Oracle::new(name);
        let superset = Recognizer::new(format_superset(name).expect("superset"));
        for &(text, expected) in table {
            assert_eq!(
                oracle.accepts(text),
                expected,
                "validator, {name}: {text:?}"
            );
            if expected {
                assert!(superset.accepts(text), "superset, {name}: {text:?}");
            }
        }
    }
}

#[test]
fn which_formats_are_checked() {
    for name in [
        "int32", "uint8", "float", "double", "byte", "binary", "password", "Date", "unknown", "",
    ] {
        assert_eq!(format_grammar(name), FormatGrammar::Annotation, "{name}");
        // The validator ignores them too.
        assert!(Oracle::new(name).accepts("not anything"), "{name}");
    }
    for name in ["hostname", "email", "idn-hostname", "idn-email", "regex"] {
        assert!(
            matches!(format_grammar(name), FormatGrammar::Unsupported(_)),
            "{name}"
        );
    }
    for (name, invalid) in [("hostname", "a b"), ("email", "a b"), ("regex", "(")] {
        assert!(!Oracle::new(name).accepts(invalid), "{name}");
    }
    // The cheap test says what building the grammar says, for every checked name and some
    // annotations.
    let checked = CHECKED_FORMATS.iter().map(|&(name, _)| name);
    for name in checked.chain(["int32", "Date", ""]) {
        assert_eq!(
            is_annotation(name),
            format_grammar(name) == FormatGrammar::Annotation,
            "{name}"
        );
    }
    // Each name once, each format once (a second entry would never be found).
    for (index, &(name, format)) in CHECKED_FORMATS.iter().enumerate() {
        for &(other_name, other_format) in &CHECKED_FORMATS[index + 1..] {
            assert_ne!(name, other_name);
            assert_ne!(format, other_format, "{name} and {other_name}");
        }
    }
}

/// Walks an expression: node count and the largest repetition bound.
fn measure(expr: &Expr) -> (usize, u32) {
    match expr {
        Expr::Sequence(items) | Expr::Choice(items) => items
            .iter()
            .map(measure)
            .fold((1, 0), |(nodes, bound), (n, b)| (nodes + n, bound.max(b))),
        Expr::Repeat(inner, min, max) => {
            let (nodes, bound) = measure(inner);
            (nodes + 1, bound.max(*min).max(max.unwrap_or(0)))
        }
        _ => (1, 0),
    }
}

#[test]
fn grammars_are_small_and_bounded_for_llama_cpp() {
    let exact_formats =
        CHECKED_FORMATS
            .iter()
            .filter_map(|&(name, format)| match format.grammar() {
                FormatGrammar::Exact(expr) => Some((name, expr)),
                _ => None,
            });
    for (name, expr) in exact_formats {
        let (nodes, bound) = measure(&expr);
        eprintln!("{name}: {nodes} nodes, largest repetition bound {bound}");
        assert!(bound <= 2000, "{name}");
        assert!(nodes <= 20_000, "{name}");
    }
    for name in ["hostname", "email"] {
        let superset = format_superset(name).expect("superset");
        let (nodes, bound) = measure(&superset);
        eprintln!("{name} superset: {nodes} nodes, largest repetition bound {bound}");
        assert!(bound <= 2000, "{name}");
    }
}

#[test]
fn differential_date() {
    differential("date", 1, 600, |rng| {
        let date = random_date(rng);
        mutate(rng, date, DATE_TIME_ALPHABET)
    });
}

#[test]
fn differential_time() {
    differential("time", 2, 800, |rng| {
        let time = random_time(rng);
        mutate(rng, time, DATE_TIME_ALPHABET)
    });
}

#[test]
fn differential_date_time() {
    differential("date-time", 3, 800, |rng| {
        let separator = pick(rng, &["T", "t", "T", "t", " ", "TT", ""]);
        let text = format!("{}{separator}{}", random_date(rng), random_time(rng));
        mutate(rng, text, DATE_TIME_ALPHABET)
    });
}

#[test]
fn differential_duration() {
    differential("duration", 4, 800, |rng| {
        let mut text = String::from(if rng.random_bool(0.95) { "P" } else { "" });
        let date_units = ["Y", "M", "W", "D"];
        let time_units = ["H", "M", "S"];
        for unit in date_units {
            if rng.random_bool(0.35) {
                text.push_str(&random_digits_up_to(rng, 3));
                text.push_str(unit);
            }
        }
        if rng.random_bool(0.5) {
            text.push('T');
            for unit in time_units {
                if rng.random_bool(0.4) {
                    text.push_str(&random_digits_up_to(rng, 3));
                    text.push_str(unit);
                }
            }
        }
        mutate(
            rng,
            text,
            &[
                "P", "T", "Y", "M", "W", "D", "H", "S", "1", "12", ".5", ",", "-",
            ],
        )
    });
}

fn random_ipv4(rng: &mut SmallRng) -> String {
    let octet = |rng: &mut SmallRng| match rng.random_range(0..6) {
        0 => pick(rng, &["0", "00", "01", "255", "256", "249", "199", "010"]).to_string(),
        _ => rng.random_range(0..=270).to_string(),
    };
    let count = if rng.random_bool(0.9) {
        4
    } else {
        rng.random_range(3..=5)
    };
    (0..count).map(|_| octet(rng)).collect::<Vec<_>>().join(".")
}

#[test]
fn differential_ipv4() {
    differential("ipv4", 5, 600, |rng| {
        let text = random_ipv4(rng);
        mutate(rng, text, &[".", "0", "1", "25", "5", " ", "a", "-"])
    });
}

fn random_ipv6(rng: &mut SmallRng) -> String {
    let group_count = rng.random_range(0..=9);
    let mut groups: Vec<String> = (0..group_count)
        .map(|_| {
            let length = if rng.random_bool(0.1) {
                5
            } else {
                rng.random_range(1..=4)
            };
            random_hex(rng, length)
        })
        .collect();
    if rng.random_bool(0.3) {
        groups.push(random_ipv4(rng));
    }
    let mut text = groups.join(":");
    if rng.random_bool(0.7) {
        // Put `::` at a group boundary.
        let boundaries: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices(':').map(|(at, _)| at))
            .chain(std::iter::once(text.len()))
            .collect();
        let at = boundaries[rng.random_range(0..boundaries.len())];
        let replace_colon = text[at..].starts_with(':');
        let end = if replace_colon { at + 1 } else { at };
        text.replace_range(at..end, "::");
    }
    text
}

/// An IPv6 address of a random shape: all groups, or groups around `::` (now and
/// then one too many), sometimes ending in an IPv4 address.
fn random_ipv6_shaped(rng: &mut SmallRng) -> String {
    let group = |rng: &mut SmallRng| {
        let length = rng.random_range(1..=4);
        random_hex(rng, length)
    };
    let groups = |rng: &mut SmallRng, count: usize| {
        (0..count).map(|_| group(rng)).collect::<Vec<_>>().join(":")
    };
    let with_ipv4 = rng.random_bool(0.3);
    if rng.random_bool(0.2) {
        let count = if with_ipv4 { 6 } else { 8 };
        let separator = if with_ipv4 { ":" } else { "" };
        let ipv4 = if with_ipv4 {
            random_ipv4(rng)
        } else {
            String::new()
        };
        return format!("{}{separator}{ipv4}", groups(rng, count));
    }
    let head = rng.random_range(0..=7);
    let most = 7 - head + usize::from(rng.random_bool(0.1));
    let tail = rng.random_range(0..=most);
    let tail_text = if with_ipv4 && tail >= 1 {
        let before = groups(rng, tail.saturating_sub(2));
        let separator = if before.is_empty() { "" } else { ":" };
        format!("{before}{separator}{}", random_ipv4(rng))
    } else {
        groups(rng, tail)
    };
    format!("{}::{tail_text}", groups(rng, head))
}

#[test]
fn differential_ipv6() {
    differential("ipv6", 6, 1500, |rng| {
        let text = if rng.random_bool(0.5) {
            random_ipv6(rng)
        } else {
            random_ipv6_shaped(rng)
        };
        mutate(rng, text, &[":", "::", ".", "0", "f", "G", "1.2.3.4", "%1"])
    });
}

#[test]
fn leap_seconds_follow_the_validator_at_every_minute() {
    let oracle = Oracle::new("time");
    let recognizer = Recognizer::new(exact("time"));
    let mut rng = SmallRng::seed_from_u64(17);
    let (mut checked, mut valid) = (0, 0);
    for local in 0..MINUTES_PER_DAY {
        let (hour, minute) = (local / 60, local % 60);
        let ahead = (local + 1) % MINUTES_PER_DAY;
        let behind = MINUTES_PER_DAY - 1 - local;
        let offsets = [
            ahead,
            behind,
            (ahead + 1) % MINUTES_PER_DAY,
            (behind + MINUTES_PER_DAY - 1) % MINUTES_PER_DAY,
            0,
            rng.random_range(0..MINUTES_PER_DAY),
        ];
        let mut zones: Vec<String> = offsets
            .iter()
            .flat_map(|offset| {
                ['+', '-'].map(|sign| format!("{sign}{:02}:{:02}", offset / 60, offset % 60))
            })
            .collect();
        zones.extend(["Z".to_string(), "z".to_string()]);
        for zone in zones {
            let fraction = if rng.random_bool(0.3) { ".25" } else { "" };
            let text = format!("{hour:02}:{minute:02}:60{fraction}{zone}");
            let expected = oracle.accepts(&text);
            assert_eq!(recognizer.accepts(&text), expected, "{text}");
            checked += 1;
            valid += usize::from(expected);
        }
    }
    eprintln!("leap seconds: {checked} checked, {valid} valid");
}

#[test]
fn differential_uuid() {
    differential("uuid", 7, 500, |rng| {
        let text = [8, 4, 4, 4, 12]
            .iter()
            .map(|&length| random_hex(rng, length))
            .collect::<Vec<_>>()
            .join("-");
        mutate(rng, text, &["-", "0", "a", "F", "g", "{", "}", " "])
    });
}

const URI_ALPHABET: &[&str] = &[
    "a",
    "Z",
    "0",
    ":",
    "/",
    "?",
    "#",
    "[",
    "]",
    "@",
    "!",
    "$",
    "&",
    "'",
    "(",
    ")",
    "*",
    "+",
    ",",
    ";",
    "=",
    "%",
    "%41",
    "-",
    ".",
    "_",
    "~",
    " ",
    "é",
    "\u{E000}",
    "\u{FFFE}",
    "\"",
    "\\",
    "<",
    "{",
    "|",
    "^",
    "`",
    "\n",
    "\u{10FFFD}",
    "\u{F0000}",
];

fn random_uri(rng: &mut SmallRng) -> String {
    let parts = [
        pick(
            rng,
            &[
                "", "", "http:", "a+b-c.d:", "1a:", "a_b:", ":", "A:", "urn:", "é:", "h:",
            ],
        ),
        pick(rng, &["", "//", "//", "///", "/", "./", "../", ":"]),
        pick(
            rng,
            &[
                "", "", "user@", "u:p@", "@", "a@b@", "%41@", "%4@", "é@", "[@",
            ],
        ),
        pick(
            rng,
            &[
                "",
                "host",
                "127.0.0.1",
                "[::1]",
                "[v1.x]",
                "[V7.a:b]",
                "[1:2:3:4:5:6:7:8]",
                "[::ffff:1.2.3.4]",
                "[1::2::3]",
                "[::1",
                "h%2F",
                "h%zz",
                "a:b",
                "é",
                "[]",
                "[v.x]",
                "[vz.x]",
                "[::1.2.3]",
                "[1:2:3:4:5:6:7:8:9]",
                "[fe80::1%25x]",
            ],
        ),
        pick(rng, &["", "", ":", ":80", ":8a", ":65536", "::"]),
        pick(
            rng,
            &[
                "",
                "/",
                "/a/b",
                "a:b/c",
                "/a:b",
                "//x",
                "/%20",
                "/%",
                "/a b",
                "/[x]",
                "/é",
                "/\u{E000}",
                "/日本",
                "a",
            ],
        ),
        pick(
            rng,
            &[
                "",
                "?",
                "?q=1&r",
                "?a?b/c",
                "?%zz",
                "?#",
                "?\u{E000}",
                "?é",
                "?\u{F0000}",
            ],
        ),
        pick(
            rng,
            &[
                "",
                "#",
                "#f",
                "#a/b?c",
                "#a#b",
                "#%41",
                "#\u{E000}",
                "#é",
                "#\u{10FFFD}",
            ],
        ),
    ];
    mutate(rng, parts.concat(), URI_ALPHABET)
}

/// Pieces of URI components: characters of every class, encodings good and broken,
/// `ucschar` and `iprivate` characters.
const URI_COMPONENT_PIECES: &[&str] = &[
    "a",
    "Z",
    "0",
    "9",
    "-",
    ".",
    "_",
    "~",
    "!",
    "$",
    "&",
    "'",
    "(",
    ")",
    "*",
    "+",
    ",",
    ";",
    "=",
    ":",
    "@",
    "%20",
    "%7e",
    "%Af",
    "é",
    "日",
    "\u{E000}",
    "\u{10000}",
    "\u{1FFFE}",
    "\u{FDD0}",
    "/",
    "?",
];

fn random_component(rng: &mut SmallRng, most: usize) -> String {
    (0..rng.random_range(0..=most))
        .map(|_| pick(rng, URI_COMPONENT_PIECES))
        .collect()
}

/// A URI or reference of a random shape, mostly well formed.
fn random_uri_shaped(rng: &mut SmallRng) -> String {
    let mut text = String::new();
    if rng.random_bool(0.8) {
        text.push(char::from(b"aZh"[rng.random_range(0..3)]));
        for _ in 0..rng.random_range(0..4) {
            text.push(char::from(b"a0+-.Z"[rng.random_range(0..6)]));
        }
        text.push(':');
    }
    let with_authority = rng.random_bool(0.6);
    if with_authority {
        text.push_str("//");
        if rng.random_bool(0.3) {
            text.push_str(&random_component(rng, 4).replace(['@', '/', '?'], ""));
            text.push('@');
        }
        match rng.random_range(0..5) {
            0 => text.push_str(&random_ipv4(rng)),
            1 => text.push_str(&format!("[{}]", random_ipv6_shaped(rng))),
            2 => {
                let version = pick(rng, &["v", "V", "w"]);
                let digits = rng.random_range(0..3);
                let number = random_hex(rng, digits);
                let rest = random_component(rng, 3).replace(['@', '/', '?', '%'], "");
                text.push_str(&format!("[{version}{number}.{rest}]"));
            }
            _ => text.push_str(&random_component(rng, 5).replace([':', '@', '/', '?'], "")),
        }
        if rng.random_bool(0.3) {
            text.push(':');
            let digits = rng.random_range(0..4);
            text.push_str(&random_digits(rng, digits));
        }
    }
    for index in 0..rng.random_range(0..4) {
        if index > 0 || with_authority || rng.random_bool(0.5) {
            text.push('/');
        }
        text.push_str(&random_component(rng, 4).replace(['/', '?'], ""));
    }
    if rng.random_bool(0.3) {
        text.push('?');
        text.push_str(&random_component(rng, 5));
    }
    if rng.random_bool(0.3) {
        text.push('#');
        text.push_str(&random_component(rng, 5));
    }
    mutate(rng, text, URI_ALPHABET)
}

fn random_uri_of_either_kind(rng: &mut SmallRng) -> String {
    if rng.random_bool(0.5) {
        random_uri(rng)
    } else {
        random_uri_shaped(rng)
    }
}

#[test]
fn differential_uri() {
    differential("uri", 8, 1500, random_uri_of_either_kind);
}

#[test]
fn differential_uri_reference() {
    differential("uri-reference", 9, 1500, random_uri_of_either_kind);
}

#[test]
fn differential_iri() {
    differential("iri", 10, 1500, random_uri_of_either_kind);
}

#[test]
fn differential_iri_reference() {
    differential("iri-reference", 11, 1500, random_uri_of_either_kind);
}

const POINTER_PIECES: &[&str] = &[
    "/", "/", "~0", "~1", "~", "~2", "a", "é", "\"", "\\", "\n", "\u{7F}", "\u{1}", "#", "0", "1",
    " ", "日",
];

fn random_pointer(rng: &mut SmallRng) -> String {
    let count = rng.random_range(0..8);
    let mut text = String::new();
    if rng.random_bool(0.8) && count > 0 {
        text.push('/');
    }
    for _ in 0..count {
        text.push_str(pick(rng, POINTER_PIECES));
    }
    text
}

#[test]
fn differential_json_pointer() {
    differential("json-pointer", 12, 600, random_pointer);
}

#[test]
fn differential_relative_json_pointer() {
    differential("relative-json-pointer", 13, 600, |rng| {
        let prefix = pick(rng, &["0", "1", "12", "01", "", "-1", "00", "9"]);
        let suffix = match rng.random_range(0..4) {
            0 => String::new(),
            1 => pick(rng, &["#", "##", "#a"]).to_string(),
            _ => random_pointer(rng),
        };
        mutate(rng, format!("{prefix}{suffix}"), POINTER_PIECES)
    });
}

#[test]
fn differential_uri_template() {
    differential("uri-template", 14, 800, |rng| {
        let mut text = String::new();
        for _ in 0..rng.random_range(0..4) {
            if rng.random_bool(0.5) {
                text.push_str(pick(
                    rng,
                    &[
                        "a", "/", "%20", "%2", "é", " ", "'", "\"", "<", "^", "|", "}", "?x=",
                    ],
                ));
            } else {
                text.push('{');
                if rng.random_bool(0.4) {
                    text.push_str(pick(
                        rng,
                        &[
                            "+", "#", ".", "/", ";", "?", "&", "=", ",", "!", "@", "|", "-", "$",
                        ],
                    ));
                }
                for index in 0..rng.random_range(1..=3) {
                    if index > 0 {
                        text.push(',');
                    }
                    text.push_str(pick(
                        rng,
                        &[
                            "a", "var", "a.b", "a_1", "%41", "%4", ".a", "a.", "a..b", "", "é",
                        ],
                    ));
                    text.push_str(pick(
                        rng,
                        &[
                            "", "", "*", ":1", ":9999", ":10000", ":0", ":", ":12a", "**",
                        ],
                    ));
                }
                if rng.random_bool(0.9) {
                    text.push('}');
                }
            }
        }
        mutate(
            rng,
            text,
            &["{", "}", ",", ":", "*", "%", "a", "1", " ", "é"],
        )
    });
}

/// Every string the validator accepts, the superset accepts; counts how many of the
/// rejected ones it rejects too.
fn check_superset(
    name: &str,
    seed: u64,
    cases: usize,
    mut generate: impl FnMut(&mut SmallRng) -> String,
) {
    let oracle = Oracle::new(name);
    let recognizer = Recognizer::new(format_superset(name).expect("superset"));
    let mut rng = SmallRng::seed_from_u64(seed);
    let cases = cases * case_scale();
    let (mut valid, mut rejected_too, mut invalid) = (0, 0, 0);
    for _ in 0..cases {
        let text = generate(&mut rng);
        let accepted = recognizer.accepts(&text);
        if oracle.accepts(&text) {
            valid += 1;
            assert!(accepted, "{name} superset rejects valid {text:?}");
        } else {
            invalid += 1;
            if !accepted {
                rejected_too += 1;
            }
        }
    }
    eprintln!(
        "superset {name}: {cases} cases, {valid} valid (all accepted), {invalid} invalid ({rejected_too} rejected)"
    );
}

fn random_hostname(rng: &mut SmallRng) -> String {
    let labels = rng.random_range(1..=5);
    (0..labels)
        .map(|_| match rng.random_range(0..8) {
            0 => "a".repeat(rng.random_range(60..=65)),
            1 => pick(
                rng,
                &[
                    "xn--bcher-kva",
                    "xn--a",
                    "xn--",
                    "ab--c",
                    "XN--bcher-kva",
                    "-a",
                    "a-",
                ],
            )
            .to_string(),
            _ => {
                let length = rng.random_range(1..=8);
                (0..length)
                    .map(|_| char::from(b"abcXYZ019-"[rng.random_range(0..10)]))
                    .collect()
            }
        })
        .collect::<Vec<String>>()
        .join(".")
}

#[test]
fn hostname_superset_holds_every_valid_hostname() {
    check_superset("hostname", 15, 600, |rng| {
        let text = if rng.random_bool(0.05) {
            // Near the 253-character total.
            let mut long = "a".repeat(63);
            for _ in 0..3 {
                long.push('.');
                long.push_str(&"b".repeat(rng.random_range(60..=63)));
            }
            long
        } else {
            random_hostname(rng)
        };
        mutate(rng, text, &[".", "-", "a", "0", "_", " ", "é", "--"])
    });
}

#[test]
fn email_superset_holds_every_valid_email() {
    check_superset("email", 16, 800, |rng| {
        let local = pick(
            rng,
            &[
                "user",
                "first.last",
                "a+b",
                "\"quoted\"",
                "\"a b\"",
                "\"a\\\"b\"",
                "\"\"",
                "\"a <b\"",
                ".a",
                "a..b",
                "é",
                "\"é\"",
                "!#$%&'*+-/=?^_`{|}~",
                "\"\\\\\"",
                "\"\t\"",
            ],
        )
        .to_string();
        let domain = if rng.random_bool(0.5) {
            random_hostname(rng)
        } else {
            pick(
                rng,
                &[
                    "[127.0.0.1]",
                    "[IPv6:::1]",
                    "[ipv6:2001:db8::1]",
                    "[::1]",
                    "[256.1.1.1]",
                    "[]",
                    "example.com",
                    "xn--bcher-kva.example",
                ],
            )
            .to_string()
        };
        let address = format!("{local}@{domain}");
        let text = match rng.random_range(0..6) {
            0 => format!("{} <{address}>", pick(rng, &["Name", "", "\"A <B\"", "é"])),
            1 => format!("x <  {address}>\u{3000}"),
            _ => address,
        };
        mutate(
            rng,
            text,
            &["@", ".", "\"", "\\", " ", "<", ">", "a", "[", "]"],
        )
    });
}

#[test]
fn a_format_used_twice_is_one_rule() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "created": {"type": "string", "format": "date-time"},
            "deleted": {"type": "string", "format": "date-time"},
            "items": {"type": "array", "items": {"type": "string", "format": "date-time"}}
        }
    });
    let converted =
        crate::schema_to_grammar(&schema, &crate::SchemaOptions::default()).expect("converts");
    let gbnf = grail_grammar::print_grammar(&converted.grammar);
    assert_eq!(gbnf.matches("\ndate-time ::=").count(), 1, "{gbnf}");
    assert!(!gbnf.contains("date-time-2"), "{gbnf}");
}
