//! Many sequences decoded together (continuous batching): one model call per step reads
//! the next tokens of every running sequence and the prompts of those that joined, so a
//! step costs little more than one sequence's while the model's weights are read once.
//!
//! - A request joins at the next step ([`BatchDecoder::admit`]) when a sequence of the
//!   model is free and the attention cache has room for its prompt and `max_tokens`
//!   (counted without sharing, so a running sequence never finds the cache full);
//!   otherwise it is told to wait ([`Admission::Busy`]). A finished sequence leaves at
//!   once.
//! - Prompts share prefixes: a new prompt starts from the longest prefix it shares with
//!   any sequence the model holds, running or finished ([`BatchModel::share_prefix`]),
//!   and reads only the rest. The finished sequences' tokens stay in the cache for that
//!   until their room is needed (least recently used first). Requests that arrive
//!   together share too: one whose prompt shares a longer prefix with a prompt still
//!   being read waits until that prefix is read, then takes it. What a sequence did not
//!   read is in its [`crate::DecodeStats`] (`prompt_tokens` − `prompt_tokens_read`).
//! - Each sequence decodes exactly as [`crate::decode`] would with the same logits (the
//!   same [`SequenceDecoder`]); the masks the step needs are filled in one batch call
//!   ([`grail_engine::fill_masks`]). The model's logits may depend on the batch's size:
//!   llama.cpp's CPU kernels do (SmolLM2's logits for a token read alone and in a batch
//!   differ by up to ~1), so a greedy output in a batch may part from its lone decode
//!   where two tokens nearly tie.
//! - Long prompts are read over several steps, at most [`BatchModel::batch_tokens`]
//!   tokens per step over all sequences, running sequences' tokens first.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;

use grail_engine::{CompiledGrammar, Matcher, fill_masks};
use grail_vocab::VocabularyIndex;

use crate::batch_model::{BatchModel, SequenceRead};
use crate::decode::{DecodeError, DecodeOptions, Finish, Generation};
use crate::model::ModelError;
use crate::sequence::{Draw, Next, SequenceDecoder};

/// A sequence of a [`BatchDecoder`], unique over its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SequenceId(pub u64);

/// Prompt tokens still to be read by another sequence that are worth waiting for
/// (a step's delay) rather than reading them again.
const WORTH_WAITING_TOKENS: usize = 16;

/// The answer to [`BatchDecoder::admit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// The sequence joins at the next step; its id is in [`StepReport`]s.
    Started(SequenceId),
    /// No sequence of the model is free, or the cache has no room for it now: ask again
    /// after a step.
    Busy,
}

/// What one [`BatchDecoder::step`] did.
#[derive(Debug, Default)]
pub struct StepReport {
    /// The bytes each sequence wrote in this step (one token, or the forced ones after
    /// it), in sequence order.
    pub written: Vec<(SequenceId, Vec<u8>)>,
    /// The sequences that ended in this step, with their outputs or errors.
    pub finished: Vec<(SequenceId, Result<Generation, DecodeError>)>,
    /// Tokens the model read in this step, over all sequences.
    pub tokens_read: usize,
}

/// A sequence on its way.
struct Running {
    id: SequenceId,
    decoder: SequenceDecoder,
    /// Its prompt.
    prompt: Vec<u32>,
    /// What the model reads next for it: the rest of its prompt, or its drawn token and
    /// the forced ones after it.
    pending: Vec<u32>,
    /// The sequence (id, slot) reading a prefix of this prompt, and that prefix's length:
    /// this one waits until it is read, then shares it.
    waiting_for: Option<(SequenceId, usize, usize)>,
    /// Whether `pending` is (the rest of) the prompt.
    in_prompt: bool,
    /// Cache tokens set aside for it: its prompt and `max_tokens`.
    reserved: usize,
    admitted: Instant,
    decode_started: Option<Instant>,
    cancelled: bool,
}

