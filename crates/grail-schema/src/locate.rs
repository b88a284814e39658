//! Where a JSON pointer is in the schema's text, so diagnostics can show the line with a
//! caret. A small scanner that follows the pointer through the text; it trusts the text
//! to be JSON (it was parsed already) and gives up (`None`) on anything unexpected.

/// The byte range of what `pointer` names in `text`: the key of an object member (for a
/// keyword or property), the element of an array, or the whole document for `""`.
pub fn locate(text: &str, pointer: &str) -> Option<(usize, usize)> {
    let tokens: Vec<String> = if pointer.is_empty() {
        Vec::new()
    } else {
        pointer
            .strip_prefix('/')?
            .split('/')
            .map(|token| token.replace("~1", "/").replace("~0", "~"))
            .collect()
    };
    let mut scanner = Scanner {
        bytes: text.as_bytes(),
        position: 0,
    };
    scanner.skip_space();
    let mut span = (scanner.position, text.len());
    for token in &tokens {
        scanner.skip_space();
        match scanner.peek()? {
            b'{' => {
                scanner.position += 1;
                loop {
                    scanner.skip_space();
                    if scanner.peek()? == b'}' {
                        return None;
                    }
                    let key_start = scanner.position;
                    let key = scanner.string()?;
                    let key_end = scanner.position;
                    scanner.skip_space();
                    scanner.expect(b':')?;
                    scanner.skip_space();
                    if key == *token {
                        span = (key_start, key_end);
                        break;
                    }
                    scanner.skip_value()?;
                    scanner.skip_space();
                    if scanner.peek()? == b',' {
                        scanner.position += 1;
                    }
                }
            }
            b'[' => {
                let wanted: usize = token.parse().ok()?;
                scanner.position += 1;
                for _ in 0..wanted {
                    scanner.skip_space();
                    scanner.skip_value()?;
                    scanner.skip_space();
                    scanner.expect(b',')?;
                }
                scanner.skip_space();
                let start = scanner.position;
                let mut probe = Scanner {
                    bytes: scanner.bytes,
                    position: start,
                };
                probe.skip_value()?;
                span = (start, probe.position);
            }
            _ => return None,
        }
    }
    Some(span)
}

struct Scanner<'t> {
    bytes: &'t [u8],
    position: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.position).copied()
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.position += 1)
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.position += 1;
        }
    }

    /// A string literal, decoded (escapes of the pointer's characters matter).
    fn string(&mut self) -> Option<String> {
        self.expect(b'"')?;
        let start = self.position;
        let mut raw_end = start;
        let mut escaped = false;
        while let Some(byte) = self.peek() {
            self.position += 1;
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                raw_end = self.position - 1;
                break;
            }
        }
        let raw = std::str::from_utf8(&self.bytes[start..raw_end]).ok()?;
        serde_json::from_str(&format!("\"{raw}\"")).ok()
    }

    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            self.skip_space();
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.position += 1;
                    continue;
                }
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    self.position += 1;
                }
                b',' | b':' if depth > 0 => {
                    self.position += 1;
                    continue;
                }
                _ => {
                    while let Some(byte) = self.peek() {
                        if matches!(
                            byte,
                            b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r' | b':'
                        ) {
                            break;
                        }
                        self.position += 1;
                    }
                }
            }
            if depth == 0 {
                return Some(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_keys_and_elements() {
        let text = r#"{"type": "object", "properties": {"a/b": {"type": "array", "uniqueItems": true}, "c": {"enum": [1, {"x": 2}, 3]}}}"#;
        let at = |pointer: &str| locate(text, pointer).map(|(start, end)| &text[start..end]);
        assert_eq!(at("/type"), Some("\"type\""));
        assert_eq!(at("/properties/a~1b/uniqueItems"), Some("\"uniqueItems\""));
        assert_eq!(at("/properties/c/enum/1"), Some("{\"x\": 2}"));
        assert_eq!(at("/properties/c/enum/2"), Some("3"));
        assert_eq!(at("/properties/missing"), None);
        assert_eq!(at(""), Some(text));
    }
}
