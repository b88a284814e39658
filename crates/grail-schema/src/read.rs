//! Reading: a schema document into [`Shape`]s, keyword by keyword, with `$ref`s resolved to
//! the pointers of their targets. The first stage of a conversion; combining the parts of
//! one schema (`allOf`, `oneOf`, `not`, `if`) is the simplifier's (`meet.rs`), which this
//! calls, and which asks this for the shapes of references it must look through.
//!
//! Every keyword is either turned into a constraint, ignored because it carries none
//! (annotations: `title`, `description`, `default`, vendor `x-…` and any keyword the
//! specification does not define), or reported: as unsupported (strict mode refuses the
//! schema; lenient mode drops the constraint with a warning) or as invalid.

use rustc_hash::FxHashMap as HashMap;
use serde_json::{Map, Value};

use crate::diagnostic::{SchemaDiagnostic, Severity, escape_pointer_token};
use crate::document::Document;
use crate::findings::Findings;
use crate::keywords::Keywords;
use crate::meet::{ShapeSource, Simplifier, json_equal};
use crate::numeric::{Bound, Decimal};
use crate::options::SchemaOptions;
use crate::pointer::joined;
use crate::resolve::ResourceIndex;
use crate::shape::{Contains, KeyRule, KeySet, Located, Presence, Shape, Typed, Types, tighter};

/// The reading of one schema document: the shape of each location read, remembered, and
/// what reading found.
pub(crate) struct Reader<'s> {
    /// The whole document, with what is mounted in it.
    document: Document<'s>,
    /// Its identifiers and anchors.
    index: ResourceIndex,
    /// The options.
    options: &'s SchemaOptions,
    /// Draft-07 and earlier: keywords beside `$ref` are ignored.
    legacy_ref: bool,
    /// The shape read at each pointer.
    shapes: HashMap<String, Shape>,
    /// Pointers whose shapes are being read (a `$ref` chain with no schema in between).
    reading: Vec<String>,
    /// References the simplifier is expanding to intersect them (see
    /// [`ShapeSource::expanding`]).
    expanding: Vec<String>,
    /// How deep schema objects nest at the current point of reading.
    depth: usize,
    /// Everything found so far, by every stage (the emitter reports here too).
    findings: Findings,
}

