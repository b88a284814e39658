//! The shared JSON rules (llama.cpp's `value`, `object`, `array`, `string`, `number`,
//! ...), separators and whitespace, lists and long repetitions, and constants.

use grail_grammar::Expr;
use serde_json::Value;

use super::Emitter;
use crate::json_text::{
    any_string_char, any_string_char_exact, encoded_set, encoded_text, escaped_set,
    python_string_char,
};
use crate::numeric::{Bound, Decimal, NumberSyntax};
use crate::options::{Literals, Whitespace};

/// The shared rules, each defined once when first needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Primitive {
    Space,
    Value,
    Object,
    Array,
    String,
    Char,
    CanonicalChar,
    CanonicalEscape,
    Number,
    Integer,
    IntegralPart,
    DecimalPart,
    Boolean,
    Null,
}

impl Primitive {
    fn name(self) -> &'static str {
        match self {
            Primitive::Space => "space",
            Primitive::Value => "value",
            Primitive::Object => "object",
            Primitive::Array => "array",
            Primitive::String => "string",
            Primitive::Char => "char",
            Primitive::CanonicalChar => "canonical-char",
            Primitive::CanonicalEscape => "canonical-escape",
            Primitive::Number => "number",
            Primitive::Integer => "integer",
            Primitive::IntegralPart => "integral-part",
            Primitive::DecimalPart => "decimal-part",
            Primitive::Boolean => "boolean",
            Primitive::Null => "null",
        }
    }
}

