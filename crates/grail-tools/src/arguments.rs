//! A call's arguments as the model wrote them: the JSON text (compact, numbers exactly
//! as written) that leaves in `tool_calls`, and the value it was checked as.

use std::fmt;

use serde_json::Value;

/// The arguments of a valid call.
#[derive(Debug, Clone, PartialEq)]
pub struct Arguments {
    /// Compact JSON: no whitespace between tokens, strings in canonical form, each number
    /// with the text the model wrote (`18446744073709551617` is not rounded).
    text: String,
    /// The value the schema was checked against (numbers beyond 64-bit integers as the
    /// nearest double).
    value: Value,
}

impl Arguments {
    pub(crate) fn new(text: String, value: Value) -> Arguments {
        Arguments { text, value }
    }

    /// The arguments as compact JSON text, numbers as written: what OpenAI's
    /// `function.arguments` carries.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The arguments as a JSON value (integers beyond 64 bits, and other numbers a double
    /// cannot hold exactly, rounded to the nearest double: read [`Arguments::text`] for the
    /// exact digits).
    pub fn value(&self) -> &Value {
        &self.value
    }
}

impl fmt::Display for Arguments {
    /// The compact JSON text ([`Arguments::text`]).
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.text)
    }
}