impl<'s> Reader<'s> {
    /// A reader of `document`, nothing read yet.
    pub(crate) fn new(document: Document<'s>, options: &'s SchemaOptions) -> Reader<'s> {
        let legacy_ref = document
            .root
            .get("$schema")
            .and_then(Value::as_str)
            .is_some_and(|uri| {
                ["draft-03", "draft-04", "draft-05", "draft-06", "draft-07"]
                    .iter()
                    .any(|draft| uri.contains(draft))
            });
        Reader {
            document,
            index: ResourceIndex::new(&document),
            options,
            legacy_ref,
            // About as many locations as a tool's arguments have, per document.
            shapes: HashMap::with_capacity_and_hasher(
                16 * (document.mounts.len() + 1),
                Default::default(),
            ),
            reading: Vec::new(),
            expanding: Vec::new(),
            depth: 0,
            findings: Findings::new(options.mode),
        }
    }

    /// What every stage found so far, to add to.
    pub(crate) fn findings(&mut self) -> &mut Findings {
        &mut self.findings
    }

    /// What every stage found, once the conversion is done.
    pub(crate) fn into_findings(self) -> Findings {
        self.findings
    }

    /// The simplifier, looking through references with this reader.
    pub(crate) fn simplifier(&mut self) -> Simplifier<'_, Reader<'s>> {
        Simplifier::new(self)
    }

    /// Runs `read` as inside the schema at `pointer` (one level deeper, with `pointer` on
    /// the stack of schemas being read), as reading `pointer` itself reads its parts: for
    /// a caller that builds the shape of `pointer` without a schema there to read.
    pub(crate) fn inside<T>(&mut self, pointer: &str, read: impl FnOnce(&mut Self) -> T) -> T {
        self.reading.push(pointer.to_string());
        self.depth += 1;
        let result = read(self);
        self.depth -= 1;
        self.reading.pop();
        result
    }

    /// The shape of the schema at `pointer` (read once, then remembered).
    pub(crate) fn read(&mut self, pointer: &str) -> Shape {
        if let Some(shape) = self.shapes.get(pointer) {
            return shape.clone();
        }
        if let Some(refused) = self.refuse_to_read(pointer) {
            return refused;
        }
        let Some(value) = self.document.lookup(pointer) else {
            self.findings
                .error("ref-unresolved", pointer, None, "no schema here");
            return Shape::Never;
        };
        self.read_new(pointer.to_string(), value)
    }

    /// [`Reader::read`] of a schema the caller holds (`value`, the schema at
    /// `pointer`): no lookup from the root. At a mount point, the caller holds the
    /// placeholder: the mounted document is read instead.
    pub(crate) fn read_at(&mut self, pointer: String, value: &Value) -> Shape {
        if let Some(shape) = self.shapes.get(&pointer) {
            return shape.clone();
        }
        if let Some(refused) = self.refuse_to_read(&pointer) {
            return refused;
        }
        let document = self.document;
        let value = document.mounted_at(&pointer).unwrap_or(value);
        self.read_new(pointer, value)
    }

    /// `Never`, with an error, when the schema at `pointer` is being read already (a
    /// `$ref` cycle) or nests too deep.
    fn refuse_to_read(&mut self, pointer: &str) -> Option<Shape> {
        if self.reading.iter().any(|open| open == pointer) {
            self.findings.error(
                "ref-cycle",
                pointer,
                Some("$ref"),
                "this schema refers to itself through `$ref` without any constraint in between, so it allows nothing definite",
            );
            return Some(Shape::Never);
        }
        if self.depth >= self.options.limits.max_depth {
            self.findings.error(
                "schema-too-deep",
                pointer,
                None,
                format!(
                    "schemas nest more than {} deep (SchemaLimits::max_depth)",
                    self.options.limits.max_depth
                ),
            );
            return Some(Shape::Never);
        }
        None
    }

    /// Reads `value`, the schema at `pointer`, not read yet, and remembers its shape.
    fn read_new(&mut self, pointer: String, value: &Value) -> Shape {
        self.reading.push(pointer.clone());
        self.depth += 1;
        let shape = grail_syntax::stack::deep(|| self.read_value(&pointer, value));
        self.depth -= 1;
        self.reading.pop();
        self.shapes.insert(pointer, shape.clone());
        shape
    }

    fn read_value(&mut self, pointer: &str, value: &Value) -> Shape {
        match value {
            Value::Bool(true) => Shape::Any,
            Value::Bool(false) => Shape::Never,
            Value::Object(object) => self.read_object(pointer, object),
            _ => {
                self.findings.error(
                    "schema-invalid",
                    pointer,
                    None,
                    "a schema must be an object or a boolean",
                );
                Shape::Never
            }
        }
    }

    /// What `{}` means under the options (`true` is always any value).
    fn empty_schema(&self) -> Shape {
        if self.options.llama_dialect() {
            Shape::typed(Typed::of_types(Types::OBJECT))
        } else {
            Shape::Any
        }
    }

    fn read_object(&mut self, pointer: &str, object: &Map<String, Value>) -> Shape {
        if object.is_empty() {
            return self.empty_schema();
        }
        let child = |keyword: &str| joined(&[pointer, "/", &escape_pointer_token(keyword)]);
        // Which keywords the object has, in one pass over its keys: the lookups below are
        // made only for the groups it has (most schema objects have a few keywords of one
        // type, and each lookup scans the object).
        let groups = KeywordGroups::of(object);
        let mut parts = Parts::default();
        if let Some(reference) = groups.other.then(|| object.keyword("$ref")).flatten() {
            match reference.as_str() {
                Some(reference) => match self.index.resolve(&self.document, pointer, reference) {
                    Ok(target) => parts.push(Shape::Ref(target.into())),
                    Err(reason) => {
                        self.findings
                            .error("ref-unresolved", pointer, Some("$ref"), reason);
                        return Shape::Never;
                    }
                },
                None => {
                    self.findings.error(
                        "schema-invalid",
                        pointer,
                        Some("$ref"),
                        "`$ref` must be a string",
                    );
                    return Shape::Never;
                }
            }
            if self.legacy_ref {
                // Draft-07 and earlier ignore everything beside `$ref`.
                return parts.into_shapes().next().expect("the reference");
            }
        }
        if groups.other {
            for keyword in [
                "$dynamicRef",
                "$recursiveRef",
                "unevaluatedProperties",
                "unevaluatedItems",
            ] {
                if object.has_keyword(keyword) {
                    self.findings
                        .unsupported(pointer, keyword, "Grail does not evaluate it");
                }
            }
        }
        if self.options.llama_dialect()
            && groups.other
            && let Some(shape) = self.llama_all_of(pointer, object)
        {
            return shape;
        }
        let mut typed = Typed::of_types(Types::ALL);
        if let Some(types) = object.keyword("type") {
            typed.types = self.read_types(pointer, types);
        } else if self.options.llama_dialect() {
            typed.types = inferred_types(object);
        }
        // Each group is read only when the object has one of its keywords.
        if groups.number {
            self.read_number_keywords(pointer, object, &mut typed);
        }
        if groups.string {
            self.read_string_keywords(pointer, object, &mut typed);
        }
        if groups.array {
            self.read_array_keywords(pointer, object, &mut typed);
        }
        if groups.object {
            self.read_object_keywords(pointer, object, &mut typed);
        }
        // Keywords that constrain nothing add nothing to intersect.
        if !(typed.types.has(Types::ALL) && typed.is_unconstrained()) {
            parts.push(Shape::typed(typed));
        }
        if !groups.other {
            return parts.meet_all(self, pointer);
        }

        if let Some(values) = object.keyword("enum") {
            match values {
                Value::Array(values) if values.len() <= self.options.limits.max_enum_values => {
                    parts.push(Shape::Values(dedup(values)))
                }
                Value::Array(values) => self.findings.error(
                    "enum-too-large",
                    pointer,
                    Some("enum"),
                    format!(
                        "{} values is over the limit of {} (SchemaLimits::max_enum_values)",
                        values.len(),
                        self.options.limits.max_enum_values
                    ),
                ),
                _ => self.findings.error(
                    "schema-invalid",
                    pointer,
                    Some("enum"),
                    "`enum` must be an array",
                ),
            }
        }
        if let Some(value) = object.keyword("const") {
            parts.push(Shape::Values(std::rc::Rc::from([value.clone()])));
        }
        for (keyword, combine) in [("allOf", 0), ("anyOf", 1), ("oneOf", 2)] {
            let Some(list) = object.keyword(keyword) else {
                continue;
            };
            let Some(list) = list.as_array().filter(|list| !list.is_empty()) else {
                self.findings.error(
                    "schema-invalid",
                    pointer,
                    Some(keyword),
                    format!("`{keyword}` must be a non-empty array of schemas"),
                );
                continue;
            };
            let branches: Vec<Shape> = list
                .iter()
                .enumerate()
                .map(|(position, branch)| {
                    self.read_at(format!("{}/{position}", child(keyword)), branch)
                })
                .collect();
            match combine {
                0 => parts.extend(branches),
                1 => parts.push(Shape::AnyOf(branches)),
                _ => parts.push(self.simplifier().one_of(pointer, branches)),
            }
        }
        if let Some(negated) = object.keyword("not") {
            // `not: {not: X}` is X.
            if only_keyword(negated, "not").is_some() {
                parts.push(self.read(&format!("{}/not", child("not"))));
            } else {
                let negated = self.read(&child("not"));
                parts.push(self.simplifier().not(pointer, negated));
            }
        }
        // `dependentSchemas` (and draft-07's `dependencies` with a schema): if the property
        // is present, the object also meets the schema.
        for keyword in ["dependentSchemas", "dependencies"] {
            let Some(Value::Object(entries)) = object.keyword(keyword) else {
                continue;
            };
            for (name, value) in entries {
                if value.is_array() {
                    continue;
                }
                let schema = self.read(&format!(
                    "{}/{}",
                    child(keyword),
                    escape_pointer_token(name)
                ));
                let present = Presence::Has(name.clone());
                let absent = Presence::Not(Box::new(present.clone()));
                let with =
                    self.simplifier()
                        .meet(pointer, Shape::presence(present, Types::NONE), schema);
                parts.push(Shape::AnyOf(vec![
                    Shape::presence(absent, Types::ALL),
                    with,
                ]));
            }
        }
        if object.has_keyword("if") && (object.has_keyword("then") || object.has_keyword("else")) {
            let condition = self.read(&child("if"));
            let then = if object.has_keyword("then") {
                self.read(&child("then"))
            } else {
                Shape::Any
            };
            let otherwise = if object.has_keyword("else") {
                self.read(&child("else"))
            } else {
                Shape::Any
            };
            match self.simplifier().complement(pointer, condition.clone()) {
                Some(negated) => {
                    let when = self.simplifier().meet(pointer, condition, then);
                    let unless = self.simplifier().meet(pointer, negated, otherwise);
                    parts.push(Shape::AnyOf(vec![when, unless]));
                }
                None => self.findings.unsupported(
                    pointer,
                    "if",
                    "`if`/`then`/`else` needs the negation of the `if` schema, which is not expressed in the grammar here",
                ),
            }
        }
        parts.meet_all(self, pointer)
    }

    /// llama.cpp's reading of `allOf` (for object and untyped schemas without
    /// `properties` of their own, and strings): one object of every property of the
    /// components, required when the component is listed directly, optional when it is an
    /// `anyOf` alternative, nothing else allowed; or, when every component is an `enum`,
    /// the values they share.
    fn llama_all_of(&mut self, pointer: &str, object: &Map<String, Value>) -> Option<Shape> {
        let components = object.keyword("allOf")?.as_array()?;
        let type_name = object.keyword("type").and_then(Value::as_str);
        let has_properties = object.has_keyword("properties")
            || object
                .get("additionalProperties")
                .is_some_and(|additional| additional != &Value::Bool(true));
        let applies = match type_name {
            None | Some("object") => !has_properties,
            Some("string") => true,
            _ => false,
        };
        if !applies {
            return None;
        }
        let mut typed = Typed::of_types(Types::OBJECT);
        typed.object.additional = Shape::Never;
        let mut enum_counts: Vec<(Value, usize)> = Vec::new();
        for (position, component) in components.iter().enumerate() {
            let component_pointer = format!("{pointer}/allOf/{position}");
            match component.get("anyOf").and_then(Value::as_array) {
                Some(alternatives) => {
                    for index in 0..alternatives.len() {
                        let alternative = format!("{component_pointer}/anyOf/{index}");
                        self.llama_component(&alternative, false, &mut typed, &mut enum_counts);
                    }
                }
                None => {
                    self.llama_component(&component_pointer, true, &mut typed, &mut enum_counts)
                }
            }
        }
        let shared: Vec<Value> = enum_counts
            .into_iter()
            .filter(|(_, count)| *count == components.len())
            .map(|(value, _)| value)
            .collect();
        if !shared.is_empty() {
            return Some(Shape::Values(shared.into()));
        }
        Some(Shape::typed(typed))
    }

    fn llama_component(
        &mut self,
        pointer: &str,
        required: bool,
        typed: &mut Typed,
        enum_counts: &mut Vec<(Value, usize)>,
    ) {
        let mut pointer = pointer.to_string();
        // Follow `$ref`s to the component itself.
        for _ in 0..32 {
            let Some(reference) = self
                .document
                .lookup(&pointer)
                .and_then(|value| value.get("$ref"))
                .and_then(Value::as_str)
            else {
                break;
            };
            match self.index.resolve(&self.document, &pointer, reference) {
                Ok(target) => pointer = target,
                Err(_) => return,
            }
        }
        let Some(Value::Object(component)) = self.document.lookup(&pointer) else {
            return;
        };
        if let Some(Value::Object(properties)) = component.get("properties") {
            for name in properties.keys() {
                let shape = self.read(&format!(
                    "{pointer}/properties/{}",
                    escape_pointer_token(name)
                ));
                typed.object.properties.push((name.clone(), shape));
                if required && !typed.object.required.contains(name) {
                    typed.object.required.push(name.clone());
                    typed.object.written_first.push(name.clone());
                }
            }
        } else if let Some(Value::Array(values)) = component.get("enum") {
            for value in values {
                match enum_counts
                    .iter_mut()
                    .find(|(known, _)| json_equal(known, value))
                {
                    Some((_, count)) => *count += 1,
                    None => enum_counts.push((value.clone(), 1)),
                }
            }
        }
    }

    fn read_types(&mut self, pointer: &str, value: &Value) -> Types {
        let names: &[Value] = match value {
            Value::Array(names) => names,
            single => std::slice::from_ref(single),
        };
        let mut types = Types::NONE;
        for name in names {
            match name.as_str().and_then(Types::named) {
                Some(named) => types = types.union(named),
                None => self.findings.error(
                    "type-invalid",
                    pointer,
                    Some("type"),
                    format!("{name} is not a JSON Schema type"),
                ),
            }
        }
        types
    }

    fn read_number_keywords(
        &mut self,
        pointer: &str,
        object: &Map<String, Value>,
        typed: &mut Typed,
    ) {
        let number = |reader: &mut Reader, keyword: &'static str| -> Option<Decimal> {
            let value = object.keyword(keyword)?;
            match value {
                Value::Number(number) => Some(Decimal::from_json(number)),
                Value::Bool(_) if keyword.starts_with("exclusive") => None,
                _ => {
                    reader.findings.error(
                        "schema-invalid",
                        pointer,
                        Some(keyword),
                        format!("`{keyword}` must be a number"),
                    );
                    None
                }
            }
        };
        let located = |value: Bound, keyword: &'static str| Located {
            value,
            pointer: pointer.to_string(),
            keyword,
        };
        // Draft-04: `exclusiveMinimum: true` makes `minimum` exclusive.
        let exclusive_flag = |keyword: &str| {
            object
                .get(keyword)
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        let mut lower: Vec<Located<Bound>> = Vec::new();
        let mut upper: Vec<Located<Bound>> = Vec::new();
        if let Some(value) = number(self, "minimum") {
            let exclusive = exclusive_flag("exclusiveMinimum");
            lower.push(located(Bound { value, exclusive }, "minimum"));
        }
        if let Some(value) = number(self, "exclusiveMinimum") {
            lower.push(located(
                Bound {
                    value,
                    exclusive: true,
                },
                "exclusiveMinimum",
            ));
        }
        if let Some(value) = number(self, "maximum") {
            let exclusive = exclusive_flag("exclusiveMaximum");
            upper.push(located(Bound { value, exclusive }, "maximum"));
        }
        if let Some(value) = number(self, "exclusiveMaximum") {
            upper.push(located(
                Bound {
                    value,
                    exclusive: true,
                },
                "exclusiveMaximum",
            ));
        }
        for bound in lower {
            typed.number.minimum = tighter(typed.number.minimum.take(), bound, true);
        }
        for bound in upper {
            typed.number.maximum = tighter(typed.number.maximum.take(), bound, false);
        }
        if let Some(value) = number(self, "multipleOf") {
            typed.number.multiple_of.push(Located {
                value,
                pointer: pointer.to_string(),
                keyword: "multipleOf",
            });
        }
    }

    fn read_string_keywords(
        &mut self,
        pointer: &str,
        object: &Map<String, Value>,
        typed: &mut Typed,
    ) {
        if let Some(value) = self.count(pointer, object, "minLength") {
            typed.string.min_length = value;
        }
        if let Some(value) = self.count(pointer, object, "maxLength") {
            typed.string.max_length = Some(value);
        }
        let assert_formats = self.options.assert_formats;
        for (keyword, list) in [
            ("pattern", &mut typed.string.patterns),
            ("format", &mut typed.string.formats),
        ] {
            if keyword == "format" && !assert_formats {
                continue;
            }
            match object.keyword(keyword) {
                None => {}
                Some(Value::String(text)) => list.push(Located {
                    value: text.clone(),
                    pointer: pointer.to_string(),
                    keyword,
                }),
                Some(_) => self.findings.error(
                    "schema-invalid",
                    pointer,
                    Some(keyword),
                    format!("`{keyword}` must be a string"),
                ),
            }
        }
    }

    fn read_array_keywords(
        &mut self,
        pointer: &str,
        object: &Map<String, Value>,
        typed: &mut Typed,
    ) {
        let child = |keyword: &str| joined(&[pointer, "/", keyword]);
        let array = &mut typed.array;
        let mut exact_tuple = false;
        match object.keyword("prefixItems") {
            Some(Value::Array(prefix)) => {
                array.prefix = (0..prefix.len())
                    .map(|position| self.read(&format!("{pointer}/prefixItems/{position}")))
                    .collect();
                // llama.cpp: a tuple has exactly its items (unless `items` says more).
                exact_tuple = self.options.llama_dialect() && !object.has_keyword("items");
            }
            Some(_) if !object.has_keyword("items") => {
                // A schema where an array belongs: llama.cpp reads it as `items`.
                self.findings.push(SchemaDiagnostic::new(
                    Severity::Note,
                    "prefix-items-not-array",
                    pointer,
                    Some("prefixItems"),
                    "`prefixItems` should be an array of schemas; read as `items`, as llama.cpp does",
                ));
                array.items = self.read(&child("prefixItems"));
            }
            _ => {}
        }
        match object.keyword("items") {
            None => {}
            Some(Value::Array(tuple)) => {
                // Draft-07: `items` as an array is `prefixItems`, `additionalItems` the rest.
                if array.prefix.is_empty() {
                    array.prefix = (0..tuple.len())
                        .map(|position| self.read(&format!("{pointer}/items/{position}")))
                        .collect();
                }
                if object.has_keyword("additionalItems") {
                    array.items = self.read(&child("additionalItems"));
                } else {
                    // llama.cpp: a tuple has exactly its items.
                    exact_tuple = self.options.llama_dialect();
                }
            }
            Some(items) => array.items = self.read_at(child("items"), items),
        }
        if exact_tuple {
            array.items = Shape::Never;
            array.min_items = array.prefix.len() as u64;
        }
        if let Some(value) = self.count(pointer, object, "minItems") {
            typed.array.min_items = value;
        }
        if let Some(value) = self.count(pointer, object, "maxItems") {
            typed.array.max_items = Some(value);
        }
        if object.has_keyword("contains") {
            let shape = self.read(&child("contains"));
            let min = self.count(pointer, object, "minContains").unwrap_or(1);
            let max = self.count(pointer, object, "maxContains");
            typed.array.contains.push(Located {
                value: Contains { shape, min, max },
                pointer: pointer.to_string(),
                keyword: "contains",
            });
        }
        if object.keyword("uniqueItems").and_then(Value::as_bool) == Some(true) {
            typed.array.unique = Some(Located {
                value: (),
                pointer: pointer.to_string(),
                keyword: "uniqueItems",
            });
        }
    }

    fn read_object_keywords(
        &mut self,
        pointer: &str,
        object: &Map<String, Value>,
        typed: &mut Typed,
    ) {
        if let Some(properties) = object.keyword("properties") {
            match properties {
                Value::Object(properties) => {
                    typed.object.properties.reserve_exact(properties.len());
                    for (name, schema) in properties {
                        let shape = self.read_at(
                            joined(&[pointer, "/properties/", &escape_pointer_token(name)]),
                            schema,
                        );
                        typed.object.properties.push((name.clone(), shape));
                    }
                }
                _ => self.findings.error(
                    "schema-invalid",
                    pointer,
                    Some("properties"),
                    "`properties` must be an object",
                ),
            }
        }
        if let Some(required) = object.keyword("required") {
            match required {
                Value::Array(names) => {
                    let declared = object.has_keyword("properties");
                    typed.object.required.reserve_exact(names.len());
                    if declared {
                        typed.object.written_first.reserve_exact(names.len());
                    }
                    for name in names {
                        match name.as_str() {
                            Some(name)
                                if !typed.object.required.iter().any(|known| known == name) =>
                            {
                                typed.object.required.push(name.to_string());
                                if declared {
                                    typed.object.written_first.push(name.to_string());
                                }
                            }
                            Some(_) => {}
                            None => self.findings.error(
                                "schema-invalid",
                                pointer,
                                Some("required"),
                                "`required` must list strings",
                            ),
                        }
                    }
                }
                // Draft-03 wrote `required: true` inside the property: an annotation now.
                Value::Bool(_) => {}
                _ => self.findings.error(
                    "schema-invalid",
                    pointer,
                    Some("required"),
                    "`required` must be an array of property names",
                ),
            }
        }
        typed.object.additional = if object.has_keyword("additionalProperties") {
            self.read(&format!("{pointer}/additionalProperties"))
        } else if self.options.additional_properties_default || !object.has_keyword("properties") {
            Shape::Any
        } else {
            Shape::Never
        };
        if let Some(Value::Object(patterns)) = object.keyword("patternProperties") {
            for pattern in patterns.keys() {
                let shape = self.read(&format!(
                    "{pointer}/patternProperties/{}",
                    escape_pointer_token(pattern)
                ));
                typed.object.key_rules.push(KeyRule {
                    keys: KeySet::Pattern(pattern.clone()),
                    shape,
                    origin: Located {
                        value: (),
                        pointer: pointer.to_string(),
                        keyword: "patternProperties",
                    },
                });
            }
        }
        if object.has_keyword("propertyNames") {
            let shape = self.read(&format!("{pointer}/propertyNames"));
            typed.object.property_names = Some(Located {
                value: shape,
                pointer: pointer.to_string(),
                keyword: "propertyNames",
            });
        }
        if let Some(value) = self.count(pointer, object, "minProperties") {
            typed.object.min_properties = value;
        }
        if let Some(value) = self.count(pointer, object, "maxProperties") {
            typed.object.max_properties = Some(value);
        }
        // `dependentRequired` (and draft-07's `dependencies` with a list): if the property is
        // present, so are these.
        for keyword in ["dependentRequired", "dependencies"] {
            let Some(Value::Object(entries)) = object.keyword(keyword) else {
                continue;
            };
            for (name, value) in entries {
                if let Value::Array(names) = value {
                    let required: Vec<Presence> = names
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|other| Presence::Has(other.to_string()))
                        .collect();
                    typed.object.presence.push(Presence::Any(vec![
                        Presence::Not(Box::new(Presence::Has(name.clone()))),
                        Presence::All(required),
                    ]));
                }
            }
        }
    }

    /// A non-negative integer keyword.
    fn count(&mut self, pointer: &str, object: &Map<String, Value>, keyword: &str) -> Option<u64> {
        let value = object.keyword(keyword)?;
        if let Some(count) = value.as_u64() {
            return Some(count);
        }
        if let Some(float) = value.as_f64()
            && float >= 0.0
            && float.fract() == 0.0
        {
            return Some(float as u64);
        }
        self.findings.error(
            "schema-invalid",
            pointer,
            Some(keyword),
            format!("`{keyword}` must be a non-negative integer"),
        );
        None
    }
}

