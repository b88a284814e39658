//! Numbers (temporary interface; the real module is being written).
use grail_grammar::{Expr, GrammarBuilder};

/// An exact decimal.
#[derive(Debug, Clone, PartialEq)]
pub struct Decimal {
    text: String,
}
impl Eq for Decimal {}
impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Decimal) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Decimal {
    fn cmp(&self, other: &Decimal) -> std::cmp::Ordering {
        self.text
            .parse::<f64>()
            .unwrap_or(0.0)
            .total_cmp(&other.text.parse::<f64>().unwrap_or(0.0))
    }
}
impl Decimal {
    /// From a JSON number.
    pub fn from_json(number: &serde_json::Number) -> Decimal {
        Decimal {
            text: number.to_string(),
        }
    }
    /// True when `self` is an integer multiple of `other`.
    pub fn is_multiple_of(&self, other: &Decimal) -> bool {
        let (a, b) = (
            self.text.parse::<f64>().unwrap_or(0.0),
            other.text.parse::<f64>().unwrap_or(1.0),
        );
        (a / b).fract() == 0.0
    }
    /// True for integers.
    pub fn is_integer(&self) -> bool {
        self.text
            .parse::<f64>()
            .map(|v| v.fract() == 0.0)
            .unwrap_or(false)
    }
}
/// A bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    pub value: Decimal,
    pub exclusive: bool,
}
/// Digit caps.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NumberSyntax {
    pub max_integer_digits: Option<u32>,
    pub max_fraction_digits: Option<u32>,
    pub max_exponent_digits: Option<u32>,
}
impl NumberSyntax {
    /// llama.cpp's caps.
    pub fn llama_cpp() -> NumberSyntax {
        NumberSyntax {
            max_integer_digits: Some(16),
            max_fraction_digits: Some(16),
            max_exponent_digits: Some(16),
        }
    }
}
/// Why not exact.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NumericError {
    /// Not exact.
    #[error("{0}")]
    Unsupported(String),
    /// Nothing satisfies it.
    #[error("no number satisfies these bounds")]
    Empty,
}
/// Integers.
pub fn integer_expr(
    _min: Option<&Bound>,
    _max: Option<&Bound>,
    _multiple_of: Option<&Decimal>,
    _syntax: &NumberSyntax,
    _builder: &mut GrammarBuilder,
) -> Result<Expr, NumericError> {
    Err(NumericError::Unsupported("not written".into()))
}
/// Numbers.
pub fn number_expr(
    _min: Option<&Bound>,
    _max: Option<&Bound>,
    _multiple_of: Option<&Decimal>,
    _syntax: &NumberSyntax,
    _builder: &mut GrammarBuilder,
) -> Result<Expr, NumericError> {
    Err(NumericError::Unsupported("not written".into()))
}
