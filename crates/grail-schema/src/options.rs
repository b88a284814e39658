//! The choices a schema does not make: whitespace, separators, key order, defaults, limits.

use crate::numeric::NumberSyntax;

/// How to treat keywords Grail cannot enforce exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Refuse the schema, naming each such keyword with its JSON pointer.
    #[default]
    Strict,
    /// Compile the closest superset and warn about every weakened keyword.
    Lenient,
}

/// Whitespace allowed between JSON tokens (after `{`, `[`, `,`, around `:`, before `}`,
/// `]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Whitespace {
    /// llama.cpp's `space ::= | " " | "\n"{1,2} [ \t]{0,20}`.
    #[default]
    Llama,
    /// None at all: compact JSON.
    None,
    /// Any run of JSON whitespace `[ \t\n\r]*`.
    Free,
    /// JSON whitespace, at most this many characters at each place.
    Bounded(u32),
}

/// The order of an object's properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyOrder {
    /// The order the schema declares them in (as llama.cpp): required ones first, then
    /// optional ones, then additional ones.
    #[default]
    Schema,
    /// Any order, for objects of at most [`SchemaLimits::max_any_order_properties`]
    /// declared properties (the grammar grows with the number of subsets of optional
    /// properties); larger objects keep the schema's order.
    Any,
}

/// How values are spelt: as JSON, or as the Python literals that Python's
/// `ast.literal_eval` reads as the same values (the arguments of pythonic tool calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Literals {
    /// JSON text.
    #[default]
    Json,
    /// JSON text but `True`, `False` and `None`, and strings without the two escapes
    /// Python reads otherwise than JSON: `\/` (two characters in Python) and surrogate
    /// pairs of `\u` escapes (two lone surrogates in Python). Objects are dict displays
    /// with string keys, arrays list displays.
    Python,
}

/// Whose reading of the schema to follow where llama.cpp's converter departs from the
/// specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// The specification (draft 2020-12): `{}` is any value; keywords constrain only
    /// values of their type; `prefixItems` leaves later items to `items`.
    #[default]
    Spec,
    /// llama.cpp's converter: `{}` is any object; a schema without `type` takes the type
    /// its keywords suggest (`properties` → object, `items` → array, `pattern`/`minLength`/
    /// `maxLength`/`format` → string); `prefixItems` is an exact tuple (and a schema
    /// written there is the item schema); constants are compact literals; keys of
    /// additional properties are matched as llama.cpp writes them.
    LlamaCpp,
}

/// Limits that bound the work on untrusted schemas. Exceeding one is an error naming it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaLimits {
    /// Most bytes of schema text accepted by [`crate::schema_text_to_grammar`]. Default:
    /// 16 MiB.
    pub max_schema_bytes: usize,
    /// Deepest nesting of schema objects. Default: 128 (schema text cannot nest deeper:
    /// serde_json's parser stops at 128 levels of JSON; the limit guards `Value`s built in
    /// code, whose conversion recurses once per level).
    pub max_depth: usize,
    /// Most grammar rules produced. Default: 100,000.
    pub max_rules: usize,
    /// Most values in one `enum`. Default: 10,000.
    pub max_enum_values: usize,
    /// Most declared properties of an object written in any order ([`KeyOrder::Any`]).
    /// Default: 8.
    pub max_any_order_properties: usize,
    /// Most schemas an `allOf` (with `anyOf` distributed over it) may turn into. Default:
    /// 256.
    pub max_combinations: usize,
    /// Most states of the automaton of one constrained string (patterns with lengths,
    /// several patterns, `not` of a pattern), each a grammar rule. Default: 2,000.
    pub max_string_states: usize,
}

impl Default for SchemaLimits {
    fn default() -> SchemaLimits {
        SchemaLimits {
            max_schema_bytes: 16 << 20,
            max_depth: 128,
            max_rules: 100_000,
            max_enum_values: 10_000,
            max_any_order_properties: 8,
            max_combinations: 256,
            max_string_states: 2_000,
        }
    }
}

