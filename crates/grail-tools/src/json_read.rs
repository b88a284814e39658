//! JSON text read as the validator needs it: numbers keep the text they were written
//! with (`18446744073709551617` stays that, `1e400` is read, not refused), keys written
//! twice in one object are found, and an input that ends inside a value says so. The
//! syntax is RFC 8259's, as `serde_json` reads it (no lone surrogate escapes, no raw
//! control characters in strings).

use serde_json::{Map, Value};

/// A JSON value as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    /// The number's text.
    Number(String),
    String(String),
    Array(Vec<Json>),
    /// Members in the order written (keys distinct).
    Object(Vec<(String, Json)>),
}

/// Why a text is not one JSON value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ReadError {
    /// The text ends inside the value.
    Truncated,
    /// Not JSON: what is wrong, at a 1-based line and column.
    Syntax {
        message: String,
        line: usize,
        column: usize,
    },
    /// A key written twice in one object (JSON leaves its meaning open).
    DuplicateKey { key: String, pointer: String },
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// The deepest nesting read.
pub(crate) const MAX_DEPTH: usize = 512;

/// Reads `text` as exactly one JSON value, with JSON whitespace around it.
pub(crate) fn read(text: &str) -> Result<Json, ReadError> {
    let (value, end) = read_prefix(text)?;
    if end < text.len() {
        let reader = Reader {
            text: text.as_bytes(),
            at: end,
            source: text,
            python: false,
        };
        return Err(reader.syntax("trailing characters after the value"));
    }
    Ok(value)
}

/// Reads one JSON value at the start of `text` (after JSON whitespace), and where the
/// whitespace after it ends.
pub(crate) fn read_prefix(text: &str) -> Result<(Json, usize), ReadError> {
    read_prefix_as(text, false)
}

/// [`read_prefix`], with `python`: a Python literal as pythonic calls write their
/// arguments, read as the value `ast.literal_eval` gives: `True`, `False` and `None`
/// for JSON's words, strings in either quote with Python's escapes (`\/` is two
/// characters there, a `\u` escape of a surrogate is refused: no string holds one),
/// numbers, lists and dicts with string keys as in JSON.
pub(crate) fn read_prefix_as(text: &str, python: bool) -> Result<(Json, usize), ReadError> {
    let mut reader = Reader {
        text: text.as_bytes(),
        at: 0,
        source: text,
        python,
    };
    reader.space();
    let value = reader.value(0, &mut String::new())?;
    reader.space();
    Ok((value, reader.at))
}

struct Reader<'t> {
    text: &'t [u8],
    at: usize,
    source: &'t str,
    /// Python literals rather than JSON (see [`read_prefix_as`]).
    python: bool,
}

