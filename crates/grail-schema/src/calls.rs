//! Tool calls written straight from the tools: the union of call objects
//! `{"<name key>": "<tool>", "<arguments key>": <the tool's arguments>}`, one per tool,
//! where each tool's name fixes its arguments' schema.
//!
//! Formats that write the name outside the JSON (`[TOOL_CALLS]get_weather[ARGS]{…}`,
//! DeepSeek's and Kimi's tokens around a name) take [`named_calls_to_grammar_framed`]:
//! the caller writes each call around the tool's name and the rule of its arguments.
//!
//! The grammar is the one [`crate::schema_to_grammar_framed`] gives for the schema
//! [`calls_to_grammar_framed`] documents (an `anyOf` of `$ref`s to one call object per
//! tool under `$defs`, each tool's arguments mounted in its call), rule for rule, without
//! building that schema or resolving its references: each call object's shape is made
//! here, its arguments read where they are mounted, and the emitter writes it. A
//! tool-call grammar is built for every request whose tools changed, and the wrapper
//! schema cost as much as the tools' own schemas. `tests/calls_route.rs` holds the two
//! routes to the same grammars and diagnostics.

use grail_grammar::{Expr, GrammarBuilder, RuleId};
use serde_json::{Map, Value};

use crate::diagnostic::{SchemaDiagnostic, Severity, escape_pointer_token};
use crate::document::{Document, Mount};
use crate::emit::Emitter;
use crate::options::SchemaOptions;
use crate::outcome::{Frame, SchemaError, SchemaGrammar, check_options};
use crate::pointer::{joined, rule_name};
use crate::read::Reader;
use crate::shape::{Shape, Typed, Types};

/// One call: the tool's name and the schema of its arguments.
#[derive(Debug, Clone, Copy)]
pub struct Call<'v> {
    /// The tool's name, written as the value of the name key.
    pub name: &'v str,
    /// The schema of its arguments, a document of its own (its `$ref`s are relative to
    /// it).
    pub arguments: &'v Value,
}

/// The keys of a call object (`"name"` and `"arguments"` in OpenAI's format).
#[derive(Debug, Clone, Copy)]
pub struct CallKeys<'k> {
    /// The key whose value is the tool's name.
    pub name: &'k str,
    /// The key whose value is the arguments.
    pub arguments: &'k str,
}

