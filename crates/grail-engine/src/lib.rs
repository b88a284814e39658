//! Grail's matching engine.
//!
//! [`CompiledGrammar`] is a grammar compiled once into a flat graph, immutable and shared
//! across threads. A [`Matcher`] is the cheap per-sequence state over it: feed it text,
//! bytes or tokens; ask [`Matcher::is_accepting`], [`Matcher::is_viable`],
//! [`Matcher::next_characters`] and [`Matcher::forced`]; [`Matcher::rollback`] and
//! [`Matcher::fork`]. With a vocabulary ([`Matcher::with_vocabulary`]), it fills token
//! masks ([`Matcher::fill_mask`]), accepts and rolls back tokens. [`Sampler`] draws
//! random strings of the grammar's language.
//!
//! ```
//! use grail_engine::{CompiledGrammar, Matcher, NextRule};
//! let grammar = CompiledGrammar::from_gbnf(r#"root ::= "yes" | "no" | [0-9]+"#).unwrap();
//! let mut matcher = Matcher::new(&grammar);
//! matcher.accept_str("n").unwrap();
//! assert_eq!(matcher.next_characters().rules, [NextRule::Char(vec![('o' as u32, 'o' as u32)])]);
//! assert_eq!(matcher.forced(10), "o");
//! matcher.accept_str("o").unwrap();
//! assert!(matcher.is_accepting());
//! assert!(matcher.accept_str("!").is_err());
//! ```
#![warn(missing_docs)]

mod automaton;
mod compile;
mod error;
mod graph;
mod limits;
mod parse;
mod prefault;
mod tokens;

pub use automaton::grammar::CompiledGrammar;
pub use compile::{CompileOptions, TokenResolver};
pub use error::{AcceptError, CompileError, DraftRefused, LimitExceeded};
pub use grail_grammar::ScalarSet;
pub use grail_vocab::{TokenBitmask, VocabularyIndex};
pub use graph::TokenSet;
pub use limits::EngineLimits;
pub use parse::next::{NextCharacters, NextRule};
pub use parse::sample::{Sampler, Segment};
pub use prefault::{
    DEFAULT_PREFAULT_BYTES, PREFAULT_ENV, prefault_bytes_setting, prefault_heap, prepare_heap,
    prepare_heap_once,
};
pub use tokens::batch::fill_masks;
pub use tokens::jump_forward::{JumpForward, JumpForwardError};
pub use tokens::matcher::Matcher;