/// Decodes up to [`BatchModel::sequences`] sequences at once (see the module doc).
pub struct BatchDecoder {
    model: Box<dyn BatchModel>,
    slots: Vec<Option<Running>>,
    /// When each model sequence was last used, for evicting cached prompts.
    last_used: Vec<u64>,
    clock: u64,
    next_id: u64,
    mask_rows: Vec<u32>,
}

impl std::fmt::Debug for BatchDecoder {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("BatchDecoder")
            .field("sequences", &self.slots.len())
            .field("running", &self.running())
            .finish()
    }
}

impl BatchDecoder {
    /// A decoder over `model`'s sequences.
    pub fn new(model: Box<dyn BatchModel>) -> BatchDecoder {
        let sequences = model.sequences().max(1);
        BatchDecoder {
            model,
            slots: (0..sequences).map(|_| None).collect(),
            last_used: vec![0; sequences],
            clock: 0,
            next_id: 0,
            mask_rows: Vec::new(),
        }
    }

    /// The model (for prompts: its tokenizer and chat template).
    pub fn model(&self) -> &dyn BatchModel {
        self.model.as_ref()
    }

    /// How many sequences are running.
    pub fn running(&self) -> usize {
        self.slots.iter().flatten().count()
    }

    /// How many sequences may run at once.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Starts a sequence that writes after `prompt` under `grammar` (see the module doc):
    /// an error for a request that can never run (bad options, a grammar that matches
    /// nothing, more tokens than one sequence or the cache holds), [`Admission::Busy`]
    /// when it must wait for room.
    pub fn admit(
        &mut self,
        prompt: &[u32],
        grammar: Option<&CompiledGrammar>,
        options: &DecodeOptions,
    ) -> Result<Admission, DecodeError> {
        if prompt.is_empty() {
            return Err(ModelError::Tokenize("the prompt has no tokens".into()).into());
        }
        let decoder = SequenceDecoder::new(
            self.vocabulary(),
            grammar,
            options,
            prompt.len(),
            self.model.context_length(),
        )?;
        let reserved = prompt.len() + options.max_tokens;
        let cache = self.model.cache_tokens();
        if reserved > cache {
            return Err(ModelError::ContextFull {
                needed: reserved,
                limit: cache,
            }
            .into());
        }
        let reserved_by_running: usize = self.slots.iter().flatten().map(|run| run.reserved).sum();
        if reserved_by_running + reserved > cache {
            return Ok(Admission::Busy);
        }
        let Some(slot) = self.choose_slot(prompt) else {
            return Ok(Admission::Busy);
        };
        let cached = self.longest_cached_prefix(prompt);
        let waiting_for = self
            .longest_prefix_being_read(prompt)
            .filter(|&(_, _, len)| len >= cached + WORTH_WAITING_TOKENS);
        let mut decoder = decoder;
        let pending = if waiting_for.is_some() {
            Vec::new()
        } else {
            // Share first, then evict: a cached prefix read from an idle sequence is not
            // lost when that sequence's tokens must go.
            let shared = self.reuse_prefix(slot, prompt)?;
            decoder.stats_mut().prompt_tokens_read = prompt.len() - shared;
            prompt[shared..].to_vec()
        };
        self.make_room(slot, cache - reserved_by_running - reserved)?;
        let id = SequenceId(self.next_id);
        self.next_id += 1;
        self.touch(slot);
        self.slots[slot] = Some(Running {
            id,
            decoder,
            prompt: prompt.to_vec(),
            pending,
            waiting_for,
            in_prompt: true,
            reserved,
            admitted: Instant::now(),
            decode_started: None,
            cancelled: false,
        });
        Ok(Admission::Started(id))
    }

    /// Ends sequence `id` at the next step ([`Finish::Interrupted`], with what it wrote).
    pub fn cancel(&mut self, id: SequenceId) {
        if let Some(run) = self.slots.iter_mut().flatten().find(|run| run.id == id) {
            run.cancelled = true;
        }
    }

