//! `Matcher`: a parse state over one grammar (and optionally a vocabulary) — text or
//! tokens in; next-character rules, forced text and token masks out.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use grail_engine::{AcceptError, Matcher as RustMatcher, NextCharacters, NextRule};
use grail_vocab::TokenBitmask;
use napi::Either;
use napi::bindgen_prelude::{Buffer, Function, Null, Uint32ArraySlice};
use napi_derive::napi;
use rustc_hash::FxHashMap;

use crate::errors::{invalid, utf16_index};
use crate::grammar::Grammar;
use crate::rules::{RuleObject, expected, rule_objects};
use crate::vocabulary::Vocabulary;

/// Options of `new Matcher`.
#[napi(object)]
pub struct MatcherOptions {
    /// Keep history to roll back only the last this many tokens (null or absent: all):
    /// memory stays bounded instead of growing with the text (xgrammar's
    /// `max_rollback_tokens`).
    pub max_rollback_tokens: Option<Either<u32, Null>>,
}

/// Where text stopped matching.
#[napi(object)]
pub struct InputFailure {
    /// The JavaScript string index (UTF-16 units) of the first refused character of the
    /// text given (the `gbnf` package's `InputParseError.pos`).
    pub pos: u32,
    /// The same, as a byte offset into the text's UTF-8.
    pub offset: u32,
    /// What could have come there, in GBNF spelling ("expected one of "a", [0-9]").
    pub expected: String,
}

/// The state of one text or token sequence under a grammar.
///
/// `add` returns a new matcher (the `gbnf` package's immutable states are built on it);
/// `acceptText`, `acceptToken` and `rollback` change this one. With a vocabulary,
/// `fillNextTokenBitmask` writes the tokens allowed next into a `Uint32Array` (bit
/// t % 32 of word t / 32 set when token t is allowed). With `{ maxRollbackTokens: k }`,
/// only the last k tokens can be rolled back.
#[napi]
pub struct Matcher {
    pub(crate) inner: RustMatcher,
    mask: Option<TokenBitmask>,
    /// An end-of-generation token was accepted: nothing may follow.
    pub(crate) ended: bool,
    /// `ended` before each accepted token that can still be rolled back (the last
    /// `max_rollback_tokens`, when limited).
    ended_history: VecDeque<bool>,
    /// The most tokens `rollback` can undo (None: all); the engine keeps history for
    /// them (`set_token_history_limit`).
    max_rollback_tokens: Option<usize>,
    /// Numbers for the distinct rule lists met, shared with forks (see `step`).
    rule_lists: Arc<Mutex<RuleLists>>,
    /// The history limit set (steps), if any.
    history_limit: Option<usize>,
}

/// Distinct next-character rule lists, numbered in the order met: the JavaScript states
/// keep the rule objects of each number, so a step whose rules were met before builds no
/// objects.
#[derive(Default)]
struct RuleLists {
    numbers: FxHashMap<Vec<u32>, u32>,
    /// The lists by number, encoded.
    lists: Vec<Vec<u32>>,
    /// The key being looked up (kept to reuse its allocation).
    key: Vec<u32>,
    /// Numbers by the matcher's next-character key (`Matcher::next_characters_key`): a
    /// state met before finds its number without computing its rules (capped as
    /// `numbers`).
    by_state: FxHashMap<Vec<u32>, u32>,
    /// The state key being looked up.
    state_key: Vec<u32>,
}

/// Most rule lists numbered per grammar; past that, steps report "not numbered".
const MAX_RULE_LISTS: usize = 1 << 14;

/// "Not numbered": the caller asks for the rules themselves.
const UNNUMBERED: u32 = u32::MAX;

/// The rules as numbers: per rule its kind, its length and its items.
fn encode(next: &NextCharacters, out: &mut Vec<u32>) {
    out.clear();
    for rule in &next.rules {
        match rule {
            NextRule::Char(ranges) | NextRule::CharExclude(ranges) => {
                out.push(if matches!(rule, NextRule::Char(_)) {
                    0
                } else {
                    1
                });
                out.push(ranges.len() as u32);
                for &(first, last) in ranges {
                    out.extend([first, last]);
                }
            }
            NextRule::Token { ids, negated } => {
                out.extend([2 + u32::from(*negated), ids.len() as u32]);
                out.extend(ids);
            }
            NextRule::End => out.push(4),
        }
    }
}