impl Reader<'_> {
    fn syntax(&self, message: &str) -> ReadError {
        let before = &self.source[..self.at.min(self.source.len())];
        let line = before.matches('\n').count() + 1;
        let column = before
            .rsplit('\n')
            .next()
            .map_or(0, |line| line.chars().count())
            + 1;
        ReadError::Syntax {
            message: message.to_string(),
            line,
            column,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    /// The next byte, or `Truncated` at the end.
    fn next_byte(&mut self) -> Result<u8, ReadError> {
        let byte = self.peek().ok_or(ReadError::Truncated)?;
        self.at += 1;
        Ok(byte)
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn expect_word(&mut self, word: &[u8]) -> Result<(), ReadError> {
        for &expected in word {
            match self.peek() {
                None => return Err(ReadError::Truncated),
                Some(byte) if byte == expected => self.at += 1,
                Some(_) => return Err(self.syntax("expected a value")),
            }
        }
        Ok(())
    }

    fn value(&mut self, depth: usize, pointer: &mut String) -> Result<Json, ReadError> {
        if depth > MAX_DEPTH {
            return Err(ReadError::TooDeep);
        }
        match self.peek() {
            None => Err(ReadError::Truncated),
            Some(b'n') if !self.python => self.expect_word(b"null").map(|()| Json::Null),
            Some(b't') if !self.python => self.expect_word(b"true").map(|()| Json::Bool(true)),
            Some(b'f') if !self.python => self.expect_word(b"false").map(|()| Json::Bool(false)),
            Some(b'N') if self.python => self.expect_word(b"None").map(|()| Json::Null),
            Some(b'T') if self.python => self.expect_word(b"True").map(|()| Json::Bool(true)),
            Some(b'F') if self.python => self.expect_word(b"False").map(|()| Json::Bool(false)),
            Some(b'"') => self.string().map(Json::String),
            Some(b'\'') if self.python => self.string().map(Json::String),
            Some(b'-' | b'0'..=b'9') => self.number().map(Json::Number),
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.space();
                if self.peek() == Some(b']') {
                    self.at += 1;
                    return Ok(Json::Array(items));
                }
                loop {
                    self.space();
                    let length = pointer.len();
                    pointer.push_str(&format!("/{}", items.len()));
                    items.push(self.value(depth + 1, pointer)?);
                    pointer.truncate(length);
                    self.space();
                    match self.next_byte()? {
                        b',' => continue,
                        b']' => return Ok(Json::Array(items)),
                        _ => {
                            self.at -= 1;
                            return Err(self.syntax("expected `,` or `]` after an array item"));
                        }
                    }
                }
            }
            Some(b'{') => {
                self.at += 1;
                let mut members: Vec<(String, Json)> = Vec::new();
                self.space();
                if self.peek() == Some(b'}') {
                    self.at += 1;
                    return Ok(Json::Object(members));
                }
                loop {
                    self.space();
                    match self.peek() {
                        None => return Err(ReadError::Truncated),
                        Some(b'"') => {}
                        Some(b'\'') if self.python => {}
                        Some(_) => return Err(self.syntax("expected a key (a string)")),
                    }
                    let key = self.string()?;
                    self.space();
                    match self.next_byte()? {
                        b':' => {}
                        _ => {
                            self.at -= 1;
                            return Err(self.syntax("expected `:` after a key"));
                        }
                    }
                    self.space();
                    let length = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                    let value = self.value(depth + 1, pointer)?;
                    if members.iter().any(|(known, _)| *known == key) {
                        return Err(ReadError::DuplicateKey {
                            key,
                            pointer: pointer[..length].to_string(),
                        });
                    }
                    pointer.truncate(length);
                    members.push((key, value));
                    self.space();
                    match self.next_byte()? {
                        b',' => continue,
                        b'}' => return Ok(Json::Object(members)),
                        _ => {
                            self.at -= 1;
                            return Err(self.syntax("expected `,` or `}` after an object member"));
                        }
                    }
                }
            }
            Some(_) => Err(self.syntax("expected a value")),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        self.at - start
    }

    fn number(&mut self) -> Result<String, ReadError> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek() {
            None => return Err(ReadError::Truncated),
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            Some(_) => return Err(self.syntax("expected a digit")),
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return match self.peek() {
                    None => Err(ReadError::Truncated),
                    Some(_) => Err(self.syntax("expected a digit after the decimal point")),
                };
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if self.digits() == 0 {
                return match self.peek() {
                    None => Err(ReadError::Truncated),
                    Some(_) => Err(self.syntax("expected a digit in the exponent")),
                };
            }
        }
        Ok(self.source[start..self.at].to_string())
    }

    fn hex4(&mut self) -> Result<u32, ReadError> {
        self.hex(4)
    }

    /// The value of the next `digits` hex digits (at most 8).
    fn hex(&mut self, digits: usize) -> Result<u32, ReadError> {
        let mut value: u32 = 0;
        for _ in 0..digits {
            let digit = match self.next_byte()? {
                byte @ b'0'..=b'9' => byte - b'0',
                byte @ b'a'..=b'f' => byte - b'a' + 10,
                byte @ b'A'..=b'F' => byte - b'A' + 10,
                _ => {
                    self.at -= 1;
                    return Err(self.syntax("expected a hex digit in an escape"));
                }
            };
            value = value.wrapping_mul(16) + u32::from(digit);
        }
        Ok(value)
    }

    fn string(&mut self) -> Result<String, ReadError> {
        let quote = self.next_byte()?;
        let mut out = String::new();
        loop {
            let start = self.at;
            while let Some(byte) = self.peek() {
                if byte == quote || byte == b'\\' || byte < 0x20 {
                    break;
                }
                self.at += 1;
            }
            out.push_str(&self.source[start..self.at]);
            match self.next_byte()? {
                byte if byte == quote => return Ok(out),
                b'\\' if self.python => self.python_escape(&mut out)?,
                b'\\' => {
                    let escaped = match self.next_byte()? {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let unit = self.hex4()?;
                            let code =
                                match unit {
                                    0xD800..=0xDBFF => {
                                        self.expect_word(b"\\u").map_err(|error| match error {
                                            ReadError::Truncated => ReadError::Truncated,
                                            _ => self
                                                .syntax("a lone leading surrogate in a \\u escape"),
                                        })?;
                                        let low = self.hex4()?;
                                        if !(0xDC00..=0xDFFF).contains(&low) {
                                            return Err(self.syntax(
                                                "a lone leading surrogate in a \\u escape",
                                            ));
                                        }
                                        0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                                    }
                                    0xDC00..=0xDFFF => {
                                        return Err(self
                                            .syntax("a lone trailing surrogate in a \\u escape"));
                                    }
                                    unit => unit,
                                };
                            char::from_u32(code).expect("a scalar value")
                        }
                        _ => {
                            self.at -= 1;
                            return Err(self.syntax("an invalid escape in a string"));
                        }
                    };
                    out.push(escaped);
                }
                _ => {
                    self.at -= 1;
                    return Err(
                        self.syntax("a control character inside a string (write it escaped)")
                    );
                }
            }
        }
    }
}

