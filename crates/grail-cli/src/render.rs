//! Rendering diagnostics: rustc-style text (annotate-snippets) and JSON.

use std::io::IsTerminal;

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
use grail_syntax::{Diagnostic, LineIndex, Severity};
use serde::Serialize;

/// Renders diagnostics for one source as rustc does: header, `--> file:line:column`,
/// the source lines with carets and labels, then the help line.
pub fn render_human(name: &str, source: &str, diagnostics: &[Diagnostic], color: bool) -> String {
    let renderer = if color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let mut out = String::new();
    for diagnostic in diagnostics {
        let level = match diagnostic.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
            Severity::Note => Level::NOTE,
        };
        let mut snippet = Snippet::source(source).path(name).line_start(1).annotation(
            AnnotationKind::Primary
                .span(clamp(source, diagnostic.span.range()))
                .label(diagnostic.label.as_deref().unwrap_or("")),
        );
        for related in &diagnostic.related {
            snippet = snippet.annotation(
                AnnotationKind::Context
                    .span(clamp(source, related.span.range()))
                    .label(related.message.as_str()),
            );
        }
        let mut groups = vec![
            level
                .primary_title(diagnostic.message.as_str())
                .id(diagnostic.code)
                .element(snippet),
        ];
        if let Some(help) = &diagnostic.help {
            groups.push(Group::with_title(
                Level::HELP.secondary_title(help.as_str()),
            ));
        }
        out.push_str(&renderer.render(&groups));
        out.push_str("\n\n");
    }
    out
}

/// Renders the error of a grammar file that is not UTF-8, showing the valid part so the
/// caret points at the bad byte's position.
pub fn render_invalid_utf8(name: &str, bytes: &[u8], error: &grail_syntax::ParseError) -> String {
    let valid = String::from_utf8_lossy(&bytes[..error.span.start as usize]);
    render_human(name, &valid, &[error.to_diagnostic()], stderr_wants_color())
}

/// Keeps a span inside the source and on character boundaries.
fn clamp(source: &str, range: std::ops::Range<usize>) -> std::ops::Range<usize> {
    let mut start = range.start.min(source.len());
    while !source.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = range.end.clamp(start, source.len());
    while !source.is_char_boundary(end) {
        end += 1;
    }
    start..end
}

/// True when stderr is a terminal and `NO_COLOR` is unset.
pub fn stderr_wants_color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// One diagnostic in the JSON contract of `grail check --format json`.
#[derive(Debug, Serialize)]
pub struct JsonDiagnostic {
    severity: &'static str,
    code: &'static str,
    message: String,
    span: JsonSpan,
    help: Option<String>,
}

#[derive(Debug, Serialize)]
struct JsonSpan {
    start: u32,
    end: u32,
    line: u32,
    column: u32,
}

/// Converts diagnostics to their JSON form, with 1-based line and column of the span start.
pub fn json_diagnostics(source: &str, diagnostics: &[Diagnostic]) -> Vec<JsonDiagnostic> {
    let lines = LineIndex::new(source);
    diagnostics
        .iter()
        .map(|diagnostic| {
            let position = lines.line_column(source, diagnostic.span.start);
            JsonDiagnostic {
                severity: diagnostic.severity.as_str(),
                code: diagnostic.code,
                message: diagnostic.message.clone(),
                span: JsonSpan {
                    start: diagnostic.span.start,
                    end: diagnostic.span.end,
                    line: position.line,
                    column: position.column,
                },
                help: diagnostic.help.clone(),
            }
        })
        .collect()
}

/// "2 errors, 1 warning" (empty when there are none).
pub fn summary(diagnostics: &[Diagnostic]) -> String {
    let count = |severity| {
        diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .count()
    };
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let mut parts = Vec::new();
    for (severity, word) in [
        (Severity::Error, "error"),
        (Severity::Warning, "warning"),
        (Severity::Note, "note"),
    ] {
        let n = count(severity);
        if n > 0 {
            parts.push(plural(n, word));
        }
    }
    parts.join(", ")
}