impl Emitter<'_> {
    /// The text between items and between properties ([`crate::SchemaOptions::item_separator`]).
    pub(super) fn item_separator(&self) -> Expr {
        separator_literal(&self.options.item_separator)
    }

    /// The text between a key and its value ([`crate::SchemaOptions::key_separator`]).
    pub(super) fn key_separator(&self) -> Expr {
        separator_literal(&self.options.key_separator)
    }

    /// The whitespace allowed between tokens.
    pub(super) fn space(&mut self) -> Expr {
        match self.options.whitespace {
            Whitespace::None => Expr::Empty,
            _ => self.primitive(Primitive::Space),
        }
    }

    /// A reference to a shared rule, defining it (and what it needs) on first use.
    pub(super) fn primitive(&mut self, which: Primitive) -> Expr {
        if let Some(&rule) = self.primitives.get(&which) {
            return Expr::Rule(rule);
        }
        let rule = self.declare(which.name());
        self.primitives.insert(which, rule);
        let body = self.primitive_body(which);
        self.builder
            .define(rule, body)
            .expect("a shared rule is defined once");
        Expr::Rule(rule)
    }

    fn primitive_body(&mut self, which: Primitive) -> Expr {
        let syntax = self.options.numbers.clone();
        match which {
            Primitive::Space => match self.options.whitespace {
                Whitespace::Llama => Expr::choice([
                    Expr::Empty,
                    Expr::literal(" "),
                    Expr::sequence([
                        Expr::literal("\n").repeat(1, Some(2)),
                        Expr::chars([(' ', ' '), ('\t', '\t')]).repeat(0, Some(20)),
                    ]),
                ]),
                Whitespace::Free => json_whitespace().zero_or_more(),
                Whitespace::Bounded(count) => json_whitespace().repeat(0, Some(count)),
                Whitespace::None => Expr::Empty,
            },
            Primitive::Value => Expr::choice([
                self.primitive(Primitive::Object),
                self.primitive(Primitive::Array),
                self.primitive(Primitive::String),
                self.primitive(Primitive::Number),
                self.primitive(Primitive::Boolean),
                self.primitive(Primitive::Null),
            ]),
            Primitive::Object => {
                let space = self.space();
                let string = self.primitive(Primitive::String);
                let value = self.primitive(Primitive::Value);
                let pair = Expr::sequence([string, self.key_separator(), space.clone(), value]);
                Expr::sequence([
                    Expr::literal("{"),
                    space.clone(),
                    Expr::sequence([
                        pair.clone(),
                        Expr::sequence([self.item_separator(), space.clone(), pair]).zero_or_more(),
                    ])
                    .optional(),
                    space,
                    Expr::literal("}"),
                ])
            }
            Primitive::Array => {
                let space = self.space();
                let value = self.primitive(Primitive::Value);
                self.list(value, 0, None)
                    .map(|list| {
                        Expr::sequence([
                            Expr::literal("["),
                            space.clone(),
                            list,
                            space,
                            Expr::literal("]"),
                        ])
                    })
                    .expect("an unbounded list")
            }
            Primitive::String => {
                let char = self.primitive(Primitive::Char);
                Expr::sequence([
                    Expr::literal("\""),
                    char.zero_or_more(),
                    Expr::literal("\""),
                ])
            }
            Primitive::Char if self.options.literals == Literals::Python => python_string_char(),
            Primitive::Char if self.options.llama_dialect() => any_string_char(),
            Primitive::Char => any_string_char_exact(),
            Primitive::CanonicalChar => encoded_set(&grail_grammar::CharSet::new([], true)),
            Primitive::CanonicalEscape => encoded_set(&escaped_set()),
            // In scientific notation, as `numeric`'s numbers without bounds: an exponent
            // after one nonzero digit before the point, or after a zero.
            Primitive::Number
                if syntax.scientific_exponent && syntax.max_exponent_digits != Some(0) =>
            {
                let integral = self.primitive(Primitive::IntegralPart);
                let exponent = Expr::sequence([
                    Expr::chars([('e', 'e'), ('E', 'E')]),
                    Expr::chars([('-', '-'), ('+', '+')]).optional(),
                    digits(1, syntax.max_exponent_digits),
                ]);
                let (fraction, zero_fraction) = match syntax.max_fraction_digits {
                    Some(0) => (Expr::Empty, Expr::Empty),
                    cap => {
                        let decimal = self.primitive(Primitive::DecimalPart);
                        (
                            Expr::sequence([Expr::literal("."), decimal]).optional(),
                            Expr::sequence([
                                Expr::literal("."),
                                Expr::chars([('0', '0')]).repeat(1, cap),
                            ])
                            .optional(),
                        )
                    }
                };
                Expr::sequence([
                    Expr::literal("-").optional(),
                    Expr::choice([
                        Expr::sequence([integral, fraction.clone()]),
                        Expr::sequence([Expr::chars([('1', '9')]), fraction, exponent.clone()]),
                        Expr::sequence([Expr::chars([('0', '0')]), zero_fraction, exponent]),
                    ]),
                ])
            }
            Primitive::Number => {
                let integral = self.primitive(Primitive::IntegralPart);
                let decimal = self.primitive(Primitive::DecimalPart);
                let exponent_digits = if syntax.canonical_exponent {
                    integral.clone()
                } else {
                    digits(1, syntax.max_exponent_digits)
                };
                Expr::sequence([
                    Expr::sequence([Expr::literal("-").optional(), integral]),
                    Expr::sequence([Expr::literal("."), decimal]).optional(),
                    Expr::sequence([
                        Expr::chars([('e', 'e'), ('E', 'E')]),
                        Expr::chars([('-', '-'), ('+', '+')]).optional(),
                        exponent_digits,
                    ])
                    .optional(),
                ])
            }
            Primitive::Integer => {
                let integral = self.primitive(Primitive::IntegralPart);
                Expr::sequence([Expr::literal("-").optional(), integral])
            }
            Primitive::IntegralPart => Expr::choice([
                Expr::chars([('0', '0')]),
                Expr::sequence([
                    Expr::chars([('1', '9')]),
                    digits(
                        0,
                        syntax.max_integer_digits.map(|max| max.saturating_sub(1)),
                    ),
                ]),
            ]),
            Primitive::DecimalPart => digits(1, syntax.max_fraction_digits),
            Primitive::Boolean => {
                let [yes, no, _] = self.options.literal_names();
                Expr::choice([Expr::literal(yes), Expr::literal(no)])
            }
            Primitive::Null => Expr::literal(self.options.literal_names()[2]),
        }
    }

    /// `item ("," space item)*` with between `min` and `max` items (`None` when `min` is 0
    /// and the list may be empty is still `Some` of an optional list).
    pub(super) fn list(&mut self, item: Expr, min: u64, max: Option<u64>) -> Option<Expr> {
        if max == Some(0) {
            return Some(Expr::Empty);
        }
        let space = self.space();
        let rest = Expr::sequence([self.item_separator(), space, item.clone()]);
        let rest_min = min.saturating_sub(1);
        let rest_max = max.map(|max| max - 1);
        let list = Expr::sequence([item, self.repeat(rest, rest_min, rest_max)]);
        Some(if min == 0 { list.optional() } else { list })
    }

    /// `expr{min,max}` as a rule: one per repeated rule and bounds, shared, when `expr`
    /// is a rule; a new rule otherwise.
    fn shared_repetition(&mut self, expr: &Expr, min: u64, max: Option<u64>, name: &str) -> Expr {
        let key = match expr {
            Expr::Rule(rule) => Some((*rule, min, max)),
            _ => None,
        };
        if let Some(rule) = key.and_then(|key| self.shared_repetitions.get(&key)) {
            return Expr::Rule(*rule);
        }
        let rule = self.declare(name);
        self.builder
            .define(
                rule,
                expr.clone().repeat(min as u32, max.map(|max| max as u32)),
            )
            .expect("new rule");
        if let Some(key) = key {
            self.shared_repetitions.insert(key, rule);
        }
        Expr::Rule(rule)
    }

    /// `expr{min,max}`, nested through rules where a bound is over llama.cpp's 2000, so
    /// llama.cpp reads it exactly too.
    pub(super) fn repeat(&mut self, expr: Expr, min: u64, max: Option<u64>) -> Expr {
        const CHUNK: u64 = 1000;
        if min <= CHUNK && max.is_none_or(|max| max <= CHUNK) {
            return expr.repeat(min as u32, max.map(|max| max as u32));
        }
        // Blocks of exactly CHUNK copies, so that every count has one reading (optional
        // blocks of up to CHUNK copies each would make a long run ambiguous, and slow to
        // match).
        // Both the block and `expr{0,999}` are rules shared by every repetition of the
        // same rule (a schema's strings of up to 1,024 and up to 32,767 characters
        // compiled two blocks of 1,000 `char`s each, and two `char{0,999}`).
        let block = self.shared_repetition(&expr, CHUNK, Some(CHUNK), "repeat-block");
        let mut parts = Vec::new();
        // The mandatory copies: whole blocks, then the remainder.
        let blocks = min / CHUNK;
        if blocks > 0 {
            parts.push(self.repeat(block.clone(), blocks, Some(blocks)));
        }
        parts.push(
            expr.clone()
                .repeat((min % CHUNK) as u32, Some((min % CHUNK) as u32)),
        );
        match max {
            None => parts.push(expr.zero_or_more()),
            Some(max) => {
                // `optional` more copies at most, as k whole blocks and j < CHUNK copies:
                // fewer than all the blocks with any j, or all of them with j up to the
                // rest.
                let optional = max - min;
                let (whole, rest) = (optional / CHUNK, optional % CHUNK);
                if whole == 0 {
                    parts.push(expr.repeat(0, Some(rest as u32)));
                } else {
                    let below_block =
                        self.shared_repetition(&expr, 0, Some(CHUNK - 1), "repeat-below-block");
                    let fewer = Expr::sequence([
                        self.repeat(block.clone(), 0, Some(whole - 1)),
                        below_block,
                    ]);
                    let all = Expr::sequence([
                        self.repeat(block, whole, Some(whole)),
                        expr.repeat(0, Some(rest as u32)),
                    ]);
                    parts.push(Expr::choice([fewer, all]));
                }
            }
        }
        Expr::Sequence(parts)
    }

    /// The JSON texts of constants, as literals (compact, as llama.cpp writes them) or
    /// with the whitespace rule between tokens.
    pub(super) fn values(&mut self, values: &[Value]) -> Expr {
        let choices: Vec<Expr> = values.iter().map(|value| self.value_text(value)).collect();
        match <[Expr; 1]>::try_from(choices) {
            Ok([single]) => single,
            Err(choices) => Expr::Choice(choices),
        }
    }

    fn value_text(&mut self, value: &Value) -> Expr {
        match value {
            Value::String(text) => {
                Expr::sequence([Expr::literal("\""), encoded_text(text), Expr::literal("\"")])
            }
            Value::Array(_) | Value::Object(_)
                if self.options.llama_dialect() && self.options.literals == Literals::Json =>
            {
                Expr::literal(value.to_string())
            }
            Value::Array(items) => {
                let space = self.space();
                let mut parts = vec![Expr::literal("["), space.clone()];
                for (position, item) in items.iter().enumerate() {
                    if position > 0 {
                        parts.extend([self.item_separator(), space.clone()]);
                    }
                    parts.push(self.value_text(item));
                }
                parts.extend([space, Expr::literal("]")]);
                Expr::Sequence(parts)
            }
            Value::Object(entries) => {
                let space = self.space();
                let mut parts = vec![Expr::literal("{"), space.clone()];
                for (position, (key, item)) in entries.iter().enumerate() {
                    if position > 0 {
                        parts.extend([self.item_separator(), space.clone()]);
                    }
                    parts.extend([
                        Expr::literal("\""),
                        encoded_text(key),
                        Expr::literal("\""),
                        space.clone(),
                        self.key_separator(),
                        space.clone(),
                    ]);
                    parts.push(self.value_text(item));
                }
                parts.extend([space, Expr::literal("}")]);
                Expr::Sequence(parts)
            }
            Value::Number(number) if !self.options.llama_dialect() => self.number_constant(number),
            Value::Number(number) => Expr::literal(number.to_string()),
            Value::Bool(true) => Expr::literal(self.options.literal_names()[0]),
            Value::Bool(false) => Expr::literal(self.options.literal_names()[1]),
            Value::Null => Expr::literal(self.options.literal_names()[2]),
        }
    }

    /// The texts of a number equal to `number` in plain decimal spelling (`-2`, `-2.0`,
    /// `-2.00` for -2.0, as validators compare numbers by value), and its own text; exponent
    /// spellings other than its own are a documented narrowing.
    fn number_constant(&mut self, number: &serde_json::Number) -> Expr {
        let value = Decimal::from_json(number);
        let bound = Bound::inclusive(value);
        let syntax = NumberSyntax {
            max_integer_digits: self.options.numbers.max_integer_digits,
            max_fraction_digits: self.options.numbers.max_fraction_digits,
            ..NumberSyntax::without_exponent()
        };
        let own = Expr::literal(number.to_string());
        match self.number_grammar(false, Some(&bound), Some(&bound), None, &syntax) {
            Ok(plain) => Expr::choice([plain, own]),
            Err(_) => own,
        }
    }

    /// `expr` in a rule of its own named `name`, unless it is a single reference.
    pub(super) fn wrap_rule(&mut self, expr: Expr, name: impl Into<String>) -> Expr {
        if matches!(expr, Expr::Rule(_) | Expr::Literal(_)) || self.over_rule_limit() {
            return expr;
        }
        let rule = self.declare(name);
        self.builder.define(rule, expr).expect("new rule");
        Expr::Rule(rule)
    }
}

/// A separator as a literal; the usual ones borrowed (one is written per property and item).
fn separator_literal(separator: &str) -> Expr {
    match separator {
        "," => Expr::literal(","),
        ":" => Expr::literal(":"),
        ", " => Expr::literal(", "),
        ": " => Expr::literal(": "),
        other => Expr::literal(other.to_string()),
    }
}

/// `[ \t\n\r]`.
fn json_whitespace() -> Expr {
    Expr::chars([(' ', ' '), ('\t', '\t'), ('\n', '\n'), ('\r', '\r')])
}

/// `[0-9]{min,max}`.
fn digits(min: u32, max: Option<u32>) -> Expr {
    Expr::chars([('0', '9')]).repeat(min, max)
}
