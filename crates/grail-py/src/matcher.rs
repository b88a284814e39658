//! `Matcher`: a parse state over one grammar and vocabulary — tokens in, masks out.

use std::collections::VecDeque;

use grail_engine::{Matcher as RustMatcher, NextRule};
use grail_vocab::TokenBitmask;
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::grammar::Grammar;
use crate::vocabulary::Vocabulary;

/// The state of one sequence being generated under a grammar.
///
/// `fill_next_token_bitmask` writes the tokens allowed next into a row of an int32
/// bitmask (bit t of the row set: token t allowed), with the GIL released, so the rows of
/// a batch can be filled from threads (one matcher per thread at a time).
/// `accept_token` moves on; `rollback` undoes tokens (speculative decoding, retries).
/// With `max_rollback_tokens=k`, only the last k tokens can be rolled back, and the
/// matcher's memory stays bounded however long the text.
#[pyclass(module = "grail_gbnf")]
pub struct Matcher {
    pub(crate) inner: RustMatcher,
    mask: TokenBitmask,
    /// The last numpy bitmask filled and where its words are: a step's call with the
    /// same array skips reading `__array_interface__` again (a numpy array's data and
    /// shape stay put while a reference is held: `resize` refuses to move them).
    last_target: Option<(Py<PyAny>, BitmaskTarget)>,
    /// An end-of-generation token was accepted: nothing may follow.
    pub(crate) ended: bool,
    /// `ended` before each accepted token that can still be rolled back (the last
    /// `max_rollback_tokens`, when limited).
    ended_history: VecDeque<bool>,
    /// The most tokens `rollback` can undo (None: all); the engine keeps history for
    /// them (`set_token_history_limit`).
    max_rollback_tokens: Option<usize>,
}

/// Where a bitmask argument's int32 words are: its address, rows and words per row.
/// numpy arrays (and anything with `__array_interface__`) as they are; CPU torch tensors
/// by `data_ptr()`; other DLPack producers through `numpy.from_dlpack`. The buffer
/// protocol is not used: the stable ABI has it only from Python 3.11, and this module
/// supports 3.9.
#[derive(Clone, Copy)]
pub(crate) struct BitmaskTarget {
    pub(crate) address: usize,
    pub(crate) rows: usize,
    pub(crate) width: usize,
}

/// `numpy.ndarray`, looked up once.
static NDARRAY: pyo3::sync::PyOnceLock<Py<pyo3::types::PyType>> = pyo3::sync::PyOnceLock::new();

/// True when `object` is exactly a numpy array (not a subclass, whose `resize` could
/// behave otherwise).
pub(crate) fn is_exact_ndarray(object: &Bound<'_, PyAny>) -> bool {
    let py = object.py();
    let ndarray = NDARRAY.get_or_try_init(py, || -> PyResult<_> {
        Ok(py
            .import("numpy")?
            .getattr("ndarray")?
            .cast_into::<pyo3::types::PyType>()?
            .unbind())
    });
    ndarray.is_ok_and(|ndarray| object.get_type().is(ndarray.bind(py)))
}

