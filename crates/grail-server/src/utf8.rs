//! Token bytes to text pieces: a token may end inside a UTF-8 character, so bytes are
//! held back until the character is complete.

/// Turns a stream of byte chunks into whole-character text pieces.
#[derive(Debug, Default)]
pub struct Utf8Pieces {
    pending: Vec<u8>,
}

impl Utf8Pieces {
    /// Adds `bytes`; returns the text now complete (possibly empty). Bytes that can never
    /// be UTF-8 come out as U+FFFD.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    out.push_str(text);
                    self.pending.clear();
                    return out;
                }
                Err(error) => {
                    let valid = error.valid_up_to();
                    out.push_str(
                        std::str::from_utf8(&self.pending[..valid]).expect("valid prefix"),
                    );
                    match error.error_len() {
                        // An incomplete character at the end: wait for more.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push('\u{FFFD}');
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// What is still held back, as text (at the end of the output).
    pub fn finish(&mut self) -> String {
        let rest = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        rest
    }
}

#[cfg(test)]
mod tests {
    use super::Utf8Pieces;

    #[test]
    fn split_characters_wait_for_their_last_byte() {
        let mut pieces = Utf8Pieces::default();
        let text = "é€x";
        let mut out = String::new();
        for byte in text.as_bytes() {
            out.push_str(&pieces.push(&[*byte]));
        }
        assert_eq!(out, text);
        assert_eq!(pieces.push(&[0xE2]), "");
        assert_eq!(pieces.finish(), "\u{FFFD}");
        assert_eq!(pieces.push(&[0xFF, b'a']), "\u{FFFD}a");
    }
}
