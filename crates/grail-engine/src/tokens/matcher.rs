//! The matcher users hold: a byte-level parser (`parse/matcher.rs`) and the token layer
//! over it — the vocabulary, where each accepted token started (for rolling tokens
//! back), the shared masks, the buffers of trie walks and the bounds of twin loops.
//!
//! What only concerns bytes, characters and the grammar is the parser's, and the methods
//! here hand it on; what concerns tokens lives in this folder (`mask.rs`,
//! `speculative.rs`, `jump_forward.rs`, the walks).

use std::sync::Arc;

use grail_vocab::VocabularyIndex;

use crate::automaton::grammar::CompiledGrammar;
use crate::automaton::learned::SharedMasks;
use crate::error::AcceptError;
use crate::parse::matcher::{Parser, vec_bytes};
use crate::parse::next::NextCharacters;
use crate::tokens::walk_buffers::WalkBufferPool;

/// An incremental matcher over a [`CompiledGrammar`]: feed it text, bytes or tokens, ask
/// whether the input so far can end or continue and what may come next, fill token
/// masks, roll back, fork.
///
/// Cloning (see [`Matcher::fork`]) copies the state, so a clone evolves independently.
/// Every matcher of a grammar, on any thread, shares what the grammar's matchers learn
/// (parse states, transitions, masks).
#[derive(Debug, Clone)]
pub struct Matcher {
    /// The byte-level parse.
    pub(crate) parser: Parser,
    /// The vocabulary tokens are taken from, for masks and `accept_token`.
    pub(crate) vocabulary: Option<Arc<VocabularyIndex>>,
    /// For each accepted token still in the history, the absolute number of the step
    /// before it (steps dropped by the history limit included).
    pub(crate) token_starts: Vec<u64>,
    /// The most tokens kept for [`Matcher::rollback_tokens`], when limited.
    token_history_limit: Option<usize>,
    /// Token masks by parse state, shared by the grammar's matchers.
    pub(crate) mask_cache: SharedMasks,
    /// Buffers of token-trie walks, reused.
    pub(crate) walk_buffers: WalkBufferPool,
    /// For each copy of a bounded repetition with a twin, how many copies must remain
    /// for masks to read it as the twin (with this vocabulary; see `twin.rs`). Computed
    /// on first need, shared with forks and the grammar's later matchers.
    pub(crate) twin_bounds: Option<Arc<[u32]>>,
}

impl Matcher {
    /// A matcher at the start of the grammar, keeping its whole history for rollback.
    /// It shares what the grammar's matchers learn (parse states, transitions, masks)
    /// with every other matcher of the grammar, on any thread.
    pub fn new(grammar: &CompiledGrammar) -> Matcher {
        Matcher::starting(grammar, None)
    }

    /// A matcher at the start of `grammar`, with `vocabulary` for tokens and masks,
    /// sharing what the matchers of `grammar` with it learn.
    pub(crate) fn starting(
        grammar: &CompiledGrammar,
        vocabulary: Option<Arc<VocabularyIndex>>,
    ) -> Matcher {
        let inheritance = grammar.learned.inherit(vocabulary.as_ref());
        Matcher {
            parser: Parser::new(grammar, inheritance.step_cache),
            vocabulary,
            token_starts: Vec::new(),
            token_history_limit: None,
            mask_cache: inheritance.mask_cache,
            walk_buffers: WalkBufferPool::default(),
            twin_bounds: inheritance.twin_bounds,
        }
    }

    /// Keeps at most `steps` steps of history for [`Matcher::rollback`] (`None`: all).
    /// With a limit, memory stays proportional to the live parse, not to the input.
    pub fn set_history_limit(&mut self, steps: Option<usize>) {
        self.parser.set_history_limit(steps);
        self.forget_dropped_tokens();
    }

    /// The most steps kept for rollback, when limited (see [`Matcher::set_history_limit`]).
    pub fn history_limit(&self) -> Option<usize> {
        self.parser.history_limit()
    }

