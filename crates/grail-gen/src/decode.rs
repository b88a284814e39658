//! The decode loop: a prompt, an optional grammar, and tokens drawn one at a time from the
//! model's logits, each allowed by the grammar.
//!
//! Masks: with greedy decoding (and with temperature alone, no top-k or top-p), the loop
//! first draws from every token and asks the matcher whether that token is allowed (a
//! walk of its bytes, well under a microsecond); only when it is refused does it fill the
//! whole mask and draw again among the allowed tokens ([`MaskStrategy::CheckFirst`],
//! llama.cpp's trick). Both give the same tokens as masking first: greedy takes the best
//! allowed token either way, and a refused draw redrawn from the allowed tokens is the
//! allowed tokens' distribution. With top-k or top-p the cut must be taken among the
//! allowed tokens, so the mask comes first. [`MaskStrategy::Always`] masks at every step.
//!
//! The output ends when the model writes an end-of-generation token (allowed only where
//! the grammar may end), or at once when the grammar allows nothing more. A token limit
//! reached mid-grammar ends it as [`Finish::Truncated`]: never valid.

use std::ops::ControlFlow;
use std::time::Instant;

use grail_engine::CompiledGrammar;

use crate::model::{Model, ModelError, prime};
use crate::reasoning_budget::ReasoningBudget;
use crate::sampling::SamplingParams;
use crate::sequence::{Draw, Next, SequenceDecoder};

/// When the decode loop fills a whole token mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaskStrategy {
    /// Check the drawn token first; fill the mask only when it is refused (where that
    /// gives the same distribution: greedy, or temperature without top-k/top-p).
    #[default]
    CheckFirst,
    /// Fill the mask before every draw.
    Always,
}

/// How to decode.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeOptions {
    /// The most tokens to write.
    pub max_tokens: usize,
    /// How tokens are chosen.
    pub sampling: SamplingParams,
    /// When masks are filled.
    pub mask: MaskStrategy,
    /// Append the tokens the grammar forces without sampling them (jump-forward, see
    /// docs/jump-forward.md): one model call reads them all. Off by default: the text is
    /// the same wherever the model would have written the forced text in the tokens the
    /// tokenizer gives it; where it would have split it otherwise, the output may differ
    /// after that point.
    pub jump_forward: bool,
    /// A cap on the reasoning block's tokens (see [`ReasoningBudget`]); none by default.
    pub reasoning_budget: Option<ReasoningBudget>,
}

impl Default for DecodeOptions {
    fn default() -> DecodeOptions {
        DecodeOptions {
            max_tokens: 512,
            sampling: SamplingParams::default(),
            mask: MaskStrategy::default(),
            jump_forward: false,
            reasoning_budget: None,
        }
    }
}

/// Why the output ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// The model ended it where the grammar may end (or the grammar allowed nothing more).
    Stop,
    /// The token limit, where the grammar may end (or without a grammar): the output is
    /// complete, the model might have gone on.
    Length,
    /// The token limit, in the middle of the grammar: the output is incomplete and not
    /// valid.
    Truncated,
    /// The caller's observer ended it ([`decode_observed`]: a stop sequence, a client
    /// that went away); the output may be incomplete.
    Interrupted,
}

impl Finish {
    /// OpenAI's `finish_reason` (`stop` or `length`).
    pub fn openai_reason(self) -> &'static str {
        match self {
            Finish::Stop | Finish::Interrupted => "stop",
            Finish::Length | Finish::Truncated => "length",
        }
    }
}

/// What the decode loop wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The output's bytes (the end-of-generation token not included).
    pub bytes: Vec<u8>,
    /// The tokens drawn (the end-of-generation token included, when there was one).
    pub tokens: Vec<u32>,
    /// Why it ended.
    pub finish: Finish,
    /// Times and counts.
    pub stats: DecodeStats,
}