impl Reader<'_> {
    /// The character of a Python escape after its backslash, pushed to `out`: the short
    /// escapes, `\xhh`, `\uhhhh` and `\Uhhhhhhhh` of a character, an escaped line
    /// break (nothing); any other character keeps its backslash, as Python reads it.
    fn python_escape(&mut self, out: &mut String) -> Result<(), ReadError> {
        let byte = self.next_byte()?;
        let digits = match byte {
            b'x' => 2,
            b'u' => 4,
            b'U' => 8,
            _ => {
                match byte {
                    b'\n' => {}
                    b'\\' => out.push('\\'),
                    b'\'' => out.push('\''),
                    b'"' => out.push('"'),
                    b'a' => out.push('\u{7}'),
                    b'b' => out.push('\u{8}'),
                    b'f' => out.push('\u{c}'),
                    b'n' => out.push('\n'),
                    b'r' => out.push('\r'),
                    b't' => out.push('\t'),
                    b'v' => out.push('\u{b}'),
                    _ => {
                        // Not an escape: the backslash stays, and the character after it
                        // is read as any other.
                        self.at -= 1;
                        out.push('\\');
                    }
                }
                return Ok(());
            }
        };
        let code = self.hex(digits)?;
        match char::from_u32(code) {
            Some(character) => {
                out.push(character);
                Ok(())
            }
            None => Err(self.syntax(
                "an escape of a surrogate or of no character (write the character itself)",
            )),
        }
    }
}

