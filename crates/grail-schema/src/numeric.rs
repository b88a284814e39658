//! Numbers as grammar expressions: integer and number ranges (`minimum`, `maximum`,
//! `exclusiveMinimum`, `exclusiveMaximum`) and `multipleOf`, exactly or not at all.
//!
//! # What "exact" means here
//!
//! An expression is exact when it accepts exactly the texts of the chosen
//! [`NumberSyntax`] whose *value* satisfies the constraints, values compared as exact
//! decimals (never as floats): `minimum: 1.5` on integers means ≥ 2, `1e300` and
//! `18446744073709551617` are bounds like any other, `"0.10"`, `"1e-1"` and `"100e-3"`
//! are all 0.1. When no exact expression of reasonable size exists, the functions return
//! [`NumericError`] saying why; they never return an approximation.
//!
//! # Integers ([`integer_expr`])
//!
//! Integers are written as JSON serializers and llama.cpp write them: `-`? digits, no
//! leading zeros, no fraction, no exponent, and never `-0`. That is a deliberate
//! narrowing of what JSON Schema calls an integer (`jsonschema` also accepts `1.0`,
//! `-0` and `1e2` for `"type": "integer"`): serializers never write integers that way.
//! llama.cpp itself is not consistent about `-0`: its plain `integer` rule and its ranges
//! with a negative `minimum` (`"-" [0-5] | ...` for `minimum: -5`) accept `-0`, its other
//! ranges do not; and its ranges with a negative `maximum` and no `minimum` accept leading
//! zeros after the sign (`-01`, value -1, for `maximum: -5`: a bug). Grail's llama.cpp
//! mode is llama.cpp's language without those texts; everything else is the same (the
//! 16-digit cap included). All integer constraints are exact: any bounds (integer or
//! not, exclusive or not, of any size), `multipleOf` (see below), and the digit cap.
//!
//! # Numbers ([`number_expr`])
//!
//! Numbers are any JSON number text allowed by the [`NumberSyntax`] (sign, integer part
//! without leading zeros, optional fraction, optional exponent), including `-0`, `0e5`
//! and `-0.0` (value 0). Exact cases:
//!
//! * Without exponent (syntax with `max_exponent_digits: Some(0)`): every range.
//! * With exponent and capped integer and fraction digits (llama.cpp mode caps all three
//!   parts at 16 digits): every range. The value of `m × 10^e` only needs its own
//!   mantissa language for the few exponents near the bounds' magnitudes (about
//!   integer cap + fraction cap + 7 of them per bound); above and below those, every
//!   nonzero mantissa passes or none does, and those exponents are grouped into integer
//!   ranges of exponent texts.
//! * With exponent and uncapped digits: ranges whose nonzero part is the whole half-line,
//!   i.e. a bound of 0 (`minimum: 0`, `exclusiveMaximum: 0`, ...) or no bound; also any
//!   range when the exponent's digits are capped so low that every exponent value can be
//!   listed (at most [`MAX_EXPONENT_BANDS`] of them). Any other range is
//!   [`NumericError::Unsupported`]: the texts `0.0…01e+K` ≥ 1 compare a count of digits
//!   with the value of `K`, which no grammar without counting can do.
//!
//! # `multipleOf`
//!
//! * Integers: `multipleOf: k` with `k = p/q` in lowest terms means multiples of the
//!   integer `p` (`0.5` → every integer, `1.5` → multiples of 3). A power of ten is a
//!   digit mask (trailing zeros), with any bounds and any syntax. Any other `p` up to
//!   [`MAX_MODULUS`] is a remainder automaton (one rule per state) multiplied with the
//!   range automaton and minimized; above that, or when the product has more than
//!   [`MAX_AUTOMATON_STATES`] states or its rules more than
//!   [`MAX_AUTOMATON_ALTERNATIVES`] alternatives, it is [`NumericError::TooLarge`]. (With
//!   llama.cpp's 16-digit cap the automaton counts digits too: about 16 × k states.)
//! * Numbers: a power of ten (`0.01`, `1`, `100`) is a digit mask on the mantissa,
//!   exact with bounds wherever ranges are exact, except with exponents of uncapped
//!   digits (not regular: `0.0…01eK`). Any other `multipleOf` (`0.25`, `3`) is a remainder
//!   automaton like integers, exact only without exponents; with exponents it is
//!   [`NumericError::Unsupported`].
//!
//! # Size
//!
//! Ranges are O(significant digits of the bounds) nested alternatives, with counted
//! repetitions for the free digits; values are never enumerated (`minimum: -123,
//! maximum: 42` is `"0" | [1-9] | [1-3] [0-9] | "4" [0-2] | "-" ([1-9] [0-9]? | "1" ([0-1]
//! [0-9] | "2" [0-3]))`). Number ranges with exponents cost one mantissa alternative per
//! exponent near a bound: about 3.5 KB of GBNF for `[1, 100]` in llama.cpp mode, 23 KB
//! for `[-1e300, 1e300]`. `multipleOf` automata are one rule per state: 4 rules for
//! multiples of 3 without digit cap, about 100 rules (18 KB) for multiples of 7 with
//! llama.cpp's 16-digit cap. Repetition counts above llama.cpp's limit (2000) are split.
//! A bound that pins more than [`MAX_POSITIONS`] digit places (f64 bounds pin at most
//! 341: `5e-324`; more takes `arbitrary_precision` texts) is [`NumericError::TooLarge`].
//!
//! # Against `jsonschema`
//!
//! The `jsonschema` crate (without `arbitrary-precision`) reads non-integer instances and
//! integers past `u64` as `f64`, so it disagrees with exact arithmetic on texts with more
//! precision than an `f64` holds (`-6.99999999999999999` is ≤ -7 to it), and on
//! `multipleOf` with a non-integer step for integers past 2^53. Exact arithmetic is what
//! the grammars implement.

use std::collections::HashMap;

use grail_grammar::{BuildError, CharSet, Expr, GrammarBuilder, RuleId};

/// The largest `multipleOf` integer part (after taking out a power of ten) that becomes a
/// remainder automaton.
pub const MAX_MODULUS: u64 = 1000;

/// The most states a `multipleOf` automaton (range × remainder, before minimization) may
/// have.
pub const MAX_AUTOMATON_STATES: usize = 20_000;

/// The most alternatives (moves between states) the rules of a `multipleOf` automaton
/// may have after minimization.
pub const MAX_AUTOMATON_ALTERNATIVES: usize = 12_000;

/// The most exponent values that get a mantissa language of their own in one sign of one
/// number range.
pub const MAX_EXPONENT_BANDS: usize = 256;

/// The most digit positions a bound (or a `multipleOf` mask) may pin.
pub const MAX_POSITIONS: i64 = 1200;

/// The largest digit cap a [`NumberSyntax`] may have (`None` is unlimited).
pub const MAX_DIGIT_CAP: u32 = 10_000;

/// llama.cpp's largest repetition count: longer counts are split.
const MAX_REPEAT: i64 = 2000;

/// Counts of repeated digits beyond this are refused (a grammar would be absurd).
const MAX_COUNTED: i64 = 1_000_000;

/// Exponents of [`Decimal`] are clamped to ± this (about 1.15e18): numbers beyond it have
/// more digits than any grammar here can write.
const EXPONENT_CLAMP: i64 = 1 << 60;

mod decimal;

use decimal::within;
pub use decimal::{Bound, Decimal, DecimalParseError};

/// How numbers are written. `None` caps nothing; llama.cpp compatibility caps each part
/// at 16 digits and writes exponents without leading zeros. `max_fraction_digits:
/// Some(0)` writes no fraction, `max_exponent_digits: Some(0)` no exponent. The default
/// is any JSON number.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NumberSyntax {
    /// At most this many digits before the decimal point (1 to [`MAX_DIGIT_CAP`]).
    pub max_integer_digits: Option<u32>,
    /// At most this many digits after the decimal point (`Some(0)`: no fraction).
    pub max_fraction_digits: Option<u32>,
    /// At most this many exponent digits (`Some(0)`: no exponent).
    pub max_exponent_digits: Option<u32>,
    /// True when exponent digits have no leading zeros (`1e5`, not `1e05`), as in
    /// llama.cpp's `[eE] [-+]? integral-part`. JSON allows leading zeros there.
    pub canonical_exponent: bool,
}

impl NumberSyntax {
    /// llama.cpp's `number`: `("-"? integral-part) ("." decimal-part)? ([eE] [-+]?
    /// integral-part)?` with `integral-part ::= [0] | [1-9] [0-9]{0,15}` and
    /// `decimal-part ::= [0-9]{1,16}`.
    pub fn llama_cpp() -> NumberSyntax {
        NumberSyntax {
            max_integer_digits: Some(16),
            max_fraction_digits: Some(16),
            max_exponent_digits: Some(16),
            canonical_exponent: true,
        }
    }

    /// Any JSON number without exponent (`-1.25`, not `-125e-2`): every range is exact in
    /// this syntax.
    pub fn without_exponent() -> NumberSyntax {
        NumberSyntax {
            max_exponent_digits: Some(0),
            ..NumberSyntax::default()
        }
    }

    fn integer_cap(&self) -> Option<i64> {
        self.max_integer_digits.map(i64::from)
    }

    fn fraction_cap(&self) -> Option<i64> {
        self.max_fraction_digits.map(i64::from)
    }

