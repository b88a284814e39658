//! The token bitmask: one bit per token, packed in `u32` words, bit `id % 32` of word
//! `id / 32` (the layout llama.cpp, xgrammar and vLLM use), 1 = allowed.

/// Sets the bits of token `ids` in a mask's words (the layout of [`TokenBitmask`]).
#[inline]
pub fn set_ids(words: &mut [u32], ids: &[u32]) {
    for &id in ids {
        words[id as usize / 32] |= 1 << (id % 32);
    }
}

/// Sets in `words` every bit set in `other` (masks of the same layout; the shorter
/// bounds the words touched).
#[inline]
pub fn or_words(words: &mut [u32], other: &[u32]) {
    for (word, own) in words.iter_mut().zip(other) {
        *word |= own;
    }
}

/// The ids whose bits are set in a mask's words, in increasing order.
pub fn ids_of(words: &[u32]) -> impl Iterator<Item = u32> + '_ {
    words.iter().enumerate().flat_map(|(index, &word)| {
        let mut bits = word;
        std::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let bit = bits.trailing_zeros();
            bits &= bits - 1;
            Some(index as u32 * 32 + bit)
        })
    })
}

/// Clears the bits of every id from `first` on in a mask's words.
pub fn clear_from(words: &mut [u32], first: u32) {
    let word = first as usize / 32;
    let Some(partial) = words.get_mut(word) else {
        return;
    };
    *partial &= (1u32 << (first % 32)).wrapping_sub(1);
    words[word + 1..].fill(0);
}

/// A set of allowed token ids over a vocabulary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenBitmask {
    words: Vec<u32>,
    len: usize,
}

impl TokenBitmask {
    /// A mask for `len` tokens, all disallowed.
    pub fn new(len: usize) -> TokenBitmask {
        TokenBitmask {
            words: vec![0; len.div_ceil(32)],
            len,
        }
    }

    /// How many tokens the mask covers.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a mask over no tokens.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Disallows every token.
    pub fn clear(&mut self) {
        self.words.fill(0);
    }

    /// Allows every token.
    pub fn fill(&mut self) {
        self.words.fill(u32::MAX);
        let spare = self.words.len() * 32 - self.len;
        if spare > 0 {
            let last = self.words.len() - 1;
            self.words[last] = u32::MAX >> spare;
        }
    }

    /// Allows token `id`.
    pub fn set(&mut self, id: u32) {
        self.words[id as usize / 32] |= 1 << (id % 32);
    }

    /// Disallows token `id`.
    pub fn unset(&mut self, id: u32) {
        self.words[id as usize / 32] &= !(1 << (id % 32));
    }

    /// True when token `id` is allowed.
    pub fn is_set(&self, id: u32) -> bool {
        (id as usize) < self.len && self.words[id as usize / 32] >> (id % 32) & 1 == 1
    }

    /// How many tokens are allowed.
    pub fn count(&self) -> usize {
        self.words
            .iter()
            .map(|word| word.count_ones() as usize)
            .sum()
    }

    /// The allowed ids, in increasing order.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        ids_of(&self.words)
    }

    /// The packed words.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// The packed words, for filling in bulk.
    pub fn words_mut(&mut self) -> &mut [u32] {
        &mut self.words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clear_from_clears_exactly_the_ids_from_there_on() {
        for first in [0, 1, 31, 32, 33, 63, 64, 95, 96, 200] {
            let mut words = [u32::MAX; 3];
            clear_from(&mut words, first);
            let expected: Vec<u32> = (0..96).filter(|&id| id < first).collect();
            assert_eq!(ids_of(&words).collect::<Vec<_>>(), expected, "{first}");
        }
    }

    #[test]
    fn bits_follow_the_shared_layout() {
        let mut mask = TokenBitmask::new(70);
        mask.set(0);
        mask.set(33);
        mask.set(69);
        assert_eq!(mask.words(), &[1, 2, 32]);
        assert_eq!(mask.ids().collect::<Vec<_>>(), [0, 33, 69]);
        assert_eq!(mask.count(), 3);
        mask.unset(33);
        assert!(!mask.is_set(33) && mask.is_set(69) && !mask.is_set(70));
        mask.fill();
        assert_eq!(mask.count(), 70);
    }
}
