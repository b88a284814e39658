//! The token layer: masks over a vocabulary (`mask.rs`), computed by walking the token
//! trie along the automaton's transitions (`table_walk.rs`, `walk_escapes.rs`,
//! `walk_loops.rs`, `literal_run.rs`, `twin.rs`), batches of sequences (`batch.rs`),
//! drafts for speculative decoding (`speculative.rs`) and jump-forward tokens
//! (`jump_forward.rs`).

pub(crate) mod batch;
pub(crate) mod jump_forward;
pub(crate) mod literal_run;
pub(crate) mod mask;
pub(crate) mod matcher;
pub(crate) mod speculative;
pub(crate) mod table_walk;
#[cfg(test)]
pub(crate) mod test_support;
pub(crate) mod twin;
pub(crate) mod walk_buffers;
pub(crate) mod walk_escapes;
pub(crate) mod walk_loops;