    fn exponent_allowed(&self) -> bool {
        self.max_exponent_digits != Some(0)
    }

    /// The same digits for integers: no fraction, no exponent.
    fn for_integers(&self) -> NumberSyntax {
        NumberSyntax {
            max_integer_digits: self.max_integer_digits,
            max_fraction_digits: Some(0),
            max_exponent_digits: Some(0),
            canonical_exponent: true,
        }
    }

    /// Uncapped digits and no exponent: a text for every decimal value (no fraction if
    /// this syntax has none).
    fn unlimited(&self) -> NumberSyntax {
        NumberSyntax {
            max_integer_digits: None,
            max_fraction_digits: self.max_fraction_digits.filter(|&digits| digits == 0),
            max_exponent_digits: Some(0),
            canonical_exponent: true,
        }
    }
}

/// Why a numeric constraint has no exact grammar here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NumericError {
    /// No exact grammar exists (or none is implemented) for this combination; the reason
    /// says which and what would make it exact.
    #[error("not exactly expressible: {0}")]
    Unsupported(String),
    /// No value satisfies the constraints (the bounds cross, or no multiple lies between
    /// them).
    #[error("no value satisfies the numeric constraints")]
    Empty,
    /// Values satisfy the constraints, but none can be written within the syntax's digit
    /// caps (e.g. `minimum: 1e20` with llama.cpp's 16 integer digits).
    #[error("no value within the digit limits satisfies the numeric constraints: {0}")]
    NotWritable(String),
    /// An exact grammar would be too large; the reason gives the limit.
    #[error("the exact grammar would be too large: {0}")]
    TooLarge(String),
    /// `multipleOf` must be greater than 0.
    #[error("multipleOf must be greater than 0, not {0}")]
    InvalidMultipleOf(Decimal),
    /// The syntax cannot write numbers (an integer part of at most 0 digits).
    #[error("invalid number syntax: {0}")]
    InvalidSyntax(String),
    /// Defining a rule failed (a bug).
    #[error(transparent)]
    Build(#[from] BuildError),
}

// ---------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------

/// JSON integers (no fraction, no exponent: `-`? digits without leading zeros, never
/// `-0`, as JSON serializers and llama.cpp write integers) within the bounds and, if
/// given, multiples of `multiple_of`, with at most `syntax.max_integer_digits` digits.
/// The syntax's fraction and exponent settings are ignored. Rules are added to `builder`
/// only for `multipleOf` automata.
pub fn integer_expr(
    min: Option<&Bound>,
    max: Option<&Bound>,
    multiple_of: Option<&Decimal>,
    syntax: &NumberSyntax,
    builder: &mut GrammarBuilder,
) -> Result<Expr, NumericError> {
    let syntax = syntax.for_integers();
    let divisor = match multiple_of {
        Some(step) => Divisor::for_integers(step)?,
        None => Divisor::default(),
    };
    generate(
        &Request {
            min,
            max,
            divisor,
            kind: Kind::Integer,
        },
        &syntax,
        builder,
    )
}

/// JSON numbers (any number text the syntax allows, `-0` and `0e5` included) within the
/// bounds and, if given, multiples of `multiple_of`, exactly; or an error saying why
/// that is not possible (see the module documentation for the exact cases). Rules are
/// added to `builder` only for `multipleOf` automata.
pub fn number_expr(
    min: Option<&Bound>,
    max: Option<&Bound>,
    multiple_of: Option<&Decimal>,
    syntax: &NumberSyntax,
    builder: &mut GrammarBuilder,
) -> Result<Expr, NumericError> {
    let divisor = match multiple_of {
        Some(step) => Divisor::for_numbers(step)?,
        None => Divisor::default(),
    };
    generate(
        &Request {
            min,
            max,
            divisor,
            kind: Kind::Number,
        },
        syntax,
        builder,
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Integer,
    Number,
}

struct Request<'a> {
    min: Option<&'a Bound>,
    max: Option<&'a Bound>,
    divisor: Divisor,
    kind: Kind,
}

/// What `multipleOf` asks of the digits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Divisor {
    /// Values must be multiples of `10^power_of_ten`.
    power_of_ten: Option<i64>,
    /// And must pass this remainder automaton.
    residue: Option<Residue>,
    /// The `multipleOf` as written, for messages.
    written: Option<Decimal>,
}

/// A remainder automaton: the value times `10^fraction_places` (digits after that many
/// fraction places must be 0) must be a multiple of `modulus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Residue {
    modulus: u64,
    fraction_places: u64,
}

impl Divisor {
    fn for_integers(step: &Decimal) -> Result<Divisor, NumericError> {
        if !step.is_positive() {
            return Err(NumericError::InvalidMultipleOf(step.clone()));
        }
        let Some(significand) = step.significand() else {
            return Err(modulus_too_large(step));
        };
        if step.exponent >= 0 {
            // An integer step: significand × 10^exponent.
            return Divisor::with_significand(significand, step.exponent, 0, step);
        }
        // step = significand / 10^places: the integers that are multiples of it are the
        // multiples of that fraction's numerator in lowest terms.
        let places = step.exponent.saturating_neg();
        let mut numerator = significand;
        for factor in [2u128, 5] {
            let mut removed = 0;
            while removed < places && numerator.is_multiple_of(factor) {
                numerator /= factor;
                removed += 1;
            }
        }
        Divisor::with_significand(numerator, 0, 0, step)
    }

    fn for_numbers(step: &Decimal) -> Result<Divisor, NumericError> {
        if !step.is_positive() {
            return Err(NumericError::InvalidMultipleOf(step.clone()));
        }
        let Some(significand) = step.significand() else {
            return Err(modulus_too_large(step));
        };
        if significand == 1 {
            return Ok(Divisor {
                power_of_ten: Some(step.exponent),
                residue: None,
                written: Some(step.clone()),
            });
        }
        if step.exponent < 0 {
            let places = u64::try_from(step.exponent.saturating_neg()).unwrap_or(u64::MAX);
            return Divisor::with_significand(significand, 0, places, step);
        }
        Divisor::with_significand(significand, step.exponent, 0, step)
    }

    /// Multiples of `significand × 10^power` (after scaling by `10^fraction_places`).
    fn with_significand(
        significand: u128,
        power: i64,
        fraction_places: u64,
        step: &Decimal,
    ) -> Result<Divisor, NumericError> {
        let written = Some(step.clone());
        if significand == 1 {
            return Ok(Divisor {
                power_of_ten: (power > 0).then_some(power),
                residue: None,
                written,
            });
        }
        let whole = u32::try_from(power)
            .ok()
            .and_then(|power| 10u128.checked_pow(power))
            .and_then(|scale| scale.checked_mul(significand));
        if let Some(whole) = whole
            && whole <= u128::from(MAX_MODULUS)
        {
            return Ok(Divisor {
                power_of_ten: None,
                residue: Some(Residue {
                    modulus: whole as u64,
                    fraction_places,
                }),
                written,
            });
        }
        // Multiples of s × 10^k with s prime to 10 are the multiples of 10^k that are
        // multiples of s.
        if significand <= u128::from(MAX_MODULUS)
            && !significand.is_multiple_of(2)
            && !significand.is_multiple_of(5)
        {
            return Ok(Divisor {
                power_of_ten: Some(power),
                residue: Some(Residue {
                    modulus: significand as u64,
                    fraction_places,
                }),
                written,
            });
        }
        Err(modulus_too_large(step))
    }
}

fn modulus_too_large(step: &Decimal) -> NumericError {
    NumericError::TooLarge(format!(
        "multipleOf {step}: only powers of ten and steps whose digits (after taking out a \
         power of ten) are at most {MAX_MODULUS} become grammars"
    ))
}

fn generate(
    request: &Request<'_>,
    syntax: &NumberSyntax,
    builder: &mut GrammarBuilder,
) -> Result<Expr, NumericError> {
    if syntax.max_integer_digits == Some(0) {
        return Err(NumericError::InvalidSyntax(
            "an integer part needs at least one digit".to_string(),
        ));
    }
    let caps = [
        syntax.max_integer_digits,
        syntax.max_fraction_digits,
        syntax.max_exponent_digits,
    ];
    if caps.into_iter().flatten().any(|cap| cap > MAX_DIGIT_CAP) {
        return Err(NumericError::InvalidSyntax(format!(
            "digit caps above {MAX_DIGIT_CAP} (use no cap for unlimited digits)"
        )));
    }
    if let (Some(min), Some(max)) = (request.min, request.max)
        && (min.value > max.value || (min.value == max.value && (min.exclusive || max.exclusive)))
    {
        return Err(NumericError::Empty);
    }
    let unconstrained = Divisor {
        written: request.divisor.written.clone(),
        ..Divisor::default()
    };
    if request.min.is_none() && request.max.is_none() && request.divisor == unconstrained {
        return match request.kind {
            Kind::Integer => plain_integer(syntax),
            Kind::Number => plain_number(syntax),
        };
    }
    match language(request, syntax)? {
        Some(Language::Expr(expr)) => Ok(expr),
        Some(Language::Automaton(automaton)) => automaton.emit(builder),
        None => Err(explain_empty(request, syntax)),
    }
}

/// The constraint's language, before any rule is added to the builder.
enum Language {
    Expr(Expr),
    Automaton(Automaton),
}

