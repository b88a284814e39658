//! `fillNextTokenBitmasks`: the masks of a batch's matchers in one call, computed on
//! threads.

use grail_engine::{Matcher as RustMatcher, fill_masks};
use napi::bindgen_prelude::{ClassInstance, Uint32ArraySlice};
use napi_derive::napi;

use crate::errors::invalid;
use crate::matcher::Matcher;

/// Writes the tokens allowed next of `matchers[i]` into row `rows[i]` (row `i` without
/// `rows`) of `bitmask`, a `Uint32Array` of rows of `ceil(vocabularySize / 32)` words,
/// computing the masks on threads: the same rows as `fillNextTokenBitmask` on each
/// matcher. Each matcher may appear once, and each row once.
#[napi]
pub fn fill_next_token_bitmasks(
    mut matchers: Vec<ClassInstance<'_, Matcher>>,
    mut bitmask: Uint32ArraySlice<'_>,
    rows: Option<Vec<u32>>,
) -> napi::Result<()> {
    let rows: Vec<usize> = match rows {
        Some(rows) => rows.into_iter().map(|row| row as usize).collect(),
        None => (0..matchers.len()).collect(),
    };
    if rows.len() != matchers.len() {
        return Err(invalid(format!(
            "{} matchers but {} rows",
            matchers.len(),
            rows.len()
        )));
    }
    let mut addresses: Vec<*const Matcher> = matchers
        .iter()
        .map(|matcher| &**matcher as *const Matcher)
        .collect();
    addresses.sort_unstable();
    if addresses.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(invalid("a matcher appears twice in the batch"));
    }
    let mut sorted_rows = rows.clone();
    sorted_rows.sort_unstable();
    if sorted_rows.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(invalid(
            "a row is named twice; each matcher needs its own row",
        ));
    }
    let mut words = 0;
    for matcher in &mut matchers {
        words = words.max(matcher.mask()?.words().len());
    }
    let needed = (sorted_rows.last().map_or(0, |&row| row + 1)) * words;
    if bitmask.len() < needed {
        return Err(invalid(format!(
            "the bitmask holds {} words; these rows need {needed} (allocateTokenBitmask(vocabulary.size, rows))",
            bitmask.len()
        )));
    }
    let ended: Vec<bool> = matchers.iter().map(|matcher| matcher.ended).collect();
    let mut inner: Vec<&mut RustMatcher> = matchers
        .iter_mut()
        .map(|matcher| &mut matcher.inner)
        .collect();
    let mut masks = vec![0u32; words.max(1) * inner.len()];
    fill_masks(&mut inner, &mut masks, words.max(1));
    // SAFETY: the array's memory stays alive and in place for this call (the argument
    // holds it), and no JavaScript runs while it is written: this is the JavaScript
    // thread, inside a synchronous call.
    let out = unsafe { bitmask.as_mut() };
    for ((mask, &row), ended) in masks.chunks(words.max(1)).zip(&rows).zip(ended) {
        let target = &mut out[row * words..(row + 1) * words];
        if ended {
            target.fill(0);
        } else {
            target.copy_from_slice(&mask[..words]);
        }
    }
    Ok(())
}