/// The parts of one schema object that are met into its shape, in the order they are
/// read: most objects have one, kept without a vector.
#[derive(Default)]
struct Parts {
    first: Option<Shape>,
    rest: Vec<Shape>,
}

impl Parts {
    fn push(&mut self, part: Shape) {
        if self.first.is_none() && self.rest.is_empty() {
            self.first = Some(part);
        } else {
            self.rest.push(part);
        }
    }

    fn extend(&mut self, parts: impl IntoIterator<Item = Shape>) {
        for part in parts {
            self.push(part);
        }
    }

    /// The parts in order.
    fn into_shapes(self) -> impl Iterator<Item = Shape> {
        self.first.into_iter().chain(self.rest)
    }

    /// The values every part allows (any value when there is none).
    fn meet_all(self, reader: &mut Reader<'_>, pointer: &str) -> Shape {
        let mut shape = Shape::Any;
        for part in self.into_shapes() {
            shape = reader.simplifier().meet(pointer, shape, part);
        }
        shape
    }
}

impl ShapeSource for Reader<'_> {
    fn shape_at(&mut self, pointer: &str) -> Shape {
        self.read(pointer)
    }

    fn is_being_read(&self, pointer: &str) -> bool {
        self.reading.iter().any(|open| open == pointer)
    }

    fn expanding(&mut self) -> &mut Vec<String> {
        &mut self.expanding
    }

    fn findings(&mut self) -> &mut Findings {
        &mut self.findings
    }

    fn max_combinations(&self) -> usize {
        self.options.limits.max_combinations
    }
}

