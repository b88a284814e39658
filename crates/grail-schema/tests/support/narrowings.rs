//! Why a grammar rejects an instance its schema allows: one of the documented narrowings,
//! or nothing (then it is a bug). Shared by the JSON Schema Test Suite runner and the
//! differential test against `jsonschema`.
//!
//! Grail's grammars accept one way of writing some values on purpose:
//!
//! - integers without fraction, exponent or minus zero (`1`, not `1.0`, `1e0` or `-0`);
//! - numbers under bounds other than 0 with at most a two-digit exponent (`1e300` is
//!   written out);
//! - constrained strings in canonical escaping; and DEL (U+007F) escaped in every string,
//!   as llama.cpp's `char` rule wants (`serde_json` writes it as itself);
//! - object keys in the schema's order (required declared properties, other declared
//!   properties, then the rest).
//!
//! [`explain_rejection`] rewrites the instance's text the way each narrowing asks and
//! reports the smallest set of rewrites that makes the grammar accept it. An explanation
//! is only given when a rewritten text is accepted, so it is never a guess.

#![allow(dead_code)]

use std::fmt;

use grail_engine::{CompiledGrammar, Matcher};
use serde_json::{Map, Value};

use super::corpus::serialize;

/// A documented way of writing values that Grail's grammars do not accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Narrowing {
    /// An integer written with a fraction or an exponent (`1.0`, `1e2`) or as `-0`.
    IntegerSyntax,
    /// A number written with an exponent of three or more digits (`1.5e-300`).
    LongExponent,
    /// A string written otherwise than in canonical form: DEL as itself (the only case
    /// `corpus::serialize` makes), or characters escaped where the grammar takes them as
    /// themselves (`\u0061` for `a` in a constrained string).
    StringEscaping,
    /// Object keys in an order other than the grammar's.
    KeyOrder,
}

impl fmt::Display for Narrowing {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Narrowing::IntegerSyntax => "integer written with fraction/exponent/-0",
            Narrowing::LongExponent => "exponent of 3+ digits",
            Narrowing::StringEscaping => "string not in canonical escaping",
            Narrowing::KeyOrder => "key order",
        })
    }
}

/// A rewrite of a JSON text the way a narrowing asks.
type TextRewrite = fn(&str) -> String;

/// Whether the grammar matches the whole text.
pub fn grammar_matches(grammar: &CompiledGrammar, text: &str) -> bool {
    let mut matcher = Matcher::new(grammar);
    matcher.accept_str(text).is_ok() && matcher.is_accepting()
}

/// The narrowings that explain why `grammar` rejects `instance` as the runners write it
/// (`corpus::serialize` against `schema`), or `None` when none does.
pub fn explain_rejection(
    grammar: &CompiledGrammar,
    instance: &Value,
    schema: &Value,
) -> Option<Vec<Narrowing>> {
    let text_rewrites: [(Narrowing, TextRewrite); 3] = [
        (Narrowing::IntegerSyntax, integral_numbers_as_integers),
        (Narrowing::LongExponent, long_exponents_written_out),
        (Narrowing::StringEscaping, del_escaped),
    ];
    // Subsets of the text rewrites, smallest first.
    let mut subsets: Vec<u32> = (0..1u32 << text_rewrites.len()).collect();
    subsets.sort_by_key(|subset| subset.count_ones());
    let as_written = serialize(instance, schema, schema);
    let in_given_order = |value: &Value| serialize(value, &Value::Bool(true), &Value::Bool(true));
    let candidates = std::iter::once((as_written, false)).chain(
        key_reorderings(instance, 5040)
            .into_iter()
            .map(|reordered| (in_given_order(&reordered), true)),
    );
    for (text, reordered) in candidates {
        'subsets: for &subset in &subsets {
            let mut rewritten = text.clone();
            let mut used = Vec::new();
            for (position, (narrowing, rewrite)) in text_rewrites.iter().enumerate() {
                if subset & (1 << position) == 0 {
                    continue;
                }
                let next = rewrite(&rewritten);
                if next == rewritten {
                    // A rewrite that changes nothing explains nothing.
                    continue 'subsets;
                }
                rewritten = next;
                used.push(*narrowing);
            }
            if (reordered || !used.is_empty()) && grammar_matches(grammar, &rewritten) {
                if reordered {
                    used.push(Narrowing::KeyOrder);
                }
                return Some(used);
            }
        }
    }
    None
}

