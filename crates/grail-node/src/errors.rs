//! Errors as data: what Grail refuses (a grammar, a schema, a tool registry) comes back
//! to JavaScript as a [`Failure`] carrying Grail's diagnostics; `index.js` throws it as
//! `GrammarParseError` (alias `GrammarError`), `SchemaError` or `ToolsError`.

use grail_syntax::{Diagnostic, LineColumn, LineIndex};
use napi_derive::napi;

/// Where a GBNF diagnostic is: byte offsets of its span, and the 1-based line and column
/// (in characters) of its start, as `grail check --format json` writes them.
#[napi(object)]
#[derive(Clone)]
pub struct SpanObject {
    /// Byte offset of the first byte.
    pub start: u32,
    /// Byte offset after the last byte.
    pub end: u32,
    /// 1-based line of `start`.
    pub line: u32,
    /// 1-based column of `start`, in characters.
    pub column: u32,
}

/// One diagnostic. GBNF diagnostics have `span`, `line` and `column`; JSON Schema ones
/// `pointer` and `keyword`; tool-registry ones also `tool`.
#[napi(object)]
#[derive(Clone)]
pub struct DiagnosticObject {
    /// `error`, `warning` or `note`.
    pub severity: String,
    /// A stable kebab-case identifier, such as `rule-undefined`.
    pub code: String,
    /// What is wrong, in one sentence.
    pub message: String,
    /// How to fix it, when there is a known fix.
    pub help: Option<String>,
    /// 1-based line of the span's start (GBNF).
    pub line: Option<u32>,
    /// 1-based column of the span's start, in characters (GBNF).
    pub column: Option<u32>,
    /// Where in the grammar text (GBNF).
    pub span: Option<SpanObject>,
    /// The JSON pointer of the schema location (schemas and tools).
    pub pointer: Option<String>,
    /// The schema keyword (schemas and tools).
    pub keyword: Option<String>,
    /// The tool's name (tools).
    pub tool: Option<String>,
}

impl DiagnosticObject {
    /// A diagnostic with only its severity, code and message set.
    pub fn bare(severity: &str, code: &str, message: String) -> DiagnosticObject {
        DiagnosticObject {
            severity: severity.to_string(),
            code: code.to_string(),
            message,
            help: None,
            line: None,
            column: None,
            span: None,
            pointer: None,
            keyword: None,
            tool: None,
        }
    }

    /// A GBNF diagnostic of `source`, located as the CLI locates it.
    pub fn gbnf(source: &str, lines: &LineIndex, diagnostic: &Diagnostic) -> DiagnosticObject {
        DiagnosticObject::located(diagnostic, lines.line_column(source, diagnostic.span.start))
    }

    /// A GBNF diagnostic at a known line and column.
    pub fn located(diagnostic: &Diagnostic, position: LineColumn) -> DiagnosticObject {
        DiagnosticObject {
            help: diagnostic.help.clone(),
            line: Some(position.line),
            column: Some(position.column),
            span: Some(SpanObject {
                start: diagnostic.span.start,
                end: diagnostic.span.end,
                line: position.line,
                column: position.column,
            }),
            ..DiagnosticObject::bare(
                diagnostic.severity.as_str(),
                diagnostic.code,
                diagnostic.message.clone(),
            )
        }
    }
}

/// Something Grail refused, as data.
#[napi(object)]
pub struct Failure {
    /// `grammar`, `schema` or `tools`.
    pub kind: String,
    /// One line: where and what (the first error).
    pub message: String,
    /// The first error's reason alone (its message).
    pub reason: String,
    /// For a grammar: the JavaScript string index (UTF-16 units) where the first error
    /// starts, the `pos` of the `gbnf` package's `GrammarParseError`.
    pub pos: Option<u32>,
    /// Every error found.
    pub diagnostics: Vec<DiagnosticObject>,
}

/// The JavaScript string index (UTF-16 code units) of byte `offset` of `text`.
pub fn utf16_index(text: &str, offset: usize) -> u32 {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    text[..offset].encode_utf16().count() as u32
}

/// A plain JavaScript `Error` (wrong argument values and the like).
pub fn invalid(message: impl Into<String>) -> napi::Error {
    napi::Error::new(napi::Status::InvalidArg, message.into())
}