    /// One step: one model call reads every running sequence's next tokens (and parts of
    /// joining prompts), then each sequence with new logits draws its next token.
    pub fn step(&mut self) -> StepReport {
        let mut report = StepReport::default();
        self.finish_cancelled(&mut report);
        self.take_awaited_prefixes(&mut report);
        let plan = self.plan_reads();
        if plan.is_empty() {
            return report;
        }
        let reads: Vec<SequenceRead<'_>> = plan
            .iter()
            .map(|&(slot, count, logits)| SequenceRead {
                sequence: slot,
                tokens: &self.slots[slot].as_ref().expect("planned").pending[..count],
                logits,
            })
            .collect();
        report.tokens_read = plan.iter().map(|&(_, count, _)| count).sum();
        if let Err(error) = self.model.forward_batch(&reads) {
            for &(slot, _, _) in &plan {
                self.fail(slot, error.clone().into(), &mut report);
            }
            return report;
        }
        let mut drawing = Vec::new();
        for &(slot, count, logits) in &plan {
            self.touch(slot);
            let run = self.slots[slot].as_mut().expect("planned");
            run.pending.drain(..count);
            if logits {
                if run.in_prompt {
                    run.in_prompt = false;
                    run.decoder.stats_mut().prompt_s = run.admitted.elapsed().as_secs_f64();
                    run.decode_started = Some(Instant::now());
                }
                drawing.push(slot);
            }
        }
        self.draw_tokens(&drawing, &mut report);
        report
    }

    fn vocabulary(&self) -> Arc<VocabularyIndex> {
        self.model.vocabulary().clone()
    }

    fn touch(&mut self, slot: usize) {
        self.clock += 1;
        self.last_used[slot] = self.clock;
    }

    /// The free model sequence whose cached tokens share the longest prefix with
    /// `prompt` (the least recently used among equals); `None` when all run.
    fn choose_slot(&self, prompt: &[u32]) -> Option<usize> {
        (0..self.slots.len())
            .filter(|&slot| self.slots[slot].is_none())
            .max_by_key(|&slot| {
                let shared = common_prefix(self.model.sequence_tokens(slot), prompt);
                (shared, std::cmp::Reverse(self.last_used[slot]))
            })
    }

    /// Forgets the cached tokens of free sequences other than `keep` (the one being
    /// admitted, whose tokens are its prompt's), least recently used first, until they
    /// hold at most `room` tokens.
    fn make_room(&mut self, keep: usize, room: usize) -> Result<(), DecodeError> {
        let mut idle: Vec<usize> = (0..self.slots.len())
            .filter(|&slot| slot != keep && self.slots[slot].is_none())
            .collect();
        idle.sort_by_key(|&slot| self.last_used[slot]);
        let mut held: usize = idle
            .iter()
            .map(|&slot| self.model.sequence_tokens(slot).len())
            .sum();
        for slot in idle {
            if held <= room {
                break;
            }
            held -= self.model.sequence_tokens(slot).len();
            self.model.truncate_sequence(slot, 0)?;
        }
        Ok(())
    }

    /// The longest prefix of `prompt` that a model sequence holds.
    fn longest_cached_prefix(&self, prompt: &[u32]) -> usize {
        (0..self.slots.len())
            .map(|slot| common_prefix(self.model.sequence_tokens(slot), prompt))
            .max()
            .unwrap_or(0)
    }

    /// The running sequence whose prompt, read or not, shares the longest prefix with
    /// `prompt`, as (id, slot, length), where that prefix is not all read yet.
    fn longest_prefix_being_read(&self, prompt: &[u32]) -> Option<(SequenceId, usize, usize)> {
        let limit = prompt.len() - 1;
        (0..self.slots.len())
            .filter_map(|slot| {
                let run = self.slots[slot].as_ref()?;
                let len = common_prefix(&run.prompt, prompt).min(limit);
                (run.in_prompt && len > self.prompt_read(slot)).then_some((run.id, slot, len))
            })
            .max_by_key(|&(_, _, len)| len)
    }

    /// How many prompt tokens the running sequence in `slot` has read (none while it
    /// waits: its model sequence may still hold an earlier one's tokens).
    fn prompt_read(&self, slot: usize) -> usize {
        match &self.slots[slot] {
            Some(run) if run.waiting_for.is_some() => 0,
            _ => self.model.sequence_tokens(slot).len(),
        }
    }