fn language(
    request: &Request<'_>,
    syntax: &NumberSyntax,
) -> Result<Option<Language>, NumericError> {
    let ranges = Ranges {
        syntax,
        kind: request.kind,
        power_of_ten: request.divisor.power_of_ten,
    };
    let Some(residue) = request.divisor.residue else {
        return Ok(ranges.signed(request.min, request.max)?.map(Language::Expr));
    };
    if syntax.exponent_allowed() {
        let step = request
            .divisor
            .written
            .as_ref()
            .map_or_else(String::new, Decimal::to_string);
        return Err(NumericError::Unsupported(format!(
            "multipleOf {step} on numbers with exponents: only powers of ten (0.01, 1, 100) \
             are exact with exponents; write numbers without exponent for other steps"
        )));
    }
    let Some(range) = ranges.signed(request.min, request.max)? else {
        return Ok(None);
    };
    Ok(Automaton::product(&range, residue)?.map(Language::Automaton))
}

/// `Empty` when no value at all satisfies the constraints, `NotWritable` when only the
/// digit caps stand in the way.
fn explain_empty(request: &Request<'_>, syntax: &NumberSyntax) -> NumericError {
    match language(request, &syntax.unlimited()) {
        Ok(None) => NumericError::Empty,
        _ => {
            let cap =
                |cap: Option<u32>| cap.map_or_else(|| "any".to_string(), |cap| cap.to_string());
            NumericError::NotWritable(match request.kind {
                Kind::Integer => format!(
                    "no integer of at most {} digits satisfies them",
                    cap(syntax.max_integer_digits)
                ),
                Kind::Number => format!(
                    "no number with at most {} integer digits, {} fraction digits and {} \
                     exponent digits satisfies them",
                    cap(syntax.max_integer_digits),
                    cap(syntax.max_fraction_digits),
                    cap(syntax.max_exponent_digits)
                ),
            })
        }
    }
}

// ---------------------------------------------------------------------------------------
// Expression helpers
// ---------------------------------------------------------------------------------------

/// Items one after another: nested sequences flattened, empties dropped, adjacent
/// literals merged.
fn seq(items: impl IntoIterator<Item = Expr>) -> Expr {
    let mut flat: Vec<Expr> = Vec::new();
    let mut stack: Vec<Expr> = items.into_iter().collect();
    stack.reverse();
    while let Some(item) = stack.pop() {
        match item {
            Expr::Empty => {}
            Expr::Literal(text) if text.is_empty() => {}
            Expr::Sequence(inner) => stack.extend(inner.into_iter().rev()),
            Expr::Literal(text) => match flat.last_mut() {
                Some(Expr::Literal(previous)) => previous.push_str(&text),
                _ => flat.push(Expr::Literal(text)),
            },
            other => flat.push(other),
        }
    }
    if flat.len() == 1 {
        return flat.pop().unwrap_or(Expr::Empty);
    }
    if flat.is_empty() {
        Expr::Empty
    } else {
        Expr::Sequence(flat)
    }
}

/// One of the alternatives, `None` when there are none; an empty alternative makes the
/// rest optional.
fn choice(items: impl IntoIterator<Item = Expr>) -> Option<Expr> {
    let mut flat: Vec<Expr> = Vec::new();
    let mut has_empty = false;
    let mut stack: Vec<Expr> = items.into_iter().collect();
    stack.reverse();
    while let Some(item) = stack.pop() {
        match item {
            Expr::Empty => has_empty = true,
            Expr::Literal(text) if text.is_empty() => has_empty = true,
            Expr::Choice(inner) => stack.extend(inner.into_iter().rev()),
            other => {
                if !flat.contains(&other) {
                    flat.push(other)
                }
            }
        }
    }
    let body = match flat.len() {
        0 => return has_empty.then_some(Expr::Empty),
        1 => flat.pop().unwrap_or(Expr::Empty),
        _ => Expr::Choice(flat),
    };
    Some(if has_empty { optional(body) } else { body })
}

/// `expr?` (unchanged when it already matches the empty text that way).
fn optional(expr: Expr) -> Expr {
    match expr {
        Expr::Empty => Expr::Empty,
        Expr::Repeat(inner, 0, max) => Expr::Repeat(inner, 0, max),
        other => other.optional(),
    }
}

/// The digits `low..=high`.
fn digit_range(low: u8, high: u8) -> Expr {
    if low == high {
        Expr::literal(char::from(b'0' + low).to_string())
    } else {
        Expr::chars([(char::from(b'0' + low), char::from(b'0' + high))])
    }
}

fn any_digit() -> Expr {
    digit_range(0, 9)
}

fn nonzero_digit() -> Expr {
    digit_range(1, 9)
}

fn zero_digit() -> Expr {
    digit_range(0, 0)
}

/// `item{count}` with counts above llama.cpp's 2000 split into nested repetitions.
fn exactly(item: &Expr, count: i64) -> Expr {
    if count <= 0 {
        return Expr::Empty;
    }
    if count == 1 {
        return item.clone();
    }
    if let Expr::Literal(text) = item
        && text.len() == 1
        && count <= 16
    {
        return Expr::literal(text.repeat(count as usize));
    }
    if count <= MAX_REPEAT {
        return item.clone().repeat(count as u32, Some(count as u32));
    }
    let blocks = (count / MAX_REPEAT) as u32;
    let block = item
        .clone()
        .repeat(MAX_REPEAT as u32, Some(MAX_REPEAT as u32));
    seq([
        block.repeat(blocks, Some(blocks)),
        exactly(item, count % MAX_REPEAT),
    ])
}

/// `item{min,max}` (`max` of `None` unbounded), counts above llama.cpp's 2000 split.
fn counted(item: Expr, min: i64, max: Option<i64>) -> Result<Expr, NumericError> {
    let min = min.max(0);
    if max.is_some_and(|max| max < min) {
        return Ok(Expr::Empty);
    }
    if min > MAX_COUNTED || max.is_some_and(|max| max > MAX_COUNTED) {
        return Err(NumericError::TooLarge(format!(
            "a run of more than {MAX_COUNTED} digits"
        )));
    }
    if min <= MAX_REPEAT && max.is_none_or(|max| max <= MAX_REPEAT) {
        return Ok(match (min, max) {
            (_, Some(0)) => Expr::Empty,
            (1, Some(1)) => item,
            (0, Some(1)) => optional(item),
            (min, max) => item.repeat(min as u32, max.map(|max| max as u32)),
        });
    }
    let head = exactly(&item, min);
    let tail = match max {
        None => item.zero_or_more(),
        Some(max) => {
            // item{0,n} = item{0,1999} | item{2000} item{0,n-2000}.
            let mut remaining = max - min;
            let mut blocks = 0;
            while remaining > MAX_REPEAT {
                blocks += 1;
                remaining -= MAX_REPEAT;
            }
            let mut tail = counted(item.clone(), 0, Some(remaining))?;
            for _ in 0..blocks {
                tail = Expr::choice([
                    item.clone().repeat(0, Some(MAX_REPEAT as u32 - 1)),
                    seq([exactly(&item, MAX_REPEAT), tail]),
                ]);
            }
            tail
        }
    };
    Ok(seq([head, tail]))
}

/// `[0] | [1-9] [0-9]{0,cap-1}`: an integer part.
fn canonical_digits(cap: Option<i64>) -> Result<Expr, NumericError> {
    Ok(Expr::choice([
        zero_digit(),
        seq([
            nonzero_digit(),
            counted(any_digit(), 0, cap.map(|cap| cap - 1))?,
        ]),
    ]))
}

/// Every integer the syntax writes.
fn plain_integer(syntax: &NumberSyntax) -> Result<Expr, NumericError> {
    Ok(Expr::choice([
        zero_digit(),
        seq([
            optional(Expr::literal("-")),
            nonzero_digit(),
            counted(any_digit(), 0, syntax.integer_cap().map(|cap| cap - 1))?,
        ]),
    ]))
}

/// Every number the syntax writes.
fn plain_number(syntax: &NumberSyntax) -> Result<Expr, NumericError> {
    let fraction = match syntax.fraction_cap() {
        Some(0) => Expr::Empty,
        cap => optional(seq([Expr::literal("."), counted(any_digit(), 1, cap)?])),
    };
    Ok(seq([
        optional(Expr::literal("-")),
        canonical_digits(syntax.integer_cap())?,
        fraction,
        exponent_suffix(syntax, None, None)?.unwrap_or(Expr::Empty),
    ]))
}

