//! Exact decimals ([`Decimal`]) and bounds on them ([`Bound`]): the arithmetic the
//! numeric grammars are built on.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use super::EXPONENT_CLAMP;

// ---------------------------------------------------------------------------------------
// Decimal
// ---------------------------------------------------------------------------------------

/// An exact decimal number as JSON Schema writes it (from `serde_json::Number`'s text,
/// e.g. `1e300`, `-0.25`, `12345678901234567890`): sign, significant digits and a power
/// of ten. No floats: ordering and equality are by exact value, so `1.0 == 1` and
/// `-0 == 0`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Decimal {
    /// True for values below zero (never for zero).
    pub(super) negative: bool,
    /// Significant digits (each 0-9), without leading or trailing zeros; empty for zero.
    pub(super) digits: Vec<u8>,
    /// The value is `digits × 10^exponent` (0 for zero), clamped to ±[`EXPONENT_CLAMP`].
    pub(super) exponent: i64,
}

/// Why a text is not a JSON number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a JSON number")]
pub struct DecimalParseError {
    /// The text.
    pub text: String,
}

impl Decimal {
    /// Zero.
    pub fn zero() -> Decimal {
        Decimal {
            negative: false,
            digits: Vec::new(),
            exponent: 0,
        }
    }

    /// Reads JSON number text (`-`? integer part without leading zeros, optional
    /// fraction, optional exponent with optional leading zeros). Exponents beyond about
    /// ±1.15e18 are clamped.
    pub fn parse(text: &str) -> Result<Decimal, DecimalParseError> {
        let invalid = || DecimalParseError {
            text: text.to_string(),
        };
        let bytes = text.as_bytes();
        let mut index = 0;
        let negative = bytes.first() == Some(&b'-');
        if negative {
            index += 1;
        }
        let digits_from = |index: &mut usize| {
            let start = *index;
            while *index < bytes.len() && bytes[*index].is_ascii_digit() {
                *index += 1;
            }
            &bytes[start..*index]
        };
        let integer = digits_from(&mut index);
        if integer.is_empty() || (integer.len() > 1 && integer[0] == b'0') {
            return Err(invalid());
        }
        let mut fraction: &[u8] = &[];
        if bytes.get(index) == Some(&b'.') {
            index += 1;
            fraction = digits_from(&mut index);
            if fraction.is_empty() {
                return Err(invalid());
            }
        }
        let mut exponent: i64 = 0;
        if matches!(bytes.get(index), Some(b'e' | b'E')) {
            index += 1;
            let exponent_negative = match bytes.get(index) {
                Some(b'-') => {
                    index += 1;
                    true
                }
                Some(b'+') => {
                    index += 1;
                    false
                }
                _ => false,
            };
            let exponent_digits = digits_from(&mut index);
            if exponent_digits.is_empty() {
                return Err(invalid());
            }
            for &digit in exponent_digits {
                exponent = exponent
                    .saturating_mul(10)
                    .saturating_add(i64::from(digit - b'0'))
                    .min(EXPONENT_CLAMP.saturating_mul(2));
            }
            if exponent_negative {
                exponent = -exponent;
            }
        }
        if index != bytes.len() {
            return Err(invalid());
        }
        let fraction_length = i64::try_from(fraction.len()).unwrap_or(i64::MAX);
        let digits = integer
            .iter()
            .chain(fraction)
            .map(|&digit| digit - b'0')
            .collect();
        Ok(Decimal::from_parts(
            negative,
            digits,
            exponent.saturating_sub(fraction_length),
        ))
    }

    /// The exact value of a JSON number as `serde_json` holds it: its text (the shortest
    /// text that reads back as the same `f64` for floats, all digits for integers and
    /// for `arbitrary_precision`).
    pub fn from_json(number: &serde_json::Number) -> Decimal {
        // serde_json writes every Number it holds as JSON number text (it holds no NaN or
        // infinity), so the fallback is never taken.
        Decimal::parse(&number.to_string()).unwrap_or_else(|_| Decimal::zero())
    }

    /// `10^power`.
    pub fn power_of_ten(power: i64) -> Decimal {
        Decimal::from_parts(false, vec![1], power)
    }

    /// The value `± digits × 10^exponent`, normalized.
    pub(super) fn from_parts(negative: bool, mut digits: Vec<u8>, mut exponent: i64) -> Decimal {
        let leading = digits.iter().take_while(|&&digit| digit == 0).count();
        digits.drain(..leading);
        while digits.last() == Some(&0) {
            digits.pop();
            exponent = exponent.saturating_add(1);
        }
        if digits.is_empty() {
            return Decimal::zero();
        }
        Decimal {
            negative,
            digits,
            exponent: exponent.clamp(-EXPONENT_CLAMP, EXPONENT_CLAMP),
        }
    }