/// The rules encoded by `encode`, as objects.
fn decode(encoded: &[u32]) -> Vec<RuleObject> {
    let mut rules = Vec::new();
    let mut at = 0;
    let range = |first: u32, last: u32| {
        if first == last {
            Either::A(first)
        } else {
            Either::B(vec![first, last])
        }
    };
    while at < encoded.len() {
        let kind = encoded[at];
        if kind == 4 {
            rules.push(RuleObject {
                kind: "end".to_string(),
                value: None,
                negated: None,
            });
            at += 1;
            continue;
        }
        let count = encoded[at + 1] as usize;
        at += 2;
        if kind < 2 {
            let items = (0..count)
                .map(|index| range(encoded[at + 2 * index], encoded[at + 2 * index + 1]))
                .collect();
            at += 2 * count;
            rules.push(RuleObject {
                kind: if kind == 0 { "char" } else { "char_exclude" }.to_string(),
                value: Some(items),
                negated: None,
            });
        } else {
            let ids = encoded[at..at + count]
                .iter()
                .map(|&id| Either::A(id))
                .collect();
            at += count;
            rules.push(RuleObject {
                kind: "token".to_string(),
                value: Some(ids),
                negated: Some(kind == 3),
            });
        }
    }
    rules
}

impl Matcher {
    pub(crate) fn mask(&mut self) -> napi::Result<&mut TokenBitmask> {
        self.mask.as_mut().ok_or_else(|| {
            invalid(
                "this matcher has no vocabulary: create it with new Matcher(grammar, vocabulary)",
            )
        })
    }

    /// Computes the mask of the tokens allowed next into `self.mask`.
    fn compute_mask(&mut self) -> napi::Result<&TokenBitmask> {
        let ended = self.ended;
        let mask = self.mask.as_mut().ok_or_else(|| {
            invalid(
                "this matcher has no vocabulary: create it with new Matcher(grammar, vocabulary)",
            )
        })?;
        if ended {
            mask.clear();
        } else {
            self.inner.fill_mask(mask);
        }
        Ok(mask)
    }

    fn copy(&self) -> Matcher {
        Matcher {
            inner: self.inner.fork(),
            mask: self.mask.clone(),
            ended: self.ended,
            ended_history: self.ended_history.clone(),
            max_rollback_tokens: self.max_rollback_tokens,
            rule_lists: self.rule_lists.clone(),
            history_limit: self.history_limit,
        }
    }

    /// True when `tokens` more tokens could not all be rolled back (`maxRollbackTokens`,
    /// or a history limit in steps).
    fn beyond_rollback(&self, tokens: usize) -> bool {
        self.history_limit.is_some() || self.max_rollback_tokens.is_some_and(|limit| tokens > limit)
    }

    /// Runs `walk`, which accepts at most `tokens` tokens and says how many as its second
    /// value, and puts the matcher back as it was: by rolling them back, or, when they
    /// could be more than the history keeps, by walking a copy instead.
    fn on_draft<R>(
        &mut self,
        tokens: usize,
        walk: impl FnOnce(&mut Matcher) -> napi::Result<(R, usize)>,
    ) -> napi::Result<R> {
        if self.beyond_rollback(tokens) {
            let mut copy = self.copy();
            return Ok(walk(&mut copy)?.0);
        }
        let (answer, accepted) = walk(self)?;
        self.rollback(Some(accepted as u32))?;
        Ok(answer)
    }

