//! What a schema allows, normalized: a union of per-type constraint sets, explicit value
//! lists and references. `allOf` is an intersection of shapes, computed here, so the
//! grammar only ever needs unions.

use serde_json::Value;

use crate::numeric::{Bound, Decimal};

/// A set of JSON types, one bit each. `NUMBER` holds every number, `INTEGER` only the
/// integers; a set with `NUMBER` need not list `INTEGER`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Types(pub u8);

impl Types {
    pub const NULL: Types = Types(1);
    pub const BOOLEAN: Types = Types(2);
    pub const INTEGER: Types = Types(4);
    pub const NUMBER: Types = Types(8);
    pub const STRING: Types = Types(16);
    pub const ARRAY: Types = Types(32);
    pub const OBJECT: Types = Types(64);
    pub const ALL: Types = Types(127);
    pub const NONE: Types = Types(0);

    /// The type named `name` in a `type` keyword.
    pub fn named(name: &str) -> Option<Types> {
        Some(match name {
            "null" => Types::NULL,
            "boolean" => Types::BOOLEAN,
            "integer" => Types::INTEGER,
            "number" => Types::NUMBER,
            "string" => Types::STRING,
            "array" => Types::ARRAY,
            "object" => Types::OBJECT,
            _ => return None,
        })
    }

    /// Every type of either set.
    pub fn union(self, other: Types) -> Types {
        Types(self.0 | other.0)
    }

    /// The types in both sets (`number` and `integer` meet in `integer`).
    pub fn intersection(self, other: Types) -> Types {
        let mut bits = self.0 & other.0 & !(Types::INTEGER.0 | Types::NUMBER.0);
        let numbers = |types: Types| types.0 & (Types::INTEGER.0 | Types::NUMBER.0) != 0;
        if self.has(Types::NUMBER) && other.has(Types::NUMBER) {
            bits |= Types::NUMBER.0;
        } else if numbers(self) && numbers(other) {
            bits |= Types::INTEGER.0;
        }
        Types(bits)
    }

    /// True when every type of `other` is in the set.
    pub fn has(self, other: Types) -> bool {
        self.0 & other.0 == other.0
    }

    /// True when integers are in the set (as integers or as numbers).
    pub fn has_integers(self) -> bool {
        self.0 & (Types::INTEGER.0 | Types::NUMBER.0) != 0
    }

    /// True for the empty set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The type of a JSON value.
    pub fn of(value: &Value) -> Types {
        match value {
            Value::Null => Types::NULL,
            Value::Bool(_) => Types::BOOLEAN,
            Value::Number(number) if Decimal::from_json(number).is_integer() => Types::INTEGER,
            Value::Number(_) => Types::NUMBER,
            Value::String(_) => Types::STRING,
            Value::Array(_) => Types::ARRAY,
            Value::Object(_) => Types::OBJECT,
        }
    }
}

/// A value of a keyword with where it is written, for diagnostics raised when it is used.
#[derive(Debug, Clone, PartialEq)]
pub struct Located<T> {
    /// The value.
    pub value: T,
    /// The pointer of the schema object holding the keyword.
    pub pointer: String,
    /// The keyword.
    pub keyword: &'static str,
}

/// What a schema allows.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Every JSON value.
    Any,
    /// No value.
    Never,
    /// Whatever the schema at this pointer allows (a rule of its own in the grammar).
    Ref(std::rc::Rc<str>),
    /// Any of these.
    AnyOf(Vec<Shape>),
    /// Exactly these values (`enum`, `const`); shared, as shapes are copied whenever they
    /// are read again.
    Values(std::rc::Rc<[Value]>),
    /// Values of these types meeting these constraints.
    Typed(std::rc::Rc<Typed>),
}

/// Constraints per type. A constraint only concerns values of its type.
#[derive(Debug, Clone, PartialEq)]
pub struct Typed {
    /// The types allowed.
    pub types: Types,
    /// Numbers.
    pub number: NumberRules,
    /// Strings.
    pub string: StringRules,
    /// Arrays.
    pub array: ArrayRules,
    /// Objects.
    pub object: ObjectRules,
    /// Values excluded (`not: {enum: [...]}`).
    pub excluded: Vec<Located<Value>>,
}

/// `minimum`, `maximum`, `exclusive*`, `multipleOf`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NumberRules {
    /// The greatest lower bound.
    pub minimum: Option<Located<Bound>>,
    /// The least upper bound.
    pub maximum: Option<Located<Bound>>,
    /// Every `multipleOf` that applies.
    pub multiple_of: Vec<Located<Decimal>>,
}

/// `minLength`, `maxLength`, `pattern`, `format`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StringRules {
    /// Least length in characters.
    pub min_length: u64,
    /// Greatest length in characters.
    pub max_length: Option<u64>,
    /// Every `pattern` that applies (all must match).
    pub patterns: Vec<Located<String>>,
    /// Every `format` that applies.
    pub formats: Vec<Located<String>>,
    /// String constraints the string must not meet (`not: {pattern: ...}`).
    pub forbidden: Vec<Located<StringRules>>,
}

