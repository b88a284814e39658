//! The conversion's shared state: the document, the options, the grammar being built, the
//! rule of each schema location, and the diagnostics.

use rustc_hash::FxHashMap as HashMap;

use grail_grammar::{GrammarBuilder, RuleId};
use serde_json::Value;

use crate::diagnostic::{SchemaDiagnostic, Severity};
use crate::document::Document;
use crate::options::{Mode, SchemaOptions};
use crate::resolve::ResourceIndex;
use crate::shape::Shape;

/// One conversion of one schema document.
pub(crate) struct Converter<'s> {
    /// The whole document, with what is mounted in it.
    pub document: Document<'s>,
    /// Its identifiers and anchors.
    pub index: ResourceIndex,
    /// The options.
    pub options: &'s SchemaOptions,
    /// Draft-07 and earlier: keywords beside `$ref` are ignored.
    pub legacy_ref: bool,
    /// The grammar being built.
    pub builder: GrammarBuilder,
    /// The name of the whole schema's rule when the caller writes the root around it
    /// (`None`: the schema is the root).
    pub framed_as: Option<String>,
    /// Everything found so far.
    pub diagnostics: Vec<SchemaDiagnostic>,
    /// The shape read at each pointer.
    pub shapes: HashMap<String, Shape>,
    /// The rule of each schema location referred to.
    pub rules: HashMap<String, RuleId>,
    /// Shared rules by name (`space`, `char`, `value`, ...).
    pub primitives: HashMap<crate::emit::Primitive, RuleId>,
    /// The string of each exactly expressed `format` by name, shared by every use.
    pub format_rules: HashMap<String, grail_grammar::Expr>,
    /// The string of each pair of length bounds (no other constraint), shared by every
    /// use.
    pub length_strings: HashMap<(u64, Option<u64>), grail_grammar::Expr>,
    /// The rest of a string whose first character is none of some characters (the
    /// children of a node of a trie of excluded strings), by those characters, shared by
    /// every node with the same children (see `Converter::excluding`).
    pub string_tails: HashMap<Vec<char>, grail_grammar::Expr>,
    /// The string of each set of string constraints (see `string_key`), shared by
    /// every use.
    pub string_rules: HashMap<String, Option<grail_grammar::Expr>>,
    /// `rule{min,max}` as a rule of its own, for long repetitions of a rule (blocks of
    /// 1,000 copies), shared by every use.
    pub shared_repetitions: HashMap<(RuleId, u64, Option<u64>), RuleId>,
    /// The numbers of each set of numeric constraints, shared by every use.
    pub number_rules: HashMap<crate::emit::NumberKey, grail_grammar::Expr>,
    /// Pointers whose shapes are being read (a `$ref` chain with no schema in between).
    pub reading: Vec<String>,
    /// References being expanded to intersect them (`allOf` over a recursive `$ref`).
    pub expanding: Vec<String>,
    /// How deep schema objects nest at the current point of reading.
    pub depth: usize,
    /// How many objects and arrays enclose the value being written (for
    /// `SchemaOptions::depth_cap`).
    pub nesting: u32,
    /// The schema locations whose rules are being written, innermost last (where a
    /// depth cap applies, for its warning).
    pub writing: Vec<String>,
    /// Whether the depth cap's warning was given.
    pub capped: bool,
    /// Whether plain schemas are written directly (`direct.rs`).
    pub direct: bool,
    /// Rules declared so far.
    pub rule_count: usize,
}

