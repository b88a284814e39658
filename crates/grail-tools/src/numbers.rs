//! Numbers in tool calls: what the grammar lets a model write, and the same rule checked
//! on a call's text by the validator.
//!
//! JSON numbers have no limits, but the clients that read tool calls do: most read
//! numbers as doubles (JavaScript's `JSON.parse("1e400")` is `Infinity`), and the
//! `jsonschema` crate that checks the arguments does too. So a tool call's numbers are
//! those of the options' [`NumberSyntax`] within [`CALL_INTEGER_DIGITS`] integer digits,
//! and with an exponent in scientific form (one nonzero digit before the point, as JSON
//! serializers write exponents) with at most [`CALL_EXPONENT_DIGITS`] exponent digits:
//! every such number is below 10^200, a finite double. (Scientific form also keeps the
//! grammars of bounds small: with free mantissas, capping the exponent's digits makes
//! `maximum: 0.3` a 26 KB grammar instead of 0.4 KB.) Their text is kept as written: an
//! integer beyond 64 bits leaves in `tool_calls` as the model wrote it.

use grail_schema::numeric::NumberSyntax;

/// The most digits before the decimal point in a tool call's number.
pub const CALL_INTEGER_DIGITS: u32 = 200;

/// The most exponent digits in a tool call's number (exponents up to 99).
pub const CALL_EXPONENT_DIGITS: u32 = 2;

/// `numbers` within the tool-call limits (the tighter cap of each part), exponents in
/// scientific form, their digits read as JSON reads them (leading zeros allowed).
pub(crate) fn call_number_syntax(numbers: &NumberSyntax) -> NumberSyntax {
    let cap = |cap: Option<u32>, limit: u32| Some(cap.map_or(limit, |cap| cap.min(limit)));
    NumberSyntax {
        max_integer_digits: cap(numbers.max_integer_digits, CALL_INTEGER_DIGITS),
        max_fraction_digits: numbers.max_fraction_digits,
        max_exponent_digits: cap(numbers.max_exponent_digits, CALL_EXPONENT_DIGITS),
        canonical_exponent: false,
        scientific_exponent: true,
    }
}

/// Why `text` (a JSON number) is not a number `syntax` writes, if it is not.
pub(crate) fn outside_syntax(text: &str, syntax: &NumberSyntax) -> Option<String> {
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (integer, fraction) = match mantissa.split_once('.') {
        Some((integer, fraction)) => (integer, Some(fraction)),
        None => (mantissa, None),
    };
    let too_many = |count: usize, cap: Option<u32>| cap.is_some_and(|cap| count > cap as usize);
    if too_many(integer.len(), syntax.max_integer_digits) {
        return Some(format!(
            "{} digits before the decimal point; at most {} are read",
            integer.len(),
            syntax.max_integer_digits.unwrap_or_default()
        ));
    }
    if let Some(fraction) = fraction {
        if syntax.max_fraction_digits == Some(0) {
            return Some("a fraction, where numbers are written without one".into());
        }
        if too_many(fraction.len(), syntax.max_fraction_digits) {
            return Some(format!(
                "{} digits after the decimal point; at most {} are read",
                fraction.len(),
                syntax.max_fraction_digits.unwrap_or_default()
            ));
        }
    }
    if let Some(exponent) = exponent {
        let digits = exponent.trim_start_matches(['+', '-']);
        if syntax.max_exponent_digits == Some(0) {
            return Some("an exponent, where numbers are written without one".into());
        }
        if too_many(digits.len(), syntax.max_exponent_digits) {
            return Some(format!(
                "{} exponent digits; at most {} are read (a tool call's numbers fit a double)",
                digits.len(),
                syntax.max_exponent_digits.unwrap_or_default()
            ));
        }
        // Scientific: one nonzero digit before the point, or the value zero.
        let one_nonzero = integer.len() == 1 && integer != "0";
        let zero = integer == "0"
            && fraction.is_none_or(|digits| digits.bytes().all(|digit| digit == b'0'));
        if syntax.scientific_exponent && !one_nonzero && !zero {
            return Some(
                "an exponent after other than one nonzero digit before the point (write 1.5e7, not 15e6)"
                    .into(),
            );
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_numbers_fit_a_double() {
        let syntax = call_number_syntax(&NumberSyntax::default());
        for largest in [
            "9".repeat(CALL_INTEGER_DIGITS as usize),
            format!("9.{}e99", "9".repeat(400)),
        ] {
            assert_eq!(outside_syntax(&largest, &syntax), None);
            assert!(largest.parse::<f64>().unwrap().is_finite());
        }
        for (text, refused) in [
            ("1e400", true),
            ("1e99", false),
            ("-1E+07", false),
            ("1e099", true),
            ("15e-8", true),
            ("0.5e3", true),
            ("1.5e-7", false),
            ("0e5", false),
            ("-0.00E-1", false),
            (&"1".repeat(201), true),
            (&"1".repeat(200), false),
            ("0.000001", false),
        ] {
            assert_eq!(outside_syntax(text, &syntax).is_some(), refused, "{text}");
        }
        let llama = call_number_syntax(&NumberSyntax::llama_cpp());
        assert_eq!(llama.max_integer_digits, Some(16));
        assert_eq!(llama.max_exponent_digits, Some(2));
        assert!(outside_syntax("1.12345678901234567", &llama).is_some());
    }
}
