//! JSON Schema → grammar.
//!
//! A schema (draft 2020-12, plus the draft-07 spellings common in tool definitions)
//! becomes a [`grail_grammar::Grammar`] built with the grammar builder, never by string
//! concatenation. Where Grail cannot enforce a keyword exactly, the schema is refused
//! with the JSON pointer and the keyword (strict, the default), or compiled to the
//! closest superset with a warning for every weakened keyword (lenient).

pub mod format;
pub mod json_text;
pub mod numeric;
pub mod pattern;