impl<'s> Converter<'s> {
    /// A converter for `document`.
    pub fn new(document: Document<'s>, options: &'s SchemaOptions) -> Converter<'s> {
        let legacy_ref = document
            .root
            .get("$schema")
            .and_then(Value::as_str)
            .is_some_and(|uri| {
                ["draft-03", "draft-04", "draft-05", "draft-06", "draft-07"]
                    .iter()
                    .any(|draft| uri.contains(draft))
            });
        Converter {
            document,
            index: ResourceIndex::new(&document),
            options,
            legacy_ref,
            builder: GrammarBuilder::new(),
            framed_as: None,
            diagnostics: Vec::new(),
            shapes: HashMap::default(),
            rules: HashMap::default(),
            primitives: HashMap::default(),
            format_rules: HashMap::default(),
            length_strings: HashMap::default(),
            string_tails: HashMap::default(),
            number_rules: HashMap::default(),
            shared_repetitions: HashMap::default(),
            string_rules: HashMap::default(),
            reading: Vec::new(),
            expanding: Vec::new(),
            depth: 0,
            nesting: 0,
            writing: Vec::new(),
            capped: false,
            direct: crate::direct::direct_path_enabled()
                && !options.llama_dialect()
                && options.depth_cap.is_none(),
            rule_count: 1,
        }
    }

    /// Reports a keyword Grail cannot enforce exactly: an error in strict mode, a warning
    /// that the grammar is weaker in lenient mode (the caller then drops the constraint).
    pub fn unsupported(&mut self, pointer: &str, keyword: &str, reason: impl Into<String>) {
        let reason = reason.into();
        let diagnostic = match self.options.mode {
            Mode::Strict => SchemaDiagnostic::new(
                Severity::Error,
                "keyword-unsupported",
                pointer,
                Some(keyword),
                format!("`{keyword}` cannot be enforced exactly: {reason}"),
            )
            .with_help(
                "simplify the schema there, or compile leniently (`--lenient`) to drop the constraint with a warning",
            ),
            Mode::Lenient => SchemaDiagnostic::new(
                Severity::Warning,
                "keyword-weakened",
                pointer,
                Some(keyword),
                format!("`{keyword}` is not enforced: {reason}"),
            )
            .with_help("the grammar allows more than the schema here"),
        };
        self.diagnostics.push(diagnostic);
    }

    /// Reports an error that refuses the schema in every mode (an invalid schema, a limit).
    pub fn error(
        &mut self,
        code: &'static str,
        pointer: &str,
        keyword: Option<&str>,
        message: impl Into<String>,
    ) {
        self.diagnostics.push(SchemaDiagnostic::new(
            Severity::Error,
            code,
            pointer,
            keyword,
            message,
        ));
    }

    /// Defines the root as what `frame` writes around the rule `schema_rule` (see
    /// [`crate::Frame`]).
    pub fn frame_root(&mut self, schema_rule: RuleId, frame: crate::Frame<'_>) {
        let space = self.space();
        let body = frame(
            &mut self.builder,
            grail_grammar::Expr::Rule(schema_rule),
            space,
        );
        let root = self.builder.root();
        self.builder
            .define(root, body)
            .expect("the root is defined once, by the frame");
    }

    /// Declares a new rule, counting it against the limit.
    pub fn declare(&mut self, name: impl Into<String>) -> RuleId {
        self.rule_count += 1;
        self.builder.declare_owned(name.into())
    }

    /// True when the rule limit has been passed (reported once).
    pub fn over_rule_limit(&mut self) -> bool {
        let limit = self.options.limits.max_rules;
        if self.rule_count <= limit {
            return false;
        }
        if !self
            .diagnostics
            .iter()
            .any(|diagnostic| diagnostic.code == "rules-too-many")
        {
            self.error(
                "rules-too-many",
                "",
                None,
                format!("the grammar needs more than {limit} rules (SchemaLimits::max_rules)"),
            );
        }
        true
    }
}

/// `parts` written one after another, in one allocation of the right size (cheaper than
/// `format!` for the pointers and rule names the converter makes per schema).
pub(crate) fn joined(parts: &[&str]) -> String {
    let mut text = String::with_capacity(parts.iter().map(|part| part.len()).sum());
    for part in parts {
        text.push_str(part);
    }
    text
}

/// A readable rule name for the schema at `pointer`: its last property names, `item`,
/// or definition name.
pub(crate) fn rule_name(pointer: &str) -> String {
    let unescape = |token: &str| -> String {
        if token.contains('~') {
            token.replace("~1", "/").replace("~0", "~")
        } else {
            token.to_string()
        }
    };
    let mut tokens = pointer.split('/').skip(1);
    // Words by reference where they can be: most are property names or fixed words.
    let mut words: Vec<std::borrow::Cow<'_, str>> = Vec::new();
    while let Some(token) = tokens.next() {
        let word: Option<std::borrow::Cow<'_, str>> = match token {
            "properties" | "$defs" | "definitions" | "patternProperties" | "dependentSchemas" => {
                tokens.next().map(|name| {
                    if name.contains('~') {
                        unescape(name).into()
                    } else {
                        name.into()
                    }
                })
            }
            "items" | "additionalItems" => Some("item".into()),
            "prefixItems" => tokens
                .next()
                .map(|position| format!("tuple-{}", unescape(position)).into()),
            "additionalProperties" => Some("additional".into()),
            "anyOf" | "oneOf" | "allOf" => tokens
                .next()
                .map(|position| format!("alternative-{}", unescape(position)).into()),
            "contains" | "not" | "then" | "else" | "if" => Some(token.into()),
            _ => None,
        };
        words.extend(word);
    }
    if words.is_empty() {
        return "root".to_string();
    }
    let keep = words.len().saturating_sub(3);
    words[keep..].join("-")
}

#[cfg(test)]
mod rule_name_tests {
    use super::rule_name;

    #[test]
    fn names_come_from_the_last_three_words_of_the_pointer() {
        for (pointer, name) in [
            ("", "root"),
            ("/type", "root"),
            ("/properties/user", "user"),
            ("/properties/a~1b/items", "a/b-item"),
            (
                "/$defs/tool/properties/arguments/properties/x~0y",
                "tool-arguments-x~y",
            ),
            ("/anyOf/2/prefixItems/0", "alternative-2-tuple-0"),
            (
                "/properties/a/additionalProperties/not/if",
                "additional-not-if",
            ),
            ("/properties", "root"),
            ("/definitions/d/contains/then", "d-contains-then"),
        ] {
            assert_eq!(rule_name(pointer), name, "{pointer}");
        }
    }
}
