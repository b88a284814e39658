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

mod batch;
mod compile;
mod counted;
mod error;
mod inline;
mod item_set;
mod jump_forward;
mod learned;
mod limits;
mod loop_items;
mod mask;
mod mask_cache;
mod matcher;
mod next;
mod prefault;
mod prepare;
mod pure_walk;
mod sample;
mod shared_chunks;
mod speculative;
mod step_cache;
mod step_description;
#[cfg(test)]
mod test_support;
mod transition_table;
mod utf8;
mod walk_buffers;
mod walk_escapes;
mod walk_loops;

pub use batch::fill_masks;
pub use compile::{CompileOptions, CompiledGrammar, TokenResolver, TokenSet};
pub use error::{AcceptError, CompileError, DraftRefused, LimitExceeded};
pub use grail_grammar::ScalarSet;
pub use grail_vocab::{TokenBitmask, VocabularyIndex};
pub use jump_forward::{JumpForward, JumpForwardError};
pub use limits::EngineLimits;
pub use matcher::Matcher;
pub use next::{NextCharacters, NextRule};
pub use prefault::{
    DEFAULT_PREFAULT_BYTES, PREFAULT_ENV, prefault_bytes_setting, prefault_heap, prepare_heap,
    prepare_heap_once,
};
pub use sample::{Sampler, Segment};
