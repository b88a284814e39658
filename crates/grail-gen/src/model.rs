//! The model behind the decode loop: a small trait, so the runtime can change without
//! touching the loop.

use std::sync::Arc;

use grail_vocab::VocabularyIndex;

/// A causal language model that the decode loop drives one token at a time.
///
/// A model holds one sequence: the tokens it has read, whose attention state it keeps.
/// [`Model::forward`] appends tokens and computes the logits of the token after the last;
/// [`Model::truncate`] forgets a tail of the sequence, so a new prompt that shares a
/// prefix with the last one only reads what differs.
pub trait Model {
    /// The vocabulary, with every token's exact bytes, under the model's own token ids
    /// (the decode loop masks with it).
    fn vocabulary(&self) -> &Arc<VocabularyIndex>;

    /// The token ids of `text`. Special tokens written in the text (`<|im_start|>`, as chat
    /// templates write them) are read as those tokens; no beginning-of-text token is
    /// added (templates write their own; see [`Model::begin_of_text`]).
    fn tokenize(&self, text: &str) -> Result<Vec<u32>, ModelError>;

    /// The token a sequence starts with when the model wants one and the text has none.
    fn begin_of_text(&self) -> Option<u32> {
        None
    }

    /// The Jinja chat template the model ships with, if any.
    fn chat_template(&self) -> Option<&str>;

    /// The most tokens one sequence may hold.
    fn context_length(&self) -> usize;

    /// The tokens of the sequence so far.
    fn tokens(&self) -> &[u32];

    /// Keeps the first `len` tokens of the sequence and forgets the rest. The logits are
    /// stale until the next [`Model::forward`].
    fn truncate(&mut self, len: usize) -> Result<(), ModelError>;

    /// Appends `tokens` (at least one) to the sequence and computes the logits of the
    /// next token.
    fn forward(&mut self, tokens: &[u32]) -> Result<(), ModelError>;

    /// The logits of the next token, one per vocabulary entry, as of the last
    /// [`Model::forward`].
    fn logits(&self) -> &[f32];
}

/// What went wrong inside a model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The model file could not be loaded.
    #[error("cannot load the model {path}: {reason}")]
    Load {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The sequence would exceed the model's context.
    #[error(
        "the prompt and output need {needed} tokens, more than the model's context of {limit}; shorten the prompt or lower --max-tokens"
    )]
    ContextFull {
        /// Tokens the sequence would hold.
        needed: usize,
        /// The context length.
        limit: usize,
    },
    /// Text the tokenizer could not read.
    #[error("cannot tokenize the text: {0}")]
    Tokenize(String),
    /// The runtime failed while computing logits.
    #[error("the model failed to compute the next token's logits: {0}")]
    Forward(String),
}

/// Makes `model`'s sequence `prompt` and computes its next-token logits, reading only the
/// part after the longest prefix the model already holds. Returns how many tokens it read.
pub fn prime(model: &mut dyn Model, prompt: &[u32]) -> Result<usize, ModelError> {
    if prompt.is_empty() {
        return Err(ModelError::Tokenize("the prompt has no tokens".into()));
    }
    let held = model.tokens();
    let mut shared = held
        .iter()
        .zip(prompt)
        .take_while(|(held, wanted)| held == wanted)
        .count();
    // The logits come from reading at least the last token.
    if shared == prompt.len() {
        shared -= 1;
    }
    model.truncate(shared)?;
    model.forward(&prompt[shared..])?;
    Ok(prompt.len() - shared)
}
