//! Grail: grammar-constrained generation. This facade is the library's public API, in
//! the order a user meets it:
//!
//! - GBNF grammars: [`load`] (text to a checked grammar, with its warnings), [`check`]
//!   (every diagnostic, as `grail check` prints them), [`CompiledGrammar::from_gbnf`];
//!   editing GBNF text in [`gbnf`] (format, fix, parse).
//! - JSON Schemas to grammars: [`schema_text_to_grammar`], [`SchemaOptions`].
//! - Tool registries to tool-call grammars and the validator of a model's calls:
//!   [`ToolRegistry`], [`tool_call_grammar`], [`validate_output`].
//! - Vocabularies and token masks: [`load_vocabulary`], [`VocabularyIndex`],
//!   [`TokenBitmask`], and the [`Matcher`] that follows text and tokens and fills masks.
//! - Grammars made as data (for generators of your own): [`build`].
//!
//! Everything else of the crates behind it is reachable through [`unstable`], with no
//! promise that it stays as it is.
//!
//! ```
//! let report = grail::check("root ::= \"yes\" | \"no\"\n", &grail::CheckOptions::default());
//! assert!(report.is_ok());
//! let loaded = grail::load("root ::= \"yes\" | \"no\"\n", &grail::CheckOptions::default()).unwrap();
//! assert!(loaded.warnings.is_empty());
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
//! let vocabulary = grail::load_vocabulary(Path::new(path))?;
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

// GBNF text to a checked grammar, and its diagnostics.
pub use grail_grammar::{
    CheckOptions, CheckReport, Grammar, Limits, LoadError, LoadedGrammar, LocatedDiagnostic,
    Target, check, load,
};
pub use grail_syntax::{Diagnostic, LineColumn, Severity, Span};

// The matcher: compiled grammars, text and tokens, masks, next characters, sampling.
pub use grail_engine::{
    AcceptError, CompileError, CompileOptions, CompiledGrammar, DraftRefused, EngineLimits,
    JumpForward, JumpForwardError, LimitExceeded, Matcher, NextCharacters, NextRule, Sampler,
    Segment, TokenResolver, fill_masks,
};

// Vocabularies and token bitmasks.
pub use grail_vocab::{TokenBitmask, TokenKind, VocabError, Vocabulary, VocabularyIndex};

/// Loads a vocabulary from a Hugging Face `tokenizer.json`, a `.gguf` file or Grail's
/// `vocab.json`, deciding by content.
pub use grail_vocab::load as load_vocabulary;

// JSON Schema to grammar.
pub use grail_schema::{
    Dialect, KeyOrder, Mode, SchemaDiagnostic, SchemaError, SchemaGrammar, SchemaLimits,
    SchemaOptions, Whitespace, schema_text_to_grammar, schema_to_grammar,
};

// Tool calling: registries, tool-call grammars, the pool filter and the validator.
pub use grail_tools::{
    Arguments, CallFault, CallOptions, Checked, Fault, FilteredPool, PoolFilter, Think, Tool,
    ToolCall, ToolChoice, ToolGrammar, ToolRegistry, ToolsError, WireFormat, tool_call_grammar,
    validate_output,
};

/// Editing GBNF text: parse it to a syntax tree, format it canonically, make the
/// mechanical repairs of `grail fix`.
pub mod gbnf {
    pub use grail_grammar::{Fix, FixKind, Fixed, fix};
    pub use grail_syntax::{
        FormatError, ParseLimits, Parsed, format, format_verified, parse, source_from_bytes,
    };
}

/// Grammars made as data, as Grail's schema and tool-call generators make them: a
/// builder, its expressions and character sets, and the printer to GBNF that llama.cpp
/// reads identically.
pub mod build {
    pub use grail_grammar::{BuildError, CharSet, Expr, GrammarBuilder, ScalarSet, print_grammar};
}

/// The crates behind this facade, whole: their internals (analyses, tries, slices, the
/// schema converter's stages) are public for Grail's own crates and for experiments, with
/// no promise that they stay as they are. Prefer the items above.
pub mod unstable {
    /// The GBNF front end: parser, syntax tree, formatter.
    pub use grail_syntax as syntax;

    /// The checked grammar IR, analyses and builder.
    pub use grail_grammar as grammar;

    /// The matcher's internals.
    pub use grail_engine as engine;

    /// Token vocabularies: loading, the token trie, token bitmasks.
    pub use grail_vocab as vocab;

    /// JSON Schema to grammar, stage by stage.
    pub use grail_schema as schema;

    /// Tool calling: registries, wire formats, the pool filter and the validator.
    pub use grail_tools as tools;
}
