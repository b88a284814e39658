//! A tiny model for tests: a fixed vocabulary and logits drawn from a hash of the last
//! token and position, so the decode loop (and everything built on it) can be tested in
//! milliseconds, without a model file. Its text is noise, but every constrained output
//! must still match its grammar.

use std::sync::Arc;

use grail_vocab::{TokenKind, Vocabulary, VocabularyIndex};

use crate::batch_model::{BatchModel, SequenceRead};
use crate::model::{Model, ModelError};

/// The text of the tiny model's end-of-generation token (id 0).
pub const TINY_END: &str = "<|end|>";

/// A ChatML-like template, as the tiny model's own.
const TINY_TEMPLATE: &str = "{% for message in messages %}<|start|>{{ message.role }}\n{{ message.content }}<|end|>\n{% endfor %}{% if add_generation_prompt %}<|start|>assistant\n{% endif %}";

/// Multi-byte tokens of the tiny vocabulary, besides one token per byte: pieces of JSON
/// and tool calls, so outputs take several bytes per token as real ones do.
const TINY_WORDS: &[&str] = &[
    "{\"",
    "\":",
    "\": ",
    "\", \"",
    "\"}",
    "name",
    "\"name\": \"",
    "arguments",
    "\"arguments\": {",
    "true",
    "false",
    "null",
    "  ",
    "\n",
    "<tool_call>",
    "</tool_call>",
    "[TOOL_CALLS]",
    "the",
    " a",
    "ing",
    "12",
    "0.",
    "é",
    "<think>",
    "</think>",
];

/// A model whose logits are a hash of (seed, last token, position): deterministic,
/// instant, and with a byte-level vocabulary that can write any text.
#[derive(Debug, Clone)]
pub struct TinyModel {
    vocabulary: Arc<VocabularyIndex>,
    seed: u64,
    context_length: usize,
    /// Each sequence's tokens (sequence 0 is the [`Model`]'s).
    tokens: Vec<Vec<u32>>,
    /// Each sequence's next-token logits.
    logits: Vec<Vec<f32>>,
    /// The attention cache's size over all sequences, as [`BatchModel::cache_tokens`].
    cache_tokens: usize,
    /// Model calls so far (batched or not), for tests of batching.
    calls: usize,
    /// How much the end-of-generation token's logit is raised (keeps outputs short).
    end_bias: f32,
    /// How long each forward pass sleeps (a real model's pace, for server tests).
    delay: std::time::Duration,
    /// The chat template.
    template: &'static str,
}

impl TinyModel {
    /// A tiny model with this seed and a context of 4,096 tokens: a token per byte and
    /// some words, so it can write any text.
    pub fn new(seed: u64) -> TinyModel {
        TinyModel::with_bytes(seed, 0..=255)
    }

    /// A tiny model whose only single-byte tokens are printable ASCII (and whose words
    /// are ASCII): text with other characters cannot be written with it.
    pub fn ascii_only(seed: u64) -> TinyModel {
        TinyModel::with_bytes(seed, 0x20..=0x7e)
    }

    fn with_bytes(seed: u64, bytes: std::ops::RangeInclusive<u8>) -> TinyModel {
        let ascii_only = *bytes.end() < 0x80;
        let mut tokens: Vec<Vec<u8>> = vec![TINY_END.as_bytes().to_vec(), b"<|start|>".to_vec()];
        let mut kinds = vec![TokenKind::Special, TokenKind::Special];
        for byte in bytes {
            tokens.push(vec![byte]);
            kinds.push(TokenKind::Text);
        }
        for word in TINY_WORDS
            .iter()
            .filter(|word| !ascii_only || word.is_ascii())
        {
            tokens.push(word.as_bytes().to_vec());
            kinds.push(TokenKind::Text);
        }
        let vocabulary = Vocabulary::new("tiny", tokens, kinds, vec![0], None);
        TinyModel {
            logits: vec![vec![0.0; vocabulary.len()]],
            vocabulary: Arc::new(VocabularyIndex::new(vocabulary)),
            seed,
            context_length: 4096,
            tokens: vec![Vec::new()],
            cache_tokens: 4096,
            calls: 0,
            end_bias: 2.0,
            delay: std::time::Duration::ZERO,
            template: TINY_TEMPLATE,
        }
    }

    /// The same model with another context length.
    pub fn with_context_length(mut self, context_length: usize) -> TinyModel {
        self.context_length = context_length;
        if self.tokens.len() == 1 {
            self.cache_tokens = context_length;
        }
        self
    }

    /// The same model with this chat template (a template with a tool section, say).
    pub fn with_chat_template(mut self, template: &'static str) -> TinyModel {
        self.template = template;
        self
    }

    /// The same model with the end-of-generation logit raised by `bias`.
    pub fn with_end_bias(mut self, bias: f32) -> TinyModel {
        self.end_bias = bias;
        self
    }