/// Which groups of type-specific keywords a schema object has, found in one pass over its
/// keys. Each list is every keyword its `read_…_keywords` function reads (keep them
/// together: a keyword missing here would be ignored when it is its group's only one);
/// without any of them the function leaves `Typed`'s defaults as they are.
struct KeywordGroups {
    number: bool,
    string: bool,
    array: bool,
    object: bool,
    /// Any keyword `read_object` looks up beside the groups and `type`.
    other: bool,
}

impl KeywordGroups {
    fn of(object: &Map<String, Value>) -> KeywordGroups {
        let mut groups = KeywordGroups {
            number: false,
            string: false,
            array: false,
            object: false,
            other: false,
        };
        for key in object.keys() {
            match KeywordGroup::of(key) {
                Some(KeywordGroup::Number) => groups.number = true,
                Some(KeywordGroup::String) => groups.string = true,
                Some(KeywordGroup::Array) => groups.array = true,
                Some(KeywordGroup::Object) => {
                    groups.object = true;
                    // Read both as an object keyword and as a schema keyword.
                    groups.other |= key == "dependencies";
                }
                Some(KeywordGroup::Other) => groups.other = true,
                None => {}
            }
        }
        groups
    }
}

/// The group of type-specific keywords `keyword` belongs to (see [`KeywordGroups`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeywordGroup {
    Number,
    String,
    Array,
    Object,
    /// The keywords `read_object` reads itself, of no one type: references, values,
    /// combinators, conditionals, dependent schemas and the keywords Grail refuses.
    Other,
}