/// The exponent texts (`e5`, `E+05`, `e-0`, ... as the syntax allows) of the values in
/// `low..=high` (`None`: unbounded), optional when 0 is among them (no exponent is
/// exponent 0); `None` when there is no such text.
fn exponent_suffix(
    syntax: &NumberSyntax,
    low: Option<i64>,
    high: Option<i64>,
) -> Result<Option<Expr>, NumericError> {
    if low.zip(high).is_some_and(|(low, high)| low > high) {
        return Ok(None);
    }
    let has_zero = low.is_none_or(|low| low <= 0) && high.is_none_or(|high| high >= 0);
    if !syntax.exponent_allowed() {
        return Ok(has_zero.then_some(Expr::Empty));
    }
    let cap = syntax.max_exponent_digits.map(i64::from);
    // The largest exponent the digits can write binds nothing.
    let largest = cap
        .filter(|&cap| cap <= 18)
        .map(|cap| 10i64.pow(cap as u32) - 1);
    let magnitudes = |low: i64, high: Option<i64>| {
        Magnitudes {
            lower: (low > 0).then(|| Bound::inclusive(Decimal::from(low))),
            upper: high
                .filter(|&high| largest.is_none_or(|largest| high < largest))
                .map(|high| Bound::inclusive(Decimal::from(high))),
            integer_cap: cap,
            fraction_cap: Some(0),
            zero_from_point: None,
            leading_zeros: !syntax.canonical_exponent,
            single_digit_is_zero: false,
        }
        .expr()
    };
    let positive = if high.is_none_or(|high| high >= 0) {
        magnitudes(low.unwrap_or(0).max(0), high)?
    } else {
        None
    };
    let negative = if low.is_none_or(|low| low <= 0) {
        magnitudes(
            high.map_or(0, |high| high.saturating_neg().max(0)),
            low.map(i64::saturating_neg),
        )?
    } else {
        None
    };
    let signed = match (positive, negative) {
        (Some(positive), Some(negative)) if positive == negative => Some(seq([
            optional(Expr::chars([('+', '+'), ('-', '-')])),
            positive,
        ])),
        (positive, negative) => choice(
            positive
                .map(|texts| seq([optional(Expr::literal("+")), texts]))
                .into_iter()
                .chain(negative.map(|texts| seq([Expr::literal("-"), texts]))),
        ),
    };
    let Some(signed) = signed else {
        return Ok(has_zero.then_some(Expr::Empty));
    };
    let texts = seq([Expr::chars([('E', 'E'), ('e', 'e')]), signed]);
    Ok(Some(if has_zero { optional(texts) } else { texts }))
}

// ---------------------------------------------------------------------------------------
// Ranges
// ---------------------------------------------------------------------------------------

/// Signed number texts in a range.
struct Ranges<'a> {
    syntax: &'a NumberSyntax,
    kind: Kind,
    /// Values must be multiples of `10^power_of_ten`.
    power_of_ten: Option<i64>,
}

/// How the nonzero mantissas of one exponent value fare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Band {
    /// None satisfies the constraints.
    Empty,
    /// All do.
    All,
    /// Some do: the exponent needs a mantissa language of its own.
    Partial,
}

/// A run of exponent values `low..=high` (`None`: unbounded) in one band.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ExponentRun {
    low: Option<i64>,
    high: Option<i64>,
    band: Band,
}

impl Ranges<'_> {
    /// Texts with value in `[min, max]`: zero, positive and negative texts.
    fn signed(
        &self,
        min: Option<&Bound>,
        max: Option<&Bound>,
    ) -> Result<Option<Expr>, NumericError> {
        let mut parts = Vec::new();
        if within(min, max, &Decimal::zero()) {
            parts.push(self.zero_texts()?);
        }
        if max.is_none_or(|max| max.value.is_positive()) {
            let lower = match min {
                Some(min) if min.value.is_positive() => min.clone(),
                _ => Bound::exclusive(Decimal::zero()),
            };
            if let Some(texts) = self.nonzero(&lower, max)? {
                parts.push(texts);
            }
        }
        if min.is_none_or(|min| min.value.is_negative()) {
            let lower = match max {
                Some(max) if max.value.is_negative() => max.negated(),
                _ => Bound::exclusive(Decimal::zero()),
            };
            let upper = min.map(Bound::negated);
            if let Some(texts) = self.nonzero(&lower, upper.as_ref())? {
                parts.push(seq([Expr::literal("-"), texts]));
            }
        }
        Ok(choice(parts))
    }

    /// The texts of 0: `0` for integers; `-`? `0` (`.` `0`+)? exponent? for numbers.
    fn zero_texts(&self) -> Result<Expr, NumericError> {
        if self.kind == Kind::Integer {
            return Ok(zero_digit());
        }
        let fraction = match self.syntax.fraction_cap() {
            Some(0) => Expr::Empty,
            cap => optional(seq([Expr::literal("."), counted(zero_digit(), 1, cap)?])),
        };
        Ok(seq([
            optional(Expr::literal("-")),
            zero_digit(),
            fraction,
            exponent_suffix(self.syntax, None, None)?.unwrap_or(Expr::Empty),
        ]))
    }

    /// Mantissas in `[lower, upper]` for exponent `exponent` (the bounds already
    /// shifted), masked for `multipleOf`.
    fn mantissas(&self, lower: Bound, upper: Option<Bound>, exponent: i64) -> Magnitudes {
        Magnitudes {
            lower: Some(lower),
            upper,
            integer_cap: self.syntax.integer_cap(),
            fraction_cap: self.syntax.fraction_cap(),
            zero_from_point: self
                .power_of_ten
                .map(|power| exponent.saturating_sub(power)),
            leading_zeros: false,
            single_digit_is_zero: false,
        }
    }

    /// Every nonzero mantissa.
    fn all_mantissas(&self) -> Result<Option<Expr>, NumericError> {
        let mut mantissas = self.mantissas(Bound::exclusive(Decimal::zero()), None, 0);
        mantissas.zero_from_point = None;
        mantissas.expr()
    }

    /// Unsigned texts of nonzero values `v` above `lower` (≥ or >) and below `upper`
    /// (≤ or <); `lower` is at least "above 0".
    fn nonzero(&self, lower: &Bound, upper: Option<&Bound>) -> Result<Option<Expr>, NumericError> {
        if !self.syntax.exponent_allowed() {
            return self.mantissas(lower.clone(), upper.cloned(), 0).expr();
        }
        if lower.value.is_zero() && upper.is_none() && self.power_of_ten.is_none() {
            let Some(mantissas) = self.all_mantissas()? else {
                return Ok(None);
            };
            return Ok(
                exponent_suffix(self.syntax, None, None)?.map(|suffix| seq([mantissas, suffix]))
            );
        }
        let mut parts = Vec::new();
        let mut all_mantissas: Option<Option<Expr>> = None;
        for run in self.exponent_runs(lower, upper)? {
            let mantissas = match run.band {
                Band::Empty => continue,
                Band::All => match &all_mantissas {
                    Some(mantissas) => mantissas.clone(),
                    None => {
                        let mantissas = self.all_mantissas()?;
                        all_mantissas = Some(mantissas.clone());
                        mantissas
                    }
                },
                Band::Partial => {
                    let Some(exponent) = run.low else { continue };
                    self.mantissas(
                        lower.shifted(-exponent),
                        upper.map(|upper| upper.shifted(-exponent)),
                        exponent,
                    )
                    .expr()?
                }
            };
            if let (Some(mantissas), Some(suffix)) =
                (mantissas, exponent_suffix(self.syntax, run.low, run.high)?)
            {
                parts.push(seq([mantissas, suffix]));
            }
        }
        Ok(choice(parts))
    }

    /// How the nonzero mantissas fare at exponent `exponent`.
    fn classify(&self, lower: &Bound, upper: Option<&Bound>, exponent: i64) -> Band {
        let lower = lower.shifted(-exponent);
        let upper = upper.map(|upper| upper.shifted(-exponent));
        let integer_cap = self.syntax.integer_cap();
        let fraction_cap = self.syntax.fraction_cap();
        // The smallest nonzero mantissa (None: arbitrarily close to 0) and the largest
        // (None: unbounded), and whether that largest is attained.
        let smallest = fraction_cap.map(|digits| Decimal::power_of_ten(-digits));
        let largest = match (integer_cap, fraction_cap) {
            (Some(integer), Some(fraction)) => Some((Decimal::all_nines(integer, fraction), true)),
            (Some(integer), None) => Some((Decimal::power_of_ten(integer), false)),
            (None, _) => None,
        };
        let upper_below_all = upper.as_ref().is_some_and(|upper| match &smallest {
            Some(smallest) => {
                upper.value < *smallest || (upper.value == *smallest && upper.exclusive)
            }
            None => false,
        });
        let lower_above_all = match &largest {
            Some((largest, attained)) => {
                lower.value > *largest
                    || (lower.value == *largest && (lower.exclusive || !attained))
            }
            None => false,
        };
        let lower_covers = match &smallest {
            Some(smallest) => {
                lower.value < *smallest || (lower.value == *smallest && !lower.exclusive)
            }
            None => lower.value.is_zero(),
        };
        let upper_covers = match (&upper, &largest) {
            (None, _) => true,
            (Some(upper), Some((largest, attained))) => {
                upper.value > *largest
                    || (upper.value == *largest && (!upper.exclusive || !attained))
            }
            (Some(_), None) => false,
        };
        let (mask_empty, mask_inactive) = match self.power_of_ten {
            None => (false, true),
            Some(power) => {
                let zero_from = exponent.saturating_sub(power);
                (
                    integer_cap.is_some_and(|digits| zero_from <= -digits),
                    fraction_cap.is_some_and(|digits| zero_from >= digits),
                )
            }
        };
        if upper_below_all || lower_above_all || mask_empty {
            Band::Empty
        } else if lower_covers && upper_covers && mask_inactive {
            Band::All
        } else {
            Band::Partial
        }
    }

    /// All exponent values, as runs in increasing order; `Partial` runs are single
    /// exponents. Only windows around the bounds' magnitudes (and the `multipleOf`
    /// power) are looked at one by one; between and beyond them the band cannot change.
    fn exponent_runs(
        &self,
        lower: &Bound,
        upper: Option<&Bound>,
    ) -> Result<Vec<ExponentRun>, NumericError> {
        let exponent_range = self
            .syntax
            .max_exponent_digits
            .filter(|&digits| digits <= 18)
            .map(|digits| 10i64.pow(digits) - 1);
        let mut windows: Vec<(i64, i64)> = Vec::new();
        match (self.syntax.integer_cap(), self.syntax.fraction_cap()) {
            (Some(integer), Some(fraction)) => {
                let centers = [Some(lower), upper]
                    .into_iter()
                    .flatten()
                    .filter(|bound| !bound.value.is_zero())
                    .map(|bound| bound.value.leading_power())
                    .chain(self.power_of_ten);
                for center in centers {
                    windows.push((
                        center.saturating_sub(integer.saturating_add(3)),
                        center.saturating_add(fraction.saturating_add(3)),
                    ));
                }
            }
            _ => match exponent_range {
                Some(range) => windows.push((-range, range)),
                None => {
                    return Err(NumericError::Unsupported(format!(
                        "numbers with {} and exponents of unlimited digits: texts like 0.0…01e+K \
                         compare a count of digits with the exponent's value, which is not \
                         regular; cap the integer and fraction digits (llama.cpp mode) or \
                         write numbers without exponent",
                        describe_range(lower, upper, self.power_of_ten)
                    )));
                }
            },
        }
        if let Some(range) = exponent_range {
            windows = windows
                .into_iter()
                .map(|(low, high)| (low.max(-range), high.min(range)))
                .filter(|(low, high)| low <= high)
                .collect();
        }
        windows.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::new();
        for (low, high) in windows {
            match merged.last_mut() {
                Some(last) if low <= last.1.saturating_add(1) => last.1 = last.1.max(high),
                _ => merged.push((low, high)),
            }
        }
        let walked: i64 = merged
            .iter()
            .map(|(low, high)| high.saturating_sub(*low).saturating_add(1))
            .fold(0, i64::saturating_add);
        let too_many = |count: i64| {
            NumericError::TooLarge(format!(
                "{count} exponent values would each need their own mantissa grammar (limit \
                 {MAX_EXPONENT_BANDS})"
            ))
        };
        if walked > 4 * MAX_EXPONENT_BANDS as i64 {
            return Err(too_many(walked));
        }
        let mut runs: Vec<ExponentRun> = Vec::new();
        let mut push = |run: ExponentRun| {
            if let Some(last) = runs.last_mut()
                && last.band == run.band
                && run.band != Band::Partial
            {
                last.high = run.high;
            } else {
                runs.push(run);
            }
        };
        let floor = exponent_range.map(|range| -range);
        let ceiling = exponent_range;
        let mut cursor = floor;
        let mut partial = 0i64;
        for &(low, high) in &merged {
            if cursor.is_none_or(|cursor| cursor < low) {
                let gap_high = Some(low - 1);
                push(ExponentRun {
                    low: cursor,
                    high: gap_high,
                    band: self.stretch(lower, upper, cursor, gap_high)?,
                });
            }
            for exponent in low..=high {
                let band = self.classify(lower, upper, exponent);
                partial += i64::from(band == Band::Partial);
                push(ExponentRun {
                    low: Some(exponent),
                    high: Some(exponent),
                    band,
                });
            }
            cursor = Some(high.saturating_add(1));
        }
        if merged.is_empty() {
            push(ExponentRun {
                low: floor,
                high: ceiling,
                band: self.stretch(lower, upper, floor, ceiling)?,
            });
        } else if let Some(start) = cursor
            && ceiling.is_none_or(|ceiling| start <= ceiling)
        {
            push(ExponentRun {
                low: Some(start),
                high: ceiling,
                band: self.stretch(lower, upper, Some(start), ceiling)?,
            });
        }
        if partial > MAX_EXPONENT_BANDS as i64 {
            return Err(too_many(partial));
        }
        Ok(runs)
    }

    /// The band of a stretch of exponents outside every window (the same for all of
    /// them: checked at its finite ends).
    fn stretch(
        &self,
        lower: &Bound,
        upper: Option<&Bound>,
        low: Option<i64>,
        high: Option<i64>,
    ) -> Result<Band, NumericError> {
        let mut probes: Vec<i64> = [low, high].into_iter().flatten().collect();
        if probes.is_empty() {
            probes.push(0);
        }
        let bands: Vec<Band> = probes
            .iter()
            .map(|&exponent| self.classify(lower, upper, exponent))
            .collect();
        match bands.first() {
            Some(&band) if band != Band::Partial && bands.iter().all(|&other| other == band) => {
                Ok(band)
            }
            _ => Err(NumericError::Unsupported(format!(
                "internal: the exponent bands of numbers {} are not monotone",
                describe_range(lower, upper, self.power_of_ten)
            ))),
        }
    }
}

