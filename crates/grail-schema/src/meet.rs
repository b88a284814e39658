//! Simplifying: shapes combined into shapes. `allOf` is an intersection, `oneOf` a union
//! when the branches are provably disjoint, `not` a complement where one is a shape; and
//! whether a constant value satisfies a shape (to filter `enum` by the constraints beside
//! it). The second stage of a conversion, called by the reader as it reads combinators
//! and by the emitter where an object's or an array's parts meet; it reads nothing itself
//! and asks its [`ShapeSource`] for the shapes behind references.

use serde_json::Value;

use crate::char_automaton::CharDfa;
use crate::findings::Findings;
use crate::format::is_annotation;
use crate::numeric::{Bound, Decimal};
use crate::shape::{
    ArrayRules, KeyRule, KeySet, Located, ObjectRules, Presence, Shape, Typed, Types, tighter,
};

/// How deep value checks follow references before giving up (a guard, not a limit users
/// meet: values are finite).
const MAX_CHECK_DEPTH: usize = 64;

/// What simplifying needs from the reader: the shapes behind references, which schemas
/// are still being read, and where to report.
pub(crate) trait ShapeSource {
    /// The shape of the schema at `pointer` (a reference's target).
    fn shape_at(&mut self, pointer: &str) -> Shape;

    /// Whether the schema at `pointer` is being read (so its shape is not known yet).
    fn is_being_read(&self, pointer: &str) -> bool;

    /// The references being expanded to intersect them, innermost last: kept by the
    /// source, since expanding one reads its target, whose reading simplifies in turn.
    fn expanding(&mut self) -> &mut Vec<String>;

    /// Where findings go.
    fn findings(&mut self) -> &mut Findings;

    /// [`crate::SchemaLimits::max_combinations`].
    fn max_combinations(&self) -> usize;
}

/// Simplifying with the shapes of a [`ShapeSource`].
pub(crate) struct Simplifier<'a, S: ShapeSource> {
    source: &'a mut S,
}

