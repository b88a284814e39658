//! The checked grammar IR of Grail, the checks that run on it, and a builder.
//!
//! - [`load`] is the one way from GBNF text to a grammar: [`check`], then the grammar and
//!   its warnings, or its errors located by line and column.
//! - [`check`] parses GBNF text, lowers it to the IR ([`Grammar`]) and runs every check,
//!   returning diagnostics as data (errors, warnings, notes) for a [`Target`] engine;
//!   [`check_with_vocabulary`] also checks tokens written as text (`<think>`) against a
//!   vocabulary, as `grail check --vocab` does.
//! - [`fix()`] makes the mechanical repairs (names with `_`, lines that start with `|`,
//!   reversed ranges, repetitions llama.cpp cannot read) in the text, checked.
//! - [`GrammarBuilder`] makes grammars as data for generators (JSON Schema, tool calls)
//!   and [`print_grammar`] prints them as GBNF that llama.cpp reads identically.
//!
//! ```
//! use grail_grammar::{check, CheckOptions};
//! let report = check("root ::= greeting\ngreeting ::= \"hi\" | \"hello\"\n", &CheckOptions::default());
//! assert!(report.is_ok());
//! let report = check("root ::= numbr\nnumber ::= [0-9]+\n", &CheckOptions::default());
//! assert_eq!(report.diagnostics[0].code, "rule-undefined");
//! assert_eq!(report.diagnostics[0].help.as_deref(), Some("did you mean `number`?"));
//! ```
#![warn(missing_docs)]

pub mod analysis;
pub mod builder;
pub mod charset;
pub mod check;
pub mod class_ranges;
pub mod compose;
pub mod finding;
pub mod fix;
pub mod graph;
pub mod ir;
pub mod limits;
pub mod lints;
pub mod llama_cpp;
pub mod llama_slow;
pub mod load;
pub mod lower;
pub mod print;
pub mod scalar_set;
pub mod tokens;

pub use builder::{BuildError, Expr, GrammarBuilder};
pub use charset::{CharSet, merge_ranges};
pub use check::{CheckOptions, CheckReport, check};
pub use finding::{Finding, FindingKind, LlamaLeftRecursion, Target};
pub use fix::{Fix, FixKind, Fixed, SplitReason, fix};
pub use ir::{
    Grammar, Repetition, Rule, RuleId, Sequence, Symbol, SymbolKind, Token, TokenReference,
};
pub use limits::Limits;
pub use load::{LoadError, LoadedGrammar, LocatedDiagnostic, load};
pub use print::{print_grammar, print_symbol};
pub use scalar_set::ScalarSet;
pub use tokens::{TokenVocabulary, check_with_vocabulary};
