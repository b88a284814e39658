//! Emitting: shapes to grammar rules through the grammar builder, the last stage of a
//! conversion. The rule of a schema location is written the first time it is referred to,
//! from the shape the reader gives for it (so a recursive schema is a recursive rule);
//! shared rules (`space`, `value`, `string`, ...) and equal constraints are written once.
//! This file holds the emitter's state, the dispatch by shape and by type, and the rules
//! of schema locations; `json.rs` the shared JSON rules and constants, `number.rs`,
//! `string.rs`, `array.rs` and `object.rs` the constrained values of each type.

mod array;
mod json;
mod number;
mod object;
mod string;

use rustc_hash::FxHashMap as HashMap;

use grail_grammar::{Expr, GrammarBuilder, RuleId};
use serde_json::Value;

use crate::diagnostic::{SchemaDiagnostic, Severity};
use crate::meet::Simplifier;
use crate::options::SchemaOptions;
use crate::outcome::{Frame, SchemaError, SchemaGrammar, finish};
use crate::pointer::rule_name;
use crate::read::Reader;
use crate::shape::{Shape, Typed, Types};
use crate::whole_types::whole_types_apart;

use json::Primitive;
use number::NumberKey;

/// The emitting of one conversion: the grammar being built, the rule of each schema
/// location and of each shared constraint, and where the writing is.
pub(crate) struct Emitter<'s> {
    /// The reader of the schema, asked for the shape of each location whose rule is
    /// written; it keeps every stage's findings.
    reader: Reader<'s>,
    /// The options.
    options: &'s SchemaOptions,
    /// The grammar being built.
    builder: GrammarBuilder,
    /// The name of the whole schema's rule when the caller writes the root around it
    /// (`None`: the schema is the root).
    schema_rule_name: Option<String>,
    /// The rule of each schema location referred to.
    rules: HashMap<String, RuleId>,
    /// Shared rules by name (`space`, `char`, `value`, ...).
    primitives: HashMap<Primitive, RuleId>,
    /// The string of each exactly expressed `format` by name, shared by every use.
    format_rules: HashMap<String, Expr>,
    /// The string of each pair of length bounds (no other constraint), shared by every
    /// use.
    length_strings: HashMap<(u64, Option<u64>), Expr>,
    /// The rest of a string whose first character is none of some characters (the
    /// children of a node of a trie of excluded strings), by those characters, shared by
    /// every node with the same children (see `Emitter::excluding`).
    string_tails: HashMap<Vec<char>, Expr>,
    /// The string of each set of string constraints (see `string_key`), shared by
    /// every use.
    string_rules: HashMap<String, Option<Expr>>,
    /// `rule{min,max}` as a rule of its own, for long repetitions of a rule (blocks of
    /// 1,000 copies), shared by every use.
    shared_repetitions: HashMap<(RuleId, u64, Option<u64>), RuleId>,
    /// The numbers of each set of numeric constraints, shared by every use.
    number_rules: HashMap<NumberKey, Expr>,
    /// How many objects and arrays enclose the value being written (for
    /// `SchemaOptions::depth_cap`).
    nesting: u32,
    /// The schema locations whose rules are being written, innermost last (where a
    /// depth cap applies, for its warning).
    writing: Vec<String>,
    /// Whether the depth cap's warning was given.
    capped: bool,
    /// Whether the root rule was given to the schema's root location (under a depth cap
    /// a schema that refers to its root has rules for the root at other depths too).
    root_given: bool,
    /// Rules declared so far.
    rule_count: usize,
}

