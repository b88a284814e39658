//! Lines of an upstream event stream, each at most a set length: a line past it is an
//! error as soon as the limit is passed, so a backend that sends a 200 MB line costs
//! the limit in memory, not 200 MB.

use std::io::{self, BufRead};

/// Why a line could not be read.
#[derive(Debug)]
pub enum LineError {
    /// The stream failed.
    Io(io::Error),
    /// A line was longer than the limit (in bytes).
    TooLong(usize),
}

/// Reads lines of at most `limit` bytes from `reader`.
pub struct BoundedLines<R> {
    reader: R,
    limit: usize,
    line: Vec<u8>,
}

impl<R: BufRead> BoundedLines<R> {
    /// Lines of `reader`, each at most `limit` bytes (the line end not counted).
    pub fn new(reader: R, limit: usize) -> BoundedLines<R> {
        BoundedLines {
            reader,
            limit,
            line: Vec::new(),
        }
    }

    /// The next line without its end (`\n` or `\r\n`; invalid UTF-8 replaced), or `None`
    /// at the end of the stream.
    pub fn next_line(&mut self) -> Result<Option<String>, LineError> {
        self.line.clear();
        loop {
            let available = match self.reader.fill_buf() {
                Ok(available) => available,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(LineError::Io(error)),
            };
            if available.is_empty() {
                if self.line.is_empty() {
                    return Ok(None);
                }
                break;
            }
            let (taken, ended) = match available.iter().position(|&byte| byte == b'\n') {
                Some(at) => (at + 1, true),
                None => (available.len(), false),
            };
            let body = if ended { taken - 1 } else { taken };
            if self.line.len() + body > self.limit + 1 {
                return Err(LineError::TooLong(self.limit));
            }
            self.line.extend_from_slice(&available[..body]);
            self.reader.consume(taken);
            if ended {
                break;
            }
        }
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        if self.line.len() > self.limit {
            return Err(LineError::TooLong(self.limit));
        }
        Ok(Some(String::from_utf8_lossy(&self.line).into_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_within_the_limit_come_whole_and_a_longer_one_fails_early() {
        let text = "data: one\r\n\ndata: two\nlast";
        let mut lines = BoundedLines::new(io::BufReader::with_capacity(4, text.as_bytes()), 9);
        let mut seen = Vec::new();
        while let Some(line) = lines.next_line().unwrap() {
            seen.push(line);
        }
        assert_eq!(seen, ["data: one", "", "data: two", "last"]);

        // An endless line: refused once past the limit, having read little more.
        let endless = io::repeat(b'x');
        let mut lines = BoundedLines::new(io::BufReader::with_capacity(64, endless), 1000);
        assert!(matches!(lines.next_line(), Err(LineError::TooLong(1000))));
        assert!(lines.line.capacity() < 4096);
    }
}
