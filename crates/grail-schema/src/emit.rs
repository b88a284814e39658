//! Shapes to grammar expressions: the dispatch, the shared JSON rules (llama.cpp's
//! `value`, `object`, `array`, `string`, `number`, ...), constants, and the choice between
//! types. Strings, arrays and objects have files of their own.

use grail_grammar::{Expr, RuleId};
use serde_json::Value;

use crate::convert::{Converter, rule_name};
use crate::diagnostic::{SchemaDiagnostic, Severity};
use crate::json_text::{any_string_char, encoded_set, encoded_text};
use crate::numeric::{NumberSyntax, integer_expr, number_expr};
use crate::options::Whitespace;
use crate::shape::{Shape, Typed, Types};
use crate::whole_types::whole_types_apart;

/// What a number's grammar depends on: integers only, the bounds, the divisor.
pub(crate) type NumberKey = (
    bool,
    Option<crate::numeric::Bound>,
    Option<crate::numeric::Bound>,
    Option<crate::numeric::Decimal>,
);

/// The shared rules, each defined once when first needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Primitive {
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

impl Converter<'_> {
    /// The expression of `shape`; `name` names the rules made for its parts.
    pub fn emit(&mut self, shape: &Shape, name: &str) -> Expr {
        grail_syntax::stack::deep(|| match shape {
            Shape::Any => self.primitive(Primitive::Value),
            Shape::Never => Expr::Choice(Vec::new()),
            Shape::Ref(target) => Expr::Rule(self.rule_of(target)),
            Shape::Values(values) => self.values(values),
            Shape::AnyOf(branches) => {
                let apart = whole_types_apart(branches);
                let branches = apart.as_deref().unwrap_or(branches);
                let mut choices = Vec::with_capacity(branches.len());
                for (position, branch) in branches.iter().enumerate() {
                    let branch_name = format!("{name}-{position}");
                    choices.push(self.emit_as_rule(branch, &branch_name));
                }
                Expr::Choice(choices)
            }
            Shape::Typed(typed) => self.typed(typed, name),
        })
    }

    /// A value one object or array deeper than the current one (a property's, an
    /// item's), as [`Converter::emit_as_rule`] writes it.
    pub fn emit_nested(&mut self, shape: &Shape, name: &str) -> Expr {
        self.nesting += 1;
        let expr = self.emit_as_rule(shape, name);
        self.nesting -= 1;
        expr
    }

    /// The warning of `SchemaOptions::depth_cap`, once, at the first place it applies.
    fn warn_capped(&mut self, name: &str) {
        if self.capped {
            return;
        }
        self.capped = true;
        let cap = self.options.depth_cap.unwrap_or(0);
        let pointer = self.writing.last().cloned().unwrap_or_default();
        self.diagnostics.push(
            SchemaDiagnostic::new(
                Severity::Warning,
                "depth-capped",
                &pointer,
                None,
                format!(
                    "objects and arrays below nesting level {cap} (the outermost value being level 0) are written as any JSON object or array (the depth cap); first in rule `{name}`"
                ),
            )
            .with_help("raise the cap, or leave it unset for a grammar exact at every depth"),
        );
    }

    /// `shape` as a reference to a rule (its own, or a shared one) when it is more than a
    /// token or a reference already.
    pub fn emit_as_rule(&mut self, shape: &Shape, name: &str) -> Expr {
        let expr = self.emit(shape, name);
        self.as_rule(expr, name)
    }

    /// `expr` (what [`Converter::emit`] gave for a schema) as [`Converter::emit_as_rule`]
    /// writes it: as it is when a token or a reference, else in a rule named `name`.
    pub fn as_rule(&mut self, expr: Expr, name: &str) -> Expr {
        match expr {
            Expr::Rule(_) | Expr::Literal(_) | Expr::Chars(_) | Expr::Empty => expr,
            Expr::Choice(ref choices) if choices.is_empty() => expr,
            _ => {
                if self.over_rule_limit() {
                    return Expr::Choice(Vec::new());
                }
                let rule = self.declare(name);
                self.builder
                    .define(rule, expr)
                    .expect("a rule declared here is defined once");
                Expr::Rule(rule)
            }
        }
    }

    /// The rule of the schema at `target`, declared and defined on first use (recursion
    /// refers to it before it is defined).
    pub fn rule_of(&mut self, target: &str) -> RuleId {
        // Under a depth cap, a location has one rule per depth up to the cap (recursion
        // unrolled), then one for every depth past it.
        let key = match self.options.depth_cap {
            Some(cap) => format!("{target}\u{0}{}", self.nesting.min(cap + 1)),
            None => target.to_string(),
        };
        if let Some(&rule) = self.rules.get(&key) {
            return rule;
        }
        let rule = if target.is_empty() {
            match self.framed_as.clone() {
                Some(name) => self.declare(name),
                None => self.builder.root(),
            }
        } else {
            self.declare(rule_name(target))
        };
        self.rules.insert(key, rule);
        // A plain schema not read yet is written directly.
        let document = self.document;
        let direct = match self.shapes.contains_key(target) {
            true => None,
            false => document
                .lookup(target)
                .and_then(|value| self.direct_kind(value)),
        };
        let source = match direct {
            Some(direct) => Ok(direct),
            None => Err(self.read(target)),
        };
        self.writing.push(target.to_string());
        let expr = if self.over_rule_limit() {
            Expr::Choice(Vec::new())
        } else {
            match source {
                Ok(direct) => self.emit_direct(target, direct, &rule_name(target)),
                Err(shape) => self.emit(&shape, &rule_name(target)),
            }
        };
        self.writing.pop();
        self.builder
            .define(rule, expr)
            .expect("a schema rule is defined once");
        rule
    }

    /// The text between items and between properties ([`crate::SchemaOptions::item_separator`]).
    pub fn item_separator(&self) -> Expr {
        separator_literal(&self.options.item_separator)
    }

    /// The text between a key and its value ([`crate::SchemaOptions::key_separator`]).
    pub fn key_separator(&self) -> Expr {
        separator_literal(&self.options.key_separator)
    }

    /// The whitespace allowed between tokens.
    pub fn space(&mut self) -> Expr {
        match self.options.whitespace {
            Whitespace::None => Expr::Empty,
            _ => self.primitive(Primitive::Space),
        }
    }

    /// A reference to a shared rule, defining it (and what it needs) on first use.
    pub fn primitive(&mut self, which: Primitive) -> Expr {
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
            Primitive::Char if self.options.llama_dialect() => any_string_char(),
            Primitive::Char => crate::json_text::any_string_char_exact(),
            Primitive::CanonicalChar => encoded_set(&grail_grammar::CharSet::new([], true)),
            Primitive::CanonicalEscape => encoded_set(&crate::json_text::escaped_set()),
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
            Primitive::Boolean => Expr::choice([Expr::literal("true"), Expr::literal("false")]),
            Primitive::Null => Expr::literal("null"),
        }
    }

    /// `item ("," space item)*` with between `min` and `max` items (`None` when `min` is 0
    /// and the list may be empty is still `Some` of an optional list).
    pub fn list(&mut self, item: Expr, min: u64, max: Option<u64>) -> Option<Expr> {
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
    pub fn repeat(&mut self, expr: Expr, min: u64, max: Option<u64>) -> Expr {
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
    pub fn values(&mut self, values: &[Value]) -> Expr {
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
            Value::Array(_) | Value::Object(_) if self.options.llama_dialect() => {
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
            other => Expr::literal(other.to_string()),
        }
    }

    /// The texts of a number equal to `number` in plain decimal spelling (`-2`, `-2.0`,
    /// `-2.00` for -2.0, as validators compare numbers by value), and its own text; exponent
    /// spellings other than its own are a documented narrowing.
    fn number_constant(&mut self, number: &serde_json::Number) -> Expr {
        let value = crate::numeric::Decimal::from_json(number);
        let bound = crate::numeric::Bound::inclusive(value);
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

    pub(crate) fn typed(&mut self, typed: &Typed, name: &str) -> Expr {
        if typed.types.has(Types::ALL) && typed.is_unconstrained() {
            return self.primitive(Primitive::Value);
        }
        let excluded_other_kinds = typed.excluded.iter().find(|excluded| {
            matches!(
                excluded.value,
                Value::Number(_) | Value::Array(_) | Value::Object(_)
            )
        });
        if let Some(excluded) = excluded_other_kinds {
            let (pointer, keyword) = (excluded.pointer.clone(), excluded.keyword);
            self.unsupported(
                &pointer,
                keyword,
                "excluding numbers, arrays or objects by value is not expressed in the grammar",
            );
        }
        let is_excluded = |value: &Value| {
            typed
                .excluded
                .iter()
                .any(|excluded| &excluded.value == value)
        };
        let mut choices = Vec::new();
        let types = typed.types;
        if types.has(Types::NULL) && !is_excluded(&Value::Null) {
            choices.push(self.primitive(Primitive::Null));
        }
        if types.has(Types::BOOLEAN) {
            match (
                is_excluded(&Value::Bool(true)),
                is_excluded(&Value::Bool(false)),
            ) {
                (false, false) => choices.push(self.primitive(Primitive::Boolean)),
                (true, false) => choices.push(Expr::literal("false")),
                (false, true) => choices.push(Expr::literal("true")),
                (true, true) => {}
            }
        }
        if types.has_integers() {
            choices.extend(self.numbers(typed, name));
        }
        if types.has(Types::STRING) {
            choices.extend(self.string(typed, name));
        }
        let capped = self.options.depth_cap.is_some_and(|cap| self.nesting > cap);
        if types.has(Types::ARRAY) {
            if capped {
                self.warn_capped(name);
                choices.push(self.primitive(Primitive::Array));
            } else {
                choices.extend(self.array(typed, name));
            }
        }
        if types.has(Types::OBJECT) {
            if capped {
                self.warn_capped(name);
                choices.push(self.primitive(Primitive::Object));
            } else {
                choices.extend(self.object(typed, name));
            }
        }
        match <[Expr; 1]>::try_from(choices) {
            Ok([single]) => single,
            Err(choices) => Expr::Choice(choices),
        }
    }

    fn numbers(&mut self, typed: &Typed, name: &str) -> Option<Expr> {
        let rules = &typed.number;
        let integers_only = !typed.types.has(Types::NUMBER);
        if rules.minimum.is_none() && rules.maximum.is_none() && rules.multiple_of.is_empty() {
            return Some(self.primitive(if integers_only {
                Primitive::Integer
            } else {
                Primitive::Number
            }));
        }
        let (minimum, maximum) = (rules.minimum.clone(), rules.maximum.clone());
        if rules.multiple_of.len() > 1 {
            let located = rules.multiple_of[1].clone();
            self.unsupported(
                &located.pointer,
                located.keyword,
                "several `multipleOf` apply at once",
            );
        }
        let multiple_of = rules
            .multiple_of
            .first()
            .map(|located| located.value.clone());
        // One rule per set of constraints, shared by every number with them (a schema
        // of fifty `multipleOf: 0.01` amounts generated the same grammar fifty times).
        let key: NumberKey = (
            integers_only,
            minimum.as_ref().map(|bound| bound.value.clone()),
            maximum.as_ref().map(|bound| bound.value.clone()),
            multiple_of.clone(),
        );
        if let Some(expr) = self.number_rules.get(&key) {
            return Some(expr.clone());
        }
        let syntax = self.options.numbers.clone();
        let mut result = self.number_grammar(
            integers_only,
            minimum.as_ref().map(|bound| &bound.value),
            maximum.as_ref().map(|bound| &bound.value),
            multiple_of.as_ref(),
            &syntax,
        );
        // Any JSON number under a bound other than 0 is not a regular language (an
        // exponent can stand against any number of fraction digits); with the exponent
        // written in at most two digits, in scientific notation (one nonzero digit before
        // the point, as serializers write exponents), it is, and small: no serializer
        // writes otherwise for values near such bounds. A documented narrowing, not a
        // weakening.
        if matches!(result, Err(crate::numeric::NumericError::Unsupported(_)))
            && !integers_only
            && syntax.max_exponent_digits.is_none()
        {
            let narrowed = NumberSyntax {
                max_exponent_digits: Some(2),
                scientific_exponent: true,
                ..syntax.clone()
            };
            result = self.number_grammar(
                integers_only,
                minimum.as_ref().map(|bound| &bound.value),
                maximum.as_ref().map(|bound| &bound.value),
                multiple_of.as_ref(),
                &narrowed,
            );
        }
        match result {
            Ok(expr) => {
                let expr = self.wrap_rule(expr, format!("{name}-number"));
                self.number_rules.insert(key, expr.clone());
                Some(expr)
            }
            Err(crate::numeric::NumericError::Empty) => None,
            Err(error) => {
                let (pointer, keyword) = minimum
                    .as_ref()
                    .or(maximum.as_ref())
                    .map(|bound| (bound.pointer.clone(), bound.keyword))
                    .or_else(|| {
                        rules
                            .multiple_of
                            .first()
                            .map(|located| (located.pointer.clone(), located.keyword))
                    })
                    .expect("some numeric keyword");
                self.unsupported(&pointer, keyword, error.to_string());
                Some(self.primitive(if integers_only {
                    Primitive::Integer
                } else {
                    Primitive::Number
                }))
            }
        }
    }

    fn number_grammar(
        &mut self,
        integers_only: bool,
        minimum: Option<&crate::numeric::Bound>,
        maximum: Option<&crate::numeric::Bound>,
        multiple_of: Option<&crate::numeric::Decimal>,
        syntax: &NumberSyntax,
    ) -> Result<Expr, crate::numeric::NumericError> {
        if integers_only {
            integer_expr(minimum, maximum, multiple_of, syntax, &mut self.builder)
        } else {
            number_expr(minimum, maximum, multiple_of, syntax, &mut self.builder)
        }
    }

    /// `expr` in a rule of its own named `name`, unless it is a single reference.
    pub fn wrap_rule(&mut self, expr: Expr, name: impl Into<String>) -> Expr {
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