impl<'a, S: ShapeSource> Simplifier<'a, S> {
    /// Simplifying with `source`.
    pub(crate) fn new(source: &'a mut S) -> Simplifier<'a, S> {
        Simplifier { source }
    }

    /// The values both shapes allow.
    pub(crate) fn meet(&mut self, pointer: &str, left: Shape, right: Shape) -> Shape {
        grail_syntax::stack::deep(|| self.meet_inner(pointer, left, right))
    }

    fn meet_inner(&mut self, pointer: &str, left: Shape, right: Shape) -> Shape {
        match (left, right) {
            (Shape::Any, other) | (other, Shape::Any) => other,
            (Shape::Never, _) | (_, Shape::Never) => Shape::Never,
            (Shape::Ref(a), Shape::Ref(b)) if a == b => Shape::Ref(a),
            (Shape::AnyOf(branches), other) => self.meet_branches(pointer, branches, other, true),
            (other, Shape::AnyOf(branches)) => self.meet_branches(pointer, branches, other, false),
            (Shape::Ref(target), Shape::Typed(typed))
            | (Shape::Typed(typed), Shape::Ref(target))
                if typed.types.has(Types::ALL) && typed.is_unconstrained() =>
            {
                Shape::Ref(target)
            }
            // The expanded reference keeps its side: properties come out in the order the
            // schemas are written.
            (Shape::Ref(target), other) => match self.expand(pointer, &target) {
                Some(expanded) => {
                    let shape = self.meet(pointer, expanded, other);
                    self.source.expanding().pop();
                    shape
                }
                None => other,
            },
            (other, Shape::Ref(target)) => match self.expand(pointer, &target) {
                Some(expanded) => {
                    let shape = self.meet(pointer, other, expanded);
                    self.source.expanding().pop();
                    shape
                }
                None => other,
            },
            (Shape::Values(left), Shape::Values(right)) => Shape::Values(
                left.iter()
                    .filter(|value| right.iter().any(|other| json_equal(value, other)))
                    .cloned()
                    .collect(),
            ),
            (Shape::Values(values), other) | (other, Shape::Values(values)) => {
                // The positions of the values kept; the values themselves are copied
                // only when some are left out.
                let mut kept = Vec::with_capacity(values.len());
                for (position, value) in values.iter().enumerate() {
                    match self.accepts(&other, value, 0) {
                        Ok(true) => kept.push(position),
                        Ok(false) => {}
                        Err(reason) => {
                            self.source.findings().unsupported(
                                pointer,
                                "enum",
                                format!("cannot tell whether {value} meets the other constraints: {reason}"),
                            );
                            kept.push(position);
                        }
                    }
                }
                if kept.len() == values.len() {
                    Shape::Values(values)
                } else {
                    Shape::Values(
                        kept.iter()
                            .map(|&position| values[position].clone())
                            .collect(),
                    )
                }
            }
            (Shape::Typed(left), Shape::Typed(right)) => self.meet_typed(
                pointer,
                std::rc::Rc::unwrap_or_clone(left),
                std::rc::Rc::unwrap_or_clone(right),
            ),
        }
    }

    /// `branches` (an `anyOf`) met with `other`, each branch on the side it was written.
    fn meet_branches(
        &mut self,
        pointer: &str,
        branches: Vec<Shape>,
        other: Shape,
        branches_first: bool,
    ) -> Shape {
        let limit = self.source.max_combinations();
        let too_many = |simplifier: &mut Self| {
            simplifier.source.findings().error(
                "combinations-too-many",
                pointer,
                Some("allOf"),
                format!("combining these schemas gives more than {limit} alternatives (SchemaLimits::max_combinations)"),
            );
            Shape::Never
        };
        if branches.len() > limit {
            return too_many(self);
        }
        let mut results = Vec::new();
        for branch in branches {
            let met = if branches_first {
                self.meet(pointer, branch, other.clone())
            } else {
                self.meet(pointer, other.clone(), branch)
            };
            match met {
                Shape::Never => {}
                Shape::AnyOf(inner) => results.extend(inner),
                shape => results.push(shape),
            }
        }
        if results.len() > limit {
            return too_many(self);
        }
        match results.len() {
            0 => Shape::Never,
            1 => results.pop().expect("one"),
            _ => Shape::AnyOf(results),
        }
    }

    /// The shape at `target`, to intersect it; `None` (with a diagnostic) when it is being
    /// expanded already (a recursive schema cannot be flattened). On `Some`, the caller
    /// pops `expanding` when done.
    fn expand(&mut self, pointer: &str, target: &str) -> Option<Shape> {
        let recursive = self.source.expanding().iter().any(|open| open == target)
            || self.source.is_being_read(target);
        if recursive || self.source.expanding().len() > 32 {
            self.source.findings().unsupported(
                pointer,
                "allOf",
                format!("it combines the recursive schema `#{target}` with other constraints"),
            );
            return None;
        }
        let shape = self.source.shape_at(target);
        self.source.expanding().push(target.to_string());
        Some(shape)
    }

    fn meet_typed(&mut self, pointer: &str, mut left: Typed, right: Typed) -> Shape {
        left.types = left.types.intersection(right.types);
        if left.types.is_empty() {
            return Shape::Never;
        }
        if let Some(bound) = right.number.minimum {
            left.number.minimum = tighter(left.number.minimum.take(), bound, true);
        }
        if let Some(bound) = right.number.maximum {
            left.number.maximum = tighter(left.number.maximum.take(), bound, false);
        }
        for multiple in right.number.multiple_of {
            if !left
                .number
                .multiple_of
                .iter()
                .any(|known| known.value == multiple.value)
            {
                left.number.multiple_of.push(multiple);
            }
        }
        let string = &mut left.string;
        string.min_length = string.min_length.max(right.string.min_length);
        string.max_length = min_option(string.max_length, right.string.max_length);
        for pattern in right.string.patterns {
            if !string
                .patterns
                .iter()
                .any(|known| known.value == pattern.value)
            {
                string.patterns.push(pattern);
            }
        }
        string.forbidden.extend(right.string.forbidden);
        for format in right.string.formats {
            if !string
                .formats
                .iter()
                .any(|known| known.value == format.value)
            {
                string.formats.push(format);
            }
        }
        left.array = self.meet_arrays(pointer, left.array, right.array);
        left.object = self.meet_objects(pointer, left.object, right.object);
        left.excluded.extend(right.excluded);
        Shape::typed(left)
    }

    fn meet_arrays(&mut self, pointer: &str, left: ArrayRules, right: ArrayRules) -> ArrayRules {
        let length = left.prefix.len().max(right.prefix.len());
        let mut prefix = Vec::with_capacity(length);
        for position in 0..length {
            let a = left
                .prefix
                .get(position)
                .cloned()
                .unwrap_or_else(|| left.items.clone());
            let b = right
                .prefix
                .get(position)
                .cloned()
                .unwrap_or_else(|| right.items.clone());
            prefix.push(self.meet(pointer, a, b));
        }
        let items = self.meet(pointer, left.items, right.items);
        let mut contains = left.contains;
        contains.extend(right.contains);
        ArrayRules {
            prefix,
            items,
            min_items: left.min_items.max(right.min_items),
            max_items: min_option(left.max_items, right.max_items),
            contains,
            unique: left.unique.or(right.unique),
        }
    }

    fn meet_objects(
        &mut self,
        pointer: &str,
        left: ObjectRules,
        right: ObjectRules,
    ) -> ObjectRules {
        let general = !left.key_rules.is_empty() || !right.key_rules.is_empty();
        let mut names: Vec<String> = left
            .properties
            .iter()
            .map(|(name, _)| name.clone())
            .collect();
        for (name, _) in &right.properties {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        let mut properties = Vec::with_capacity(names.len());
        for name in names {
            // With key rules, each side's undeclared keys are governed by rules (kept
            // below); otherwise by its `additionalProperties`.
            let (a, b) = if general {
                (declared_only(&left, &name), declared_only(&right, &name))
            } else {
                (
                    declared_or_additional(&left, &name),
                    declared_or_additional(&right, &name),
                )
            };
            let shape = self.meet(pointer, a, b);
            properties.push((name, shape));
        }
        let mut required = left.required.clone();
        for name in &right.required {
            if !required.contains(name) {
                required.push(name.clone());
            }
        }
        let mut written_first = left.written_first.clone();
        for name in &right.written_first {
            if !written_first.contains(name) {
                written_first.push(name.clone());
            }
        }
        let (additional, key_rules) = if general {
            // Each side's `additionalProperties` becomes a rule for the keys it governed.
            let mut rules = Vec::new();
            for side in [&left, &right] {
                rules.extend(side.key_rules.iter().cloned());
                if side.additional != Shape::Any {
                    rules.push(KeyRule {
                        keys: KeySet::NoneOf {
                            patterns: side
                                .key_rules
                                .iter()
                                .filter_map(|rule| match &rule.keys {
                                    KeySet::Pattern(pattern) => Some(pattern.clone()),
                                    KeySet::NoneOf { .. } => None,
                                })
                                .collect(),
                            names: side
                                .properties
                                .iter()
                                .map(|(name, _)| name.clone())
                                .collect(),
                        },
                        shape: side.additional.clone(),
                        origin: Located {
                            value: (),
                            pointer: pointer.to_string(),
                            keyword: "additionalProperties",
                        },
                    });
                }
            }
            (Shape::Any, rules)
        } else {
            (
                self.meet(pointer, left.additional, right.additional),
                Vec::new(),
            )
        };
        let property_names = match (left.property_names, right.property_names) {
            (Some(a), Some(b)) => {
                let shape = self.meet(pointer, a.value, b.value);
                Some(Located { value: shape, ..a })
            }
            (a, b) => a.or(b),
        };
        ObjectRules {
            properties,
            required,
            written_first,
            additional,
            key_rules,
            property_names,
            min_properties: left.min_properties.max(right.min_properties),
            max_properties: min_option(left.max_properties, right.max_properties),
            presence: [left.presence, right.presence].concat(),
        }
    }

    /// `oneOf`: a union when no value can match two branches; otherwise unsupported.
    pub(crate) fn one_of(&mut self, pointer: &str, branches: Vec<Shape>) -> Shape {
        let mut overlap = None;
        'pairs: for first in 0..branches.len() {
            for second in first + 1..branches.len() {
                if !self.disjoint(&branches[first], &branches[second], 0) {
                    overlap = Some((first, second));
                    break 'pairs;
                }
            }
        }
        if overlap.is_some()
            && let Some(shape) = self.one_of_presence(&branches)
        {
            return shape;
        }
        if let Some((first, second)) = overlap {
            self.source.findings().unsupported(
                pointer,
                "oneOf",
                format!(
                    "branches {first} and {second} may both match one value, and a grammar cannot require exactly one"
                ),
            );
        }
        Shape::AnyOf(branches)
    }

    /// `oneOf` of branches that only say which properties objects have, over the same
    /// types: objects meeting exactly one branch's condition (other values meet every
    /// branch, so none of them is allowed).
    fn one_of_presence(&mut self, branches: &[Shape]) -> Option<Shape> {
        let mut conditions = Vec::new();
        let mut types = None;
        for branch in branches {
            let Shape::Typed(typed) = branch else {
                return None;
            };
            let condition = typed.presence_only()?;
            if *types.get_or_insert(typed.types) != typed.types || !typed.types.has(Types::OBJECT) {
                return None;
            }
            conditions.push(condition);
        }
        Some(Shape::presence(
            Presence::ExactlyOne(conditions),
            Types::NONE,
        ))
    }

    /// `not`: the complement where it is a shape; otherwise unsupported (lenient mode
    /// then drops the constraint).
    pub(crate) fn not(&mut self, pointer: &str, negated: Shape) -> Shape {
        match self.complement(pointer, negated) {
            Some(shape) => shape,
            None => {
                self.source.findings().unsupported(
                    pointer,
                    "not",
                    "its schema has constraints whose complement a grammar cannot express here",
                );
                Shape::Any
            }
        }
    }

    /// The values `shape` does not allow, when that is a shape here: no value or any value,
    /// the other types, all values but some constants, objects failing a presence
    /// condition, and intersections of complements for unions.
    pub(crate) fn complement(&mut self, pointer: &str, shape: Shape) -> Option<Shape> {
        match shape {
            Shape::Never => Some(Shape::Any),
            Shape::Any => Some(Shape::Never),
            Shape::Values(values) => {
                let mut typed = Typed::of_types(Types::ALL);
                typed.excluded = values
                    .iter()
                    .map(|value| Located {
                        value: value.clone(),
                        pointer: pointer.to_string(),
                        keyword: "not",
                    })
                    .collect();
                Some(Shape::typed(typed))
            }
            Shape::Typed(typed) if typed.string_only() => {
                let types = typed.types;
                if types.has(Types::INTEGER) && !types.has(Types::NUMBER) {
                    return None;
                }
                let mut others = Types::ALL.0 & !types.0;
                if types.has(Types::NUMBER) {
                    others &= !Types::INTEGER.0;
                }
                let mut result = Typed::of_types(Types(others));
                if types.has(Types::STRING) {
                    result.types = result.types.union(Types::STRING);
                    result.string.forbidden.push(Located {
                        value: typed.string.clone(),
                        pointer: pointer.to_string(),
                        keyword: "not",
                    });
                }
                Some(Shape::typed(result))
            }
            Shape::Typed(typed) => {
                let condition = typed.presence_only()?;
                let types = typed.types;
                if types.has(Types::INTEGER) && !types.has(Types::NUMBER) {
                    // The numbers that are not integers are no type here.
                    return None;
                }
                let mut others = Types::ALL.0 & !types.0;
                if types.has(Types::NUMBER) {
                    others &= !Types::INTEGER.0;
                }
                let others = Types(others);
                let unconditional = matches!(&condition, Presence::All(items) if items.is_empty());
                if !types.has(Types::OBJECT) || unconditional {
                    return Some(Shape::typed(Typed::of_types(others)));
                }
                Some(Shape::presence(Presence::Not(Box::new(condition)), others))
            }
            Shape::AnyOf(branches) => {
                let mut result = Shape::Any;
                for branch in branches {
                    let negated = self.complement(pointer, branch)?;
                    result = self.meet(pointer, result, negated);
                }
                Some(result)
            }
            Shape::Ref(target) => {
                let expanded = self.expand(pointer, &target)?;
                let shape = self.complement(pointer, expanded);
                self.source.expanding().pop();
                shape
            }
        }
    }

    /// Whether `value` satisfies `shape`; `Err` with the reason when Grail cannot tell.
    fn accepts(&mut self, shape: &Shape, value: &Value, depth: usize) -> Result<bool, String> {
        if depth > MAX_CHECK_DEPTH {
            return Err("the schema nests too deep to check".into());
        }
        match shape {
            Shape::Any => Ok(true),
            Shape::Never => Ok(false),
            Shape::Values(values) => Ok(values.iter().any(|known| json_equal(known, value))),
            Shape::AnyOf(branches) => {
                for branch in branches {
                    if self.accepts(branch, value, depth + 1)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Shape::Ref(target) => {
                let target = target.clone();
                let shape = self.source.shape_at(&target);
                self.accepts(&shape, value, depth + 1)
            }
            Shape::Typed(typed) => self.typed_accepts(typed, value, depth),
        }
    }

    fn typed_accepts(
        &mut self,
        typed: &Typed,
        value: &Value,
        depth: usize,
    ) -> Result<bool, String> {
        if typed
            .excluded
            .iter()
            .any(|excluded| json_equal(&excluded.value, value))
        {
            return Ok(false);
        }
        let value_type = Types::of(value);
        let type_ok = if value_type == Types::INTEGER {
            typed.types.has_integers()
        } else {
            typed.types.has(value_type)
        };
        if !type_ok {
            return Ok(false);
        }
        match value {
            Value::Number(number) => {
                let decimal = Decimal::from_json(number);
                if let Some(minimum) = &typed.number.minimum {
                    let bound = &minimum.value;
                    if decimal < bound.value || (bound.exclusive && decimal == bound.value) {
                        return Ok(false);
                    }
                }
                if let Some(maximum) = &typed.number.maximum {
                    let bound = &maximum.value;
                    if decimal > bound.value || (bound.exclusive && decimal == bound.value) {
                        return Ok(false);
                    }
                }
                for multiple in &typed.number.multiple_of {
                    match decimal.is_multiple_of(&multiple.value) {
                        Some(true) => {}
                        Some(false) => return Ok(false),
                        None => return Err("a `multipleOf` division too large to carry out".into()),
                    }
                }
                Ok(true)
            }
            Value::String(text) => {
                let length = text.chars().count() as u64;
                let string = &typed.string;
                if length < string.min_length || string.max_length.is_some_and(|max| length > max) {
                    return Ok(false);
                }
                if !string.patterns.is_empty() {
                    return Err("checking a constant against `pattern`".into());
                }
                for format in &string.formats {
                    if !is_annotation(&format.value) {
                        return Err("checking a constant against `format`".into());
                    }
                }
                Ok(true)
            }
            Value::Array(items) => {
                let array = &typed.array;
                let count = items.len() as u64;
                if count < array.min_items || array.max_items.is_some_and(|max| count > max) {
                    return Ok(false);
                }
                for (position, item) in items.iter().enumerate() {
                    let shape = array.prefix.get(position).unwrap_or(&array.items).clone();
                    if !self.accepts(&shape, item, depth + 1)? {
                        return Ok(false);
                    }
                }
                for contains in &array.contains {
                    let mut matching = 0;
                    for item in items {
                        if self.accepts(&contains.value.shape, item, depth + 1)? {
                            matching += 1;
                        }
                    }
                    if matching < contains.value.min
                        || contains.value.max.is_some_and(|max| matching > max)
                    {
                        return Ok(false);
                    }
                }
                if array.unique.is_some() {
                    for (position, item) in items.iter().enumerate() {
                        if items[..position]
                            .iter()
                            .any(|earlier| json_equal(earlier, item))
                        {
                            return Ok(false);
                        }
                    }
                }
                Ok(true)
            }
            Value::Object(entries) => {
                let object = &typed.object;
                let count = entries.len() as u64;
                if count < object.min_properties
                    || object.max_properties.is_some_and(|max| count > max)
                {
                    return Ok(false);
                }
                if object
                    .required
                    .iter()
                    .any(|name| !entries.contains_key(name))
                {
                    return Ok(false);
                }
                let ruled = !object.key_rules.is_empty();
                let present = |name: &str| entries.contains_key(name);
                if !object
                    .presence
                    .iter()
                    .all(|condition| condition.holds(&present))
                {
                    return Ok(false);
                }
                for (name, item) in entries {
                    let shapes = if ruled {
                        key_shapes(object, name)?
                    } else {
                        vec![declared_or_additional(object, name)]
                    };
                    for shape in shapes {
                        if !self.accepts(&shape, item, depth + 1)? {
                            return Ok(false);
                        }
                    }
                    if let Some(names) = &object.property_names
                        && !self.accepts(&names.value, &Value::String(name.clone()), depth + 1)?
                    {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Value::Null | Value::Bool(_) => Ok(true),
        }
    }

    /// True when no value can satisfy both shapes (conservative: false when unsure).
    fn disjoint(&mut self, left: &Shape, right: &Shape, depth: usize) -> bool {
        if depth > MAX_CHECK_DEPTH {
            return false;
        }
        match (left, right) {
            (Shape::Never, _) | (_, Shape::Never) => true,
            (Shape::Any, _) | (_, Shape::Any) => false,
            (Shape::Ref(target), other) | (other, Shape::Ref(target)) => {
                let target = target.clone();
                let shape = self.source.shape_at(&target);
                self.disjoint(&shape, other, depth + 1)
            }
            (Shape::AnyOf(branches), other) | (other, Shape::AnyOf(branches)) => branches
                .iter()
                .all(|branch| self.disjoint(branch, other, depth + 1)),
            (Shape::Values(values), other) | (other, Shape::Values(values)) => values
                .iter()
                .all(|value| self.accepts(other, value, depth + 1) == Ok(false)),
            (Shape::Typed(left), Shape::Typed(right)) => {
                let common = left.types.intersection(right.types);
                let mut remaining = common;
                if common.has_integers() && numbers_disjoint(left, right) {
                    remaining = Types(remaining.0 & !(Types::INTEGER.0 | Types::NUMBER.0));
                }
                if common.has(Types::OBJECT)
                    && self.objects_disjoint(&left.object, &right.object, depth)
                {
                    remaining = Types(remaining.0 & !Types::OBJECT.0);
                }
                remaining.is_empty()
            }
        }
    }

    /// Objects that a required property tells apart (a discriminator such as
    /// `"kind": {"const": "a"}`).
    fn objects_disjoint(&mut self, left: &ObjectRules, right: &ObjectRules, depth: usize) -> bool {
        for name in left.required.iter().chain(&right.required) {
            let (Some(a), Some(b)) = (
                value_shape(self, left, name),
                value_shape(self, right, name),
            ) else {
                return false;
            };
            if self.disjoint(&a, &b, depth + 1) {
                return true;
            }
        }
        false
    }
}

/// What the value of property `name` must be, all rules met (`None` when a key rule's
/// pattern is not a grammar here).
fn value_shape<S: ShapeSource>(
    simplifier: &mut Simplifier<'_, S>,
    object: &ObjectRules,
    name: &str,
) -> Option<Shape> {
    if object.key_rules.is_empty() {
        return Some(declared_or_additional(object, name));
    }
    let mut shape = Shape::Any;
    for part in key_shapes(object, name).ok()? {
        shape = simplifier.meet("", shape, part);
    }
    Some(shape)
}

/// Number ranges that do not overlap.
fn numbers_disjoint(left: &Typed, right: &Typed) -> bool {
    let below =
        |upper: &Option<Located<Bound>>, lower: &Option<Located<Bound>>| match (upper, lower) {
            (Some(upper), Some(lower)) => {
                let (upper, lower) = (&upper.value, &lower.value);
                upper.value < lower.value
                    || (upper.value == lower.value && (upper.exclusive || lower.exclusive))
            }
            _ => false,
        };
    below(&left.number.maximum, &right.number.minimum)
        || below(&right.number.maximum, &left.number.minimum)
}

/// The declared shape of property `name`, or any value.
fn declared_only(object: &ObjectRules, name: &str) -> Shape {
    object
        .properties
        .iter()
        .find(|(declared, _)| declared == name)
        .map(|(_, shape)| shape.clone())
        .unwrap_or(Shape::Any)
}

/// Whether key rule `keys` covers the name (`Err` when a pattern is not a grammar here).
fn key_set_contains(keys: &KeySet, name: &str) -> Result<bool, String> {
    let matches = |pattern: &str| {
        CharDfa::from_pattern(pattern)
            .map(|automaton| automaton.matches(name))
            .map_err(|error| format!("pattern `{pattern}`: {error}"))
    };
    match keys {
        KeySet::Pattern(pattern) => matches(pattern),
        KeySet::NoneOf { patterns, names } => {
            if names.iter().any(|known| known == name) {
                return Ok(false);
            }
            for pattern in patterns {
                if matches(pattern)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
    }
}

/// Every shape the value of property `name` must meet: its declaration (or the additional
/// schema when no key rule covers it) and every key rule covering it.
fn key_shapes(object: &ObjectRules, name: &str) -> Result<Vec<Shape>, String> {
    let mut shapes = Vec::new();
    let mut covered = false;
    for rule in &object.key_rules {
        if key_set_contains(&rule.keys, name)? {
            covered |= matches!(rule.keys, KeySet::Pattern(_));
            shapes.push(rule.shape.clone());
        }
    }
    match object
        .properties
        .iter()
        .find(|(declared, _)| declared == name)
    {
        Some((_, shape)) => shapes.push(shape.clone()),
        None if !covered => shapes.push(object.additional.clone()),
        None => {}
    }
    Ok(shapes)
}

/// The shape of the value of property `name` as the rules see it (patterns aside).
fn declared_or_additional(object: &ObjectRules, name: &str) -> Shape {
    object
        .properties
        .iter()
        .find(|(declared, _)| declared == name)
        .map(|(_, shape)| shape.clone())
        .unwrap_or_else(|| object.additional.clone())
}

fn min_option(left: Option<u64>, right: Option<u64>) -> Option<u64> {
    match (left, right) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// JSON equality: numbers by value (`1` equals `1.0`), objects regardless of key order.
pub(crate) fn json_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(a), Value::Number(b)) => Decimal::from_json(a) == Decimal::from_json(b),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, x)| b.get(key).is_some_and(|y| json_equal(x, y)))
        }
        _ => left == right,
    }
}