/// `|x| > 1.5 and ≤ 100 (multiples of 0.01)` for messages (one sign's magnitudes).
fn describe_range(lower: &Bound, upper: Option<&Bound>, power_of_ten: Option<i64>) -> String {
    let mut text = format!(
        "|x| {} {}",
        if lower.exclusive { ">" } else { "≥" },
        lower.value
    );
    if let Some(upper) = upper {
        text.push_str(&format!(
            " and {} {}",
            if upper.exclusive { "<" } else { "≤" },
            upper.value
        ));
    }
    if let Some(power) = power_of_ten {
        text.push_str(&format!(" (multiples of {})", Decimal::power_of_ten(power)));
    }
    text
}

// ---------------------------------------------------------------------------------------
// Magnitudes: unsigned texts in an interval, digit by digit
// ---------------------------------------------------------------------------------------

/// Unsigned texts without exponent (an integer part, canonical or with leading zeros,
/// and an optional fraction) whose value lies in an interval of values ≥ 0.
///
/// Texts are grouped by the length of their integer part. For lengths strictly between
/// the bounds' integer lengths every text qualifies (`[1-9] [0-9]{a,b}` and any
/// fraction); for a bound's own length the text is compared with the bound digit by digit
/// ("still equal to the bound's digits so far" or not), which gives one nested
/// alternative per digit of the bound.
#[derive(Debug, Clone)]
struct Magnitudes {
    /// `None`: ≥ 0.
    lower: Option<Bound>,
    /// `None`: unbounded.
    upper: Option<Bound>,
    integer_cap: Option<i64>,
    fraction_cap: Option<i64>,
    /// Fraction digits at index `zero_from_point` and after must be 0; a negative value
    /// reaches into the integer part (`-2`: the last two integer digits too). That is,
    /// the value is a multiple of `10^-zero_from_point`.
    zero_from_point: Option<i64>,
    /// Integer parts may have leading zeros (exponents in JSON).
    leading_zeros: bool,
    /// A one-digit integer part must be `0` (the other one-digit texts are in a band).
    single_digit_is_zero: bool,
}

impl Magnitudes {
    fn expr(&self) -> Result<Option<Expr>, NumericError> {
        let mut this = self.clone();
        if this.lower.as_ref().is_some_and(|lower| {
            lower.value.is_negative() || (lower.value.is_zero() && !lower.exclusive)
        }) {
            this.lower = None;
        }
        if let Some(upper) = &this.upper {
            if upper.value.is_negative() || (upper.value.is_zero() && upper.exclusive) {
                return Ok(None);
            }
            if let Some(lower) = &this.lower
                && (lower.value > upper.value
                    || (lower.value == upper.value && (lower.exclusive || upper.exclusive)))
            {
                return Ok(None);
            }
            // An upper bound longer than any writable integer part binds nothing.
            if this
                .integer_cap
                .is_some_and(|cap| upper.value.integer_length() > cap)
            {
                this.upper = None;
            }
        }
        if let Some(lower) = &this.lower
            && this
                .integer_cap
                .is_some_and(|cap| lower.value.integer_length() > cap)
        {
            return Ok(None);
        }
        for bound in [&this.lower, &this.upper].into_iter().flatten() {
            let integer = bound.value.integer_length();
            let fraction = match this.fraction_cap {
                Some(cap) => bound.value.fraction_length().min(cap),
                None => bound.value.fraction_length(),
            };
            if integer.saturating_add(fraction) > MAX_POSITIONS {
                return Err(NumericError::TooLarge(format!(
                    "the bound {} pins more than {MAX_POSITIONS} digit places",
                    bound.value
                )));
            }
        }
        if this.leading_zeros {
            this.with_leading_zeros()
        } else {
            this.canonical()
        }
    }

