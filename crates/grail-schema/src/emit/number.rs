//! Numbers under `minimum`, `maximum` and `multipleOf`: the digit-by-digit grammars of
//! `numeric`, one rule per set of constraints.

use grail_grammar::Expr;

use super::{Emitter, Primitive};
use crate::numeric::{Bound, Decimal, NumberSyntax, NumericError, integer_expr, number_expr};
use crate::shape::{Typed, Types};

/// What a number's grammar depends on: integers only, the bounds, the divisor.
pub(super) type NumberKey = (bool, Option<Bound>, Option<Bound>, Option<Decimal>);

impl Emitter<'_> {
    /// The numbers `typed` allows; `None` when none.
    pub(super) fn numbers(&mut self, typed: &Typed, name: &str) -> Option<Expr> {
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
        if matches!(result, Err(NumericError::Unsupported(_)))
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
            Err(NumericError::Empty) => None,
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

    /// The numbers between the bounds, multiples of `multiple_of`, in `syntax`.
    pub(super) fn number_grammar(
        &mut self,
        integers_only: bool,
        minimum: Option<&Bound>,
        maximum: Option<&Bound>,
        multiple_of: Option<&Decimal>,
        syntax: &NumberSyntax,
    ) -> Result<Expr, NumericError> {
        if integers_only {
            integer_expr(minimum, maximum, multiple_of, syntax, &mut self.builder)
        } else {
            number_expr(minimum, maximum, multiple_of, syntax, &mut self.builder)
        }
    }
}