/// Options for converting a schema.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaOptions {
    /// Strict (refuse what is not exact) or lenient (weaken with warnings).
    pub mode: Mode,
    /// Whitespace between tokens.
    pub whitespace: Whitespace,
    /// Property order in objects.
    pub key_order: KeyOrder,
    /// Whether an object that declares `properties` but not `additionalProperties` takes
    /// properties it does not declare: true as the specification says (default), false
    /// as llama.cpp does.
    pub additional_properties_default: bool,
    /// Whose reading to follow where llama.cpp departs from the specification.
    pub dialect: Dialect,
    /// Whether `format` constrains strings (the formats Grail knows; others are
    /// annotations): true by default, as validators with format checking and generation
    /// want; false reads every `format` as an annotation, as draft 2020-12's default
    /// vocabulary does.
    pub assert_formats: bool,
    /// How numbers are written (digit caps; none by default).
    pub numbers: NumberSyntax,
    /// What separates items of arrays and properties of objects: `","` (default) with
    /// optional JSON whitespace around it, such as `", "`. The [`Whitespace`] rule still
    /// follows it (with [`Whitespace::None`], it is exactly this text).
    pub item_separator: String,
    /// What separates a key from its value: `":"` (default), or with JSON whitespace
    /// around it, such as `": "`. The [`Whitespace`] rule still surrounds it.
    pub key_separator: String,
    /// When set, objects and arrays nested more than this many levels deep (the
    /// outermost value is level 0) are written as any JSON object or array, with a warning
    /// saying where (`depth-capped`): for recursive schemas whose full grammar a model or a
    /// server should not carry. Values up to the cap are exact; recursion is unrolled to
    /// the cap. `None` (default): exact at every depth, recursion as recursive rules.
    pub depth_cap: Option<u32>,
    /// Limits on the work done.
    pub limits: SchemaLimits,
    /// How values are spelt: JSON (default), or Python literals.
    pub literals: Literals,
}

impl Default for SchemaOptions {
    fn default() -> SchemaOptions {
        SchemaOptions {
            mode: Mode::Strict,
            whitespace: Whitespace::Llama,
            key_order: KeyOrder::Schema,
            additional_properties_default: true,
            dialect: Dialect::Spec,
            assert_formats: true,
            numbers: NumberSyntax::default(),
            item_separator: ",".to_string(),
            key_separator: ":".to_string(),
            depth_cap: None,
            limits: SchemaLimits::default(),
            literals: Literals::Json,
        }
    }
}

impl SchemaOptions {
    /// The choices of llama.cpp's converter: its [`Dialect`], no additional properties
    /// beside declared ones unless allowed, numbers of at most 16 digits per part.
    pub fn llama_cpp() -> SchemaOptions {
        SchemaOptions {
            dialect: Dialect::LlamaCpp,
            additional_properties_default: false,
            numbers: NumberSyntax::llama_cpp(),
            ..SchemaOptions::default()
        }
    }

    /// The separators as the JSON Schema compact style of `json.dumps` writes them, with
    /// no other whitespace: `", "` and `": "`.
    pub fn with_python_separators(self) -> SchemaOptions {
        SchemaOptions {
            whitespace: Whitespace::None,
            item_separator: ", ".to_string(),
            key_separator: ": ".to_string(),
            ..self
        }
    }

    /// Checks the options a schema cannot make wrong: the separators must be `,` and `:`
    /// with nothing but JSON whitespace around them. The error says which one is not.
    pub fn validate(&self) -> Result<(), String> {
        for (separator, mark, option) in [
            (&self.item_separator, ",", "item_separator"),
            (&self.key_separator, ":", "key_separator"),
        ] {
            if separator.trim_matches([' ', '\t', '\n', '\r']) != mark {
                return Err(format!(
                    "the {option} option is {separator:?}, which is not `{mark}` with JSON whitespace around it"
                ));
            }
        }
        Ok(())
    }

    /// The spelling of `true`, `false` and `null` (see [`Literals`]).
    pub fn literal_names(&self) -> [&'static str; 3] {
        match self.literals {
            Literals::Json => ["true", "false", "null"],
            Literals::Python => ["True", "False", "None"],
        }
    }

    /// True when following llama.cpp's readings.
    pub fn llama_dialect(&self) -> bool {
        self.dialect == Dialect::LlamaCpp
    }
}
