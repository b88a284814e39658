//! Streaming text through a matcher, keeping just enough to say where it broke: the
//! line and column, and the text of that line (capped), never the whole input.

use std::io::Read;

use anyhow::Context;
use grail_engine::{AcceptError, CompiledGrammar, Matcher, NextCharacters};

/// Bytes of the failing line kept for display; longer lines keep their last part.
const LINE_KEEP: usize = 4096;

/// Where and why text stopped matching.
pub struct Failure {
    /// Byte offset of the first character that could not be consumed (the input length
    /// when the text ended too early).
    pub offset: u64,
    /// 1-based line of `offset`.
    pub line: u64,
    /// 1-based column of `offset`, in characters.
    pub column: u64,
    /// The failing line (or its last part), lossily decoded.
    pub line_text: String,
    /// Byte range of the failing character within `line_text` (empty at the end).
    pub caret: std::ops::Range<usize>,
    /// What could have come at `offset`.
    pub expected: NextCharacters,
    /// True when the text ended too early rather than going wrong.
    pub at_end: bool,
    /// True when the refused bytes are not UTF-8 (Grail never matches them).
    pub invalid_utf8: bool,
}

/// The result of feeding text.
pub struct Outcome {
    /// The whole text is a complete match.
    pub complete: bool,
    /// The whole text is a viable prefix.
    pub viable: bool,
    /// Why the text does not (completely) match, when it does not.
    pub failure: Option<Failure>,
    /// The matcher after the longest viable prefix.
    pub matcher: Matcher,
}

/// Line and column bookkeeping over the accepted bytes.
#[derive(Default)]
struct Position {
    offset: u64,
    line: u64,
    /// Characters on the current line so far.
    column: u64,
    /// Offset of the last byte that starts a character.
    last_lead: u64,
    line_bytes: Vec<u8>,
    /// Bytes of the current line dropped from the front of `line_bytes`.
    line_dropped: u64,
    line_start: u64,
}

impl Position {
    fn advance(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            if byte & 0xC0 != 0x80 {
                self.column += 1;
                self.last_lead = self.offset;
            }
            self.offset += 1;
            if byte == b'\n' {
                self.line += 1;
                self.column = 0;
                self.line_bytes.clear();
                self.line_dropped = 0;
                self.line_start = self.offset;
            } else {
                if self.line_bytes.len() >= 2 * LINE_KEEP {
                    self.line_bytes.drain(..LINE_KEEP);
                    self.line_dropped += LINE_KEEP as u64;
                }
                self.line_bytes.push(byte);
            }
        }
    }
}

/// Feeds everything `reader` yields to a fresh matcher, in chunks, with a small rollback
/// window (to step back to the start of a half-accepted character).
pub fn feed(grammar: &CompiledGrammar, mut reader: impl Read) -> anyhow::Result<Outcome> {
    let mut matcher = Matcher::new(grammar);
    matcher.set_history_limit(Some(4));
    let mut position = Position {
        line: 1,
        ..Position::default()
    };
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = reader.read(&mut buffer).context("cannot read the text")?;
        if read == 0 {
            break;
        }
        let chunk = &buffer[..read];
        match matcher.accept_bytes(chunk) {
            Ok(()) => position.advance(chunk),
            Err(AcceptError::Rejected { consumed }) => {
                position.advance(&chunk[..consumed]);
                let failure = fail_inside(&mut matcher, &mut position, &chunk[consumed..]);
                return Ok(Outcome {
                    complete: false,
                    viable: false,
                    failure: Some(failure),
                    matcher,
                });
            }
            Err(AcceptError::Limit { limit, consumed }) => {
                position.advance(&chunk[..consumed]);
                anyhow::bail!(
                    "matching stopped at line {}, column {}: {limit}",
                    position.line,
                    position.column + 1
                );
            }
            Err(other) => anyhow::bail!("matching failed: {other}"),
        }
    }
    let complete = matcher.is_accepting();
    let viable = matcher.is_viable();
    let failure = (!complete).then(|| {
        let caret = position.line_bytes.len();
        let line_text = String::from_utf8_lossy(&position.line_bytes).into_owned();
        let caret = String::from_utf8_lossy(&position.line_bytes[..caret]).len();
        Failure {
            offset: position.offset,
            line: position.line,
            column: position.column + 1,
            caret: caret.min(line_text.len())..caret.min(line_text.len()),
            line_text,
            expected: matcher.next_characters(),
            at_end: true,
            invalid_utf8: false,
        }
    });
    Ok(Outcome {
        complete,
        viable,
        failure,
        matcher,
    })
}

/// Builds the failure for a byte the matcher refused; `rest` starts at that byte.
fn fail_inside(matcher: &mut Matcher, position: &mut Position, rest: &[u8]) -> Failure {
    // Step back to the start of a character begun but not finished.
    let mut offset = position.offset;
    let mut column = position.column + 1;
    if matcher.in_partial_character() {
        let begun = position.offset - position.last_lead;
        matcher.rollback(begun as usize);
        offset = position.last_lead;
        column = position.column;
    }
    let line_offset = (offset - position.line_start - position.line_dropped) as usize;
    let mut line_bytes = position.line_bytes.clone();
    let tail: Vec<u8> = rest
        .iter()
        .take(200)
        .take_while(|&&byte| byte != b'\n')
        .copied()
        .collect();
    line_bytes.extend_from_slice(&tail);
    let line_offset = line_offset.min(line_bytes.len());
    let failing_len = utf8_char_len(&line_bytes[line_offset..]);
    let invalid_utf8 = std::str::from_utf8(&line_bytes[line_offset..])
        .is_err_and(|error| error.valid_up_to() == 0 && error.error_len().is_some());
    let before = String::from_utf8_lossy(&line_bytes[..line_offset]).len();
    let failing =
        String::from_utf8_lossy(&line_bytes[line_offset..line_offset + failing_len]).len();
    Failure {
        offset,
        line: position.line,
        column,
        line_text: String::from_utf8_lossy(&line_bytes).into_owned(),
        caret: before..before + failing,
        expected: matcher.next_characters(),
        at_end: false,
        invalid_utf8,
    }
}

/// Length of the (possibly invalid) character at the start of `bytes`: a whole valid
/// UTF-8 character, or one byte.
fn utf8_char_len(bytes: &[u8]) -> usize {
    for length in (1..=4.min(bytes.len())).rev() {
        if let Ok(text) = std::str::from_utf8(&bytes[..length])
            && text.chars().count() == 1
        {
            return length;
        }
    }
    bytes.len().min(1)
}
