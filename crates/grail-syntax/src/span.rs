//! Byte spans into grammar source text, and line/column lookup for rendering.

use std::ops::Range;

/// A half-open byte range `[start, end)` into the source text of a grammar.
///
/// Spans are `u32` to keep syntax trees small; sources larger than 4 GiB are
/// refused by [`crate::ParseLimits`] long before that.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    /// First byte of the span.
    pub start: u32,
    /// One past the last byte of the span.
    pub end: u32,
}

impl Span {
    /// Creates a span from byte offsets.
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// A zero-width span at `offset`.
    pub fn empty_at(offset: usize) -> Span {
        Span::new(offset, offset)
    }

    /// The smallest span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// Length in bytes.
    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    /// True when the span covers no bytes.
    pub fn is_empty(self) -> bool {
        self.start == self.end
    }

    /// The span as a `usize` range, for slicing the source.
    pub fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }

    /// True when `offset` lies inside the span.
    pub fn contains(self, offset: u32) -> bool {
        self.start <= offset && offset < self.end
    }
}

/// A 1-based line and column; the column counts Unicode scalar values, as rustc does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineColumn {
    /// 1-based line number.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

/// Maps byte offsets of one source text to lines and columns.
#[derive(Debug, Clone)]
pub struct LineIndex {
    line_starts: Vec<u32>,
}

impl LineIndex {
    /// Indexes the line starts of `source`. Lines end at `\n`; a `\r` before it belongs to the line.
    pub fn new(source: &str) -> LineIndex {
        let mut line_starts = vec![0];
        line_starts.extend(
            source
                .bytes()
                .enumerate()
                .filter(|&(_, byte)| byte == b'\n')
                .map(|(index, _)| index as u32 + 1),
        );
        LineIndex { line_starts }
    }

    /// The 0-based line holding byte `offset`.
    pub fn line_of(&self, offset: u32) -> usize {
        self.line_starts.partition_point(|&start| start <= offset) - 1
    }

    /// Byte offset where 0-based `line` starts.
    pub fn line_start(&self, line: usize) -> u32 {
        self.line_starts[line]
    }

    /// Line and column of byte `offset` in `source` (the text this index was built from).
    pub fn line_column(&self, source: &str, offset: u32) -> LineColumn {
        let offset = offset.min(source.len() as u32);
        let line = self.line_of(offset);
        let start = self.line_starts[line] as usize;
        let mut end = offset as usize;
        while !source.is_char_boundary(end) {
            end -= 1;
        }
        let column = source[start..end].chars().count() as u32 + 1;
        LineColumn {
            line: line as u32 + 1,
            column,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters() {
        let source = "ab\nçd\n";
        let index = LineIndex::new(source);
        assert_eq!(
            index.line_column(source, 0),
            LineColumn { line: 1, column: 1 }
        );
        assert_eq!(
            index.line_column(source, 3),
            LineColumn { line: 2, column: 1 }
        );
        // 'd' follows the two-byte 'ç'.
        assert_eq!(
            index.line_column(source, 5),
            LineColumn { line: 2, column: 2 }
        );
        assert_eq!(
            index.line_column(source, 7),
            LineColumn { line: 3, column: 1 }
        );
    }
}
