//! One sequence's side of the decode loop: its matcher, sampler and output so far.
//!
//! [`crate::decode`] drives one sequence through a [`crate::Model`];
//! [`crate::BatchDecoder`] drives many through one batched model call per step. Both go
//! through this type, so a sequence gets the same tokens from the same logits either way.
//! A step is: [`SequenceDecoder::draw`] (the unconstrained draw checked first where that
//! gives the same distribution), the mask when the draw needs one
//! ([`SequenceDecoder::fill_mask`], or a batch fill through
//! [`SequenceDecoder::mask_parts`]) and [`SequenceDecoder::draw_masked`], then
//! [`SequenceDecoder::accept`], which says which tokens the model reads next (the drawn
//! one and, with jump-forward, the tokens the grammar forces after it) or that the output
//! is over.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;

use grail_engine::{CompiledGrammar, Matcher};
use grail_vocab::{TokenBitmask, VocabularyIndex};

use crate::decode::{DecodeError, DecodeOptions, DecodeStats, Finish, Generation, MaskStrategy};
use crate::model::ModelError;
use crate::reasoning_budget::BudgetTracker;
use crate::sampling::{TokenSampler, penalized};

/// The most forced bytes one jump-forward appends (the rest is forced at the next step).
const JUMP_FORWARD_BYTES: usize = 256;

/// The first half of a draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Draw {
    /// The token is chosen (allowed by the grammar, or there is none).
    Chosen(u32),
    /// The mask must be filled, then [`SequenceDecoder::draw_masked`] chooses.
    NeedsMask,
}

/// What a sequence does after a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// The model reads these tokens (the drawn one, then any the grammar forced after
    /// it), and the sequence draws again from the logits after the last.
    Read(Vec<u32>),
    /// The output is over.
    Finished(Finish),
}

/// Reads text into token ids for jump-forward (`None` where it cannot).
pub(crate) type Tokenize<'a> = &'a mut dyn FnMut(&[u8]) -> Option<Vec<u32>>;

/// One sequence being decoded.
pub(crate) struct SequenceDecoder {
    vocabulary: Arc<VocabularyIndex>,
    matcher: Option<Matcher>,
    mask: TokenBitmask,
    sampler: TokenSampler,
    options: DecodeOptions,
    /// Draw from every token first and check the draw (see [`crate::decode`]).
    check_first: bool,
    bytes: Vec<u8>,
    tokens: Vec<u32>,
    scratch: Vec<f32>,
    stats: DecodeStats,
    /// Grammar seconds spent on the token being drawn so far.
    grammar_s: f64,
    /// Where the reasoning block's budget stands, when there is one.
    reasoning: Option<BudgetTracker>,
}

impl SequenceDecoder {
    /// A sequence that will write after `prompt_tokens` prompt tokens, under `grammar`.
    pub(crate) fn new(
        vocabulary: Arc<VocabularyIndex>,
        grammar: Option<&CompiledGrammar>,
        options: &DecodeOptions,
        prompt_tokens: usize,
        context_length: usize,
    ) -> Result<SequenceDecoder, DecodeError> {
        options.sampling.validate().map_err(DecodeError::Options)?;
        if options.max_tokens == 0 {
            return Err(DecodeError::Options("max tokens must be at least 1".into()));
        }
        if grammar.is_some_and(|grammar| !grammar.has_matches()) {
            return Err(DecodeError::EmptyLanguage);
        }
        if let Some(budget) = &options.reasoning_budget
            && budget.open.is_empty()
            && budget.tokens == 0
        {
            return Err(DecodeError::Options(
                "a reasoning budget of 0 for a block the prompt opened: the first token is written inside it; ask for at least 1, or for no reasoning".into(),
            ));
        }
        let needed = prompt_tokens + options.max_tokens;
        if needed > context_length {
            return Err(ModelError::ContextFull {
                needed,
                limit: context_length,
            }
            .into());
        }
        let matcher = grammar.map(|grammar| Matcher::with_vocabulary(grammar, vocabulary.clone()));
        let check_first = options.mask == MaskStrategy::CheckFirst
            && (options.sampling.is_greedy() || options.sampling.draws_from_everything());
        Ok(SequenceDecoder {
            mask: TokenBitmask::new(vocabulary.vocabulary().len()),
            vocabulary,
            matcher,
            sampler: TokenSampler::new(options.sampling.clone()),
            options: options.clone(),
            check_first,
            bytes: Vec::new(),
            tokens: Vec::new(),
            scratch: Vec::new(),
            stats: DecodeStats {
                prompt_tokens,
                ..DecodeStats::default()
            },
            grammar_s: 0.0,
            reasoning: options.reasoning_budget.clone().map(BudgetTracker::new),
        })
    }

    /// Times and counts so far (the caller fills in the prompt's).
    pub(crate) fn stats_mut(&mut self) -> &mut DecodeStats {
        &mut self.stats
    }

