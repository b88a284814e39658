//! `fill_next_token_bitmasks`: the masks of a batch's matchers in one call, computed on
//! threads with the GIL released (as xgrammar's batch matcher and llguidance's parallel
//! fill do).

use grail_engine::{Matcher as RustMatcher, fill_masks};
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;

use crate::matcher::{Matcher, bitmask_target};

/// Writes the tokens allowed next of `matchers[i]` into row `indices[i]` of `bitmask`
/// (row `i` without `indices`), computing the masks on threads with the GIL released:
/// the same rows as calling `fill_next_token_bitmask` on each matcher. The bitmask is
/// as for `fill_next_token_bitmask` (shape (batch, ceil(vocab_size / 32))); the rows must
/// be distinct, and each matcher may appear once.
#[pyfunction]
#[pyo3(signature = (matchers, bitmask, indices = None))]
pub fn fill_next_token_bitmasks(
    py: Python<'_>,
    mut matchers: Vec<PyRefMut<'_, Matcher>>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<Vec<usize>>,
) -> PyResult<()> {
    let target = bitmask_target(bitmask)?;
    let indices = indices.unwrap_or_else(|| (0..matchers.len()).collect());
    if indices.len() != matchers.len() {
        return Err(PyValueError::new_err(format!(
            "{} matchers but {} row indices",
            matchers.len(),
            indices.len()
        )));
    }
    check_distinct_rows(
        &indices,
        target.rows,
        "a bitmask",
        "each matcher needs its own row",
    )?;
    let mut words = 0;
    for matcher in &matchers {
        let needed = matcher
            .inner
            .vocabulary()
            .map_or(0, |index| index.vocabulary().len().div_ceil(32));
        words = words.max(needed);
    }
    if target.width < words {
        return Err(PyValueError::new_err(format!(
            "the bitmask rows hold {} words; these vocabularies need {words} (allocate_token_bitmask(batch, vocab.size))",
            target.width
        )));
    }
    let width = target.width;
    // SAFETY (for every row written below): `bitmask_target` checked that the object is
    // a writable, C-contiguous int32 array of `rows` × `width` elements at `address`,
    // each `index < rows` was checked above, and rows are written only with the GIL held
    // (no Python code can move or free them then).
    let target_row = |index: usize| -> &mut [u32] {
        unsafe {
            std::slice::from_raw_parts_mut((target.address as *mut u32).add(index * width), width)
        }
    };
    // Masks the learned store already holds go straight into the caller's rows, with the
    // GIL held (a copy each); the rest are computed on threads without it, into a buffer
    // of the batch's own, then copied.
    let mut misses: Vec<(usize, &mut RustMatcher)> = Vec::new();
    for (matcher, &index) in matchers.iter_mut().zip(&indices) {
        let row = target_row(index);
        if matcher.ended {
            row.fill(0);
            continue;
        }
        let used = matcher
            .inner
            .vocabulary()
            .map_or(0, |index| index.vocabulary().len().div_ceil(32));
        if matcher.inner.vocabulary().is_some()
            && matcher.inner.fill_mask_words_if_cached(&mut row[..used])
        {
            row[used..].fill(0);
        } else {
            misses.push((index, &mut matcher.inner));
        }
    }
    if misses.is_empty() {
        return Ok(());
    }
    let (rows_of_misses, mut inner): (Vec<usize>, Vec<&mut RustMatcher>) =
        misses.into_iter().unzip();
    let mut rows = vec![0u32; words.max(1) * inner.len()];
    py.detach(|| fill_masks(&mut inner, &mut rows, words.max(1)));
    for (row, &index) in rows.chunks(words.max(1)).zip(&rows_of_misses) {
        let target_row = target_row(index);
        target_row[..row.len()].copy_from_slice(row);
        target_row[row.len()..].fill(0);
    }
    Ok(())
}

/// Refuses `rows` unless each is below `count` (IndexError) and none repeats
/// (ValueError: `why`), naming `what` holds the rows.
pub(crate) fn check_distinct_rows(
    rows: &[usize],
    count: usize,
    what: &str,
    why: &str,
) -> PyResult<()> {
    let mut seen = vec![false; count];
    for &row in rows {
        if row >= count {
            return Err(PyIndexError::new_err(format!(
                "row {row} of {what} of {count} rows"
            )));
        }
        if std::mem::replace(&mut seen[row], true) {
            return Err(PyValueError::new_err(format!(
                "row {row} of {what} is named twice; {why}"
            )));
        }
    }
    Ok(())
}
