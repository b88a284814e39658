//! Masks of many matchers at once: one row of a bitmask each, filled on rayon's thread
//! pool (a server's or an inference engine's batch, one matcher per sequence).

use rayon::prelude::*;

use crate::tokens::matcher::Matcher;

/// Fills row `i` of `words` (rows of `row_words` words) with the mask of `matchers[i]`,
/// on rayon's global thread pool: the same masks as filling them one by one, in any
/// order. Each row's words past the matcher's vocabulary are cleared. With one matcher,
/// or one thread, nothing is sent to another thread.
///
/// # Panics
/// When a matcher has no vocabulary, when `row_words` is smaller than a matcher's
/// vocabulary needs, or when `words` holds fewer than `matchers.len()` rows.
pub fn fill_masks(matchers: &mut [&mut Matcher], words: &mut [u32], row_words: usize) {
    assert!(
        words.len() >= row_words * matchers.len(),
        "fill_masks needs a row of {row_words} words for each of {} matchers",
        matchers.len()
    );
    let fill = |(matcher, row): (&mut &mut Matcher, &mut [u32])| {
        let used = matcher
            .vocabulary()
            .expect("token masks need a matcher made with Matcher::with_vocabulary")
            .vocabulary()
            .len()
            .div_ceil(32);
        assert!(
            used <= row.len(),
            "a row of {} words is smaller than the vocabulary's {used}",
            row.len()
        );
        let (used, spare) = row.split_at_mut(used);
        matcher.fill_mask_words(used);
        spare.fill(0);
    };
    if matchers.len() <= 1 || rayon::current_num_threads() <= 1 {
        matchers
            .iter_mut()
            .zip(words.chunks_mut(row_words.max(1)))
            .for_each(fill);
    } else {
        matchers
            .par_iter_mut()
            .zip(words.par_chunks_mut(row_words.max(1)))
            .with_max_len(1)
            .for_each(fill);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use grail_vocab::{TokenKind, Vocabulary, VocabularyIndex};

    use super::*;
    use crate::CompiledGrammar;

    #[test]
    fn a_batch_fills_each_row_as_its_matcher_alone() {
        let tokens: Vec<Vec<u8>> = ["<eos>", "a", "b", "ab", "{", "}", "\"", "1", "x"]
            .iter()
            .map(|text| text.as_bytes().to_vec())
            .collect();
        let mut kinds = vec![TokenKind::Text; tokens.len()];
        kinds[0] = TokenKind::Special;
        let index = Arc::new(VocabularyIndex::new(Vocabulary::new(
            "batch",
            tokens,
            kinds,
            vec![0],
            None,
        )));
        let grammars = [
            "root ::= \"a\"+ \"b\"",
            "root ::= \"{\" [0-9]* \"}\"",
            "root ::= [ab]* | \"x\"",
        ]
        .map(|text| CompiledGrammar::from_gbnf(text).unwrap());
        let mut matchers: Vec<Matcher> = (0..24)
            .map(|i| {
                let mut matcher = Matcher::with_vocabulary(&grammars[i % 3], index.clone());
                if i % 2 == 1 {
                    let first = match i % 3 {
                        0 => 1,
                        1 => 4,
                        _ => 2,
                    };
                    matcher.accept_token(first).unwrap();
                }
                matcher
            })
            .collect();
        let row_words = 3;
        let mut alone = vec![u32::MAX; row_words * matchers.len()];
        for (matcher, row) in matchers.iter_mut().zip(alone.chunks_mut(row_words)) {
            matcher.fill_mask_words(&mut row[..1]);
            row[1..].fill(0);
        }
        let mut batch = vec![u32::MAX; row_words * matchers.len()];
        let mut refs: Vec<&mut Matcher> = matchers.iter_mut().collect();
        fill_masks(&mut refs, &mut batch, row_words);
        assert_eq!(batch, alone);
        assert_ne!(batch[0], 0, "a row was filled");
    }
}