    /// The output so far.
    pub(crate) fn written(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    /// Draws from `logits` without a mask where that is exact: the token when it is
    /// chosen, [`Draw::NeedsMask`] when the mask must be filled first.
    pub(crate) fn draw(&mut self, logits: &[f32]) -> Result<Draw, DecodeError> {
        let logits = penalized(
            logits,
            &self.tokens,
            &self.options.sampling,
            &mut self.scratch,
        );
        let Some(matcher) = self.matcher.as_mut() else {
            return match self.sampler.sample(logits, None) {
                Some(token) => Ok(Draw::Chosen(token)),
                None => Err(DecodeError::NoProbableToken {
                    written: String::from_utf8_lossy(&self.bytes).into_owned(),
                }),
            };
        };
        if !self.check_first {
            return Ok(Draw::NeedsMask);
        }
        // The unconstrained draw is not grammar work: only the check is timed.
        let drawn = self.sampler.sample(logits, None);
        let checking = Instant::now();
        let allowed = drawn.filter(|&token| matcher.is_token_allowed(token));
        self.grammar_s += checking.elapsed().as_secs_f64();
        Ok(allowed.map_or(Draw::NeedsMask, Draw::Chosen))
    }

    /// The matcher and the mask it is to fill, for a batch fill (`None` without a
    /// grammar). Call [`SequenceDecoder::add_grammar_time`] with its share of the time.
    pub(crate) fn mask_parts(&mut self) -> Option<(&mut Matcher, &mut TokenBitmask)> {
        let matcher = self.matcher.as_mut()?;
        Some((matcher, &mut self.mask))
    }

    /// Counts `seconds` of grammar work (a share of a batch fill) for the current token.
    pub(crate) fn add_grammar_time(&mut self, seconds: f64) {
        self.grammar_s += seconds;
    }

    /// Fills the mask for [`SequenceDecoder::draw_masked`] (one sequence alone).
    pub(crate) fn fill_mask(&mut self) {
        if let Some(matcher) = self.matcher.as_mut() {
            let filling = Instant::now();
            matcher.fill_mask(&mut self.mask);
            self.grammar_s += filling.elapsed().as_secs_f64();
        }
    }

    /// Draws from `logits` among the tokens of the filled mask.
    pub(crate) fn draw_masked(&mut self, logits: &[f32]) -> Result<u32, DecodeError> {
        let drawing = Instant::now();
        self.stats.full_masks += 1;
        if self.mask.count() == 0 {
            return Err(DecodeError::NoAllowedToken {
                written: self.written(),
                offset: self.bytes.len(),
            });
        }
        let logits = penalized(
            logits,
            &self.tokens,
            &self.options.sampling,
            &mut self.scratch,
        );
        let token = self.sampler.sample(logits, Some(&self.mask));
        self.grammar_s += drawing.elapsed().as_secs_f64();
        token.ok_or_else(|| DecodeError::NoProbableToken {
            written: String::from_utf8_lossy(&self.bytes).into_owned(),
        })
    }

    /// Takes the drawn `token`: the matcher accepts it, `observer` sees its bytes, and the
    /// answer says what the model reads next, or that the output is over. With
    /// jump-forward on, the tokens the grammar forces after it are taken too (each shown
    /// to `observer`) and read with it; `tokenize` reads the forced text.
    pub(crate) fn accept(
        &mut self,
        token: u32,
        observer: &mut dyn FnMut(&[u8]) -> ControlFlow<()>,
        tokenize: Tokenize<'_>,
    ) -> Result<Next, DecodeError> {
        if let Some(matcher) = self.matcher.as_mut() {
            let accepting = Instant::now();
            if matcher.accept_token(token).is_err() {
                return Err(DecodeError::Refused { token });
            }
            self.grammar_s += accepting.elapsed().as_secs_f64();
        }
        let vocabulary = self.vocabulary.clone();
        let vocabulary = vocabulary.vocabulary();
        self.tokens.push(token);
        if vocabulary.is_end_of_generation(token) {
            self.close_token();
            return Ok(Next::Finished(Finish::Stop));
        }
        self.bytes.extend_from_slice(vocabulary.bytes(token));
        if observer(vocabulary.bytes(token)).is_break() {
            self.close_token();
            return Ok(Next::Finished(Finish::Interrupted));
        }
        let mut read = vec![token];
        if let Some(finish) = self.ended() {
            self.close_token();
            return Ok(Next::Finished(finish));
        }
        let closing = self.reasoning_close(tokenize)?;
        if let Some(finish) = self.take_forced(closing, &mut read, observer) {
            self.close_token();
            return Ok(Next::Finished(finish));
        }
        if self.options.jump_forward {
            let forcing = Instant::now();
            let budget = self.options.max_tokens - self.tokens.len();
            let forced = self.forced_tokens(budget, tokenize)?;
            self.grammar_s += forcing.elapsed().as_secs_f64();
            if let Some(finish) = self.take_forced(forced, &mut read, observer) {
                self.close_token();
                return Ok(Next::Finished(finish));
            }
        }
        self.close_token();
        Ok(Next::Read(read))
    }

    /// Takes `forced` (tokens the matcher already accepted, written without a draw) into
    /// the output and `read`, each shown to `observer`; why the output is over after them,
    /// if it is.
    fn take_forced(
        &mut self,
        forced: Vec<u32>,
        read: &mut Vec<u32>,
        observer: &mut dyn FnMut(&[u8]) -> ControlFlow<()>,
    ) -> Option<Finish> {
        if forced.is_empty() {
            return None;
        }
        let vocabulary = self.vocabulary.clone();
        let vocabulary = vocabulary.vocabulary();
        for token in forced {
            self.tokens.push(token);
            self.stats.forced_tokens += 1;
            self.bytes.extend_from_slice(vocabulary.bytes(token));
            read.push(token);
            if observer(vocabulary.bytes(token)).is_break() {
                return Some(Finish::Interrupted);
            }
        }
        self.ended()
    }

    /// The tokens of the reasoning block's closing marker when the budget is spent (see
    /// [`crate::ReasoningBudget`]), already accepted by the matcher; none otherwise (or when
    /// the token limit leaves no room for them, as the output is cut off anyway).
    fn reasoning_close(&mut self, tokenize: Tokenize<'_>) -> Result<Vec<u32>, DecodeError> {
        let Some(tracker) = self.reasoning.as_mut() else {
            return Ok(Vec::new());
        };
        if !tracker.due(&self.bytes, self.tokens.len()) {
            return Ok(Vec::new());
        }
        tracker.closed();
        let close = tracker.close().to_string();
        let tokens = tokenize(close.as_bytes()).ok_or_else(|| {
            DecodeError::Options(format!(
                "the model's tokenizer cannot write the reasoning block's end {close:?}"
            ))
        })?;
        if tokens.len() > self.options.max_tokens - self.tokens.len() {
            return Ok(Vec::new());
        }
        if let Some(matcher) = self.matcher.as_mut() {
            let accepting = Instant::now();
            let accepted = matcher.accept_tokens(&tokens);
            self.grammar_s += accepting.elapsed().as_secs_f64();
            if accepted.is_err() {
                return Err(DecodeError::Options(format!(
                    "the grammar does not take the reasoning block's end {close:?} here: a reasoning budget needs a grammar with a reasoning block (think on)"
                )));
            }
        }
        Ok(tokens)
    }

    /// Why the output is over after its last token, if it is.
    fn ended(&mut self) -> Option<Finish> {
        if let Some(matcher) = self.matcher.as_mut() {
            let ending = Instant::now();
            let ended = matcher.allows_nothing_more();
            self.grammar_s += ending.elapsed().as_secs_f64();
            if ended {
                return Some(Finish::Stop);
            }
        }
        if self.tokens.len() >= self.options.max_tokens {
            let complete = self
                .matcher
                .as_ref()
                .is_none_or(|matcher| matcher.is_accepting());
            return Some(if complete {
                Finish::Length
            } else {
                Finish::Truncated
            });
        }
        None
    }

    /// The tokens the grammar forces next (at most `budget`), already accepted by the
    /// matcher: jump-forward's safe tokens (docs/jump-forward.md). A tokenizer that does
    /// not spell the forced text forces nothing.
    fn forced_tokens(
        &mut self,
        budget: usize,
        tokenize: Tokenize<'_>,
    ) -> Result<Vec<u32>, DecodeError> {
        let Some(matcher) = self.matcher.as_mut() else {
            return Ok(Vec::new());
        };
        let Ok(mut jump) = matcher.jump_forward_tokens(JUMP_FORWARD_BYTES, tokenize) else {
            return Ok(Vec::new());
        };
        jump.tokens.truncate(budget);
        if matcher.accept_tokens(&jump.tokens).is_err() {
            // jump_forward_tokens keeps only tokens the matcher accepts in turn.
            return Err(DecodeError::Refused {
                token: jump.tokens[0],
            });
        }
        Ok(jump.tokens)
    }

    /// Records the grammar time of the token just taken.
    fn close_token(&mut self) {
        let micros = if self.matcher.is_some() {
            self.grammar_s * 1e6
        } else {
            0.0
        };
        self.stats.grammar_us.push(micros);
        self.grammar_s = 0.0;
    }

    /// The output, ended by `finish`; `decode_s` is the caller's clock.
    pub(crate) fn into_generation(self, finish: Finish, decode_s: f64) -> Generation {
        let mut stats = self.stats;
        stats.decode_s = decode_s;
        Generation {
            bytes: self.bytes,
            tokens: self.tokens,
            finish,
            stats,
        }
    }
}
