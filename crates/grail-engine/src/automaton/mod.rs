//! The lazy automaton over parse states, and the store of what matchers learn.
//!
//! A compiled grammar ([`grammar::CompiledGrammar`]) is its graph plus a learned store
//! per vocabulary (`learned.rs`): parse states interned as they are met and the
//! transitions between them (`step_cache.rs`, on append-only tables shared by threads:
//! `transition_table.rs`, `shared_chunks.rs`), remembered trie walks, and masks by parse
//! state (`mask_cache.rs`). Every matcher of the grammar reads it without a lock and adds
//! to it; nothing here knows a matcher, only the graph below.

pub(crate) mod grammar;
pub(crate) mod learned;
pub(crate) mod mask_cache;
pub(crate) mod shared_chunks;
pub(crate) mod step_cache;
pub(crate) mod transition_table;