    /// The same model taking `delay` for each forward pass, as a real model takes time
    /// (for tests of queues, time limits and cancellation).
    pub fn with_delay(mut self, delay: std::time::Duration) -> TinyModel {
        self.delay = delay;
        self
    }

    /// The same model holding `sequences` sequences at once (as a [`BatchModel`]) in a
    /// cache of `cache_tokens` tokens.
    pub fn with_sequences(mut self, sequences: usize, cache_tokens: usize) -> TinyModel {
        let sequences = sequences.max(1);
        self.tokens = vec![Vec::new(); sequences];
        self.logits = vec![vec![0.0; self.vocabulary.vocabulary().len()]; sequences];
        self.cache_tokens = cache_tokens;
        self
    }

    /// How many model calls were made (a batch counts once).
    pub fn calls(&self) -> usize {
        self.calls
    }

    fn compute_logits(&mut self, sequence: usize) {
        let tokens = &self.tokens[sequence];
        let last = *tokens.last().unwrap_or(&0) as u64;
        let position = tokens.len() as u64;
        let logits = &mut self.logits[sequence];
        for (id, logit) in logits.iter_mut().enumerate() {
            let hash = mix(self.seed ^ mix(last << 32 | position) ^ mix(id as u64 + 1));
            // Uniform in [-4, 4).
            *logit = (hash >> 40) as f32 / (1u64 << 24) as f32 * 8.0 - 4.0;
        }
        logits[0] += self.end_bias;
    }
}

/// SplitMix64's finalizer.
fn mix(mut value: u64) -> u64 {
    value = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    value = (value ^ (value >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    value ^ (value >> 31)
}

impl Model for TinyModel {
    fn vocabulary(&self) -> &Arc<VocabularyIndex> {
        &self.vocabulary
    }

    /// Longest match first: special tokens by their text, then the longest text token.
    fn tokenize(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        let vocabulary = self.vocabulary.vocabulary();
        let bytes = text.as_bytes();
        let mut ids = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let mut best: Option<(usize, u32)> = None;
            for (id, token, _) in vocabulary.iter() {
                if !token.is_empty()
                    && bytes[at..].starts_with(token)
                    && best.is_none_or(|(len, _)| token.len() > len)
                {
                    best = Some((token.len(), id));
                }
            }
            let (len, id) = best.ok_or_else(|| {
                ModelError::Tokenize(format!("the tiny vocabulary has no token for byte {at}"))
            })?;
            ids.push(id);
            at += len;
        }
        Ok(ids)
    }

    fn chat_template(&self) -> Option<&str> {
        Some(self.template)
    }

    fn context_length(&self) -> usize {
        self.context_length
    }

    fn tokens(&self) -> &[u32] {
        &self.tokens[0]
    }

    fn truncate(&mut self, len: usize) -> Result<(), ModelError> {
        self.truncate_sequence(0, len)
    }

    fn forward(&mut self, tokens: &[u32]) -> Result<(), ModelError> {
        self.forward_batch(&[SequenceRead {
            sequence: 0,
            tokens,
            logits: true,
        }])
    }

    fn logits(&self) -> &[f32] {
        &self.logits[0]
    }
}

impl BatchModel for TinyModel {
    fn sequences(&self) -> usize {
        self.tokens.len()
    }

    fn batch_tokens(&self) -> usize {
        64
    }

    fn cache_tokens(&self) -> usize {
        self.cache_tokens
    }

    fn sequence_tokens(&self, sequence: usize) -> &[u32] {
        &self.tokens[sequence]
    }

    fn truncate_sequence(&mut self, sequence: usize, len: usize) -> Result<(), ModelError> {
        self.tokens[sequence].truncate(len);
        Ok(())
    }

    fn share_prefix(&mut self, from: usize, to: usize, len: usize) -> Result<(), ModelError> {
        let len = len.min(self.tokens[from].len());
        self.tokens[to] = self.tokens[from][..len].to_vec();
        Ok(())
    }

    /// Any number of tokens per call (the batch size only paces [`crate::BatchDecoder`]).
    fn forward_batch(&mut self, reads: &[SequenceRead<'_>]) -> Result<(), ModelError> {
        for read in reads {
            let needed = self.tokens[read.sequence].len() + read.tokens.len();
            if needed > self.context_length {
                return Err(ModelError::ContextFull {
                    needed,
                    limit: self.context_length,
                });
            }
        }
        let held: usize = self.tokens.iter().map(Vec::len).sum();
        let needed = held + reads.iter().map(|read| read.tokens.len()).sum::<usize>();
        if needed > self.cache_tokens {
            return Err(ModelError::ContextFull {
                needed,
                limit: self.cache_tokens,
            });
        }
        self.calls += 1;
        for read in reads {
            self.tokens[read.sequence].extend_from_slice(read.tokens);
            if read.logits {
                self.compute_logits(read.sequence);
            }
        }
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        Ok(())
    }

    fn sequence_logits(&self, sequence: usize) -> &[f32] {
        &self.logits[sequence]
    }
}