    /// The masks along `draft` into `rows` (`words` words each; a row per draft token and
    /// one more), each as `fillNextTokenBitmask` writes it after the tokens before it were
    /// accepted with `acceptToken`, until a token is refused: returns how many rows were
    /// filled. Every id of `draft` is in the vocabulary. The matcher does not move.
    fn draft_rows(&mut self, draft: &[u32], words: usize, rows: &mut [u32]) -> napi::Result<usize> {
        if self.ended {
            rows[..words].fill(0);
            return Ok(1);
        }
        // Up to the first end-of-generation token the engine's masks are acceptToken's;
        // after one, `ended` may empty the masks (the engine allows the end again).
        let head = self.inner.vocabulary().map_or(draft.len(), |index| {
            draft
                .iter()
                .position(|&id| index.vocabulary().is_end_of_generation(id))
                .unwrap_or(draft.len())
        });
        let head_rows = &mut rows[..(head + 1) * words];
        // The engine walks a draft longer than the token limit on a copy itself.
        let filled = self.inner.fill_draft_masks(&draft[..head], head_rows);
        if filled <= head || head == draft.len() {
            return Ok(filled);
        }
        // The tokens from the end-of-generation token on, one by one.
        self.on_draft(draft.len(), |matcher| {
            let (mut accepted, mut filled) = (0, filled);
            for &id in draft {
                if !matcher.accept_token(id)? {
                    break;
                }
                accepted += 1;
                if accepted > head {
                    let row = &mut rows[accepted * words..(accepted + 1) * words];
                    if matcher.ended {
                        row.fill(0);
                    } else {
                        matcher.inner.fill_mask_words(row);
                    }
                    filled += 1;
                }
            }
            Ok((filled, accepted))
        })
    }

    /// Accepts `text` all or nothing: None, or where it stopped matching (the state
    /// unchanged).
    fn advance_text(&mut self, text: &str) -> napi::Result<Option<InputFailure>> {
        if self.ended && !text.is_empty() {
            return Ok(Some(InputFailure {
                pos: 0,
                offset: 0,
                expected: "nothing can come next".to_string(),
            }));
        }
        if self
            .history_limit
            .is_some_and(|limit| text.len() > limit / 2)
        {
            // Too long to roll back within the history: on a copy, kept if it all matched.
            let mut copy = self.copy();
            copy.history_limit = None;
            copy.inner.set_history_limit(None);
            let failure = copy.advance_text(text)?;
            if failure.is_none() {
                copy.history_limit = self.history_limit;
                copy.inner.set_history_limit(self.history_limit);
                *self = copy;
            }
            return Ok(failure);
        }
        let before = self.inner.history_len();
        match self.inner.accept_str(text) {
            Ok(()) => Ok(None),
            Err(AcceptError::Rejected { consumed }) => {
                // What could have come at the start of the refused character.
                let mut start = consumed;
                while !text.is_char_boundary(start) {
                    start -= 1;
                }
                if consumed > start {
                    self.inner.rollback(consumed - start);
                }
                let failure = InputFailure {
                    pos: utf16_index(text, start),
                    offset: start as u32,
                    expected: expected(&self.inner.next_characters()),
                };
                let taken = self.inner.history_len().saturating_sub(before);
                self.inner.rollback(taken);
                Ok(Some(failure))
            }
            Err(AcceptError::Limit { limit, .. }) => {
                let taken = self.inner.history_len().saturating_sub(before);
                self.inner.rollback(taken);
                Err(limit_error(limit))
            }
            Err(other) => Err(napi::Error::from_reason(other.to_string())),
        }
    }

    /// `step` on text.
    fn step_text(&mut self, text: &str) -> napi::Result<f64> {
        if self.advance_text(text)?.is_some() {
            return Ok(-1.0);
        }
        Ok(f64::from(self.rules_number()))
    }

    /// The number of the current rule list (`UNNUMBERED` past the cap).
    fn rules_number(&self) -> u32 {
        if self.ended {
            return UNNUMBERED;
        }
        let mut lists = self
            .rule_lists
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let lists = &mut *lists;
        self.inner.next_characters_key(&mut lists.state_key);
        if let Some(&number) = lists.by_state.get(&lists.state_key) {
            return number;
        }
        encode(&self.inner.next_characters(), &mut lists.key);
        let number = match lists.numbers.get(&lists.key) {
            Some(&number) => number,
            None if lists.numbers.len() >= MAX_RULE_LISTS => return UNNUMBERED,
            None => {
                let number = lists.numbers.len() as u32;
                lists.numbers.insert(lists.key.clone(), number);
                lists.lists.push(lists.key.clone());
                number
            }
        };
        if lists.by_state.len() < MAX_RULE_LISTS {
            lists.by_state.insert(lists.state_key.clone(), number);
        }
        number
    }
}