impl<'s> Emitter<'s> {
    /// An emitter of the shapes `reader` reads; the schema's rule is the root, or the
    /// rule `schema_rule_name` when the caller writes the root around it.
    pub(crate) fn new(
        reader: Reader<'s>,
        options: &'s SchemaOptions,
        schema_rule_name: Option<String>,
    ) -> Emitter<'s> {
        Emitter {
            reader,
            options,
            builder: GrammarBuilder::new(),
            schema_rule_name,
            rules: HashMap::default(),
            primitives: HashMap::default(),
            format_rules: HashMap::default(),
            length_strings: HashMap::default(),
            string_tails: HashMap::default(),
            string_rules: HashMap::default(),
            shared_repetitions: HashMap::default(),
            number_rules: HashMap::default(),
            nesting: 0,
            writing: Vec::new(),
            capped: false,
            root_given: false,
            rule_count: 1,
        }
    }

    /// The grammar being built.
    pub(crate) fn builder(&mut self) -> &mut GrammarBuilder {
        &mut self.builder
    }

    /// The reader, to read shapes the emitter is handed rather than finds.
    pub(crate) fn reader(&mut self) -> &mut Reader<'s> {
        &mut self.reader
    }

    /// The grammar, or the refusal, with every stage's findings.
    pub(crate) fn finish(self) -> Result<SchemaGrammar, SchemaError> {
        finish(self.reader.into_findings(), self.builder)
    }

    /// Defines the root as what `frame` writes around the rule `schema_rule` (see
    /// [`crate::Frame`]).
    pub(crate) fn frame_root(&mut self, schema_rule: RuleId, frame: Frame<'_>) {
        let space = self.space();
        let body = frame(&mut self.builder, Expr::Rule(schema_rule), space);
        let root = self.builder.root();
        self.builder
            .define(root, body)
            .expect("the root is defined once, by the frame");
    }

    /// Declares a new rule, counting it against the limit.
    pub(crate) fn declare(&mut self, name: impl Into<String>) -> RuleId {
        self.rule_count += 1;
        self.builder.declare_owned(name.into())
    }

    /// Defines a rule declared with [`Emitter::declare`].
    pub(crate) fn define(&mut self, rule: RuleId, expr: Expr) {
        self.builder
            .define(rule, expr)
            .expect("a rule declared by the emitter is defined once");
    }

    /// True when the rule limit has been passed (reported once).
    fn over_rule_limit(&mut self) -> bool {
        let limit = self.options.limits.max_rules;
        if self.rule_count <= limit {
            return false;
        }
        if !self.reader.findings().has_code("rules-too-many") {
            self.reader.findings().error(
                "rules-too-many",
                "",
                None,
                format!("the grammar needs more than {limit} rules (SchemaLimits::max_rules)"),
            );
        }
        true
    }

    /// Reports a keyword Grail cannot enforce exactly (see `Findings::unsupported`).
    fn unsupported(&mut self, pointer: &str, keyword: &str, reason: impl Into<String>) {
        self.reader.findings().unsupported(pointer, keyword, reason);
    }

    /// The simplifier, to combine shapes met while writing.
    fn simplifier(&mut self) -> Simplifier<'_, Reader<'s>> {
        self.reader.simplifier()
    }

    /// The expression of `shape`; `name` names the rules made for its parts.
    fn emit(&mut self, shape: &Shape, name: &str) -> Expr {
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
    /// item's), as [`Emitter::emit_as_rule`] writes it.
    fn emit_nested(&mut self, shape: &Shape, name: &str) -> Expr {
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
        self.reader.findings().push(
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
    fn emit_as_rule(&mut self, shape: &Shape, name: &str) -> Expr {
        let expr = self.emit(shape, name);
        self.as_rule(expr, name)
    }

    /// `expr` (what [`Emitter::emit`] gave for a schema) as [`Emitter::emit_as_rule`]
    /// writes it: as it is when a token or a reference, else in a rule named `name`.
    fn as_rule(&mut self, expr: Expr, name: &str) -> Expr {
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
    pub(crate) fn rule_of(&mut self, target: &str) -> RuleId {
        // Under a depth cap, a location has one rule per depth up to the cap (recursion
        // unrolled), then one for every depth past it.
        let key = match self.options.depth_cap {
            Some(cap) => format!("{target}\u{0}{}", self.nesting.min(cap + 1)),
            None => {
                if let Some(&rule) = self.rules.get(target) {
                    return rule;
                }
                target.to_string()
            }
        };
        if let Some(&rule) = self.rules.get(&key) {
            return rule;
        }
        let rule = if target.is_empty() {
            match self.schema_rule_name.clone() {
                Some(name) => self.declare(name),
                // The root is the rule of the root location at level 0; under a depth
                // cap, a `$ref` to the root from deeper levels has a rule of its own.
                None if self.root_given => self.declare(rule_name(target)),
                None => {
                    self.root_given = true;
                    self.builder.root()
                }
            }
        } else {
            self.declare(rule_name(target))
        };
        self.rules.insert(key, rule);
        let shape = self.reader.read(target);
        self.define_schema_rule(rule, target, &shape);
        rule
    }

    /// Defines `rule`, declared for the schema at `pointer`, as what `shape` (the
    /// schema's) allows.
    pub(crate) fn define_schema_rule(&mut self, rule: RuleId, pointer: &str, shape: &Shape) {
        // Only the depth cap's warning asks where the writing is.
        let track = self.options.depth_cap.is_some();
        if track {
            self.writing.push(pointer.to_string());
        }
        let expr = if self.over_rule_limit() {
            Expr::Choice(Vec::new())
        } else {
            self.emit(shape, &rule_name(pointer))
        };
        if track {
            self.writing.pop();
        }
        self.builder
            .define(rule, expr)
            .expect("a schema rule is defined once");
    }

    /// The values of the types `typed` allows, each under its constraints.
    fn typed(&mut self, typed: &Typed, name: &str) -> Expr {
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
                (true, false) => choices.push(Expr::literal(self.options.literal_names()[1])),
                (false, true) => choices.push(Expr::literal(self.options.literal_names()[0])),
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
}