impl KeywordGroup {
    /// The group of `keyword`; `None` for `type` and keywords that constrain nothing.
    fn of(keyword: &str) -> Option<KeywordGroup> {
        Some(match keyword {
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
                KeywordGroup::Number
            }
            "minLength" | "maxLength" | "pattern" | "format" => KeywordGroup::String,
            "prefixItems" | "items" | "additionalItems" | "minItems" | "maxItems" | "contains"
            | "minContains" | "maxContains" | "uniqueItems" => KeywordGroup::Array,
            "properties"
            | "required"
            | "additionalProperties"
            | "patternProperties"
            | "propertyNames"
            | "minProperties"
            | "maxProperties"
            | "dependentRequired"
            | "dependencies" => KeywordGroup::Object,
            "$ref"
            | "$dynamicRef"
            | "$recursiveRef"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "enum"
            | "const"
            | "allOf"
            | "anyOf"
            | "oneOf"
            | "not"
            | "dependentSchemas"
            | "if"
            | "then"
            | "else" => KeywordGroup::Other,
            _ => return None,
        })
    }
}

/// The values without repeats (JSON equality), copied once.
fn dedup(values: &[Value]) -> std::rc::Rc<[Value]> {
    // Strings (most enums) are equal as JSON exactly when their texts are: compared
    // pairwise when few, hashed when many (an enum of thousands of values was quadratic).
    if values.iter().all(Value::is_string) {
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        if values.len() <= 16 {
            let repeated = |(index, value): (usize, &Value)| values[..index].contains(value);
            if !values.iter().enumerate().any(repeated) {
                return values.into();
            }
            return values
                .iter()
                .enumerate()
                .filter(|&(index, value)| !repeated((index, value)))
                .map(|(_, value)| value.clone())
                .collect();
        }
        let mut seen = rustc_hash::FxHashSet::default();
        return values
            .iter()
            .filter(|value| seen.insert(text(value)))
            .cloned()
            .collect();
    }
    let mut unique: Vec<Value> = Vec::with_capacity(values.len());
    for value in values {
        if !unique.iter().any(|known| json_equal(known, value)) {
            unique.push(value.clone());
        }
    }
    unique.into()
}

/// The type llama.cpp gives a schema without `type`, from its keywords.
fn inferred_types(object: &Map<String, Value>) -> Types {
    let has = |keyword: &str| object.has_keyword(keyword);
    let object_keywords = has("properties")
        || object
            .get("additionalProperties")
            .is_some_and(|additional| additional != &Value::Bool(true));
    if object_keywords {
        Types::OBJECT
    } else if has("allOf") {
        Types::ALL
    } else if has("items") || has("prefixItems") {
        Types::ARRAY
    } else if has("pattern") || has("minLength") || has("maxLength") || has("format") {
        Types::STRING
    } else {
        Types::ALL
    }
}

/// Keywords that carry no constraint, ignored when telling what a schema says.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "$comment",
    "examples",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// The value of `keyword` when it is the only constraint of `schema`.
fn only_keyword<'v>(schema: &'v Value, keyword: &str) -> Option<&'v Value> {
    let object = schema.as_object()?;
    let constraining = object
        .keys()
        .filter(|key| !ANNOTATIONS.contains(&key.as_str()) && !key.starts_with("x-"))
        .count();
    if constraining == 1 {
        object.keyword(keyword)
    } else {
        None
    }
}
