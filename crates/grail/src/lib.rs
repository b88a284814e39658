//! Grail: grammar-constrained generation. This facade re-exports the stable API: GBNF
//! grammars ([`check`], [`CompiledGrammar::from_gbnf`]), JSON Schemas turned into grammars
//! ([`schema_text_to_grammar`]), tool registries turned into tool-call grammars and
//! validators ([`tool_call_grammar`], [`validate_output`]), vocabularies
//! ([`load_vocabulary`]) and the matcher that follows text and masks tokens ([`Matcher`]).
//!
//! ```
//! let report = grail::check("root ::= \"yes\" | \"no\"\n", &grail::CheckOptions::default());
//! assert!(report.is_ok());
//!
//! let grammar = grail::CompiledGrammar::from_gbnf("root ::= \"yes\" | \"no\"").unwrap();
//! let mut matcher = grail::Matcher::new(&grammar);
//! matcher.accept_str("ye").unwrap();
//! assert_eq!(matcher.forced(8), "s");
//! ```
//!
//! From a JSON Schema and a model's `tokenizer.json` to the tokens allowed next:
//!
//! ```
//! use std::path::Path;
//! use std::sync::Arc;
//!
//! use grail::{
//!     CompileOptions, CompiledGrammar, Matcher, SchemaOptions, TokenBitmask, VocabularyIndex,
//! };
//!
//! let schema = r#"{
//!     "type": "object",
//!     "properties": {"a": {"type": "string"}},
//!     "required": ["a"],
//!     "additionalProperties": false
//! }"#;
//! // Strict by default: a keyword Grail cannot enforce exactly refuses the schema.
//! let converted = grail::schema_text_to_grammar(schema, &SchemaOptions::default())?;
//! let grammar = CompiledGrammar::compile(&converted.grammar, &CompileOptions::default())?;
//!
//! // A tiny byte-level vocabulary: `a` (id 1), `b`, ` a`, a line break, two halves of `é`,
//! // `{"` (id 8) and two special tokens; no `{` on its own.
//! let path = concat!(
//!     env!("CARGO_MANIFEST_DIR"),
//!     "/../../testdata/vocab/byte-level.tokenizer.json"
//! );
//! let vocabulary = grail::vocab::load(Path::new(path))?;
//! let index = Arc::new(VocabularyIndex::new(vocabulary));
//! let open_brace_quote = index.vocabulary().id_of_text("{\"").unwrap();
//! let letter_a = index.vocabulary().id_of_text("a").unwrap();
//! let space_a = index.vocabulary().id_of_text(" a").unwrap();
//!
//! let mut matcher = Matcher::with_vocabulary(&grammar, index.clone());
//! let mut mask = TokenBitmask::new(index.vocabulary().len());
//! matcher.fill_mask(&mut mask);
//! // The object opens with `{"`; nothing else in this vocabulary starts one.
//! assert_eq!(mask.ids().collect::<Vec<_>>(), [open_brace_quote]);
//!
//! matcher.accept_token(open_brace_quote)?;
//! matcher.fill_mask(&mut mask);
//! // Inside the key's quotes: `a`, the one property, and no space before it.
//! assert!(mask.is_set(letter_a));
//! assert!(!mask.is_set(space_a));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub use grail_engine::{
    AcceptError, CompileError, CompileOptions, CompiledGrammar, EngineLimits, LimitExceeded,
    Matcher, NextCharacters, NextRule, Sampler, ScalarSet, Segment,
};
pub use grail_grammar::{
    BuildError, CharSet, CheckOptions, CheckReport, Expr, Grammar, GrammarBuilder, Limits, Target,
    check, print_grammar,
};
pub use grail_schema::{
    Dialect, KeyOrder, Mode, SchemaDiagnostic, SchemaError, SchemaGrammar, SchemaLimits,
    SchemaOptions, Whitespace, schema_text_to_grammar, schema_to_grammar,
};
pub use grail_syntax::{Diagnostic, ParseLimits, Severity, Span, format, parse};
pub use grail_tools::{
    CallFault, CallOptions, Checked, PoolFilter, Think, ToolCall, ToolChoice, ToolRegistry,
    ToolsError, WireFormat, tool_call_grammar, validate_output,
};
pub use grail_vocab::{TokenBitmask, TokenKind, VocabError, Vocabulary, VocabularyIndex};

/// Loads a vocabulary from a Hugging Face `tokenizer.json`, a `.gguf` file or Grail's
/// `vocab.json`, deciding by content ([`vocab::load`]).
pub use grail_vocab::load as load_vocabulary;

/// The GBNF front end: parser, syntax tree, formatter.
pub use grail_syntax as syntax;

/// The checked grammar IR, analyses and builder.
pub use grail_grammar as grammar;

/// The matcher: compiled grammars, incremental matching, next-character rules, sampling.
pub use grail_engine as engine;

/// Token vocabularies: loading, the token trie, token bitmasks.
pub use grail_vocab as vocab;

/// JSON Schema to grammar: conversion options, diagnostics and where they point.
pub use grail_schema as schema;

/// Tool calling: registries, tool-call grammars in wire formats, the pool filter and the
/// validator.
pub use grail_tools as tools;
