//! Plain schemas written straight from their JSON: objects of declared properties
//! (`properties`, `required`, no others allowed), arrays of one item schema, scalars of one
//! type without constraints, and `enum`/`const` of strings — most of what tool definitions
//! hold. They skip reading into shapes (`read.rs`) and the general object layout, and give
//! the grammar the general path gives them: the same builder calls in the same order,
//! through the same helpers (`typed`, `values`, `list`, `object_body`). A part that is not
//! plain (a pattern, a bound, a `$ref`, …) is read and written by the general path, one
//! property or item at a time. `tests/direct_path.rs` holds the two paths to the same
//! grammars over the test corpora.
//!
//! Why: a tool-call grammar is built for every request whose tools changed; the general
//! reader's pointers, shapes and intersections cost more than writing the rules.

use std::cell::Cell;

use grail_grammar::Expr;
use serde_json::{Map, Value};

use crate::convert::{Converter, joined};
use crate::diagnostic::escape_pointer_token;
use crate::emit::Primitive;
use crate::emit_object::{Layout, Slot, value_name};
use crate::read::{ANNOTATIONS, KeywordGroup, KeywordGroups};
use crate::shape::{Shape, Typed, Types};
use crate::whole_types::branches_may_share_types;

thread_local! {
    /// False while [`without_direct_path`] runs.
    static DIRECT_PATH: Cell<bool> = const { Cell::new(true) };
}

/// Runs `body` with every schema read and written by the general path (for tests that
/// compare the two paths).
#[doc(hidden)]
pub fn without_direct_path<T>(body: impl FnOnce() -> T) -> T {
    let before = DIRECT_PATH.with(|enabled| enabled.replace(false));
    let result = body();
    DIRECT_PATH.with(|enabled| enabled.set(before));
    result
}

/// Whether conversions made now may take the direct path.
pub(crate) fn direct_path_enabled() -> bool {
    DIRECT_PATH.with(Cell::get)
}

/// Most values of an `enum` written directly (duplicates are looked for pair by pair).
const MAX_DIRECT_ENUM: usize = 64;

