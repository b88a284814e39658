//! A model that holds several sequences at once and reads tokens for all of them in one
//! call: what [`crate::BatchDecoder`] drives.

use crate::model::{Model, ModelError};

/// Tokens one sequence reads in a [`BatchModel::forward_batch`] call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequenceRead<'a> {
    /// The sequence (below [`BatchModel::sequences`]).
    pub sequence: usize,
    /// Its next tokens (at least one).
    pub tokens: &'a [u32],
    /// Whether the logits after the last of them are wanted (false for the first part
    /// of a prompt read over several calls).
    pub logits: bool,
}

/// A causal language model holding [`BatchModel::sequences`] sequences in one attention
/// cache. The [`Model`] methods act on sequence 0.
pub trait BatchModel: Model {
    /// How many sequences it holds at once.
    fn sequences(&self) -> usize;

    /// The most tokens one [`BatchModel::forward_batch`] call may read, over all its
    /// sequences.
    fn batch_tokens(&self) -> usize;

    /// The tokens the attention cache holds over all sequences (a prefix shared by
    /// [`BatchModel::share_prefix`] counts once in the cache, but callers may count it
    /// for each sequence: it is a bound).
    fn cache_tokens(&self) -> usize;

    /// The tokens of `sequence` so far.
    fn sequence_tokens(&self, sequence: usize) -> &[u32];

    /// Keeps the first `len` tokens of `sequence` and forgets the rest.
    fn truncate_sequence(&mut self, sequence: usize, len: usize) -> Result<(), ModelError>;

    /// Makes `to` hold the first `len` tokens of `from` (forgetting what `to` held),
    /// sharing their attention state instead of reading them again.
    fn share_prefix(&mut self, from: usize, to: usize, len: usize) -> Result<(), ModelError>;

    /// Appends each read's tokens to its sequence, in one model call, and computes the
    /// next-token logits of the sequences that want them. At most
    /// [`BatchModel::batch_tokens`] tokens in all, and each sequence at most once.
    fn forward_batch(&mut self, reads: &[SequenceRead<'_>]) -> Result<(), ModelError>;

    /// The logits after `sequence`'s last token, as of the last
    /// [`BatchModel::forward_batch`] that read it with `logits` set.
    fn sequence_logits(&self, sequence: usize) -> &[f32];
}