fn limit_error(limit: impl std::fmt::Display) -> napi::Error {
    napi::Error::from_reason(format!("matching stopped: {limit}"))
}

#[napi]
impl Matcher {
    /// A matcher at the start of `grammar`; with `vocabulary`, it takes tokens and fills
    /// token masks. `options.maxRollbackTokens` (k) keeps history to roll back the last
    /// k tokens only.
    #[napi(constructor)]
    pub fn new(
        grammar: &Grammar,
        vocabulary: Option<&Vocabulary>,
        options: Option<MatcherOptions>,
    ) -> Matcher {
        let max_rollback_tokens = options
            .and_then(|options| options.max_rollback_tokens)
            .and_then(|tokens| match tokens {
                Either::A(tokens) => Some(tokens as usize),
                Either::B(Null) => None,
            });
        let (mut inner, mask) = match vocabulary {
            Some(vocabulary) => (
                RustMatcher::with_vocabulary(&grammar.compiled, vocabulary.index.clone()),
                Some(TokenBitmask::new(vocabulary.index.vocabulary().len())),
            ),
            None => (RustMatcher::new(&grammar.compiled), None),
        };
        inner.set_token_history_limit(max_rollback_tokens);
        Matcher {
            inner,
            mask,
            ended: false,
            ended_history: VecDeque::new(),
            max_rollback_tokens,
            rule_lists: Arc::default(),
            history_limit: None,
        }
    }

    /// The most tokens `rollback` can undo (null: every token accepted).
    #[napi(getter)]
    pub fn max_rollback_tokens(&self) -> Option<u32> {
        self.max_rollback_tokens.map(|tokens| tokens as u32)
    }

    /// Keeps at most `steps` bytes of history for rollback (null: all, the default).
    /// With a limit, memory and `fork` stay proportional to the live parse.
    #[napi]
    pub fn set_history_limit(&mut self, steps: Option<u32>) {
        self.history_limit = steps.map(|steps| steps as usize);
        self.inner
            .set_history_limit(steps.map(|steps| steps as usize));
    }

    /// A new matcher: this one's state after `text`, or where `text` stopped matching.
    /// This matcher is unchanged.
    #[napi]
    pub fn add(&self, text: String) -> napi::Result<Either<Matcher, InputFailure>> {
        let mut next = self.copy();
        Ok(match next.advance_text(&text)? {
            None => Either::A(next),
            Some(failure) => Either::B(failure),
        })
    }

    /// Accepts `text` in this matcher, all or nothing: null, or where it stopped matching
    /// (this matcher unchanged).
    #[napi]
    pub fn advance(&mut self, text: String) -> napi::Result<Option<InputFailure>> {
        self.advance_text(&text)
    }

    /// One step of an immutable state, in one call: accepts `text` all or nothing, then
    /// numbers the rule list that follows. Returns that number (the same for the same
    /// rules, in this matcher and its forks; 4294967295 when not numbered), or -1 when
    /// the text is refused (this matcher unchanged; `advance` says where).
    #[napi]
    pub fn step(&mut self, text: String) -> napi::Result<f64> {
        self.step_text(&text)
    }

    /// `step` for one character given by its code point (no string to convert).
    #[napi]
    pub fn step_char(&mut self, code_point: u32) -> napi::Result<f64> {
        let Some(character) = char::from_u32(code_point) else {
            return Ok(-1.0);
        };
        let mut buffer = [0u8; 4];
        self.step_text(character.encode_utf8(&mut buffer))
    }

    /// The rules of list `number` (see `step`), in `nextRules`'s shapes.
    #[napi]
    pub fn rules_of_number(&self, number: u32) -> napi::Result<Vec<RuleObject>> {
        let lists = self
            .rule_lists
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match lists.lists.get(number as usize) {
            Some(encoded) => Ok(decode(encoded)),
            None => Err(invalid(format!("no rule list numbered {number}"))),
        }
    }