    /// Keeps history enough to roll back the last `tokens` tokens
    /// ([`Matcher::rollback_tokens`]) and drops older steps, in batches (`None`: all). A
    /// server or an inference engine that rolls back at most a draft's tokens keeps each
    /// sequence's memory to its live parse, whatever the length of the text. With
    /// [`Matcher::set_history_limit`] too, each limit drops what it would alone.
    pub fn set_token_history_limit(&mut self, tokens: Option<usize>) {
        self.token_history_limit = tokens;
        self.trim_token_history();
    }

    /// The most tokens kept for rollback, when limited (see
    /// [`Matcher::set_token_history_limit`]).
    pub fn token_history_limit(&self) -> Option<usize> {
        self.token_history_limit
    }

    /// Drops the history older than the last [`Matcher::set_token_history_limit`] tokens,
    /// once twice that many (and 16 more at least) are kept: amortized as the parser's
    /// step limit is.
    pub(crate) fn trim_token_history(&mut self) {
        let Some(tokens) = self.token_history_limit else {
            return;
        };
        if self.token_starts.len() <= tokens + tokens.max(16) {
            return;
        }
        let drop = match tokens {
            0 => self.parser.history_len(),
            _ => {
                // The step count before the oldest token kept: its last step stays.
                let oldest = self.token_starts[self.token_starts.len() - tokens];
                (oldest - self.parser.steps_dropped()).saturating_sub(1) as usize
            }
        };
        if drop > 0 {
            self.parser.drop_oldest_steps(drop);
            self.forget_dropped_tokens();
        }
    }

    /// Forgets the tokens whose start step the parser dropped: they can no longer be
    /// rolled back.
    fn forget_dropped_tokens(&mut self) {
        let first_kept = self.parser.steps_dropped();
        if self
            .token_starts
            .first()
            .is_some_and(|&start| start <= first_kept)
        {
            self.token_starts.retain(|&start| start > first_kept);
        }
    }

    /// Back to the start of the grammar, as if nothing was accepted.
    pub fn reset(&mut self) {
        self.parser.reset();
        self.token_starts.clear();
    }

    /// A copy that evolves independently (for beam search and speculative decoding).
    /// Costs a copy of the state, which is bounded by the history limit.
    pub fn fork(&self) -> Matcher {
        self.clone()
    }

    /// The compiled grammar this matcher runs.
    pub fn grammar(&self) -> &CompiledGrammar {
        self.parser.grammar()
    }

    /// True when the input so far is a complete match: the grammar may end here.
    pub fn is_accepting(&self) -> bool {
        self.parser.is_accepting()
    }

    /// True when some continuation of the input so far (possibly none) is a match.
    pub fn is_viable(&self) -> bool {
        self.parser.is_viable()
    }

    /// Bytes accepted since the start.
    pub fn offset(&self) -> u64 {
        self.parser.offset()
    }

    /// How many steps can be rolled back (one per byte, or per special token).
    pub fn history_len(&self) -> usize {
        self.parser.history_len()
    }

    /// True when the input ends inside a multi-byte character.
    pub fn in_partial_character(&self) -> bool {
        self.parser.in_partial_character()
    }

    /// Undoes the last `steps` steps (bytes, or special tokens). Returns false, changing
    /// nothing, when fewer steps are in the history.
    pub fn rollback(&mut self, steps: usize) -> bool {
        if !self.parser.rollback(steps) {
            return false;
        }
        let absolute = self.parser.absolute_step_count();
        while self
            .token_starts
            .last()
            .is_some_and(|&start| start >= absolute)
        {
            self.token_starts.pop();
        }
        true
    }

    /// Accepts one character.
    pub fn accept_char(&mut self, character: char) -> Result<(), AcceptError> {
        let mut buffer = [0; 4];
        self.accept_bytes(character.encode_utf8(&mut buffer).as_bytes())
    }

    /// Accepts text.
    pub fn accept_str(&mut self, text: &str) -> Result<(), AcceptError> {
        self.accept_bytes(text.as_bytes())
    }