/// A plain schema, as the direct path writes it.
pub(crate) enum Direct<'v> {
    /// `true` or `{}`: any JSON value.
    Any,
    /// Values of one type (not an object or an array), under the number and string
    /// keywords of `schema` (read by the general reader's functions).
    Scalar {
        types: Types,
        schema: &'v Map<String, Value>,
    },
    /// Exactly these strings (`enum`, `const`).
    Values(&'v [Value]),
    /// An object of declared properties only.
    Object {
        properties: &'v Map<String, Value>,
        required: &'v [Value],
    },
    /// Any of these schemas (`anyOf`).
    AnyOf(&'v [Value]),
    /// An array of items of one schema (`None`: any value), with `minItems` and
    /// `maxItems` from `schema`.
    Array {
        items: Option<&'v Value>,
        schema: &'v Map<String, Value>,
    },
}

/// Where the direct path began: the reader's depth and how many pointers were on its
/// stack of schemas being read. Inside, the direct path keeps both as the general reader
/// would (parts it hands to the general path are read there); those parts are written as
/// at the start.
pub(crate) struct Reading {
    depth: usize,
    outer_reading: usize,
}

impl Reading {
    /// The direct path beginning where `converter` is now.
    pub(crate) fn here(converter: &Converter<'_>) -> Reading {
        Reading {
            depth: converter.depth,
            outer_reading: converter.reading.len(),
        }
    }
}

impl Converter<'_> {
    /// How the schema `value` is written directly, or `None` for the general path.
    pub(crate) fn direct_kind<'v>(&self, value: &'v Value) -> Option<Direct<'v>> {
        if !self.direct || self.depth >= self.options.limits.max_depth {
            return None;
        }
        let object = match value {
            Value::Bool(true) => return Some(Direct::Any),
            Value::Object(object) => object,
            _ => return None,
        };
        let (mut type_name, mut properties, mut required) = (None, None, None);
        let (mut additional, mut items, mut values, mut any_of) = (None, None, None, None);
        let (mut scalar_keywords, mut item_counts) = (false, false);
        for (key, value) in object {
            match key.as_str() {
                "minItems" | "maxItems" => item_counts = true,
                "type" => type_name = Some(value.as_str()?),
                "properties" => properties = Some(value.as_object()?),
                "required" => required = Some(value.as_array()?.as_slice()),
                "additionalProperties" => additional = Some(value),
                "items" => items = Some(value),
                "enum" if values.is_none() => values = Some(value.as_array()?.as_slice()),
                "const" if values.is_none() => values = Some(std::slice::from_ref(value)),
                "anyOf" => any_of = Some(value.as_array()?.as_slice()),
                // Definitions constrain nothing where they are written.
                "$schema" | "$defs" | "definitions" => {}
                key if ANNOTATIONS.contains(&key) || key.starts_with("x-") => {}
                // Number and string keywords, read by the general reader's functions.
                key => match KeywordGroup::of(key) {
                    Some(KeywordGroup::Number | KeywordGroup::String) => scalar_keywords = true,
                    _ => return None,
                },
            }
        }
        let structural = properties.is_some()
            || required.is_some()
            || additional.is_some()
            || items.is_some()
            || item_counts;
        if let Some(branches) = any_of {
            let alone = type_name.is_none() && values.is_none() && !structural && !scalar_keywords;
            // Branches that may allow one type are read, so the types some branch allows
            // whole are written once (`whole_types`).
            let plain = alone && !branches.is_empty() && !branches_may_share_types(branches);
            return plain.then_some(Direct::AnyOf(branches));
        }
        if let Some(values) = values {
            let plain_strings = !structural
                && !scalar_keywords
                && matches!(type_name, None | Some("string"))
                && !values.is_empty()
                && values.len() <= MAX_DIRECT_ENUM.min(self.options.limits.max_enum_values)
                && values.iter().all(Value::is_string)
                && values
                    .iter()
                    .enumerate()
                    .all(|(index, value)| !values[..index].contains(value));
            return plain_strings.then_some(Direct::Values(values));
        }
        match type_name {
            None if !structural && !scalar_keywords => Some(Direct::Any),
            Some("object") => {
                let properties = properties?;
                let closed = match additional {
                    None => !self.options.additional_properties_default,
                    Some(additional) => additional == &Value::Bool(false),
                };
                let required = required.unwrap_or(&[]);
                let declared = required.iter().all(|name| {
                    name.as_str()
                        .is_some_and(|name| properties.contains_key(name))
                });
                (closed && items.is_none() && !item_counts && !scalar_keywords && declared)
                    .then_some(Direct::Object {
                        properties,
                        required,
                    })
            }
            Some("array") => {
                let tuple = matches!(items, Some(Value::Array(_)));
                let plain = !tuple
                    && !scalar_keywords
                    && properties.is_none()
                    && required.is_none()
                    && additional.is_none();
                plain.then_some(Direct::Array {
                    items,
                    schema: object,
                })
            }
            Some(name) if !structural => match Types::named(name)? {
                Types::OBJECT | Types::ARRAY => None,
                scalar => Some(Direct::Scalar {
                    types: scalar,
                    schema: object,
                }),
            },
            _ => None,
        }
    }

    /// What [`Converter::emit`] gives for the plain schema at `pointer` (whose kind is
    /// `direct`), written directly; `name` names the rules made for its parts.
    pub(crate) fn emit_direct(&mut self, pointer: &str, direct: Direct<'_>, name: &str) -> Expr {
        let reading = Reading::here(self);
        self.write_direct(pointer, direct, name, &reading)
    }

    fn write_direct(
        &mut self,
        pointer: &str,
        direct: Direct<'_>,
        name: &str,
        reading: &Reading,
    ) -> Expr {
        grail_syntax::stack::deep(|| match direct {
            Direct::Any => self.primitive(Primitive::Value),
            Direct::Scalar { types, schema } => {
                let mut typed = Typed::of_types(types);
                let groups = KeywordGroups::of(schema);
                if groups.number {
                    self.read_number_keywords(pointer, schema, &mut typed);
                }
                if groups.string {
                    self.read_string_keywords(pointer, schema, &mut typed);
                }
                self.typed(&typed, name)
            }
            Direct::Values(values) => self.values(values),
            Direct::AnyOf(branches) => {
                // The general reader reads the branches inside this schema.
                self.reading.push(pointer.to_string());
                self.depth += 1;
                let mut choices = Vec::with_capacity(branches.len());
                for (position, branch) in branches.iter().enumerate() {
                    let position = position.to_string();
                    let branch_pointer = joined(&[pointer, "/anyOf/", &position]);
                    let branch_name = joined(&[name, "-", &position]);
                    let choice = self
                        .direct_part(branch_pointer, branch, &branch_name, false, reading)
                        .unwrap_or(Expr::Choice(Vec::new()));
                    choices.push(choice);
                }
                self.depth -= 1;
                self.reading.pop();
                Expr::Choice(choices)
            }
            Direct::Object {
                properties,
                required,
            } => {
                let is_required =
                    |property: &str| required.iter().any(|name| name.as_str() == Some(property));
                let properties = properties
                    .iter()
                    .map(|(property, schema)| (property.as_str(), schema));
                self.direct_object(pointer, properties, is_required, name, reading)
                    .unwrap_or(Expr::Choice(Vec::new()))
            }
            Direct::Array { items, schema } => self
                .direct_array(pointer, items, schema, name, reading)
                .unwrap_or(Expr::Choice(Vec::new())),
        })
    }

    /// What `object` gives for a plain object (see `Converter::layout`) of `properties`
    /// (name and schema, in schema order), of which `is_required` tells the required
    /// ones; `None` when a required property allows nothing.
    pub(crate) fn direct_object<'p>(
        &mut self,
        pointer: &str,
        properties: impl ExactSizeIterator<Item = (&'p str, &'p Value)>,
        is_required: impl Fn(&str) -> bool,
        name: &str,
        reading: &Reading,
    ) -> Option<Expr> {
        let space = self.space();
        // The general reader reads the properties inside this schema.
        self.reading.push(pointer.to_string());
        self.depth += 1;
        let mut slots = Vec::with_capacity(properties.len());
        let mut failed = false;
        for (property, schema) in properties {
            let child = joined(&[pointer, "/properties/", &escape_pointer_token(property)]);
            if failed {
                // The general path reads every property before writing any: what the
                // rest say (their diagnostics) still counts.
                self.read_at(child, schema);
                continue;
            }
            let is_required = is_required(property);
            let value_name = value_name(name, property);
            let Some(value) = self.direct_part(child, schema, &value_name, true, reading) else {
                // A property nothing satisfies: left out, unless required.
                failed |= is_required;
                continue;
            };
            let pair = self.property_pair(property, value, &value_name, &space);
            slots.push(Slot {
                pair,
                required: is_required,
                first: is_required,
                tracked: None,
            });
        }
        self.depth -= 1;
        self.reading.pop();
        if failed {
            return None;
        }
        // Required properties first, in schema order, then the others.
        slots.sort_by_key(|slot| !slot.first);
        let layout = Layout {
            slots,
            additional: None,
            min: 0,
            max: None,
            presence: Vec::new(),
            tracked: Vec::new(),
        };
        Some(self.braced(&layout, name))
    }

    /// What `array` gives for a plain array.
    fn direct_array(
        &mut self,
        pointer: &str,
        items: Option<&Value>,
        schema: &Map<String, Value>,
        name: &str,
        reading: &Reading,
    ) -> Option<Expr> {
        let min = self.count(pointer, schema, "minItems").unwrap_or(0);
        let max = self.count(pointer, schema, "maxItems");
        if max.is_some_and(|max| max < min) {
            // No array fits; the general path has read the items all the same.
            if let Some(items) = items {
                self.reading.push(pointer.to_string());
                self.depth += 1;
                self.read_at(joined(&[pointer, "/items"]), items);
                self.depth -= 1;
                self.reading.pop();
            }
            return None;
        }
        let space = self.space();
        let open = Expr::sequence([Expr::literal("["), space.clone()]);
        let close = Expr::sequence([space, Expr::literal("]")]);
        let item_name = format!("{name}-item");
        let item = match items {
            None => {
                self.nesting += 1;
                let any = self.primitive(Primitive::Value);
                let item = self.as_rule(any, &item_name);
                self.nesting -= 1;
                Some(item)
            }
            Some(items) => {
                self.reading.push(pointer.to_string());
                self.depth += 1;
                let item = self.direct_part(
                    joined(&[pointer, "/items"]),
                    items,
                    &item_name,
                    true,
                    reading,
                );
                self.depth -= 1;
                self.reading.pop();
                item
            }
        };
        match item {
            Some(item) if !matches!(&item, Expr::Choice(choices) if choices.is_empty()) => {
                let list = self.list(item, min, max)?;
                Some(Expr::sequence([open, list, close]))
            }
            _ => (min == 0).then(|| Expr::sequence([open, close])),
        }
    }

    /// A part of a schema (the schema `value` at `pointer`, or the document mounted
    /// there) as the general path writes it: a property's value or an item (`nested`, as
    /// `emit_nested`), or an `anyOf` branch (as `emit_as_rule`); `None` when its schema
    /// allows nothing.
    fn direct_part(
        &mut self,
        pointer: String,
        value: &Value,
        name: &str,
        nested: bool,
        reading: &Reading,
    ) -> Option<Expr> {
        let document = self.document;
        let value = document.mounted_at(&pointer).unwrap_or(value);
        let nesting = u32::from(nested);
        if let Some(direct) = self.direct_kind(value) {
            self.nesting += nesting;
            let expr = self.write_direct(&pointer, direct, name, reading);
            let expr = self.as_rule(expr, name);
            self.nesting -= nesting;
            return Some(expr);
        }
        // A reference alone: the rule of its target.
        if let Some(target) = self.plain_reference(&pointer, value) {
            let rule = self.outside_reading(reading, |converter| converter.rule_of(&target));
            return Some(Expr::Rule(rule));
        }
        // The general path: read where the general reader would be, written where the
        // direct path began.
        let shape = self.read_at(pointer, value);
        if shape == Shape::Never {
            return None;
        }
        let expr = self.outside_reading(reading, |converter| {
            converter.nesting += nesting;
            let expr = converter.emit_as_rule(&shape, name);
            converter.nesting -= nesting;
            expr
        });
        Some(expr)
    }

    /// The target of `value` when it is a `$ref` and annotations only, and the reference
    /// resolves (else the general path reports why not).
    fn plain_reference(&self, pointer: &str, value: &Value) -> Option<String> {
        if self.depth >= self.options.limits.max_depth {
            return None;
        }
        let object = value.as_object()?;
        let mut reference = None;
        for (key, value) in object {
            match key.as_str() {
                "$ref" => reference = Some(value.as_str()?),
                key if ANNOTATIONS.contains(&key) || key.starts_with("x-") => {}
                _ => return None,
            }
        }
        self.index.resolve(&self.document, pointer, reference?).ok()
    }

    /// Runs `write` where the direct path began: writing may read the schemas of `$ref`
    /// targets, which must not find the schemas around this part still being read.
    fn outside_reading<T>(&mut self, reading: &Reading, write: impl FnOnce(&mut Self) -> T) -> T {
        let inner_reading = self.reading.split_off(reading.outer_reading);
        let inner_depth = std::mem::replace(&mut self.depth, reading.depth);
        let result = write(self);
        self.depth = inner_depth;
        self.reading.extend(inner_reading);
        result
    }
}
