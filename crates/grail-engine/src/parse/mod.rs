//! The byte-level parser: an Earley-style matcher over the graph, stepping through the
//! automaton's cached states where it can (`matcher.rs`), what may come next
//! (`next.rs`), and random strings of the language (`sample.rs`).

pub(crate) mod item_set;
pub(crate) mod matcher;
pub(crate) mod next;
pub(crate) mod sample;
pub(crate) mod step_description;
