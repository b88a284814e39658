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
//! for `[-1e300, 1e300]`; in scientific notation
//! ([`NumberSyntax::scientific_exponent`], Grail's default for bounded numbers) one per
//! bound's decade plus a few runs of exponents. `multipleOf` automata are one rule per state: 4 rules for
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
    /// True when a number with an exponent is written in scientific notation: one
    /// nonzero digit before the point (`1.5e-7`, `2e+20`, as JSON serializers write
    /// exponents; not `15e-8` or `0.15e-6`). Numbers without exponent keep the other caps.
    /// A range then needs a mantissa language of its own for the exponents of its bounds
    /// only (every other exponent takes all mantissas or none), where otherwise every
    /// exponent near a bound's magnitude does.
    pub scientific_exponent: bool,
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
            scientific_exponent: false,
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
            scientific_exponent: false,
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
            scientific_exponent: false,
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
                Some(Expr::Literal(previous)) => previous.to_mut().push_str(&text),
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
    if syntax.scientific_exponent && syntax.exponent_allowed() {
        // Without exponent, any digits; with one, a nonzero digit before the point (or
        // zero).
        let exponent = exponent_suffix(syntax, None, None)?.unwrap_or(Expr::Empty);
        let zero_fraction = match syntax.fraction_cap() {
            Some(0) => Expr::Empty,
            cap => optional(seq([Expr::literal("."), counted(zero_digit(), 1, cap)?])),
        };
        return Ok(seq([
            optional(Expr::literal("-")),
            choice([
                seq([canonical_digits(syntax.integer_cap())?, fraction.clone()]),
                seq([nonzero_digit(), fraction, exponent.clone()]),
                seq([zero_digit(), zero_fraction, exponent]),
            ])
            .unwrap_or(Expr::Empty),
        ]));
    }
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

mod automaton;
mod range_grammar;

use automaton::*;
use range_grammar::*;

#[cfg(test)]
mod tests;