/// The instance with the keys of its objects in every order (nested objects too), at
/// most `cap` of them.
pub fn key_reorderings(value: &Value, cap: usize) -> Vec<Value> {
    match value {
        Value::Array(items) => {
            let variants: Vec<Vec<Value>> = items
                .iter()
                .map(|item| key_reorderings(item, cap))
                .collect();
            product(&variants, cap)
                .into_iter()
                .map(Value::Array)
                .collect()
        }
        Value::Object(entries) => {
            let keys: Vec<&String> = entries.keys().collect();
            let variants: Vec<Vec<Value>> = keys
                .iter()
                .map(|key| key_reorderings(&entries[*key], cap))
                .collect();
            let mut reorderings = Vec::new();
            for order in permutations(keys.len(), cap) {
                let ordered_variants: Vec<Vec<Value>> =
                    order.iter().map(|&index| variants[index].clone()).collect();
                for values in product(&ordered_variants, cap) {
                    let object: Map<String, Value> = order
                        .iter()
                        .map(|&index| keys[index].clone())
                        .zip(values)
                        .collect();
                    reorderings.push(Value::Object(object));
                    if reorderings.len() >= cap {
                        return reorderings;
                    }
                }
            }
            reorderings
        }
        other => vec![other.clone()],
    }
}

/// Every choice of one value per list, at most `cap` of them.
fn product(lists: &[Vec<Value>], cap: usize) -> Vec<Vec<Value>> {
    let mut combinations: Vec<Vec<Value>> = vec![Vec::new()];
    for list in lists {
        let mut next = Vec::new();
        'outer: for combination in &combinations {
            for value in list {
                let mut extended = combination.clone();
                extended.push(value.clone());
                next.push(extended);
                if next.len() >= cap {
                    break 'outer;
                }
            }
        }
        combinations = next;
    }
    combinations
}

/// The orders of `count` indices, at most `cap` of them.
fn permutations(count: usize, cap: usize) -> Vec<Vec<usize>> {
    let mut orders = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    fn extend(count: usize, cap: usize, current: &mut Vec<usize>, orders: &mut Vec<Vec<usize>>) {
        if orders.len() >= cap {
            return;
        }
        if current.len() == count {
            orders.push(current.clone());
            return;
        }
        for index in 0..count {
            if !current.contains(&index) {
                current.push(index);
                extend(count, cap, current, orders);
                current.pop();
            }
        }
    }
    extend(count, cap, &mut current, &mut orders);
    orders
}

/// A JSON number text read as an exact decimal: `digits × 10^scale`, negative or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecimalText {
    pub negative: bool,
    /// Significant digits without leading or trailing zeros; empty for zero.
    pub digits: String,
    pub scale: i64,
    /// The exponent as written (`None` without one).
    pub written_exponent: Option<String>,
    /// Written with a fraction part.
    pub has_fraction: bool,
}

impl DecimalText {
    /// Reads a JSON number text.
    pub fn parse(text: &str) -> Option<DecimalText> {
        let (negative, unsigned) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, written_exponent) = match unsigned.find(['e', 'E']) {
            Some(position) => (
                &unsigned[..position],
                Some(unsigned[position + 1..].to_string()),
            ),
            None => (unsigned, None),
        };
        let (integer_part, fraction_part) = match mantissa.split_once('.') {
            Some((integer_part, fraction_part)) => (integer_part, fraction_part),
            None => (mantissa, ""),
        };
        if integer_part.is_empty()
            || !integer_part.bytes().all(|byte| byte.is_ascii_digit())
            || !fraction_part.bytes().all(|byte| byte.is_ascii_digit())
        {
            return None;
        }
        let exponent: i64 = match &written_exponent {
            Some(exponent) => exponent.trim_start_matches('+').parse().ok()?,
            None => 0,
        };
        let all_digits = format!("{integer_part}{fraction_part}");
        let mut scale = exponent - fraction_part.len() as i64;
        let leading_trimmed = all_digits.trim_start_matches('0');
        let digits = leading_trimmed.trim_end_matches('0');
        scale += (leading_trimmed.len() - digits.len()) as i64;
        Some(DecimalText {
            negative,
            digits: digits.to_string(),
            scale: if digits.is_empty() { 0 } else { scale },
            written_exponent,
            has_fraction: mantissa.contains('.'),
        })
    }

    /// True when the value is an integer.
    pub fn is_integer(&self) -> bool {
        self.scale >= 0
    }

    /// Significant digits.
    pub fn significant_digits(&self) -> usize {
        self.digits.len()
    }

    /// Decimal exponent of the leading digit (`1.5` → 0, `250` → 2); 0 for zero.
    pub fn magnitude(&self) -> i64 {
        if self.digits.is_empty() {
            0
        } else {
            self.scale + self.digits.len() as i64 - 1
        }
    }

    /// The value written without exponent (`None` when that takes over 1,000 digits).
    pub fn written_out(&self) -> Option<String> {
        if self.digits.is_empty() {
            return Some("0".into());
        }
        if self.scale.abs() > 1000 {
            return None;
        }
        let sign = if self.negative { "-" } else { "" };
        let body = if self.scale >= 0 {
            format!("{}{}", self.digits, "0".repeat(self.scale as usize))
        } else {
            let fraction_digits = (-self.scale) as usize;
            if fraction_digits >= self.digits.len() {
                format!(
                    "0.{}{}",
                    "0".repeat(fraction_digits - self.digits.len()),
                    self.digits
                )
            } else {
                let (integer_part, fraction_part) =
                    self.digits.split_at(self.digits.len() - fraction_digits);
                format!("{integer_part}.{fraction_part}")
            }
        };
        Some(format!("{sign}{body}"))
    }
}

