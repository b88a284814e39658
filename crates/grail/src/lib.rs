//! Grail: grammar-constrained generation. This facade re-exports the stable API.
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

pub use grail_engine::{
    AcceptError, CompileError, CompileOptions, CompiledGrammar, EngineLimits, LimitExceeded,
    Matcher, NextCharacters, NextRule, Sampler, ScalarSet, Segment,
};
pub use grail_grammar::{
    BuildError, CharSet, CheckOptions, CheckReport, Expr, Grammar, GrammarBuilder, Limits, Target,
    check, print_grammar,
};
pub use grail_syntax::{Diagnostic, ParseLimits, Severity, Span, format, parse};

/// The GBNF front end: parser, syntax tree, formatter.
pub use grail_syntax as syntax;

/// The checked grammar IR, analyses and builder.
pub use grail_grammar as grammar;

/// The matcher: compiled grammars, incremental matching, next-character rules, sampling.
pub use grail_engine as engine;
