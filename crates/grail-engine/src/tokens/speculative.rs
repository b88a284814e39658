//! Speculative decoding: a draft of tokens checked without moving, accepted all or
//! nothing, and masked position by position.

use crate::error::DraftRefused;
use crate::tokens::matcher::Matcher;

impl Matcher {
    /// How many tokens of `draft`, from its start, the grammar accepts one after another
    /// (a draft model's proposal checked before the target model's verdict). The matcher
    /// is left as it was.
    ///
    /// # Panics
    /// Without a vocabulary (see [`Matcher::with_vocabulary`]).
    pub fn validate_tokens(&mut self, draft: &[u32]) -> usize {
        self.on_draft(draft, |matcher| {
            let mut accepted = 0;
            for &id in draft {
                if matcher.accept_token(id).is_err() {
                    break;
                }
                accepted += 1;
            }
            (accepted, accepted)
        })
    }

    /// Accepts every token of `draft`, or none: on a refusal the matcher is left as it
    /// was and the error names the first token refused.
    ///
    /// # Panics
    /// Without a vocabulary (see [`Matcher::with_vocabulary`]).
    pub fn accept_tokens(&mut self, draft: &[u32]) -> Result<(), DraftRefused> {
        if self.history_may_not_hold(draft) {
            let mut fork = self.fork();
            fork.set_history_limit(None);
            fork.set_token_history_limit(None);
            fork.accept_tokens(draft)?;
            fork.set_history_limit(self.parser.history_limit());
            fork.set_token_history_limit(self.token_history_limit());
            *self = fork;
            return Ok(());
        }
        for (index, &id) in draft.iter().enumerate() {
            if let Err(error) = self.accept_token(id) {
                if !self.rollback_tokens(index) {
                    unreachable_rollback(index);
                }
                return Err(DraftRefused { index, id, error });
            }
        }
        Ok(())
    }

    /// The masks along a draft: row `i` of `words` (each row the vocabulary's size in
    /// 32-bit words) gets the tokens allowed after `draft[..i]`, for `i` from 0 until a
    /// token of the draft is refused or the draft ends; rows past that are left as they
    /// are. Returns how many rows were filled (one more than the tokens accepted). The
    /// matcher is left as it was.
    ///
    /// # Panics
    /// Without a vocabulary, or when `words` holds fewer than `draft.len() + 1` rows.
    pub fn fill_draft_masks(&mut self, draft: &[u32], words: &mut [u32]) -> usize {
        let row = self
            .vocabulary()
            .expect("token operations need a matcher made with Matcher::with_vocabulary")
            .vocabulary()
            .len()
            .div_ceil(32);
        assert!(
            words.len() >= row * (draft.len() + 1),
            "fill_draft_masks needs a row per draft position and one more"
        );
        self.on_draft(draft, |matcher| {
            let mut filled = 0;
            let mut accepted = 0;
            for (position, rows) in words.chunks_mut(row).take(draft.len() + 1).enumerate() {
                matcher.fill_mask_words(rows);
                filled += 1;
                match draft.get(position) {
                    Some(&id) if matcher.accept_token(id).is_ok() => accepted += 1,
                    _ => break,
                }
            }
            (filled, accepted)
        })
    }

    /// Runs `walk` (which accepts some of `draft`'s tokens and says how many as the
    /// second value) and puts the matcher back as it was. With a history limit too short
    /// for the draft, the walk runs on a fork instead.
    fn on_draft(
        &mut self,
        draft: &[u32],
        walk: impl FnOnce(&mut Matcher) -> (usize, usize),
    ) -> usize {
        if self.history_may_not_hold(draft) {
            let mut fork = self.fork();
            return walk(&mut fork).0;
        }
        let (answer, accepted) = walk(self);
        if !self.rollback_tokens(accepted) {
            unreachable_rollback(accepted);
        }
        answer
    }

    /// True when a history limit may drop what rolling `draft` back needs: a token limit
    /// shorter than the draft, or a step limit shorter than its steps (its tokens' bytes,
    /// and one step for each special or end-of-generation token).
    fn history_may_not_hold(&self, draft: &[u32]) -> bool {
        if self
            .token_history_limit()
            .is_some_and(|tokens| draft.len() > tokens)
        {
            return true;
        }
        let Some(limit) = self.parser.history_limit() else {
            return false;
        };
        let Some(index) = self.vocabulary() else {
            return false;
        };
        let vocabulary = index.vocabulary();
        let steps: usize = draft
            .iter()
            .map(|&id| {
                if (id as usize) < vocabulary.len() {
                    vocabulary.bytes(id).len().max(1)
                } else {
                    1
                }
            })
            .sum();
        steps > limit
    }
}

/// A rollback of tokens the call itself accepted failed: only a history limit can do
/// that, and `on_draft` forks before it could.
#[cold]
fn unreachable_rollback(tokens: usize) -> ! {
    panic!("the matcher could not roll back the {tokens} draft token(s) it accepted")
}