    /// Accepts bytes one at a time. On rejection the matcher stays after the longest
    /// accepted prefix, and the error says how many bytes of `bytes` that was.
    pub fn accept_bytes(&mut self, bytes: &[u8]) -> Result<(), AcceptError> {
        let result = self.parser.accept_bytes(bytes);
        self.forget_dropped_tokens();
        result
    }

    /// Accepts one whole token: token elements (`<[id]>`, `!<[id]>`) match its id, and the
    /// rest of the grammar matches its text. `text` is `None` for special tokens, which
    /// only token elements match. All or nothing: on rejection nothing changes.
    pub fn accept_token_piece(&mut self, id: u32, text: Option<&[u8]>) -> Result<(), AcceptError> {
        let result = self.parser.accept_token_piece(id, text);
        self.forget_dropped_tokens();
        result
    }

    /// Writes into `key` all that [`Matcher::next_characters`] depends on: the current
    /// items' grammar positions and partial characters, and whether the input may end
    /// here; not the stack of callers below them. Equal keys give equal rules, so a
    /// caller that reports the rules at every step (the `gbnf`-style Node API) can cache
    /// them by this key. The key of one state may vary with the order its items were
    /// found in, which only costs such a cache a miss.
    pub fn next_characters_key(&self, key: &mut Vec<u32>) {
        self.parser.next_characters_key(key);
    }

    /// True when the input so far is a complete match and nothing (no character, no
    /// token) may follow it: the grammar is done, as when a generator stops without an
    /// end-of-sequence token.
    pub fn allows_nothing_more(&self) -> bool {
        self.parser.allows_nothing_more()
    }

    /// The next-character rules after the input so far.
    ///
    /// Classes merge into one rule: a CHAR rule (the union of what every position
    /// allows) when no position allows "anything except", otherwise one CHAR_EXCLUDE rule
    /// whose ranges are the characters no position allows. Inside a multi-byte character,
    /// only the code points that complete it are reported (as CHAR).
    pub fn next_characters(&self) -> NextCharacters {
        self.parser.next_characters()
    }

    /// The text that is the only possible continuation (for jump-forward decoding): the
    /// characters forced one after another until a choice, a token or a possible end.
    /// At most `max_chars` characters.
    pub fn forced(&self, max_chars: usize) -> String {
        self.parser.forced(max_chars)
    }

    /// Keeps `twin_bounds` (worked out by this matcher with `vocabulary`, its own) for the
    /// grammar's later matchers.
    pub(crate) fn share_twin_bounds(
        &self,
        vocabulary: &Arc<VocabularyIndex>,
        twin_bounds: &Arc<[u32]>,
    ) {
        self.parser
            .grammar()
            .learned
            .hand_back_twin_bounds(Some(vocabulary), twin_bounds);
    }

    /// Runs `work` with the vocabulary lent out of the matcher: moving the `Arc` out and
    /// back leaves its count alone, which the matchers of a batch on several threads share
    /// (cloning it at every mask bounced its cache line between their cores). The
    /// vocabulary is put back if `work` panics.
    ///
    /// # Panics
    /// Without a vocabulary.
    pub(crate) fn with_vocabulary_lent<R>(
        &mut self,
        work: impl FnOnce(&mut Matcher, &Arc<VocabularyIndex>) -> R,
    ) -> R {
        let vocabulary = self
            .vocabulary
            .take()
            .expect("token operations need a matcher made with Matcher::with_vocabulary");
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(self, &vocabulary)));
        self.vocabulary = Some(vocabulary);
        result.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }

    /// Bytes this matcher holds of its own (its parse history, working buffers and
    /// token history; buffers counted at their capacity), not counting what it shares
    /// with the other matchers of its grammar: the memory one more sequence costs. Keep it
    /// bounded with [`Matcher::set_token_history_limit`].
    pub fn own_bytes(&self) -> usize {
        self.parser.own_bytes() - size_of::<Parser>()
            + size_of::<Matcher>()
            + vec_bytes(&self.token_starts)
            + self.walk_buffers.heap_bytes()
            + self
                .twin_bounds
                .as_ref()
                .map_or(0, |bounds| 4 * bounds.len())
    }
}