    fn canonical(&self) -> Result<Option<Expr>, NumericError> {
        let lower_length = self
            .lower
            .as_ref()
            .map_or(1, |lower| lower.value.integer_length());
        let upper_length = self
            .upper
            .as_ref()
            .map(|upper| upper.value.integer_length());
        let longest = match (self.integer_cap, upper_length) {
            (Some(cap), Some(length)) => Some(cap.min(length)),
            (cap, length) => cap.or(length),
        };
        if longest.is_some_and(|longest| lower_length > longest) {
            return Ok(None);
        }
        // Below 1 and above 9 allowed: the one-digit integer parts 1-9 all qualify and
        // join the band of longer ones (`[1-9] [0-9]{0,15}`).
        let below_one = self
            .lower
            .as_ref()
            .is_none_or(|lower| lower.value < Decimal::power_of_ten(0));
        let merge_single_digits = below_one && upper_length != Some(1);
        let mut parts = Vec::new();
        let first = Magnitudes {
            single_digit_is_zero: merge_single_digits,
            ..self.clone()
        };
        parts.extend(first.frame(
            lower_length,
            self.lower.is_some(),
            upper_length == Some(lower_length),
        )?);
        let band_start = if merge_single_digits {
            1
        } else {
            (lower_length + 1).max(2)
        };
        let band_end = match upper_length {
            Some(length) => Some(length - 1),
            None => longest,
        };
        if band_end.is_none_or(|end| end >= band_start) {
            parts.extend(self.band(band_start, band_end)?);
        }
        if let Some(length) = upper_length
            && length > lower_length
        {
            parts.extend(self.frame(length, false, true)?);
        }
        Ok(choice(parts))
    }

    fn with_leading_zeros(&self) -> Result<Option<Expr>, NumericError> {
        let Some(cap) = self.integer_cap else {
            let canonical = Magnitudes {
                leading_zeros: false,
                ..self.clone()
            }
            .canonical()?;
            return Ok(canonical.map(|texts| seq([zero_digit().zero_or_more(), texts])));
        };
        if cap > MAX_POSITIONS {
            return Err(NumericError::TooLarge(format!(
                "{cap} digits with leading zeros"
            )));
        }
        let mut parts = Vec::new();
        for width in 1..=cap {
            let lower_tight = match &self.lower {
                Some(lower) if lower.value.integer_length() > width => continue,
                Some(_) => true,
                None => false,
            };
            let upper_tight = self
                .upper
                .as_ref()
                .is_some_and(|upper| upper.value.integer_length() <= width);
            parts.extend(self.frame(width, lower_tight, upper_tight)?);
        }
        Ok(choice(parts))
    }

    /// Texts whose integer part has `length` digits.
    fn frame(
        &self,
        length: i64,
        lower_tight: bool,
        upper_tight: bool,
    ) -> Result<Option<Expr>, NumericError> {
        self.rest(length, 0, lower_tight, upper_tight)
    }

    /// Texts whose integer part has `start..=end` digits, first digit not 0, all
    /// qualifying.
    fn band(&self, start: i64, end: Option<i64>) -> Result<Option<Expr>, NumericError> {
        let trailing_zeros = self
            .zero_from_point
            .map_or(0, |zero_from| zero_from.saturating_neg().max(0));
        let start = start.max(trailing_zeros.saturating_add(1));
        if end.is_some_and(|end| end < start) {
            return Ok(None);
        }
        let integer = seq([
            nonzero_digit(),
            counted(
                any_digit(),
                start - 1 - trailing_zeros,
                end.map(|end| end - 1 - trailing_zeros),
            )?,
            counted(zero_digit(), trailing_zeros, Some(trailing_zeros))?,
        ]);
        let fraction = self
            .fraction_digits(0, true)?
            .map_or(Expr::Empty, |digits| {
                optional(seq([Expr::literal("."), digits]))
            });
        Ok(Some(seq([integer, fraction])))
    }

    /// Fraction digits from fraction index `index` on, all qualifying; `nonempty` right
    /// after the point. `None` when no such (nonempty) digits exist.
    fn fraction_digits(&self, index: i64, nonempty: bool) -> Result<Option<Expr>, NumericError> {
        let remaining = self.fraction_cap.map(|cap| (cap - index).max(0));
        if remaining == Some(0) {
            return Ok((!nonempty).then_some(Expr::Empty));
        }
        // Digits that may be anything, then digits that must be 0 (None: unlimited).
        let free = match self.zero_from_point {
            Some(zero_from) => {
                let free = zero_from.saturating_sub(index).max(0);
                Some(remaining.map_or(free, |remaining| free.min(remaining)))
            }
            None => remaining,
        };
        let zeros = match (remaining, free) {
            (Some(remaining), Some(free)) => Some(remaining - free),
            (None, Some(_)) => None,
            (_, None) => Some(0),
        };
        if nonempty && free == Some(0) {
            return Ok(Some(counted(zero_digit(), 1, zeros)?));
        }
        Ok(Some(seq([
            counted(any_digit(), i64::from(nonempty), free)?,
            counted(zero_digit(), 0, zeros)?,
        ])))
    }

    /// The digits allowed at `position` of a text with a `length`-digit integer part
    /// (positions from `length` on are fraction digits), as a range; `None` past the end.
    fn allowed(&self, length: i64, position: i64) -> Option<(u8, u8)> {
        if position >= length
            && self
                .fraction_cap
                .is_some_and(|cap| position - length >= cap)
        {
            return None;
        }
        let low = u8::from(position == 0 && length > 1 && !self.leading_zeros);
        let high = match self.zero_from_point {
            Some(zero_from) if position - length >= zero_from => 0,
            _ if position == 0 && length == 1 && self.single_digit_is_zero => 0,
            _ => 9,
        };
        (low <= high).then_some((low, high))
    }

    /// The bound's digit at `position` for a `length`-digit integer part.
    fn bound_digit(bound: &Bound, length: i64, position: i64) -> u8 {
        bound.value.digit_at_power(length - 1 - position)
    }

    /// The first position after the bound's last nonzero digit.
    fn bound_end(bound: &Bound, length: i64) -> i64 {
        if bound.value.is_zero() {
            0
        } else {
            length.saturating_sub(bound.value.exponent)
        }
    }

    /// The rest of a text from digit `position` on, given that its digits so far equal
    /// the lower bound's (`lower_tight`) and/or the upper bound's (`upper_tight`).
    fn rest(
        &self,
        length: i64,
        position: i64,
        lower_tight: bool,
        upper_tight: bool,
    ) -> Result<Option<Expr>, NumericError> {
        grail_syntax::stack::deep(|| self.rest_here(length, position, lower_tight, upper_tight))
    }

    fn rest_here(
        &self,
        length: i64,
        position: i64,
        lower_tight: bool,
        upper_tight: bool,
    ) -> Result<Option<Expr>, NumericError> {
        let upper = self.upper.as_ref().filter(|_| upper_tight);
        // Equal to all of an inclusive lower bound: anything that follows is ≥ it.
        let lower = self.lower.as_ref().filter(|lower| {
            lower_tight && (lower.exclusive || position < Magnitudes::bound_end(lower, length))
        });
        if lower.is_none() && upper.is_none() {
            return self.free(length, position);
        }
        if let Some(upper) = upper
            && position >= Magnitudes::bound_end(upper, length)
        {
            // Equal to all of the upper bound: only zeros may follow, and only if the
            // bound is inclusive and the lower bound is passed.
            if lower.is_some() || upper.exclusive {
                return Ok(None);
            }
            return self.zeros_only(length, position);
        }
        let lower_done =
            lower.is_some_and(|lower| position >= Magnitudes::bound_end(lower, length));
        if lower_done && upper.is_none() {
            // Equal to all of an exclusive lower bound: a nonzero digit must follow.
            let limit = [
                self.fraction_cap.map(|cap| length.saturating_add(cap)),
                self.zero_from_point
                    .map(|zero_from| length.saturating_add(zero_from)),
            ]
            .into_iter()
            .flatten()
            .min();
            if limit.is_some_and(|limit| position >= limit) {
                return Ok(None);
            }
            if self.fraction_cap.is_none() && position >= length {
                return self.nonzero_tail(length, position).map(Some);
            }
            if position - length > MAX_POSITIONS {
                return Err(NumericError::TooLarge(format!(
                    "more than {MAX_POSITIONS} fraction digits"
                )));
            }
        }
        if let Some(lower) = lower
            && upper.is_none()
            && !lower_done
            && position >= length
            && self.fraction_cap.is_none()
            && self.zero_from_point.is_none()
        {
            // A run of zeros in the lower bound's fraction (`1e-300`): leave it at any
            // of its digits with a nonzero digit, or follow all of it.
            let end = Magnitudes::bound_end(lower, length);
            let run = (position..end)
                .take_while(|&place| Magnitudes::bound_digit(lower, length, place) == 0)
                .count() as i64;
            if run >= 2 {
                let after = self.rest(length, position + run, true, false)?;
                let digits = choice(
                    [seq([
                        counted(zero_digit(), 0, Some(run - 1))?,
                        nonzero_digit(),
                        any_digit().zero_or_more(),
                    ])]
                    .into_iter()
                    .chain(after.map(|after| seq([exactly(&zero_digit(), run), after]))),
                );
                return Ok(digits.map(|digits| {
                    if position == length {
                        seq([Expr::literal("."), digits])
                    } else {
                        digits
                    }
                }));
            }
        }
        let mut parts = Vec::new();
        if position >= length && lower.is_none() {
            parts.push(Expr::Empty);
        }
        let mut digit_parts = Vec::new();
        if let Some((allowed_low, allowed_high)) = self.allowed(length, position) {
            let lower_digit = lower.map(|lower| Magnitudes::bound_digit(lower, length, position));
            let upper_digit = upper.map(|upper| Magnitudes::bound_digit(upper, length, position));
            // (low digit, high digit, still equal to lower, still equal to upper)
            let mut groups: Vec<(u8, u8, bool, bool)> = Vec::new();
            match (lower_digit, upper_digit) {
                (Some(low), Some(high)) if low <= high => {
                    groups.push((low, low, true, low == high));
                    if high > low {
                        groups.push((high, high, false, true));
                    }
                    if high > low + 1 {
                        groups.push((low + 1, high - 1, false, false));
                    }
                }
                (Some(_), Some(_)) => {}
                (Some(low), None) => {
                    groups.push((low, low, true, false));
                    if low < 9 {
                        groups.push((low + 1, 9, false, false));
                    }
                }
                (None, Some(high)) => {
                    groups.push((high, high, false, true));
                    if high > 0 {
                        groups.push((0, high - 1, false, false));
                    }
                }
                (None, None) => groups.push((0, 9, false, false)),
            }
            groups.sort_unstable();
            // (low digit, high digit, what follows), neighbours with the same rest merged.
            let mut continued: Vec<(u8, u8, Expr)> = Vec::new();
            for (low, high, still_lower, still_upper) in groups {
                let (low, high) = (low.max(allowed_low), high.min(allowed_high));
                if low > high {
                    continue;
                }
                let Some(after) = self.rest(length, position + 1, still_lower, still_upper)? else {
                    continue;
                };
                match continued.last_mut() {
                    Some(last) if last.1 + 1 == low && last.2 == after => last.1 = high,
                    _ => continued.push((low, high, after)),
                }
            }
            for (low, high, after) in continued {
                digit_parts.push(seq([digit_range(low, high), after]));
            }
        }
        if let Some(digits) = choice(digit_parts) {
            if position == length {
                parts.push(seq([Expr::literal("."), digits]));
            } else {
                parts.push(digits);
            }
        }
        Ok(choice(parts))
    }