    /// The number of the current rule list (see `step`).
    #[napi]
    pub fn rules_number_now(&self) -> f64 {
        f64::from(self.rules_number())
    }

    /// Steps (bytes) that can be rolled back.
    #[napi(getter)]
    pub fn history_length(&self) -> f64 {
        self.inner.history_len() as f64
    }

    /// A copy of this matcher as it was when `offset` bytes of text had been accepted
    /// (within the history it keeps).
    #[napi]
    pub fn fork_at(&self, offset: f64) -> napi::Result<Matcher> {
        let now = self.inner.offset() as f64;
        let back = now - offset;
        if back < 0.0 || back > self.inner.history_len() as f64 {
            return Err(invalid(format!(
                "no state at offset {offset}: the history holds offsets {} to {now}",
                now - self.inner.history_len() as f64
            )));
        }
        let mut copy = self.copy();
        copy.inner.rollback(back as usize);
        Ok(copy)
    }

    /// Accepts text: true when the grammar allows it; false, with the state unchanged,
    /// when not. Text is not counted by `rollback` (which undoes tokens).
    #[napi]
    pub fn accept_text(&mut self, text: String) -> napi::Result<bool> {
        if self.ended {
            return Ok(text.is_empty());
        }
        let before = self.inner.history_len();
        match self.inner.accept_str(&text) {
            Ok(()) => Ok(true),
            Err(error) => {
                let taken = self.inner.history_len().saturating_sub(before);
                self.inner.rollback(taken);
                match error {
                    AcceptError::Limit { limit, .. } => Err(limit_error(limit)),
                    _ => Ok(false),
                }
            }
        }
    }

    /// Accepts token `tokenId`: true when the grammar allows it; false, with the state
    /// unchanged, when not. An end-of-generation token is accepted where the grammar may
    /// end; the matcher is then terminated.
    #[napi]
    pub fn accept_token(&mut self, token_id: u32) -> napi::Result<bool> {
        self.mask()?;
        if self.ended || self.inner.accept_token(token_id).is_err() {
            return Ok(false);
        }
        self.ended_history.push_back(self.ended);
        if self
            .max_rollback_tokens
            .is_some_and(|limit| self.ended_history.len() > limit)
        {
            self.ended_history.pop_front();
        }
        if self
            .inner
            .vocabulary()
            .is_some_and(|index| index.vocabulary().is_end_of_generation(token_id))
            && self.inner.next_characters().allowed.is_empty()
        {
            self.ended = true;
        }
        Ok(true)
    }