/// `prefixItems`, `items`, `minItems`, `maxItems`, `contains`, `uniqueItems`.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayRules {
    /// The first items, one shape each.
    pub prefix: Vec<Shape>,
    /// The items after the prefix.
    pub items: Shape,
    /// Least number of items.
    pub min_items: u64,
    /// Greatest number of items.
    pub max_items: Option<u64>,
    /// `contains` with its `minContains` and `maxContains`.
    pub contains: Vec<Located<Contains>>,
    /// Where `uniqueItems: true` is written, if it is.
    pub unique: Option<Located<()>>,
}

impl Default for ArrayRules {
    fn default() -> ArrayRules {
        ArrayRules {
            prefix: Vec::new(),
            items: Shape::Any,
            min_items: 0,
            max_items: None,
            contains: Vec::new(),
            unique: None,
        }
    }
}

/// `contains`, `minContains`, `maxContains`.
#[derive(Debug, Clone, PartialEq)]
pub struct Contains {
    /// What some items must be.
    pub shape: Shape,
    /// Least number of such items.
    pub min: u64,
    /// Greatest number of such items.
    pub max: Option<u64>,
}

/// `properties`, `required`, `additionalProperties`, `patternProperties`,
/// `propertyNames`, `minProperties`, `maxProperties`, and dependencies.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectRules {
    /// Declared properties in schema order.
    pub properties: Vec<(String, Shape)>,
    /// Required names, in the order first required.
    pub required: Vec<String>,
    /// The required names the grammar writes first (as llama.cpp does): those of the
    /// schemas that declare `properties`. A name required only by a schema that declares
    /// none (a `dependencies` entry, one `required` list of a `oneOf`) keeps its place
    /// among the properties, so every alternative of an object writes its keys in one
    /// order. Not a constraint: only the order of the keys.
    pub written_first: Vec<String>,
    /// Properties neither declared nor matched by a pattern.
    pub additional: Shape,
    /// Rules for the values of keys by the form of the key (`patternProperties`, and
    /// what intersections of objects leave of `additionalProperties`): every rule whose
    /// keys include a key applies to its value, for declared properties too.
    pub key_rules: Vec<KeyRule>,
    /// `propertyNames`.
    pub property_names: Option<Located<Shape>>,
    /// Least number of properties.
    pub min_properties: u64,
    /// Greatest number of properties.
    pub max_properties: Option<u64>,
    /// Conditions on which properties are present (`dependentRequired`, `not` of
    /// `required`, `oneOf` of `required`, ...), all of which must hold.
    pub presence: Vec<Presence>,
}

/// The values of the keys of a set must meet a shape.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyRule {
    /// Which keys.
    pub keys: KeySet,
    /// What their values must be.
    pub shape: Shape,
    /// Where the rule comes from, for diagnostics.
    pub origin: Located<()>,
}

/// A set of property names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySet {
    /// The names a pattern matches.
    Pattern(String),
    /// The names matching none of the patterns and not among the names (the keys an
    /// object's `additionalProperties` governs).
    NoneOf {
        /// Patterns.
        patterns: Vec<String>,
        /// Declared names.
        names: Vec<String>,
    },
}

/// A condition on which properties of an object are present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presence {
    /// The property is present.
    Has(String),
    /// The condition does not hold.
    Not(Box<Presence>),
    /// Every condition holds (true when there are none).
    All(Vec<Presence>),
    /// Some condition holds (false when there are none).
    Any(Vec<Presence>),
    /// Exactly one condition holds.
    ExactlyOne(Vec<Presence>),
}

impl Presence {
    /// Whether the condition holds when exactly the names `present` says are present.
    pub fn holds(&self, present: &dyn Fn(&str) -> bool) -> bool {
        match self {
            Presence::Has(name) => present(name),
            Presence::Not(inner) => !inner.holds(present),
            Presence::All(items) => items.iter().all(|item| item.holds(present)),
            Presence::Any(items) => items.iter().any(|item| item.holds(present)),
            Presence::ExactlyOne(items) => {
                items.iter().filter(|item| item.holds(present)).count() == 1
            }
        }
    }

    /// Every name the condition mentions, added to `names` once each.
    pub fn names(&self, names: &mut Vec<String>) {
        match self {
            Presence::Has(name) => {
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
            Presence::Not(inner) => inner.names(names),
            Presence::All(items) | Presence::Any(items) | Presence::ExactlyOne(items) => {
                for item in items {
                    item.names(names);
                }
            }
        }
    }
}

impl Default for ObjectRules {
    fn default() -> ObjectRules {
        ObjectRules {
            properties: Vec::new(),
            required: Vec::new(),
            written_first: Vec::new(),
            additional: Shape::Any,
            key_rules: Vec::new(),
            property_names: None,
            min_properties: 0,
            max_properties: None,
            presence: Vec::new(),
        }
    }
}

impl Typed {
    /// Every value of the given types, unconstrained.
    pub fn of_types(types: Types) -> Typed {
        Typed {
            types,
            number: NumberRules::default(),
            string: StringRules::default(),
            array: ArrayRules::default(),
            object: ObjectRules::default(),
            excluded: Vec::new(),
        }
    }