    /// Any rest of a text from `position` on.
    fn free(&self, length: i64, position: i64) -> Result<Option<Expr>, NumericError> {
        let mut items = Vec::new();
        if position < length {
            let mut from = position;
            if from == 0 {
                let Some((low, high)) = self.allowed(length, 0) else {
                    return Ok(None);
                };
                items.push(digit_range(low, high));
                from = 1;
            }
            let zeros_from = self.zero_from_point.map_or(length, |zero_from| {
                length.saturating_add(zero_from).clamp(from, length)
            });
            items.push(exactly(&any_digit(), zeros_from - from));
            items.push(exactly(&zero_digit(), length - zeros_from));
        }
        if position <= length {
            if let Some(digits) = self.fraction_digits(0, true)? {
                items.push(optional(seq([Expr::literal("."), digits])));
            }
        } else if let Some(digits) = self.fraction_digits(position - length, false)? {
            items.push(digits);
        }
        Ok(Some(seq(items)))
    }

    /// Zeros only from `position` on (the value stays what it is).
    fn zeros_only(&self, length: i64, position: i64) -> Result<Option<Expr>, NumericError> {
        let mut items = Vec::new();
        if position < length {
            if position == 0 && length > 1 && !self.leading_zeros {
                return Ok(None);
            }
            items.push(exactly(&zero_digit(), length - position));
        }
        let remaining = self
            .fraction_cap
            .map(|cap| (cap - (position - length).max(0)).max(0));
        if position <= length {
            if remaining != Some(0) {
                items.push(optional(seq([
                    Expr::literal("."),
                    counted(zero_digit(), 1, remaining)?,
                ])));
            }
        } else {
            items.push(counted(zero_digit(), 0, remaining)?);
        }
        Ok(Some(seq(items)))
    }

    /// Uncapped fraction digits from `position` on with a nonzero digit before the
    /// `multipleOf` mask, by their last nonzero digit: `[0-9]{0,k-1} [1-9] 0*`.
    fn nonzero_tail(&self, length: i64, position: i64) -> Result<Expr, NumericError> {
        let before_mask = self
            .zero_from_point
            .map(|zero_from| length.saturating_add(zero_from) - position - 1);
        let digits = seq([
            counted(any_digit(), 0, before_mask)?,
            nonzero_digit(),
            zero_digit().zero_or_more(),
        ]);
        Ok(if position == length {
            seq([Expr::literal("."), digits])
        } else {
            digits
        })
    }
}

// ---------------------------------------------------------------------------------------
// multipleOf automata
// ---------------------------------------------------------------------------------------