    /// Sequences waiting for a prefix another is reading take it once it is read (or
    /// once that sequence is gone): they share what the cache then holds and read the
    /// rest.
    fn take_awaited_prefixes(&mut self, report: &mut StepReport) {
        for slot in 0..self.slots.len() {
            let Some((source_id, source, len)) =
                self.slots[slot].as_ref().and_then(|run| run.waiting_for)
            else {
                continue;
            };
            let source_reading = self.slots[source]
                .as_ref()
                .is_some_and(|run| run.id == source_id && run.in_prompt)
                && self.prompt_read(source) < len;
            if source_reading {
                continue;
            }
            let prompt = std::mem::take(&mut self.slots[slot].as_mut().expect("waiting").prompt);
            match self.reuse_prefix(slot, &prompt) {
                Ok(shared) => {
                    let run = self.slots[slot].as_mut().expect("waiting");
                    run.decoder.stats_mut().prompt_tokens_read = prompt.len() - shared;
                    run.pending = prompt[shared..].to_vec();
                    run.waiting_for = None;
                    run.prompt = prompt;
                }
                Err(error) => self.fail(slot, error, report),
            }
        }
    }

    /// Makes `slot` hold the longest prefix of `prompt` that any model sequence holds
    /// (short of the whole prompt: the logits come from reading its last token), and
    /// returns its length.
    fn reuse_prefix(&mut self, slot: usize, prompt: &[u32]) -> Result<usize, DecodeError> {
        let own = common_prefix(self.model.sequence_tokens(slot), prompt);
        let (source, shared) = (0..self.slots.len())
            .map(|other| {
                let shared = common_prefix(self.model.sequence_tokens(other), prompt);
                (other, shared)
            })
            .filter(|&(other, shared)| other != slot && shared > own)
            .max_by_key(|&(_, shared)| shared)
            .unwrap_or((slot, own));
        let shared = shared.min(prompt.len() - 1);
        if source == slot {
            self.model.truncate_sequence(slot, shared)?;
        } else {
            self.model.share_prefix(source, slot, shared)?;
        }
        Ok(shared)
    }

    /// Which sequences read how many of their pending tokens in this step, and whether
    /// they then want logits: running sequences first (a token or a few each), then
    /// prompts, within the model's batch size.
    fn plan_reads(&self) -> Vec<(usize, usize, bool)> {
        let mut order: Vec<usize> = (0..self.slots.len())
            .filter(|&slot| {
                self.slots[slot]
                    .as_ref()
                    .is_some_and(|run| !run.pending.is_empty())
            })
            .collect();
        order.sort_by_key(|&slot| {
            let run = self.slots[slot].as_ref().expect("filtered");
            (run.in_prompt, run.pending.len())
        });
        let mut budget = self.model.batch_tokens().max(1);
        let mut plan = Vec::new();
        for slot in order {
            if budget == 0 {
                break;
            }
            let pending = self.slots[slot].as_ref().expect("filtered").pending.len();
            let count = pending.min(budget);
            budget -= count;
            plan.push((slot, count, count == pending));
        }
        plan
    }