    /// Accepts `tokenIds` in order, all or nothing.
    #[napi]
    pub fn accept_tokens(&mut self, token_ids: Vec<u32>) -> napi::Result<bool> {
        if self
            .max_rollback_tokens
            .is_some_and(|limit| token_ids.len() > limit)
        {
            // More tokens than can be rolled back: on a copy, kept if all are accepted.
            let mut copy = self.copy();
            for &token in &token_ids {
                if !copy.accept_token(token)? {
                    return Ok(false);
                }
            }
            *self = copy;
            return Ok(true);
        }
        for (accepted, &token) in token_ids.iter().enumerate() {
            if !self.accept_token(token)? {
                self.rollback(Some(accepted as u32))?;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// How many of `tokenIds`, from the first, the grammar accepts one after another (a
    /// draft checked for speculative decoding), without moving the matcher.
    #[napi]
    pub fn validate_tokens(&mut self, token_ids: Vec<u32>) -> napi::Result<u32> {
        self.on_draft(token_ids.len(), |matcher| {
            let mut accepted = 0;
            for &token in &token_ids {
                if !matcher.accept_token(token)? {
                    break;
                }
                accepted += 1;
            }
            Ok((accepted as u32, accepted))
        })
    }

    /// Undoes the last `tokens` accepted tokens (default 1). Throws, changing nothing,
    /// when fewer were accepted (or, with `maxRollbackTokens`, are kept).
    #[napi]
    pub fn rollback(&mut self, tokens: Option<u32>) -> napi::Result<()> {
        let tokens = tokens.unwrap_or(1) as usize;
        if tokens == 0 {
            return Ok(());
        }
        // `ended_history` holds at most the tokens the engine keeps (the last
        // `max_rollback_tokens`, which the engine trims to no fewer); the engine's refusal
        // (a history limit in steps) changes nothing either.
        if tokens > self.ended_history.len() || !self.inner.rollback_tokens(tokens) {
            let kept = match self.max_rollback_tokens {
                Some(limit) => format!(" (maxRollbackTokens: {limit})"),
                None => String::new(),
            };
            return Err(invalid(format!(
                "cannot roll back {tokens} tokens: {} are in the history{kept}",
                self.ended_history.len()
            )));
        }
        let keep = self.ended_history.len() - tokens;
        self.ended = self.ended_history[keep];
        self.ended_history.truncate(keep);
        Ok(())
    }

    /// Back to the start of the grammar.
    #[napi]
    pub fn reset(&mut self) {
        self.inner.reset();
        self.ended = false;
        self.ended_history.clear();
    }

    /// True when the input so far is a complete match.
    #[napi]
    pub fn is_accepting(&self) -> bool {
        self.inner.is_accepting()
    }

    /// True when the input so far can still be completed (or is complete).
    #[napi]
    pub fn is_viable(&self) -> bool {
        self.inner.is_viable()
    }

    /// True when nothing more may be accepted: an end-of-generation token was accepted,
    /// or the grammar is complete and allows no more.
    #[napi]
    pub fn is_terminated(&self) -> bool {
        if self.ended {
            return true;
        }
        self.inner.allows_nothing_more()
    }

    /// What may come next, in the `gbnf` package's shapes (`char`, `char_exclude`,
    /// `end`; `token` for grammars with tokens): at most one char or char_exclude rule.
    #[napi]
    pub fn next_rules(&self) -> Vec<RuleObject> {
        if self.ended {
            return Vec::new();
        }
        rule_objects(&self.inner.next_characters())
    }

    /// The text the grammar forces next (the same whatever comes), at most `maxChars`
    /// characters (default 256).
    #[napi]
    pub fn forced(&self, max_chars: Option<u32>) -> String {
        if self.ended {
            return String::new();
        }
        self.inner.forced(max_chars.unwrap_or(256) as usize)
    }

    /// The bytes the grammar forces next, for jump-forward decoding: up to the first byte
    /// where it has a choice (or may end), at most `maxBytes` (default 256). Unlike
    /// `forced`, this goes on inside a character a token ended in.
    #[napi]
    pub fn jump_forward_bytes(&self, max_bytes: Option<u32>) -> Buffer {
        if self.ended {
            return Vec::new().into();
        }
        self.inner
            .jump_forward_bytes(max_bytes.unwrap_or(256) as usize)
            .into()
    }

    /// The tokens a decoder may append without sampling: the part of the model's own
    /// tokenization of `jumpForwardBytes()` that no continuation could tokenize
    /// differently (docs/jump-forward.md). `tokenize(bytes)` returns the token ids of
    /// exactly those bytes (no special tokens or prefix space added), or null when it
    /// cannot. The matcher does not move: append the tokens with `acceptTokens`. Throws
    /// when the tokenizer's tokens do not spell its input, and what `tokenize` throws.
    #[napi]
    pub fn jump_forward_tokens(
        &self,
        tokenize: Function<'_, Buffer, Option<Vec<u32>>>,
        max_bytes: Option<u32>,
    ) -> napi::Result<Vec<u32>> {
        if self.ended {
            return Ok(Vec::new());
        }
        let mut failure: Option<napi::Error> = None;
        let jump = self
            .inner
            .jump_forward_tokens(max_bytes.unwrap_or(256) as usize, |bytes| {
                if failure.is_some() {
                    return None;
                }
                tokenize
                    .call(bytes.to_vec().into())
                    .unwrap_or_else(|error| {
                        failure = Some(error);
                        None
                    })
            });
        if let Some(error) = failure {
            return Err(error);
        }
        jump.map(|jump| jump.tokens)
            .map_err(|error| invalid(error.to_string()))
    }

    /// Bytes of text accepted since the start.
    #[napi(getter)]
    pub fn offset(&self) -> f64 {
        self.inner.offset() as f64
    }

    /// Writes the tokens allowed next into row `row` (default 0) of `bitmask`, a
    /// `Uint32Array` of rows of `ceil(vocabularySize / 32)` words: bit t % 32 of word
    /// t / 32 of the row set when token t is allowed.
    #[napi]
    pub fn fill_next_token_bitmask(
        &mut self,
        mut bitmask: Uint32ArraySlice<'_>,
        row: Option<u32>,
    ) -> napi::Result<()> {
        let row = row.unwrap_or(0) as usize;
        let words = self.mask()?.words().len();
        let start = row * words;
        if bitmask.len() < start + words {
            return Err(invalid(format!(
                "the bitmask holds {} words; row {row} of this vocabulary needs {} (allocateTokenBitmask(vocabulary.size, rows))",
                bitmask.len(),
                start + words
            )));
        }
        // SAFETY: the array's memory stays alive and in place for this call (the
        // argument holds it), and no JavaScript runs while it is written: this is the
        // JavaScript thread, inside a synchronous call.
        // The mask is written straight into the row.
        let out = &mut unsafe { bitmask.as_mut() }[start..start + words];
        if self.ended {
            out.fill(0);
        } else {
            self.inner.fill_mask_words(out);
        }
        Ok(())
    }

    /// The masks along a draft, for speculative decoding: row `i` of `out` (rows of
    /// `ceil(vocabularySize / 32)` words) gets the tokens allowed after `draft[0..i]` (as
    /// `fillNextTokenBitmask` writes a row), for `i` from 0 until a token of the draft is
    /// refused or the draft ends; rows past that are left as they are. Returns how many
    /// rows were filled (one more than the tokens `validateTokens` accepts). `out` needs
    /// `draft.length + 1` rows. The matcher does not move.
    #[napi]
    pub fn fill_draft_masks(
        &mut self,
        draft: Vec<u32>,
        mut out: Uint32ArraySlice<'_>,
    ) -> napi::Result<u32> {
        let words = self.mask()?.words().len();
        let size = self
            .inner
            .vocabulary()
            .map_or(0, |index| index.vocabulary().len());
        let needed = words * (draft.len() + 1);
        if out.len() < needed {
            return Err(invalid(format!(
                "the bitmask holds {} words; a draft of {} tokens needs {} rows of {words} words, {needed} (allocateTokenBitmask(vocabulary.size, draft.length + 1))",
                out.len(),
                draft.len(),
                draft.len() + 1
            )));
        }
        if let Some((position, id)) = draft
            .iter()
            .enumerate()
            .find(|&(_, &id)| id as usize >= size)
        {
            return Err(invalid(format!(
                "token {id} (position {position} of the draft) is not in this vocabulary of {size} tokens"
            )));
        }
        // SAFETY: the array's memory stays alive and in place for this call (the
        // argument holds it), and no JavaScript runs while it is written: this is the
        // JavaScript thread, inside a synchronous call.
        let rows = &mut unsafe { out.as_mut() }[..needed];
        Ok(self.draft_rows(&draft, words, rows)? as u32)
    }

    /// The tokens allowed next, as sorted ids (slower than the bitmask; for inspection
    /// and tests).
    #[napi]
    pub fn allowed_tokens(&mut self) -> napi::Result<Vec<u32>> {
        Ok(self.compute_mask()?.ids().collect())
    }

    /// True when token `tokenId` may come next (cheaper than a whole mask).
    #[napi]
    pub fn is_token_allowed(&mut self, token_id: u32) -> napi::Result<bool> {
        self.mask()?;
        Ok(!self.ended && self.inner.is_token_allowed(token_id))
    }

    /// An independent copy of this matcher.
    #[napi]
    pub fn fork(&self) -> Matcher {
        self.copy()
    }
}