/// The characters of number texts without exponent, as automaton symbols.
const ALPHABET: [char; 12] = ['-', '.', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9'];

/// A set of [`ALPHABET`] symbols, one bit each.
type Symbols = u16;

fn symbols_of(set: &CharSet) -> Symbols {
    ALPHABET
        .iter()
        .enumerate()
        .filter(|&(_, &character)| set.contains(character as u32))
        .fold(0, |symbols, (index, _)| symbols | (1 << index))
}

/// A nondeterministic automaton built from a rule-free expression (Thompson's
/// construction).
#[derive(Default)]
struct Nfa {
    edges: Vec<Vec<(Symbols, usize)>>,
    epsilons: Vec<Vec<usize>>,
}

impl Nfa {
    const MAX_STATES: usize = 200_000;

    fn state(&mut self) -> Result<usize, NumericError> {
        if self.edges.len() >= Nfa::MAX_STATES {
            return Err(NumericError::TooLarge(format!(
                "the range automaton exceeds {} states",
                Nfa::MAX_STATES
            )));
        }
        self.edges.push(Vec::new());
        self.epsilons.push(Vec::new());
        Ok(self.edges.len() - 1)
    }

    /// Adds `expr` starting at `from`; returns its end state.
    fn add(&mut self, expr: &Expr, from: usize) -> Result<usize, NumericError> {
        grail_syntax::stack::deep(|| self.add_here(expr, from))
    }

    fn add_here(&mut self, expr: &Expr, from: usize) -> Result<usize, NumericError> {
        match expr {
            Expr::Empty => Ok(from),
            Expr::Literal(text) => {
                let mut current = from;
                for character in text.chars() {
                    let next = self.state()?;
                    let symbols = symbols_of(&CharSet::single(character as u32));
                    if symbols != 0 {
                        self.edges[current].push((symbols, next));
                    }
                    current = next;
                }
                Ok(current)
            }
            Expr::Chars(set) => {
                let next = self.state()?;
                let symbols = symbols_of(set);
                if symbols != 0 {
                    self.edges[from].push((symbols, next));
                }
                Ok(next)
            }
            Expr::Any => {
                let next = self.state()?;
                self.edges[from].push(((1 << ALPHABET.len()) - 1, next));
                Ok(next)
            }
            Expr::Sequence(items) => {
                let mut current = from;
                for item in items {
                    current = self.add(item, current)?;
                }
                Ok(current)
            }
            Expr::Choice(items) => {
                let end = self.state()?;
                for item in items {
                    let start = self.state()?;
                    self.epsilons[from].push(start);
                    let item_end = self.add(item, start)?;
                    self.epsilons[item_end].push(end);
                }
                Ok(end)
            }
            Expr::Repeat(item, min, max) => {
                let mut current = from;
                for _ in 0..*min {
                    let start = self.state()?;
                    self.epsilons[current].push(start);
                    current = self.add(item, start)?;
                }
                match max {
                    None => {
                        let hub = self.state()?;
                        self.epsilons[current].push(hub);
                        let start = self.state()?;
                        self.epsilons[hub].push(start);
                        let item_end = self.add(item, start)?;
                        self.epsilons[item_end].push(hub);
                        Ok(hub)
                    }
                    Some(max) => {
                        let end = self.state()?;
                        self.epsilons[current].push(end);
                        for _ in *min..*max {
                            let start = self.state()?;
                            self.epsilons[current].push(start);
                            current = self.add(item, start)?;
                            self.epsilons[current].push(end);
                        }
                        Ok(end)
                    }
                }
            }
            Expr::Rule(_) | Expr::Token(_) => Err(NumericError::Unsupported(
                "internal: a range expression refers to a rule".to_string(),
            )),
        }
    }

    /// The states reachable from `states` by empty moves, sorted.
    fn closure(&self, states: &mut Vec<usize>) {
        let mut index = 0;
        while index < states.len() {
            let state = states[index];
            for &next in &self.epsilons[state] {
                if !states.contains(&next) {
                    states.push(next);
                }
            }
            index += 1;
        }
        states.sort_unstable();
    }
}

/// A deterministic automaton over [`ALPHABET`]; state 0 is the start.
#[derive(Debug, Clone)]
struct Automaton {
    transitions: Vec<[Option<usize>; ALPHABET.len()]>,
    accepting: Vec<bool>,
}

impl Residue {
    /// The state after reading `symbol`. A state is (remainder, phase): phase 0 in the
    /// integer part, `1 + k` after `k` fraction digits (counted up to the places).
    fn step(&self, (remainder, phase): (u64, u64), symbol: usize) -> Option<(u64, u64)> {
        match ALPHABET[symbol] {
            '-' => Some((remainder, phase)),
            '.' => (phase == 0).then_some((remainder, 1)),
            digit => {
                let digit = u64::from(digit as u8 - b'0');
                if phase == 0 {
                    Some(((remainder * 10 + digit) % self.modulus, 0))
                } else if phase - 1 < self.fraction_places {
                    Some(((remainder * 10 + digit) % self.modulus, phase + 1))
                } else {
                    (digit == 0).then_some((remainder, phase))
                }
            }
        }
    }

    /// True when a text ending in this state is a multiple: the digits read, padded
    /// with zeros to the fraction places, are a multiple of the modulus.
    fn accepts(&self, (remainder, phase): (u64, u64)) -> bool {
        let read = phase.saturating_sub(1);
        let mut scaled = remainder;
        let mut padding = self.fraction_places.saturating_sub(read);
        while padding > 0 && scaled != 0 {
            scaled = scaled * 10 % self.modulus;
            padding -= 1;
        }
        scaled == 0
    }
}

impl Automaton {
    /// The range language intersected with the remainder automaton, minimized; `None`
    /// when empty.
    fn product(range: &Expr, residue: Residue) -> Result<Option<Automaton>, NumericError> {
        let residue_states = u128::from(residue.modulus)
            .saturating_mul(u128::from(residue.fraction_places.saturating_add(2)));
        if residue_states > MAX_AUTOMATON_STATES as u128 {
            return Err(NumericError::TooLarge(format!(
                "a remainder automaton of {residue_states} states (limit \
                 {MAX_AUTOMATON_STATES})"
            )));
        }
        let mut nfa = Nfa::default();
        let start = nfa.state()?;
        let end = nfa.add(range, start)?;
        let mut initial = vec![start];
        nfa.closure(&mut initial);
        type Key = (Vec<usize>, (u64, u64));
        let mut index: HashMap<Key, usize> = HashMap::new();
        let mut keys: Vec<Key> = vec![(initial, (0, 0))];
        index.insert(keys[0].clone(), 0);
        let mut automaton = Automaton {
            transitions: Vec::new(),
            accepting: Vec::new(),
        };
        let mut current = 0;
        while current < keys.len() {
            let (set, residue_state) = keys[current].clone();
            let mut row = [None; ALPHABET.len()];
            for (symbol, target) in row.iter_mut().enumerate() {
                let Some(next_residue) = residue.step(residue_state, symbol) else {
                    continue;
                };
                let mut next_set: Vec<usize> = Vec::new();
                for &state in &set {
                    for &(symbols, next) in &nfa.edges[state] {
                        if symbols & (1 << symbol) != 0 && !next_set.contains(&next) {
                            next_set.push(next);
                        }
                    }
                }
                if next_set.is_empty() {
                    continue;
                }
                nfa.closure(&mut next_set);
                let key = (next_set, next_residue);
                let id = match index.get(&key) {
                    Some(&id) => id,
                    None => {
                        if keys.len() >= MAX_AUTOMATON_STATES {
                            return Err(NumericError::TooLarge(format!(
                                "the range × multipleOf automaton exceeds \
                                 {MAX_AUTOMATON_STATES} states"
                            )));
                        }
                        index.insert(key.clone(), keys.len());
                        keys.push(key);
                        keys.len() - 1
                    }
                };
                *target = Some(id);
            }
            automaton.transitions.push(row);
            automaton
                .accepting
                .push(set.binary_search(&end).is_ok() && residue.accepts(residue_state));
            current += 1;
        }
        let Some(minimal) = automaton.trimmed().map(|trimmed| trimmed.minimized()) else {
            return Ok(None);
        };
        let alternatives: usize = minimal
            .transitions
            .iter()
            .map(|row| {
                let mut targets: Vec<usize> = row.iter().flatten().copied().collect();
                targets.sort_unstable();
                targets.dedup();
                targets.len()
            })
            .sum();
        if alternatives > MAX_AUTOMATON_ALTERNATIVES {
            return Err(NumericError::TooLarge(format!(
                "the range × multipleOf automaton needs {alternatives} alternatives in {} \
                 rules (limit {MAX_AUTOMATON_ALTERNATIVES})",
                minimal.accepting.len()
            )));
        }
        Ok(Some(minimal))
    }

    /// Without the moves into states from which nothing is accepted; `None` when the
    /// start is such a state.
    fn trimmed(mut self) -> Option<Automaton> {
        let count = self.accepting.len();
        let mut predecessors: Vec<Vec<usize>> = vec![Vec::new(); count];
        for (state, row) in self.transitions.iter().enumerate() {
            for &target in row.iter().flatten() {
                predecessors[target].push(state);
            }
        }
        let mut live = self.accepting.clone();
        let mut queue: Vec<usize> = (0..count).filter(|&state| live[state]).collect();
        while let Some(state) = queue.pop() {
            for &previous in &predecessors[state] {
                if !live[previous] {
                    live[previous] = true;
                    queue.push(previous);
                }
            }
        }
        if !live.first().copied().unwrap_or(false) {
            return None;
        }
        for row in &mut self.transitions {
            for target in row.iter_mut() {
                if target.is_some_and(|target| !live[target]) {
                    *target = None;
                }
            }
        }
        Some(self)
    }

    /// The minimal equivalent automaton (Moore's partition refinement), reachable states
    /// only, numbered breadth first from the start.
    fn minimized(&self) -> Automaton {
        let count = self.accepting.len();
        let mut class: Vec<usize> = self
            .accepting
            .iter()
            .map(|&accepting| usize::from(accepting))
            .collect();
        let mut class_count = 0;
        loop {
            type Signature = (usize, [Option<usize>; ALPHABET.len()]);
            let mut signatures: HashMap<Signature, usize> = HashMap::new();
            let mut next_class = vec![0; count];
            for (state, slot) in next_class.iter_mut().enumerate() {
                let row = self.transitions[state].map(|target| target.map(|target| class[target]));
                let fresh = signatures.len();
                *slot = *signatures.entry((class[state], row)).or_insert(fresh);
            }
            let new_count = signatures.len();
            class = next_class;
            if new_count == class_count {
                break;
            }
            class_count = new_count;
        }
        let mut order: Vec<Option<usize>> = vec![None; class_count.max(1)];
        let mut representatives: Vec<usize> = vec![0];
        order[class[0]] = Some(0);
        let mut next = 0;
        while next < representatives.len() {
            let state = representatives[next];
            for &target in self.transitions[state].iter().flatten() {
                if order[class[target]].is_none() {
                    order[class[target]] = Some(representatives.len());
                    representatives.push(target);
                }
            }
            next += 1;
        }
        Automaton {
            transitions: representatives
                .iter()
                .map(|&state| {
                    self.transitions[state]
                        .map(|target| target.and_then(|target| order[class[target]]))
                })
                .collect(),
            accepting: representatives
                .iter()
                .map(|&state| self.accepting[state])
                .collect(),
        }
    }

    /// The automaton as rules: one per state entered from more than one place, the
    /// others written inline where they are entered.
    fn emit(&self, builder: &mut GrammarBuilder) -> Result<Expr, NumericError> {
        let count = self.accepting.len();
        let mut references = vec![0usize; count];
        for row in &self.transitions {
            let mut targets: Vec<usize> = row.iter().flatten().copied().collect();
            targets.sort_unstable();
            targets.dedup();
            for target in targets {
                references[target] += 1;
            }
        }
        let mut rules: Vec<Option<RuleId>> = vec![None; count];
        for (state, rule) in rules.iter_mut().enumerate() {
            let sink = self.transitions[state].iter().all(Option::is_none);
            let entered_once = state != 0 && references[state] == 1;
            let unreferenced_start = state == 0 && references[0] == 0;
            if !(sink || entered_once || unreferenced_start) {
                *rule = Some(builder.declare("multiple-of"));
            }
        }
        for (state, rule) in rules.iter().enumerate() {
            if let Some(rule) = rule {
                builder.define(*rule, self.state_expr(state, &rules))?;
            }
        }
        Ok(match rules[0] {
            Some(rule) => Expr::Rule(rule),
            None => self.state_expr(0, &rules),
        })
    }

    /// What a text may continue with from `state`.
    fn state_expr(&self, state: usize, rules: &[Option<RuleId>]) -> Expr {
        grail_syntax::stack::deep(|| {
            let mut targets: Vec<(usize, Symbols)> = Vec::new();
            for (symbol, target) in self.transitions[state].iter().enumerate() {
                if let Some(target) = *target {
                    match targets.iter_mut().find(|(existing, _)| *existing == target) {
                        Some((_, symbols)) => *symbols |= 1 << symbol,
                        None => targets.push((target, 1 << symbol)),
                    }
                }
            }
            let mut parts = Vec::new();
            if self.accepting[state] {
                parts.push(Expr::Empty);
            }
            for (target, symbols) in targets {
                let after = match rules[target] {
                    Some(rule) => Expr::Rule(rule),
                    None => self.state_expr(target, rules),
                };
                parts.push(seq([symbol_class(symbols), after]));
            }
            choice(parts).unwrap_or(Expr::Empty)
        })
    }
}

/// The characters of a symbol set as a class (a literal for one character).
fn symbol_class(symbols: Symbols) -> Expr {
    let characters: Vec<char> = ALPHABET
        .iter()
        .enumerate()
        .filter(|&(index, _)| symbols & (1 << index) != 0)
        .map(|(_, &character)| character)
        .collect();
    match characters.as_slice() {
        [single] => Expr::literal(single.to_string()),
        _ => Expr::Chars(CharSet::new(
            characters
                .iter()
                .map(|&character| (character as u32, character as u32)),
            false,
        )),
    }
}

#[cfg(test)]
mod tests;
