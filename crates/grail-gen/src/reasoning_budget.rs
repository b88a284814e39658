//! A cap on the reasoning block's length in tokens: once the model has written that many
//! tokens inside the block, the block's closing marker is written for it (in the tokens
//! the model's tokenizer reads it as), and the answer goes on under the grammar, which
//! allows the marker anywhere inside the block. A budget of 0 closes the block as soon as
//! the model opens it; a block the prompt opened needs a budget of at least 1 (the first
//! token is drawn inside it).

/// How long the reasoning block may be (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReasoningBudget {
    /// Most tokens inside the block.
    pub tokens: usize,
    /// What opens the block (`<think>`), after any whitespace at the output's start;
    /// empty when the prompt opened it and the output starts inside.
    pub open: String,
    /// What closes it (`</think>`).
    pub close: String,
}

/// Where an output stands with respect to its reasoning block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Not yet known whether a block comes.
    Before,
    /// Inside the block, opened when the output had this many tokens.
    Inside { opened_at: usize },
    /// The block is over, or there is none.
    After,
}

/// Follows an output token by token and says when the budget's closing marker is due.
#[derive(Debug, Clone)]
pub(crate) struct BudgetTracker {
    budget: ReasoningBudget,
    place: Place,
}

impl BudgetTracker {
    /// A tracker of `budget` for an output not yet begun.
    pub(crate) fn new(budget: ReasoningBudget) -> BudgetTracker {
        let place = match budget.open.is_empty() {
            true => Place::Inside { opened_at: 0 },
            false => Place::Before,
        };
        BudgetTracker { budget, place }
    }

    /// The closing marker's text.
    pub(crate) fn close(&self) -> &str {
        &self.budget.close
    }

    /// After a token: `bytes` is the output so far, `tokens` its length in tokens. True
    /// when the closing marker is due now.
    pub(crate) fn due(&mut self, bytes: &[u8], tokens: usize) -> bool {
        let open = self.budget.open.as_bytes();
        if self.place == Place::Before {
            let start = bytes
                .iter()
                .position(|byte| !byte.is_ascii_whitespace())
                .unwrap_or(bytes.len());
            let written = &bytes[start..];
            self.place = if written.starts_with(open) {
                Place::Inside { opened_at: tokens }
            } else if open.starts_with(written) {
                Place::Before
            } else {
                Place::After
            };
        }
        let Place::Inside { opened_at } = self.place else {
            return false;
        };
        let close = self.budget.close.as_bytes();
        if bytes.windows(close.len()).any(|window| window == close) {
            self.place = Place::After;
            return false;
        }
        // Not inside a character: the marker waits for the token that completes it.
        tokens - opened_at >= self.budget.tokens && !ends_inside_a_character(bytes)
    }

    /// The marker was written: the block is over.
    pub(crate) fn closed(&mut self) {
        self.place = Place::After;
    }
}

/// Whether `bytes` end with the first bytes of a UTF-8 character, not all of them.
fn ends_inside_a_character(bytes: &[u8]) -> bool {
    for back in 1..=bytes.len().min(4) {
        let byte = bytes[bytes.len() - back];
        let length = match byte {
            0x00..=0x7F => return false,
            // A continuation byte: the character began earlier.
            0x80..=0xBF => continue,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            _ => 4,
        };
        return back < length;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker(tokens: usize, open: &str) -> BudgetTracker {
        BudgetTracker::new(ReasoningBudget {
            tokens,
            open: open.into(),
            close: "</think>".into(),
        })
    }

    #[test]
    fn the_marker_is_due_after_the_budget_inside_the_block() {
        let mut budget = tracker(2, "<think>");
        assert!(!budget.due(b"\n<thi", 1));
        assert!(!budget.due(b"\n<think>", 2));
        assert!(!budget.due(b"\n<think>a", 3));
        assert!(budget.due(b"\n<think>ab", 4));
        budget.closed();
        assert!(!budget.due(b"\n<think>ab</think>c", 6));
    }

    #[test]
    fn the_marker_waits_for_a_character_to_be_whole() {
        let mut budget = tracker(1, "<think>");
        assert!(!budget.due(b"<think>", 1));
        assert!(!budget.due(b"<think>\xC3", 2));
        assert!(budget.due("<think>é".as_bytes(), 3));
        assert!(ends_inside_a_character(
            "€".as_bytes().split_last().unwrap().1
        ));
        assert!(!ends_inside_a_character("a€".as_bytes()));
    }

    #[test]
    fn a_block_closed_by_the_model_or_absent_needs_nothing() {
        let mut budget = tracker(2, "<think>");
        assert!(!budget.due(b"<think>a</think>", 3));
        assert!(!budget.due(b"<think>a</think>bcd", 6));
        let mut none = tracker(0, "<think>");
        assert!(!none.due(b"Hello", 1));
        assert!(!none.due(b"Hello <think>", 2));
        // Opened by the prompt: inside from the start.
        let mut forced = tracker(1, "");
        assert!(forced.due(b"a", 1));
    }
}