    /// True when no constraint narrows any allowed type.
    pub fn is_unconstrained(&self) -> bool {
        let number = &self.number;
        let string = &self.string;
        let array = &self.array;
        let object = &self.object;
        number.minimum.is_none()
            && number.maximum.is_none()
            && number.multiple_of.is_empty()
            && string.min_length == 0
            && string.max_length.is_none()
            && string.patterns.is_empty()
            && string.formats.is_empty()
            && string.forbidden.is_empty()
            && array.prefix.is_empty()
            && array.items == Shape::Any
            && array.min_items == 0
            && array.max_items.is_none()
            && array.contains.is_empty()
            && array.unique.is_none()
            && object.properties.is_empty()
            && object.required.is_empty()
            && object.additional == Shape::Any
            && object.key_rules.is_empty()
            && object.property_names.is_none()
            && object.min_properties == 0
            && object.max_properties.is_none()
            && object.presence.is_empty()
            && self.excluded.is_empty()
    }
}

impl Typed {
    /// True when the only constraints are on strings (lengths, patterns, formats).
    pub fn string_only(&self) -> bool {
        let mut bare = self.clone();
        bare.string = StringRules::default();
        bare.is_unconstrained() && self.string != StringRules::default()
    }

    /// True when the only constraints are on which properties objects have (`required`,
    /// presence conditions): the condition they set on objects, and the types allowed.
    pub fn presence_only(&self) -> Option<Presence> {
        let mut bare = self.clone();
        bare.object.required.clear();
        bare.object.written_first.clear();
        bare.object.presence.clear();
        if !bare.is_unconstrained() {
            return None;
        }
        let mut conditions: Vec<Presence> = self
            .object
            .required
            .iter()
            .map(|name| Presence::Has(name.clone()))
            .collect();
        conditions.extend(self.object.presence.iter().cloned());
        Some(Presence::All(conditions))
    }
}

impl Typed {
    /// The types whose every value this shape allows.
    pub fn whole_types(&self) -> Types {
        let excludes = |kind: fn(&serde_json::Value) -> bool| {
            self.excluded.iter().any(|excluded| kind(&excluded.value))
        };
        let types = self.types;
        let mut whole = Types::NONE;
        if types.has(Types::NULL) && !excludes(serde_json::Value::is_null) {
            whole = whole.union(Types::NULL);
        }
        if types.has(Types::BOOLEAN) && !excludes(serde_json::Value::is_boolean) {
            whole = whole.union(Types::BOOLEAN);
        }
        if types.has_integers()
            && self.number == NumberRules::default()
            && !excludes(serde_json::Value::is_number)
        {
            whole = whole.union(if types.has(Types::NUMBER) {
                Types::NUMBER
            } else {
                Types::INTEGER
            });
        }
        if types.has(Types::STRING)
            && self.string == StringRules::default()
            && !excludes(serde_json::Value::is_string)
        {
            whole = whole.union(Types::STRING);
        }
        if types.has(Types::ARRAY)
            && self.array == ArrayRules::default()
            && !excludes(serde_json::Value::is_array)
        {
            whole = whole.union(Types::ARRAY);
        }
        if types.has(Types::OBJECT)
            && self.object == ObjectRules::default()
            && !excludes(serde_json::Value::is_object)
        {
            whole = whole.union(Types::OBJECT);
        }
        whole
    }
}

impl Types {
    /// The types of the set that `whole` does not cover: integers stay when `whole` has
    /// only integers and the set has every number (its non-integers are not covered).
    pub fn not_covered_by(self, whole: Types) -> Types {
        let numbers = Types::INTEGER.0 | Types::NUMBER.0;
        let mut bits = self.0 & !whole.0 & !numbers;
        let numbers_covered =
            whole.has(Types::NUMBER) || (whole.has(Types::INTEGER) && !self.has(Types::NUMBER));
        if !numbers_covered {
            bits |= self.0 & numbers;
        }
        Types(bits)
    }
}

impl Shape {
    /// Objects (and the values of `other_types`) meeting a presence condition.
    pub fn presence(condition: Presence, other_types: Types) -> Shape {
        let mut typed = Typed::of_types(other_types.union(Types::OBJECT));
        typed.object.presence.push(condition);
        Shape::typed(typed)
    }

    /// A shape of one constrained type set.
    pub fn typed(typed: Typed) -> Shape {
        Shape::Typed(std::rc::Rc::new(typed))
    }
}

/// The tighter of two bounds (the greater lower bound, or the smaller upper bound; an
/// exclusive bound is tighter than an inclusive one at the same value).
pub(crate) fn tighter(
    current: Option<Located<Bound>>,
    new: Located<Bound>,
    lower: bool,
) -> Option<Located<Bound>> {
    let Some(current) = current else {
        return Some(new);
    };
    let order = new.value.value.cmp(&current.value.value);
    let new_is_tighter = match order {
        std::cmp::Ordering::Equal => new.value.exclusive && !current.value.exclusive,
        std::cmp::Ordering::Greater => lower,
        std::cmp::Ordering::Less => !lower,
    };
    Some(if new_is_tighter { new } else { current })
}