/// The grammar of one call of any of `calls`, as the rule `name` (its alternatives are
/// named after the tools), with `frame` writing the root around it as in
/// [`crate::schema_to_grammar_framed`].
///
/// The grammar and the diagnostics are those of the schema
/// `{"anyOf": [{"$ref": "#/$defs/<tool>"}, …], "$defs": {"<tool>": {"type": "object",
/// "properties": {"<name key>": {"const": "<tool>"}, "<arguments key>": true},
/// "required": ["<name key>", "<arguments key>"], "additionalProperties": false}, …}}`
/// with each tool's arguments mounted at `/$defs/<tool>/properties/<arguments key>` and,
/// when the tools' schemas agree on a `$schema`, that draft: diagnostics inside a tool's
/// arguments carry pointers below that place. Call names must be distinct and the keys
/// different.
pub fn calls_to_grammar_framed(
    calls: &[Call<'_>],
    keys: CallKeys<'_>,
    options: &SchemaOptions,
    name: &str,
    frame: Frame<'_>,
) -> Result<SchemaGrammar, SchemaError> {
    check_options(options)?;
    if let Some(problem) = calls_problem(calls, keys) {
        return Err(SchemaError::Refused {
            diagnostics: vec![problem],
        });
    }
    let arguments_key = escape_pointer_token(keys.arguments);
    let place = |pointer: &str| joined(&[pointer, "/properties/", &arguments_key]);
    let mut write = |emitter: &mut Emitter<'_>, call: &Call<'_>, pointer: &str| {
        write_call(emitter, pointer, call.name, keys)
    };
    write_calls(calls, options, name, &place, &mut write, frame)
}

/// How one call is written when the name stands outside the JSON: from the tool's name and
/// the rules of its arguments, the call's expression.
pub type WriteCall<'w> = &'w mut dyn FnMut(&str, &mut ArgumentRules<'_, '_>) -> Expr;

/// The rules of one tool's arguments, for a [`WriteCall`]: of the whole arguments (their
/// JSON), or of any schema inside them (a property's, for formats that write each
/// argument apart, such as Qwen3-Coder's XML parameters).
pub struct ArgumentRules<'e, 's> {
    emitter: &'e mut Emitter<'s>,
    /// Where the tool's arguments are mounted (`/$defs/<tool>`).
    place: &'e str,
}

impl ArgumentRules<'_, '_> {
    /// The rule of the arguments as JSON.
    pub fn whole(&mut self) -> Expr {
        Expr::Rule(self.emitter.rule_of(self.place))
    }

    /// The rule of the schema at `pointer` inside the arguments (`/properties/city`), as
    /// JSON.
    pub fn at(&mut self, pointer: &str) -> Expr {
        let target = joined(&[self.place, pointer]);
        Expr::Rule(self.emitter.rule_of(&target))
    }

    /// Reports that `keyword` at `pointer` inside the arguments cannot be enforced in
    /// this format (an error in strict mode, a warning in lenient mode, as for any
    /// schema keyword Grail cannot enforce).
    pub fn unsupported(&mut self, pointer: &str, keyword: &str, reason: &str) {
        let at = joined(&[self.place, pointer]);
        self.emitter
            .reader()
            .findings()
            .unsupported(&at, keyword, reason);
    }

    /// The grammar being built, for the rules a format writes around the arguments.
    pub fn builder(&mut self) -> &mut GrammarBuilder {
        self.emitter.builder()
    }
}

/// The grammar of one call of any of `calls`, as the rule `name`, where `write_call`
/// writes each call around its tool's name and arguments (the name outside the JSON),
/// with `frame` writing the root around it as in [`crate::schema_to_grammar_framed`].
///
/// The arguments' rules and diagnostics are those of the schema `{"anyOf": [{"$ref":
/// "#/$defs/<tool>"}, …], "$defs": {"<tool>": <the tool's arguments>, …}}` (each tool's
/// arguments mounted at `/$defs/<tool>`; the tools' draft as in
/// [`calls_to_grammar_framed`]). Call names must be distinct.
pub fn named_calls_to_grammar_framed(
    calls: &[Call<'_>],
    options: &SchemaOptions,
    name: &str,
    write_call: WriteCall<'_>,
    frame: Frame<'_>,
) -> Result<SchemaGrammar, SchemaError> {
    check_options(options)?;
    if let Some(problem) = names_problem(calls) {
        return Err(SchemaError::Refused {
            diagnostics: vec![problem],
        });
    }
    let place = |pointer: &str| pointer.to_string();
    let mut write = |emitter: &mut Emitter<'_>, call: &Call<'_>, pointer: &str| {
        let rule = emitter.declare(format!("{}-call", rule_name(pointer)));
        let mut rules = ArgumentRules {
            emitter,
            place: pointer,
        };
        let body = write_call(call.name, &mut rules);
        emitter.define(rule, body);
        rule
    };
    write_calls(calls, options, name, &place, &mut write, frame)
}

/// The rule `name` of one call of any of `calls` (each call's rule written by `write`
/// from its pointer, `/$defs/<tool>`), each tool's arguments mounted at the place
/// `arguments_place` gives for its pointer, with `frame` writing the root around it.
fn write_calls(
    calls: &[Call<'_>],
    options: &SchemaOptions,
    name: &str,
    arguments_place: &dyn Fn(&str) -> String,
    write: &mut dyn FnMut(&mut Emitter<'_>, &Call<'_>, &str) -> RuleId,
    frame: Frame<'_>,
) -> Result<SchemaGrammar, SchemaError> {
    let root = draft_root(calls);
    let call_pointers: Vec<String> = calls
        .iter()
        .map(|call| joined(&["/$defs/", &escape_pointer_token(call.name)]))
        .collect();
    let places: Vec<String> = call_pointers
        .iter()
        .map(|pointer| arguments_place(pointer))
        .collect();
    let mounts: Vec<Mount<'_>> = calls
        .iter()
        .zip(&places)
        .map(|(call, at)| Mount {
            at,
            schema: call.arguments,
        })
        .collect();
    let document = Document {
        root: &root,
        mounts: &mounts,
    };
    let mut emitter = Emitter::new(Reader::new(document, options), options, None);
    let calls_rule = emitter.declare(name);
    let choices = calls
        .iter()
        .zip(&call_pointers)
        .map(|(call, pointer)| Expr::Rule(write(&mut emitter, call, pointer)))
        .collect();
    emitter.define(calls_rule, Expr::Choice(choices));
    emitter.frame_root(calls_rule, frame);
    emitter.finish()
}

/// Why `calls` cannot be written with `keys`, if they cannot.
fn calls_problem(calls: &[Call<'_>], keys: CallKeys<'_>) -> Option<SchemaDiagnostic> {
    if let Some(problem) = names_problem(calls) {
        return Some(problem);
    }
    (keys.name == keys.arguments).then(|| {
        refusal(
            "call-keys-same",
            "",
            format!(
                "the name and the arguments of a call need different keys, not both `{}`",
                keys.name
            ),
        )
    })
}

/// Why `calls` cannot be told apart by their names, if they cannot (none, or two of
/// one name).
fn names_problem(calls: &[Call<'_>]) -> Option<SchemaDiagnostic> {
    if calls.is_empty() {
        return Some(refusal(
            "calls-none",
            "",
            "there is no call to write".into(),
        ));
    }
    calls.iter().enumerate().find_map(|(index, call)| {
        calls[..index]
            .iter()
            .any(|other| other.name == call.name)
            .then(|| {
                refusal(
                    "call-duplicate",
                    &joined(&["/$defs/", &escape_pointer_token(call.name)]),
                    format!("two calls are named `{}`", call.name),
                )
            })
    })
}

/// A refusal of the calls.
fn refusal(code: &'static str, pointer: &str, message: String) -> SchemaDiagnostic {
    SchemaDiagnostic::new(Severity::Error, code, pointer, None, message)
}

/// The root around the calls: only the draft of the tools' schemas, when those that name
/// one agree on it (draft-07 reads `$ref` siblings apart).
fn draft_root(calls: &[Call<'_>]) -> Value {
    let mut drafts = calls
        .iter()
        .filter_map(|call| call.arguments.get("$schema"));
    let mut root = Map::new();
    if let Some(first) = drafts.next()
        && drafts.all(|draft| draft == first)
    {
        root.insert("$schema".into(), first.clone());
    }
    Value::Object(root)
}

/// The rule of the call object at `pointer` (`/$defs/<tool>`), written as the schema
/// route writes the call object the documented schema has there.
fn write_call(emitter: &mut Emitter<'_>, pointer: &str, tool: &str, keys: CallKeys<'_>) -> RuleId {
    let rule = emitter.declare(rule_name(pointer));
    let shape = call_shape(emitter.reader(), pointer, tool, keys);
    emitter.define_schema_rule(rule, pointer, &shape);
    rule
}

/// The shape the reader gives the call object at `pointer`: an object of exactly the
/// name key, whose value is the tool's name, and the arguments key, whose value is the
/// tool's arguments (mounted there), both required.
fn call_shape(reader: &mut Reader<'_>, pointer: &str, tool: &str, keys: CallKeys<'_>) -> Shape {
    let mut name_schema = Map::with_capacity(1);
    name_schema.insert("const".into(), Value::String(tool.to_string()));
    let name_schema = Value::Object(name_schema);
    // The tool's arguments are mounted in place of this.
    let placeholder = Value::Bool(true);
    let mut typed = Typed::of_types(Types::OBJECT);
    reader.inside(pointer, |reader| {
        for (key, schema) in [(keys.name, &name_schema), (keys.arguments, &placeholder)] {
            let at = joined(&[pointer, "/properties/", &escape_pointer_token(key)]);
            let shape = reader.read_at(at, schema);
            typed.object.properties.push((key.to_string(), shape));
        }
    });
    let required = vec![keys.name.to_string(), keys.arguments.to_string()];
    typed.object.written_first = required.clone();
    typed.object.required = required;
    typed.object.additional = Shape::Never;
    Shape::typed(typed)
}

#[cfg(test)]
mod tests {
    use grail_grammar::{Expr, GrammarBuilder, print_grammar};
    use serde_json::json;

    use super::*;

    const KEYS: CallKeys<'static> = CallKeys {
        name: "name",
        arguments: "arguments",
    };

    fn write(calls: &[Call<'_>], keys: CallKeys<'_>) -> Result<SchemaGrammar, SchemaError> {
        let mut frame = |_: &mut GrammarBuilder, call: Expr, _: Expr| call;
        calls_to_grammar_framed(calls, keys, &SchemaOptions::default(), "call", &mut frame)
    }

    fn refusal_code(result: Result<SchemaGrammar, SchemaError>) -> &'static str {
        result.unwrap_err().diagnostics()[0].code
    }

    #[test]
    fn each_name_fixes_its_arguments() {
        let (a, b) = (json!({"type": "integer"}), json!({"type": "boolean"}));
        let calls = [
            Call {
                name: "a",
                arguments: &a,
            },
            Call {
                name: "b",
                arguments: &b,
            },
        ];
        let gbnf = print_grammar(&write(&calls, KEYS).unwrap().grammar);
        assert!(
            gbnf.starts_with("root ::= call\ncall ::= a | b\n"),
            "{gbnf}"
        );
        assert!(gbnf.contains(r#"a-name ::= "\"" "a" "\"""#), "{gbnf}");
        for (call, arguments) in [("a", "integer"), ("b", "boolean")] {
            let pair = format!(
                "{call}-arguments-kv ::= \"\\\"arguments\\\"\" space \":\" space {arguments}\n"
            );
            assert!(gbnf.contains(&pair), "{pair} in {gbnf}");
        }
    }

    #[test]
    fn calls_that_cannot_be_told_apart_are_refused() {
        let arguments = json!({});
        let call = Call {
            name: "a",
            arguments: &arguments,
        };
        assert_eq!(refusal_code(write(&[], KEYS)), "calls-none");
        assert_eq!(refusal_code(write(&[call, call], KEYS)), "call-duplicate");
        let same = CallKeys {
            name: "x",
            arguments: "x",
        };
        assert_eq!(refusal_code(write(&[call], same)), "call-keys-same");
    }

    #[test]
    fn diagnostics_point_into_the_tools_arguments() {
        let arguments = json!({"type": "array", "uniqueItems": true});
        let calls = [Call {
            name: "t",
            arguments: &arguments,
        }];
        let refused = write(&calls, KEYS).unwrap_err();
        assert_eq!(
            refused.diagnostics()[0].keyword_pointer(),
            "/$defs/t/properties/arguments/uniqueItems"
        );
    }

    fn write_named(calls: &[Call<'_>]) -> Result<SchemaGrammar, SchemaError> {
        let mut frame = |_: &mut GrammarBuilder, call: Expr, _: Expr| call;
        let mut write_call = |name: &str, rules: &mut ArgumentRules<'_, '_>| {
            Expr::sequence([Expr::literal(format!("[{name}]")), rules.whole()])
        };
        named_calls_to_grammar_framed(
            calls,
            &SchemaOptions::default(),
            "call",
            &mut write_call,
            &mut frame,
        )
    }

    #[test]
    fn a_name_outside_the_json_fixes_its_arguments() {
        let (a, b) = (
            json!({"type": "integer"}),
            json!({"$ref": "#/$defs/flag", "$defs": {"flag": {"type": "boolean"}}}),
        );
        let calls = [
            Call {
                name: "a",
                arguments: &a,
            },
            Call {
                name: "b",
                arguments: &b,
            },
        ];
        let gbnf = print_grammar(&write_named(&calls).unwrap().grammar);
        assert!(
            gbnf.starts_with("root ::= call\ncall ::= a-call | b-call\n"),
            "{gbnf}"
        );
        assert!(gbnf.contains("a-call ::= \"[a]\" a\n"), "{gbnf}");
        assert!(gbnf.contains("b-call ::= \"[b]\" b\n"), "{gbnf}");
        // The second tool's `$ref` is read in its own document.
        assert!(gbnf.contains("b ::= b-flag"), "{gbnf}");
        assert_eq!(refusal_code(write_named(&[])), "calls-none");
        assert_eq!(
            refusal_code(write_named(&[calls[0], calls[0]])),
            "call-duplicate"
        );
        let unique = json!({"type": "array", "uniqueItems": true});
        let refused = write_named(&[Call {
            name: "t",
            arguments: &unique,
        }])
        .unwrap_err();
        assert_eq!(
            refused.diagnostics()[0].keyword_pointer(),
            "/$defs/t/uniqueItems"
        );
    }
}