pub(crate) fn bitmask_target(bitmask: &Bound<'_, PyAny>) -> PyResult<BitmaskTarget> {
    let py = bitmask.py();
    let kind = |message: &str| {
        PyTypeError::new_err(format!(
            "the bitmask must be a C-contiguous, writable int32 array with 1 or 2 dimensions (see allocate_token_bitmask): {message}"
        ))
    };
    let (address, shape): (usize, Vec<usize>) =
        if let Ok(interface) = bitmask.getattr("__array_interface__") {
            let typestr: String = interface.get_item("typestr")?.extract()?;
            if typestr != "<i4" && typestr != "|i4" {
                return Err(kind(&format!("its dtype is {typestr}, not int32")));
            }
            let (address, readonly): (usize, bool) = interface.get_item("data")?.extract()?;
            if readonly {
                return Err(kind("it is read-only"));
            }
            let shape: Vec<usize> = interface.get_item("shape")?.extract()?;
            let strides = interface.get_item("strides")?;
            if !strides.is_none() {
                // Explicit strides must be the C-contiguous ones.
                let strides: Vec<isize> = strides.extract()?;
                let mut expected = 4isize;
                for (stride, size) in strides.iter().zip(&shape).rev() {
                    if *size > 1 && *stride != expected {
                        return Err(kind("it is not C-contiguous"));
                    }
                    expected *= *size as isize;
                }
            }
            (address, shape)
        } else if bitmask.hasattr("data_ptr")? && bitmask.hasattr("is_contiguous")? {
            // A torch tensor.
            let dtype = bitmask.getattr("dtype")?.str()?.to_string();
            if dtype != "torch.int32" {
                return Err(kind(&format!("its dtype is {dtype}")));
            }
            if bitmask
                .getattr("device")?
                .getattr("type")?
                .extract::<String>()?
                != "cpu"
            {
                return Err(kind(
                    "it is not on the CPU (fill a CPU bitmask, then copy it to the device)",
                ));
            }
            if !bitmask.call_method0("is_contiguous")?.extract::<bool>()? {
                return Err(kind("it is not contiguous"));
            }
            let shape: Vec<usize> = bitmask.getattr("shape")?.extract()?;
            (bitmask.call_method0("data_ptr")?.extract()?, shape)
        } else if bitmask.hasattr("__dlpack__")? {
            let array = py
                .import("numpy")?
                .call_method1("from_dlpack", (bitmask,))?;
            return bitmask_target(&array);
        } else {
            return Err(kind(
                "it is neither a numpy array, a torch tensor nor a DLPack object",
            ));
        };
    let (rows, width) = match shape.as_slice() {
        [width] => (1, *width),
        [rows, width] => (*rows, *width),
        _ => return Err(kind(&format!("it has {} dimensions", shape.len()))),
    };
    if address == 0 && rows * width > 0 {
        return Err(kind("it has no data"));
    }
    Ok(BitmaskTarget {
        address,
        rows,
        width,
    })
}

#[pymethods]
impl Matcher {
    /// A matcher at the start of `grammar`, taking tokens of `vocabulary`. With
    /// `max_rollback_tokens=k`, history is kept to roll back the last k tokens only
    /// (xgrammar's `max_rollback_tokens`): memory stays bounded instead of growing with
    /// the text.
    #[new]
    #[pyo3(signature = (grammar, vocabulary, max_rollback_tokens = None))]
    fn new(
        grammar: &Grammar,
        vocabulary: &Vocabulary,
        max_rollback_tokens: Option<usize>,
    ) -> Matcher {
        let size = vocabulary.index.vocabulary().len();
        let mut inner = RustMatcher::with_vocabulary(&grammar.compiled, vocabulary.index.clone());
        inner.set_token_history_limit(max_rollback_tokens);
        Matcher {
            inner,
            mask: TokenBitmask::new(size),
            last_target: None,
            ended: false,
            ended_history: VecDeque::new(),
            max_rollback_tokens,
        }
    }

    /// The most tokens `rollback` can undo (None: every token accepted).
    #[getter]
    fn max_rollback_tokens(&self) -> Option<usize> {
        self.max_rollback_tokens
    }