    /// Draws the next token of each sequence in `slots` from its new logits (the masks
    /// that are needed filled in one batch), and takes it.
    fn draw_tokens(&mut self, slots: &[usize], report: &mut StepReport) {
        let mut drawn: HashMap<usize, u32> = HashMap::new();
        let mut masked = Vec::new();
        for &slot in slots {
            let run = self.slots[slot].as_mut().expect("drawing");
            match run.decoder.draw(self.model.sequence_logits(slot)) {
                Ok(Draw::Chosen(token)) => {
                    drawn.insert(slot, token);
                }
                Ok(Draw::NeedsMask) => masked.push(slot),
                Err(error) => self.fail(slot, error, report),
            }
        }
        self.fill_batch_masks(&masked);
        for &slot in &masked {
            let run = self.slots[slot].as_mut().expect("drawing");
            match run.decoder.draw_masked(self.model.sequence_logits(slot)) {
                Ok(token) => {
                    drawn.insert(slot, token);
                }
                Err(error) => self.fail(slot, error, report),
            }
        }
        let model = self.model.as_ref();
        let mut tokenize = |bytes: &[u8]| {
            let text = std::str::from_utf8(bytes).ok()?;
            model.tokenize(text).ok()
        };
        for &slot in slots {
            let Some(&token) = drawn.get(&slot) else {
                continue;
            };
            let run = self.slots[slot].as_mut().expect("drawing");
            let mut written = Vec::new();
            let mut observer = |bytes: &[u8]| {
                written.extend_from_slice(bytes);
                ControlFlow::Continue(())
            };
            let next = run.decoder.accept(token, &mut observer, &mut tokenize);
            if !written.is_empty() {
                report.written.push((run.id, written));
            }
            match next {
                Ok(Next::Read(tokens)) => run.pending = tokens,
                Ok(Next::Finished(finish)) => {
                    let run = self.slots[slot].take().expect("drawing");
                    report.finished.push((run.id, Ok(generation(run, finish))));
                }
                Err(error) => {
                    let run = self.slots[slot].take().expect("drawing");
                    report.finished.push((run.id, Err(error)));
                }
            }
        }
    }

    /// Fills the masks of the sequences in `slots` in one batch call, each its share of
    /// the time.
    fn fill_batch_masks(&mut self, slots: &[usize]) {
        if slots.is_empty() {
            return;
        }
        let filling = Instant::now();
        let row_words = self.model.vocabulary().vocabulary().len().div_ceil(32);
        self.mask_rows.clear();
        self.mask_rows.resize(row_words * slots.len(), 0);
        {
            let mut matchers: Vec<&mut Matcher> = Vec::with_capacity(slots.len());
            for (slot, run) in self.slots.iter_mut().enumerate() {
                if !slots.contains(&slot) {
                    continue;
                }
                if let Some((matcher, _)) = run.as_mut().and_then(|run| run.decoder.mask_parts()) {
                    matchers.push(matcher);
                }
            }
            fill_masks(&mut matchers, &mut self.mask_rows, row_words);
        }
        let share = filling.elapsed().as_secs_f64() / slots.len() as f64;
        // The rows follow the slots' order, as the matchers were gathered.
        let mut rows = self.mask_rows.chunks(row_words);
        for run in self
            .slots
            .iter_mut()
            .enumerate()
            .filter_map(|(slot, run)| slots.contains(&slot).then_some(run.as_mut()).flatten())
        {
            if let Some((_, mask)) = run.decoder.mask_parts() {
                let row = rows.next().expect("a row per matcher");
                let words = mask.words().len();
                mask.words_mut().copy_from_slice(&row[..words]);
            }
            run.decoder.add_grammar_time(share);
        }
    }

    fn finish_cancelled(&mut self, report: &mut StepReport) {
        for slot in 0..self.slots.len() {
            if self.slots[slot].as_ref().is_some_and(|run| run.cancelled) {
                let run = self.slots[slot].take().expect("cancelled");
                report
                    .finished
                    .push((run.id, Ok(generation(run, Finish::Interrupted))));
            }
        }
    }

    /// Ends the sequence in `slot` with `error`; its cache is dropped (its state is
    /// unknown after a failed model call).
    fn fail(&mut self, slot: usize, error: DecodeError, report: &mut StepReport) {
        if let Some(run) = self.slots[slot].take() {
            report.finished.push((run.id, Err(error)));
        }
        let _ = self.model.truncate_sequence(slot, 0);
    }
}

/// The output of a finished sequence.
fn generation(run: Running, finish: Finish) -> Generation {
    let decode_s = run
        .decode_started
        .map_or(0.0, |started| started.elapsed().as_secs_f64());
    run.decoder.into_generation(finish, decode_s)
}

/// How many leading tokens `a` and `b` share.
fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(a, b)| a == b).count()
}