/// Applies `rewrite` to every number token of a JSON text (outside strings).
pub fn rewrite_numbers(text: &str, rewrite: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut characters = text.char_indices().peekable();
    let mut in_string = false;
    while let Some((start, character)) = characters.next() {
        if in_string {
            out.push(character);
            match character {
                '\\' => {
                    if let Some((_, escaped)) = characters.next() {
                        out.push(escaped);
                    }
                }
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        if character == '"' {
            in_string = true;
            out.push(character);
            continue;
        }
        if character == '-' || character.is_ascii_digit() {
            let mut end = start + character.len_utf8();
            while let Some(&(position, next)) = characters.peek() {
                if next.is_ascii_digit() || matches!(next, '.' | 'e' | 'E' | '+' | '-') {
                    end = position + next.len_utf8();
                    characters.next();
                } else {
                    break;
                }
            }
            let token = &text[start..end];
            out.push_str(&rewrite(token).unwrap_or_else(|| token.to_string()));
            continue;
        }
        out.push(character);
    }
    out
}

/// Every integer-valued number written as a plain integer (`1.0` → `1`, `1e2` → `100`,
/// `-0` → `0`).
pub fn integral_numbers_as_integers(text: &str) -> String {
    rewrite_numbers(text, |token| {
        let number = DecimalText::parse(token)?;
        let plain = number.written_exponent.is_none() && !number.has_fraction && token != "-0";
        if number.is_integer() && !plain {
            number.written_out()
        } else {
            None
        }
    })
}

/// Every number written with an exponent of three or more digits, written out.
pub fn long_exponents_written_out(text: &str) -> String {
    rewrite_numbers(text, |token| {
        let number = DecimalText::parse(token)?;
        let exponent_digits = number
            .written_exponent
            .as_deref()?
            .trim_start_matches(['+', '-'])
            .len();
        if exponent_digits >= 3 {
            number.written_out()
        } else {
            None
        }
    })
}

/// DEL escaped inside strings.
pub fn del_escaped(text: &str) -> String {
    text.replace('\u{7f}', "\\u007f")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_texts_are_read_exactly() {
        let read = |text| DecimalText::parse(text).unwrap();
        assert_eq!(read("1e2").written_out().unwrap(), "100");
        assert_eq!(read("-0.0").written_out().unwrap(), "0");
        assert_eq!(read("1.50").written_out().unwrap(), "1.5");
        assert_eq!(read("2.5e-3").written_out().unwrap(), "0.0025");
        assert_eq!(read("12.5e1").written_out().unwrap(), "125");
        assert!(read("100.0").is_integer());
        assert!(!read("0.25").is_integer());
        assert_eq!(read("0.0012").magnitude(), -3);
    }

    #[test]
    fn rewrites_touch_numbers_only() {
        assert_eq!(
            integral_numbers_as_integers(r#"{"1.0": [1.0, -0, 2.5, 3e1]}"#),
            r#"{"1.0": [1, 0, 2.5, 30]}"#
        );
        assert_eq!(
            long_exponents_written_out("[1.5e-3, 2e-100]"),
            format!("[1.5e-3, 0.{}2]", "0".repeat(99))
        );
    }

    #[test]
    fn reorderings_cover_nested_objects() {
        let value = serde_json::json!([{"a": 1, "b": {"c": 2, "d": 3}}]);
        assert_eq!(key_reorderings(&value, 100).len(), 4);
    }
}