impl Generation {
    /// The output as text (invalid UTF-8, possible only without a grammar or when
    /// truncated inside a character, shown as U+FFFD).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// Where the time went.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DecodeStats {
    /// Tokens in the prompt.
    pub prompt_tokens: usize,
    /// Tokens the model had to read (the rest it held from an earlier prompt).
    pub prompt_tokens_read: usize,
    /// Seconds reading the prompt.
    pub prompt_s: f64,
    /// Seconds from the first drawn token to the last (model and grammar).
    pub decode_s: f64,
    /// Microseconds of grammar work (token checks, masks, advancing the matcher) per
    /// drawn token.
    pub grammar_us: Vec<f64>,
    /// How many times a whole mask was filled.
    pub full_masks: usize,
    /// Tokens the grammar forced and jump-forward appended without a draw (counted in
    /// the output's tokens; [`DecodeStats::grammar_us`] has one entry per drawn token).
    pub forced_tokens: usize,
}

/// The `quantile` of `values` (nearest rank), 0 when empty.
pub fn quantile_of(values: &[f64], quantile: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((quantile * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Why decoding failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The model failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The grammar matches nothing.
    #[error(
        "the grammar matches no text at all, so nothing can be generated; check it with `grail check`"
    )]
    EmptyLanguage,
    /// No token of the vocabulary continues the grammar here.
    #[error(
        "no token of the model's vocabulary can continue the grammar after {written:?} (byte {offset}): the grammar needs text this vocabulary cannot write (a character or special token it lacks)"
    )]
    NoAllowedToken {
        /// The output so far.
        written: String,
        /// Its length in bytes.
        offset: usize,
    },
    /// Every allowed token has probability zero (logits of minus infinity or NaN).
    #[error(
        "the model gives every token the grammar allows after {written:?} a probability of zero"
    )]
    NoProbableToken {
        /// The output so far.
        written: String,
    },
    /// The matcher refused a token its own mask allowed (a bug in Grail: please report it
    /// with the grammar and prompt).
    #[error(
        "the matcher refused token {token}, which its mask allowed; this is a bug in Grail, please report it with the grammar and prompt"
    )]
    Refused {
        /// The token.
        token: u32,
    },
    /// Bad options.
    #[error("{0}")]
    Options(String),
}

/// Writes up to `options.max_tokens` tokens after `prompt`, each allowed by `grammar`
/// when one is given (see the module doc).
pub fn decode(
    model: &mut dyn Model,
    prompt: &[u32],
    grammar: Option<&CompiledGrammar>,
    options: &DecodeOptions,
) -> Result<Generation, DecodeError> {
    decode_observed(model, prompt, grammar, options, &mut |_| {
        ControlFlow::Continue(())
    })
}

/// [`decode`], showing `observer` the bytes of each token as it is written (not the
/// end-of-generation token); when it answers `Break`, decoding ends there with
/// [`Finish::Interrupted`] (the bytes it was shown are in the output). Servers stream
/// through it, and stop when a client goes away.
pub fn decode_observed(
    model: &mut dyn Model,
    prompt: &[u32],
    grammar: Option<&CompiledGrammar>,
    options: &DecodeOptions,
    observer: &mut dyn FnMut(&[u8]) -> ControlFlow<()>,
) -> Result<Generation, DecodeError> {
    let mut sequence = SequenceDecoder::new(
        model.vocabulary().clone(),
        grammar,
        options,
        prompt.len(),
        model.context_length(),
    )?;
    let started = Instant::now();
    sequence.stats_mut().prompt_tokens_read = prime(model, prompt)?;
    sequence.stats_mut().prompt_s = started.elapsed().as_secs_f64();

    let decode_started = Instant::now();
    let finish = loop {
        let logits = model.logits();
        let token = match sequence.draw(logits)? {
            Draw::Chosen(token) => token,
            Draw::NeedsMask => {
                sequence.fill_mask();
                sequence.draw_masked(logits)?
            }
        };
        let mut tokenize = |bytes: &[u8]| {
            let text = std::str::from_utf8(bytes).ok()?;
            model.tokenize(text).ok()
        };
        match sequence.accept(token, observer, &mut tokenize)? {
            Next::Read(tokens) => model.forward(&tokens)?,
            Next::Finished(finish) => break finish,
        }
    };
    Ok(sequence.into_generation(finish, decode_started.elapsed().as_secs_f64()))
}