    /// True for zero.
    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// True below zero.
    pub fn is_negative(&self) -> bool {
        self.negative
    }

    /// True above zero.
    pub fn is_positive(&self) -> bool {
        !self.negative && !self.is_zero()
    }

    /// True when the value is a whole number.
    pub fn is_integer(&self) -> bool {
        self.exponent >= 0
    }

    /// The value with the opposite sign.
    pub fn negated(&self) -> Decimal {
        Decimal {
            negative: !self.negative && !self.is_zero(),
            ..self.clone()
        }
    }

    /// The absolute value.
    pub fn abs(&self) -> Decimal {
        Decimal {
            negative: false,
            ..self.clone()
        }
    }

    /// The value times `10^power`.
    pub fn shifted(&self, power: i64) -> Decimal {
        if self.is_zero() {
            return Decimal::zero();
        }
        Decimal {
            exponent: self
                .exponent
                .saturating_add(power)
                .clamp(-EXPONENT_CLAMP, EXPONENT_CLAMP),
            ..self.clone()
        }
    }

    /// Whether the value is an integer multiple of `step` (a positive value), exactly;
    /// `None` when the division is too large to carry out here (more than 36 digits in
    /// the step once both are scaled to integers, or a shift of more than 10,000 digits).
    pub fn is_multiple_of(&self, step: &Decimal) -> Option<bool> {
        if step.is_zero() || step.negative {
            return None;
        }
        if self.is_zero() {
            return Some(true);
        }
        // Scale both to integers: value = a × 10^e, step = b × 10^e with e the smaller
        // exponent; then test a mod b by long division over a's digits.
        let common = self.exponent.min(step.exponent);
        let step_shift = usize::try_from(step.exponent - common).ok()?;
        let value_shift = usize::try_from(self.exponent - common).ok()?;
        if step.digits.len() + step_shift > 36 || value_shift > 10_000 {
            return None;
        }
        let mut divisor: u128 = 0;
        for digit in step
            .digits
            .iter()
            .copied()
            .chain(std::iter::repeat_n(0, step_shift))
        {
            divisor = divisor * 10 + u128::from(digit);
        }
        let mut remainder: u128 = 0;
        for digit in self
            .digits
            .iter()
            .copied()
            .chain(std::iter::repeat_n(0, value_shift))
        {
            remainder = (remainder * 10 + u128::from(digit)) % divisor;
        }
        Some(remainder == 0)
    }

    /// The power of ten of the leading digit (`floor(log10(|value|))`) of a nonzero value.
    pub(super) fn leading_power(&self) -> i64 {
        let length = i64::try_from(self.digits.len()).unwrap_or(i64::MAX);
        self.exponent.saturating_add(length - 1)
    }

    /// The digit of `|value|` at the place `10^power`.
    pub(super) fn digit_at_power(&self, power: i64) -> u8 {
        if self.is_zero() {
            return 0;
        }
        let index = i128::from(self.leading_power()) - i128::from(power);
        usize::try_from(index)
            .ok()
            .and_then(|index| self.digits.get(index).copied())
            .unwrap_or(0)
    }

    /// How many digits `|value|`'s integer part has as written (1 for `0.x`).
    pub(super) fn integer_length(&self) -> i64 {
        if self.is_zero() || self.leading_power() < 0 {
            1
        } else {
            self.leading_power().saturating_add(1)
        }
    }

    /// How many digit places `|value|` pins after the decimal point.
    pub(super) fn fraction_length(&self) -> i64 {
        if self.is_zero() {
            0
        } else {
            self.exponent.saturating_neg().max(0)
        }
    }

    /// The significant digits as an integer, when they fit.
    pub(super) fn significand(&self) -> Option<u128> {
        if self.digits.len() > 38 {
            return None;
        }
        Some(
            self.digits
                .iter()
                .fold(0u128, |value, &digit| value * 10 + u128::from(digit)),
        )
    }

    /// The largest value with `integer_digits` integer and `fraction_digits` fraction
    /// digits: `99…9.9…9`.
    pub(super) fn all_nines(integer_digits: i64, fraction_digits: i64) -> Decimal {
        let count = usize::try_from(integer_digits.saturating_add(fraction_digits)).unwrap_or(0);
        Decimal::from_parts(false, vec![9; count], -fraction_digits)
    }