    /// Accepts token `token_id`: True when the grammar allows it; False, with the state
    /// unchanged, when not. An end-of-generation token is accepted where the grammar may
    /// end; the matcher is then terminated.
    fn accept_token(&mut self, token_id: u32) -> bool {
        if self.ended {
            return false;
        }
        if self.inner.accept_token(token_id).is_err() {
            return false;
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
        true
    }

    /// Accepts `token_ids` in order, all or nothing: True when every one was accepted;
    /// False, with the state unchanged, when one was refused.
    fn accept_tokens(&mut self, token_ids: Vec<u32>) -> bool {
        if self.beyond_rollback(token_ids.len()) {
            // More tokens than can be rolled back: on a copy, kept if all are accepted.
            let mut copy = self.fork();
            if !token_ids.iter().all(|&token| copy.accept_token(token)) {
                return false;
            }
            copy.last_target = self.last_target.take();
            *self = copy;
            return true;
        }
        for (accepted, &token) in token_ids.iter().enumerate() {
            if !self.accept_token(token) {
                self.rollback(accepted).expect("the tokens just accepted");
                return false;
            }
        }
        true
    }

    /// How many of `token_ids`, from the first, the grammar accepts one after another (a
    /// draft checked for speculative decoding), without moving the matcher.
    fn validate_tokens(&mut self, token_ids: Vec<u32>) -> usize {
        self.on_draft(token_ids.len(), |matcher| {
            let accepted = token_ids
                .iter()
                .take_while(|&&token| matcher.accept_token(token))
                .count();
            (accepted, accepted)
        })
    }

    /// Accepts text (not tokens): True when the grammar allows it (the state unchanged
    /// otherwise). Text accepted this way is not counted by `rollback`.
    fn accept_text(&mut self, text: &str) -> bool {
        if self.ended {
            return false;
        }
        let before = self.inner.history_len();
        match self.inner.accept_str(text) {
            Ok(()) => true,
            Err(_) => {
                let taken = self.inner.history_len().saturating_sub(before);
                self.inner.rollback(taken);
                false
            }
        }
    }

    /// Undoes the last `tokens` accepted tokens. Raises ValueError, changing nothing,
    /// when fewer were accepted (or, with `max_rollback_tokens`, are kept).
    #[pyo3(signature = (tokens = 1))]
    fn rollback(&mut self, tokens: usize) -> PyResult<()> {
        if tokens == 0 {
            return Ok(());
        }
        // `ended_history` holds at most the tokens the engine keeps (the last
        // `max_rollback_tokens`, which the engine trims to no fewer), so the engine's
        // refusal after this check cannot happen; it changes nothing if it does.
        if tokens > self.ended_history.len() || !self.inner.rollback_tokens(tokens) {
            let kept = match self.max_rollback_tokens {
                Some(limit) => format!(" (max_rollback_tokens={limit})"),
                None => String::new(),
            };
            return Err(PyValueError::new_err(format!(
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
    fn reset(&mut self) {
        self.inner.reset();
        self.ended = false;
        self.ended_history.clear();
    }

    /// True when the input so far is a complete match (generation may end here).
    fn is_accepting(&self) -> bool {
        self.inner.is_accepting()
    }

    /// True when nothing more may be accepted: an end-of-generation token was accepted,
    /// or the grammar is complete and allows no more text.
    fn is_terminated(&self) -> bool {
        if self.ended {
            return true;
        }
        self.inner.allows_nothing_more()
    }

    /// Writes the tokens allowed next into row `index` of `bitmask` (an int32 array of
    /// shape (batch, ceil(vocab_size / 32)) or (ceil(vocab_size / 32),)): bit t % 32 of
    /// word t // 32 set when token t is allowed. The GIL is released while the mask is
    /// computed.
    #[pyo3(signature = (bitmask, index = 0))]
    fn fill_next_token_bitmask(
        &mut self,
        py: Python<'_>,
        bitmask: &Bound<'_, PyAny>,
        index: usize,
    ) -> PyResult<()> {
        let (target, numpy) = self.target_of(bitmask)?;
        let words = self.check_rows(&target, index, 1)?;
        let BitmaskTarget { address, width, .. } = target;
        // Writes the mask into `row`'s first `words` words and clears the rest.
        let fill_row = move |matcher: &mut RustMatcher, ended: bool, row: &mut [u32]| {
            let (used, spare) = row.split_at_mut(words);
            if ended {
                used.fill(0);
            } else {
                matcher.fill_mask_words(used);
            }
            spare.fill(0);
        };
        let (matcher, ended) = (&mut self.inner, self.ended);
        if !ended {
            // A mask the matcher has cached is a copy: written straight into the row with
            // the GIL held (for any kind of bitmask), since releasing and taking the GIL
            // back costs more than the copy.
            // SAFETY: as below for the kinds accepted, written with the GIL held, so no
            // Python code can free or move the storage meanwhile.
            let row: &mut [u32] = unsafe {
                std::slice::from_raw_parts_mut((address as *mut u32).add(index * width), width)
            };
            let (used, spare) = row.split_at_mut(words);
            if matcher.fill_mask_words_if_cached(used) {
                spare.fill(0);
                return Ok(());
            }
        }
        if numpy {
            // Straight into the row, with the GIL released.
            py.detach(move || {
                // SAFETY: `bitmask_target` checked that the object is a writable,
                // C-contiguous int32 array of `rows` × `width` elements at `address`, and
                // `index < rows`. It is a numpy array, which stays alive (this call holds
                // a reference) and in place: numpy refuses to resize an array that has
                // references (`refcheck=False` is forbidden for a bitmask in use, in the
                // docs). Only row `index` is written, through a slice of its own; other
                // threads may fill other rows meanwhile (batches are filled so), and the
                // same row from two threads at once is the caller's race.
                let row: &mut [u32] = unsafe {
                    std::slice::from_raw_parts_mut((address as *mut u32).add(index * width), width)
                };
                fill_row(matcher, ended, row);
            });
        } else {
            // Computed with the GIL released, written with it held.
            let mask = &mut self.mask;
            py.detach(|| fill_row(matcher, ended, mask.words_mut()));
            // SAFETY: as above, for any of the accepted kinds (a torch tensor by its
            // `data_ptr`, a DLPack or array-interface buffer), written with the GIL held,
            // so no Python code can free or move it meanwhile.
            let row: &mut [u32] = unsafe {
                std::slice::from_raw_parts_mut((address as *mut u32).add(index * width), width)
            };
            row[..words].copy_from_slice(self.mask.words());
            row[words..].fill(0);
        }
        Ok(())
    }

    /// The masks along a draft, for speculative decoding: row `index + i` of `bitmask`
    /// gets the tokens allowed after `draft[:i]` (as `fill_next_token_bitmask` writes a
    /// row), for `i` from 0 until a token of the draft is refused or the draft ends;
    /// rows past that are left as they are. Returns how many rows were filled (one more
    /// than the tokens `validate_tokens` accepts). The bitmask needs `len(draft) + 1`
    /// rows from `index`. The matcher does not move; the GIL is released while the
    /// masks are computed.
    #[pyo3(signature = (draft, bitmask, index = 0))]
    fn fill_draft_bitmasks(
        &mut self,
        py: Python<'_>,
        draft: Vec<u32>,
        bitmask: &Bound<'_, PyAny>,
        index: usize,
    ) -> PyResult<usize> {
        let (target, _) = self.target_of(bitmask)?;
        let words = self.check_rows(&target, index, draft.len() + 1)?;
        let size = self.vocabulary_size();
        if let Some((position, id)) = draft
            .iter()
            .enumerate()
            .find(|&(_, &id)| id as usize >= size)
        {
            return Err(PyValueError::new_err(format!(
                "token {id} (position {position} of the draft) is not in this vocabulary of {size} tokens"
            )));
        }
        // Computed into a buffer of its own with the GIL released, then written into the
        // caller's rows with it held (no Python code can free or move them then).
        let mut rows = vec![0u32; words * (draft.len() + 1)];
        let filled = py.detach(|| self.draft_rows(&draft, words, &mut rows));
        for (position, row) in rows.chunks(words).take(filled).enumerate() {
            // SAFETY: `bitmask_target` checked that the object is a writable,
            // C-contiguous int32 array of `rows` × `width` elements at `address`,
            // `check_rows` that rows `index..index + draft.len() + 1` exist, and the GIL is
            // held while the row is written.
            let out: &mut [u32] = unsafe {
                std::slice::from_raw_parts_mut(
                    (target.address as *mut u32).add((index + position) * target.width),
                    target.width,
                )
            };
            out[..words].copy_from_slice(row);
            out[words..].fill(0);
        }
        Ok(filled)
    }

    /// The tokens allowed next, as a sorted list of ids (slower than the bitmask; for
    /// inspection and tests).
    fn allowed_tokens(&mut self, py: Python<'_>) -> Vec<u32> {
        let (matcher, mask, ended) = (&mut self.inner, &mut self.mask, self.ended);
        py.detach(|| {
            if ended {
                Vec::new()
            } else {
                matcher.fill_mask(mask);
                mask.ids().collect()
            }
        })
    }

    /// True when token `token_id` may come next (cheaper than a whole mask).
    fn is_token_allowed(&mut self, token_id: u32) -> bool {
        !self.ended && self.inner.is_token_allowed(token_id)
    }

    /// What may come next, as the `gbnf` npm package lists it: dicts with `type` "char"
    /// or "char_exclude" and `value` (code points and [first, last] ranges), "token" with
    /// `value` (ids) and `negated`, and "end".
    fn next_characters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for rule in self.inner.next_characters().rules {
            let dict = PyDict::new(py);
            let ranges = |ranges: &[(u32, u32)]| -> PyResult<Bound<'py, PyList>> {
                let values = PyList::empty(py);
                for &(first, last) in ranges {
                    if first == last {
                        values.append(first)?;
                    } else {
                        values.append((first, last))?;
                    }
                }
                Ok(values)
            };
            match &rule {
                NextRule::Char(set) => {
                    dict.set_item("type", "char")?;
                    dict.set_item("value", ranges(set)?)?;
                }
                NextRule::CharExclude(set) => {
                    dict.set_item("type", "char_exclude")?;
                    dict.set_item("value", ranges(set)?)?;
                }
                NextRule::Token { ids, negated } => {
                    dict.set_item("type", "token")?;
                    dict.set_item("value", ids.clone())?;
                    dict.set_item("negated", *negated)?;
                }
                NextRule::End => dict.set_item("type", "end")?,
            }
            list.append(dict)?;
        }
        Ok(list)
    }

    /// The text the grammar forces next (the same whatever is generated), at most
    /// `max_chars` characters.
    #[pyo3(signature = (max_chars = 256))]
    fn forced(&self, max_chars: usize) -> String {
        self.inner.forced(max_chars)
    }

    /// The bytes the grammar forces next, for jump-forward decoding: up to the first byte
    /// where it has a choice (or may end), at most `max_bytes`. Unlike `forced`, this
    /// goes on inside a character a token ended in.
    #[pyo3(signature = (max_bytes = 256))]
    fn jump_forward_bytes<'py>(&self, py: Python<'py>, max_bytes: usize) -> Bound<'py, PyBytes> {
        if self.ended {
            return PyBytes::new(py, b"");
        }
        PyBytes::new(py, &self.inner.jump_forward_bytes(max_bytes))
    }

    /// The tokens a decoder may append without sampling: the part of the model's own
    /// tokenization of `jump_forward_bytes()` that no continuation could tokenize
    /// differently (docs/jump-forward.md). `tokenize(data: bytes)` returns the token ids
    /// of exactly those bytes (no special tokens or prefix space added), or None when it
    /// cannot. The matcher does not move: append the tokens with `accept_tokens`. Raises
    /// ValueError when the tokenizer's tokens do not spell its input, and whatever
    /// `tokenize` raises.
    #[pyo3(signature = (tokenize, max_bytes = 256))]
    fn jump_forward_tokens(
        &self,
        py: Python<'_>,
        tokenize: &Bound<'_, PyAny>,
        max_bytes: usize,
    ) -> PyResult<Vec<u32>> {
        if self.ended {
            return Ok(Vec::new());
        }
        let mut failure: Option<PyErr> = None;
        let jump = self.inner.jump_forward_tokens(max_bytes, |bytes| {
            if failure.is_some() {
                return None;
            }
            let ids = tokenize
                .call1((PyBytes::new(py, bytes),))
                .and_then(|ids| ids.extract::<Option<Vec<u32>>>());
            ids.unwrap_or_else(|error| {
                failure = Some(error);
                None
            })
        });
        if let Some(error) = failure {
            return Err(error);
        }
        jump.map(|jump| jump.tokens)
            .map_err(|error| PyValueError::new_err(error.to_string()))
    }

    /// An independent copy of this matcher's state (for beams).
    fn fork(&self) -> Matcher {
        Matcher {
            inner: self.inner.fork(),
            mask: self.mask.clone(),
            last_target: None,
            ended: self.ended,
            ended_history: self.ended_history.clone(),
            max_rollback_tokens: self.max_rollback_tokens,
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "<grail_gbnf.Matcher: {} tokens accepted, accepting={}>",
            self.ended_history.len(),
            self.inner.is_accepting()
        )
    }
}

impl Matcher {
    /// Where `bitmask`'s words are, and whether it is exactly a numpy array (the one kind
    /// remembered, and written with the GIL released): a step's call with the array of
    /// the last call skips reading `__array_interface__` again.
    fn target_of(&mut self, bitmask: &Bound<'_, PyAny>) -> PyResult<(BitmaskTarget, bool)> {
        let py = bitmask.py();
        if let Some((_, target)) = self
            .last_target
            .as_ref()
            .filter(|(object, _)| object.bind(py).is(bitmask))
        {
            return Ok((*target, true));
        }
        let target = bitmask_target(bitmask)?;
        let numpy = is_exact_ndarray(bitmask);
        self.last_target = numpy.then(|| (bitmask.clone().unbind(), target));
        Ok((target, numpy))
    }

    /// Checks that `target`'s rows hold this vocabulary's mask and that rows
    /// `index..index + count` exist; returns the words of a mask.
    fn check_rows(&self, target: &BitmaskTarget, index: usize, count: usize) -> PyResult<usize> {
        let words = self.mask.words().len();
        if target.width < words {
            return Err(PyValueError::new_err(format!(
                "the bitmask rows hold {} words; this vocabulary needs {words} (allocate_token_bitmask(batch, vocab.size))",
                target.width
            )));
        }
        let rows = target.rows;
        if index.checked_add(count).is_none_or(|end| end > rows) {
            return Err(PyIndexError::new_err(match count {
                1 => format!("row {index} of a bitmask of {rows} rows"),
                _ => format!(
                    "rows {index} to {} of a bitmask of {rows} rows (a row per draft token and one more)",
                    index.saturating_add(count - 1)
                ),
            }));
        }
        Ok(words)
    }

    /// The number of tokens in this matcher's vocabulary.
    fn vocabulary_size(&self) -> usize {
        self.inner
            .vocabulary()
            .map_or(0, |index| index.vocabulary().len())
    }

    /// True when `tokens` more tokens could not all be rolled back (`max_rollback_tokens`).
    fn beyond_rollback(&self, tokens: usize) -> bool {
        self.max_rollback_tokens.is_some_and(|limit| tokens > limit)
    }

    /// Runs `walk`, which accepts at most `tokens` tokens and says how many as its second
    /// value, and puts the matcher back as it was: by rolling them back, or, when they
    /// could be more than `max_rollback_tokens`, by walking a copy instead.
    fn on_draft<R>(&mut self, tokens: usize, walk: impl FnOnce(&mut Matcher) -> (R, usize)) -> R {
        if self.beyond_rollback(tokens) {
            let mut copy = self.fork();
            return walk(&mut copy).0;
        }
        let (answer, accepted) = walk(self);
        self.rollback(accepted)
            .expect("the tokens just accepted can be rolled back");
        answer
    }

    /// The masks along `draft` into `rows` (`words` words each; a row per draft token and
    /// one more), each as `fill_next_token_bitmask` writes it after the tokens before it
    /// were accepted with `accept_token`, until a token is refused: returns how many rows
    /// were filled. Every id of `draft` is in the vocabulary. The matcher does not move.
    fn draft_rows(&mut self, draft: &[u32], words: usize, rows: &mut [u32]) -> usize {
        if self.ended {
            rows[..words].fill(0);
            return 1;
        }
        // Up to the first end-of-generation token the engine's masks are accept_token's;
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
            return filled;
        }
        // The tokens from the end-of-generation token on, one by one.
        self.on_draft(draft.len(), |matcher| {
            let (mut accepted, mut filled) = (0, filled);
            for &id in draft {
                if !matcher.accept_token(id) {
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
            (filled, accepted)
        })
    }
}
