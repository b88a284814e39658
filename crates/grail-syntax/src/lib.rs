//! The GBNF front end of Grail: parser, syntax tree and canonical formatter.
//!
//! GBNF is read exactly as llama.cpp reads it (see [`parser`] for the dialect), with byte
//! spans on every node and errors as data ([`ParseError`]). Meaning (rule resolution,
//! checks) lives in `grail-grammar`; this crate knows only the text.
//!
//! ```
//! let parsed = grail_syntax::parse("root ::= \"a\"+ # one or more\n");
//! assert!(parsed.is_ok());
//! assert_eq!(grail_syntax::format("root ::= \"a\"+ # one or more\n", &parsed.grammar),
//!            "root ::= \"a\"+ # one or more\n");
//! ```
#![warn(missing_docs)]

pub mod ast;
pub mod diagnostic;
pub mod dialect;
pub mod error;
pub mod escape;
pub mod format;
pub mod parser;
pub mod span;
pub mod stack;

pub use ast::Grammar;
pub use diagnostic::{Diagnostic, Label, Severity};
pub use error::{ParseError, SyntaxError};
pub use format::{FormatError, format, format_verified, print_rules};
pub use parser::{ParseLimits, Parsed, parse, parse_with_limits, source_from_bytes};
pub use span::{LineColumn, LineIndex, Span};
