//! Grail: grammar-constrained generation. This facade re-exports the stable API.
//!
//! ```
//! let report = grail::check("root ::= \"yes\" | \"no\"\n", &grail::CheckOptions::default());
//! assert!(report.is_ok());
//! ```

pub use grail_grammar::{
    BuildError, CharSet, CheckOptions, CheckReport, Expr, Grammar, GrammarBuilder, Limits, Target,
    check, print_grammar,
};
pub use grail_syntax::{Diagnostic, ParseLimits, Severity, Span, format, parse};

/// The GBNF front end: parser, syntax tree, formatter.
pub use grail_syntax as syntax;

/// The checked grammar IR, analyses and builder.
pub use grail_grammar as grammar;