impl Json {
    /// The value of `key` when this is an object that has it.
    pub(crate) fn member(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members
                .iter()
                .find(|(known, _)| known == key)
                .map(|(_, value)| value),
            _ => None,
        }
    }

    /// The value for a JSON Schema validator: numbers as `serde_json` reads them
    /// (integers of up to 64 bits exactly, others as the nearest double); `Err` with the
    /// number's text when one is beyond the doubles.
    pub(crate) fn to_value(&self) -> Result<Value, String> {
        Ok(match self {
            Json::Null => Value::Null,
            Json::Bool(value) => Value::Bool(*value),
            Json::Number(text) => Value::Number(
                serde_json::from_str::<serde_json::Number>(text).map_err(|_| text.clone())?,
            ),
            Json::String(text) => Value::String(text.clone()),
            Json::Array(items) => {
                Value::Array(items.iter().map(Json::to_value).collect::<Result<_, _>>()?)
            }
            Json::Object(members) => {
                let mut map = Map::with_capacity(members.len());
                for (key, value) in members {
                    map.insert(key.clone(), value.to_value()?);
                }
                Value::Object(map)
            }
        })
    }

    /// The value written compactly: numbers with their own text, strings in canonical
    /// form (`"`, `\`, the controls and DEL escaped, everything else as itself).
    pub(crate) fn write_compact(&self, out: &mut String) {
        self.write_literal(false, out);
    }

    /// [`Json::write_compact`], or with `python` as a Python literal (`True`, `False`,
    /// `None`; strings as JSON writes them, which Python reads alike).
    pub(crate) fn write_literal(&self, python: bool, out: &mut String) {
        let [yes, no, null] = match python {
            true => ["True", "False", "None"],
            false => ["true", "false", "null"],
        };
        match self {
            Json::Null => out.push_str(null),
            Json::Bool(value) => out.push_str(if *value { yes } else { no }),
            Json::Number(text) => out.push_str(text),
            Json::String(text) => write_string(text, out),
            Json::Array(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    item.write_literal(python, out);
                }
                out.push(']');
            }
            Json::Object(members) => {
                out.push('{');
                for (index, (key, value)) in members.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    write_string(key, out);
                    out.push(':');
                    value.write_literal(python, out);
                }
                out.push('}');
            }
        }
    }

    /// The text of the number at the JSON pointer `pointer`, if there is one.
    pub(crate) fn number_at(&self, pointer: &str) -> Option<&str> {
        let mut value = self;
        for token in pointer.split('/').skip(1) {
            let token = token.replace("~1", "/").replace("~0", "~");
            value = match value {
                Json::Object(members) => &members.iter().find(|(key, _)| *key == token)?.1,
                Json::Array(items) => items.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        match value {
            Json::Number(text) => Some(text),
            _ => None,
        }
    }

    /// Every number with its JSON pointer.
    pub(crate) fn numbers(&self) -> Vec<(String, &str)> {
        let mut found = Vec::new();
        let mut pending: Vec<(String, &Json)> = vec![(String::new(), self)];
        while let Some((pointer, value)) = pending.pop() {
            match value {
                Json::Number(text) => found.push((pointer, text.as_str())),
                Json::Array(items) => pending.extend(
                    items
                        .iter()
                        .enumerate()
                        .rev()
                        .map(|(index, item)| (format!("{pointer}/{index}"), item)),
                ),
                Json::Object(members) => pending.extend(members.iter().rev().map(|(key, item)| {
                    (
                        format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1")),
                        item,
                    )
                })),
                _ => {}
            }
        }
        found
    }
}

/// `text` as a JSON string in canonical form.
pub(crate) fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_their_text() {
        let value = read(r#"{"a": 18446744073709551617, "b": [1e400, -0.0]}"#).unwrap();
        let mut out = String::new();
        value.write_compact(&mut out);
        assert_eq!(out, r#"{"a":18446744073709551617,"b":[1e400,-0.0]}"#);
        assert_eq!(
            value.numbers(),
            vec![
                ("/a".to_string(), "18446744073709551617"),
                ("/b/0".to_string(), "1e400"),
                ("/b/1".to_string(), "-0.0")
            ]
        );
        assert_eq!(
            read("[1e400]").unwrap().to_value(),
            Err("1e400".to_string())
        );
    }

    #[test]
    fn what_serde_json_refuses_is_refused_and_a_cut_text_is_truncated() {
        for text in [
            "{\"a\": 1,}",
            "[01]",
            "\"\\ud800\"",
            "\"\\udc00x\"",
            "\"a\u{1}\"",
            "[1] 2",
            "1.",
            "-",
            "{'a': 1}",
            "[1.e5]",
            "tru e",
        ] {
            let ours = read(text);
            let theirs = serde_json::from_str::<Value>(text);
            assert!(theirs.is_err(), "{text:?}");
            match ours {
                Err(ReadError::Truncated) => assert!(theirs.unwrap_err().is_eof(), "{text:?}"),
                Err(ReadError::Syntax { .. }) => {
                    assert!(!theirs.unwrap_err().is_eof(), "{text:?}")
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
        for text in [
            "{\"a\": [1, {\"b\"",
            "[",
            "\"abc",
            "[1, 2",
            "-",
            "tr",
            "\"\\u00",
        ] {
            assert_eq!(read(text), Err(ReadError::Truncated), "{text:?}");
        }
        for text in [
            "{\"a\": [1, 2.5e-3, true, null], \"b\": \"\\u00e9\\ud83d\\ude00\\n\"}",
            " [] ",
            "\"\u{7f}\"",
        ] {
            assert_eq!(
                read(text).unwrap().to_value().unwrap(),
                serde_json::from_str::<Value>(text).unwrap(),
                "{text:?}"
            );
        }
        assert_eq!(
            read(r#"{"a": {"b": 1, "b": 2}}"#),
            Err(ReadError::DuplicateKey {
                key: "b".into(),
                pointer: "/a".into()
            })
        );
    }
}