    pub(super) fn magnitude_cmp(&self, other: &Decimal) -> Ordering {
        match (self.is_zero(), other.is_zero()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => self
                .leading_power()
                .cmp(&other.leading_power())
                .then_with(|| self.digits.cmp(&other.digits)),
        }
    }

    pub(super) fn with_sign(self, negative: bool) -> Decimal {
        if negative { self.negated() } else { self }
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Decimal) -> Ordering {
        let sign = |value: &Decimal| {
            if value.negative {
                -1
            } else if value.is_zero() {
                0
            } else {
                1
            }
        };
        match sign(self).cmp(&sign(other)) {
            Ordering::Equal if self.negative => other.magnitude_cmp(self),
            Ordering::Equal => self.magnitude_cmp(other),
            unequal => unequal,
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Decimal) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl FromStr for Decimal {
    type Err = DecimalParseError;

    fn from_str(text: &str) -> Result<Decimal, DecimalParseError> {
        Decimal::parse(text)
    }
}

impl From<i64> for Decimal {
    fn from(value: i64) -> Decimal {
        Decimal::from(value.unsigned_abs()).with_sign(value < 0)
    }
}

impl From<u64> for Decimal {
    fn from(value: u64) -> Decimal {
        let digits = value
            .to_string()
            .bytes()
            .map(|digit| digit - b'0')
            .collect();
        Decimal::from_parts(false, digits, 0)
    }
}

impl fmt::Display for Decimal {
    /// Plain decimal notation for moderate exponents (`1.25`, `-300`), scientific
    /// otherwise (`1.5e300`).
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_zero() {
            return formatter.write_str("0");
        }
        if self.negative {
            formatter.write_str("-")?;
        }
        let digits: String = self
            .digits
            .iter()
            .map(|&digit| char::from(b'0' + digit))
            .collect();
        let length = i64::try_from(digits.len()).unwrap_or(i64::MAX);
        if (0..=20).contains(&self.exponent) {
            write!(formatter, "{digits}{}", "0".repeat(self.exponent as usize))
        } else if (-40..0).contains(&self.exponent) && length <= 60 {
            let point = length + self.exponent;
            if point > 0 {
                let (integer, fraction) = digits.split_at(point as usize);
                write!(formatter, "{integer}.{fraction}")
            } else {
                write!(formatter, "0.{}{digits}", "0".repeat((-point) as usize))
            }
        } else {
            let (first, rest) = digits.split_at(1);
            let point = if rest.is_empty() { "" } else { "." };
            write!(formatter, "{first}{point}{rest}e{}", self.leading_power())
        }
    }
}

// ---------------------------------------------------------------------------------------
// Bounds, syntax, errors
// ---------------------------------------------------------------------------------------

/// A bound: the value and whether it is exclusive.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bound {
    /// The bound's value.
    pub value: Decimal,
    /// True for `exclusiveMinimum` / `exclusiveMaximum`.
    pub exclusive: bool,
}

impl Bound {
    /// `minimum` / `maximum`: the value itself is allowed.
    pub fn inclusive(value: Decimal) -> Bound {
        Bound {
            value,
            exclusive: false,
        }
    }

    /// `exclusiveMinimum` / `exclusiveMaximum`: the value itself is not allowed.
    pub fn exclusive(value: Decimal) -> Bound {
        Bound {
            value,
            exclusive: true,
        }
    }

    /// True when `value` satisfies this bound as a minimum.
    pub fn admits_above(&self, value: &Decimal) -> bool {
        match value.cmp(&self.value) {
            Ordering::Greater => true,
            Ordering::Equal => !self.exclusive,
            Ordering::Less => false,
        }
    }

    /// True when `value` satisfies this bound as a maximum.
    pub fn admits_below(&self, value: &Decimal) -> bool {
        match value.cmp(&self.value) {
            Ordering::Less => true,
            Ordering::Equal => !self.exclusive,
            Ordering::Greater => false,
        }
    }

    /// The bound with its value times `10^power`.
    pub(super) fn shifted(&self, power: i64) -> Bound {
        Bound {
            value: self.value.shifted(power),
            exclusive: self.exclusive,
        }
    }

    /// The bound on `-x` that this bound puts on `x`.
    pub(super) fn negated(&self) -> Bound {
        Bound {
            value: self.value.negated(),
            exclusive: self.exclusive,
        }
    }
}

/// True when `value` satisfies both (optional) bounds.
pub(super) fn within(min: Option<&Bound>, max: Option<&Bound>, value: &Decimal) -> bool {
    min.is_none_or(|bound| bound.admits_above(value))
        && max.is_none_or(|bound| bound.admits_below(value))
}
