//! The canonical printer behind `grail fmt`.
//!
//! Layout rules, chosen so that the output always parses back to the same tree:
//! - one rule per line, `name ::= body`, single spaces between items, one blank line
//!   kept where the source had one or more between top-level items;
//! - a rule with several alternatives that would pass [`LINE_WIDTH`] columns puts each
//!   alternative on its own line, each but the last ending with ` |` (a line break
//!   after `|` continues a rule in GBNF; before it, it would end the rule);
//! - comments stay where they were relative to the items around them: a comment inside a
//!   group breaks the group over several lines; comments after `::=` or `|` or at the end
//!   of a line stay at the end of that line;
//! - escapes are canonical (see [`crate::escape`]), except that the author's escape of a
//!   character that is not plain (a space, a control or combining character, an unassigned
//!   or private-use code point) is kept as written.

use crate::ast::{
    Alternatives, Grammar, Quantifier, QuantifierStyle, Rule, Sequence, Term, TermKind, TokenRef,
};
use crate::error::ParseError;
use crate::escape::{write_class_keeping, write_literal_keeping};
use crate::parser::parse;
use crate::span::Span;

/// Lines longer than this break their top-level alternatives over several lines.
pub const LINE_WIDTH: usize = 100;

/// Spaces before each alternative of a rule written over several lines.
pub const INDENT: usize = 4;

/// Formats a parsed grammar canonically, keeping its comments. `source` is the text
/// `grammar` was parsed from (comments and blank lines are read from it).
pub fn format(source: &str, grammar: &Grammar) -> String {
    format_rules(source, &grammar.comments, &grammar.rules)
}

/// `rules` formatted, with `comments` (spans in `source`) where they were.
fn format_rules(source: &str, comments: &[Span], rules: &[Rule]) -> String {
    let mut formatter = Formatter {
        source,
        comments,
        next_comment: 0,
        out: String::new(),
    };
    formatter.grammar(rules);
    formatter.out
}

/// Why [`format_verified`] produced no output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The source does not parse; nothing was formatted.
    #[error("the grammar does not parse")]
    Syntax(Vec<ParseError>),
    /// The formatted text would not parse to the same rules and comments (a formatter bug).
    #[error("formatting would change the grammar or drop a comment")]
    WouldChangeGrammar,
}

/// Parses and formats `source`, then verifies that the output parses to the same rules
/// with the same number of comments. Tools that write files use this.
pub fn format_verified(source: &str) -> Result<String, FormatError> {
    let before = parse(source);
    if !before.is_ok() {
        return Err(FormatError::Syntax(before.errors));
    }
    let formatted = format(source, &before.grammar);
    let after = parse(&formatted);
    let same = after.is_ok()
        && print_rules(&before.grammar.rules) == print_rules(&after.grammar.rules)
        && before.grammar.comments.len() == after.grammar.comments.len();
    if same {
        Ok(formatted)
    } else {
        Err(FormatError::WouldChangeGrammar)
    }
}

/// Prints rules canonically, without comments (for grammars built as data).
pub fn print_rules(rules: &[Rule]) -> String {
    format_rules("", &[], rules)
}

/// Appends the one-line form of `alternatives` to `out`.
pub fn write_alternatives(out: &mut String, alternatives: &Alternatives) {
    write_alternatives_in(out, alternatives, "");
}

/// Appends the one-line form of `sequence` to `out`.
pub fn write_sequence(out: &mut String, sequence: &Sequence) {
    write_sequence_in(out, sequence, "");
}

/// Appends the one-line form of `term` to `out`.
pub fn write_term(out: &mut String, term: &Term) {
    write_term_in(out, term, "");
}

/// [`write_alternatives`], keeping the escapes that `source` (the text the tree was
/// parsed from, or `""`) has for characters that are not plain.
fn write_alternatives_in(out: &mut String, alternatives: &Alternatives, source: &str) {
    for (index, sequence) in alternatives.sequences.iter().enumerate() {
        if index == 1 && alternatives.sequences[0].terms.is_empty() {
            out.push('|');
        } else if index > 0 {
            out.push_str(" |");
        }
        if index > 0 && !sequence.terms.is_empty() {
            out.push(' ');
        }
        write_sequence_in(out, sequence, source);
    }
}

fn write_sequence_in(out: &mut String, sequence: &Sequence, source: &str) {
    for (index, term) in sequence.terms.iter().enumerate() {
        if index > 0 {
            out.push(' ');
        }
        write_term_in(out, term, source);
    }
}

fn write_term_in(out: &mut String, term: &Term, source: &str) {
    crate::stack::deep(|| match &term.kind {
        TermKind::Literal(characters) => {
            let written = source.get(term.span.range()).unwrap_or("");
            write_literal_keeping(out, characters, written)
        }
        TermKind::Class(class) => write_class_keeping(out, class, source),
        TermKind::Any => out.push('.'),
        TermKind::RuleRef(name) => out.push_str(&name.text),
        TermKind::Group(alternatives) => {
            out.push('(');
            write_alternatives_in(out, alternatives, source);
            out.push(')');
        }
        TermKind::Token(token) => {
            if token.negated {
                out.push('!');
            }
            match &token.token {
                TokenRef::Id(id) => out.push_str(&format!("<[{id}]>")),
                TokenRef::Text(text) => out.push_str(text),
            }
        }
        TermKind::Repeat(inner, quantifier) => {
            write_term_in(out, inner, source);
            write_quantifier(out, quantifier);
        }
    })
}

fn write_quantifier(out: &mut String, quantifier: &Quantifier) {
    match (quantifier.style, quantifier.max) {
        (QuantifierStyle::Star, _) => out.push('*'),
        (QuantifierStyle::Plus, _) => out.push('+'),
        (QuantifierStyle::Question, _) => out.push('?'),
        (QuantifierStyle::Braces, Some(max)) if max == quantifier.min => {
            out.push_str(&format!("{{{max}}}"))
        }
        (QuantifierStyle::Braces, Some(max)) => {
            out.push_str(&format!("{{{},{max}}}", quantifier.min))
        }
        (QuantifierStyle::Braces, None) => out.push_str(&format!("{{{},}}", quantifier.min)),
    }
}

struct Formatter<'a> {
    source: &'a str,
    comments: &'a [Span],
    next_comment: usize,
    out: String,
}

impl Formatter<'_> {
    fn grammar(&mut self, rules: &[Rule]) {
        let mut previous_end: Option<u32> = None;
        for (index, rule) in rules.iter().enumerate() {
            while let Some(comment) = self.peek_comment(rule.span.start) {
                self.blank_line_if_source_has_one(previous_end, comment.start);
                self.push_comment_line(comment);
                previous_end = Some(comment.end);
            }
            self.blank_line_if_source_has_one(previous_end, rule.span.start);
            self.rule(rule);
            let next_start = rules
                .get(index + 1)
                .map_or(u32::MAX, |next| next.span.start);
            self.trailing_comments(next_start);
            self.end_line();
            previous_end = Some(rule.span.end);
        }
        while let Some(comment) = self.peek_comment(u32::MAX) {
            self.blank_line_if_source_has_one(previous_end, comment.start);
            self.push_comment_line(comment);
            previous_end = Some(comment.end);
        }
    }

    fn rule(&mut self, rule: &Rule) {
        self.out.push_str(&rule.name.text);
        self.out.push_str(" ::=");
        let has_comments = self.has_comment_within(rule.name.span.end, rule.span.end);
        let sequences = &rule.body.sequences;
        if !has_comments {
            let mut flat = String::new();
            write_alternatives_in(&mut flat, &rule.body, self.source);
            let width = rule.name.text.len() + 5 + flat.chars().count();
            if sequences.len() < 2 || width <= LINE_WIDTH {
                if !flat.is_empty() {
                    self.out.push(' ');
                    self.out.push_str(&flat);
                }
                return;
            }
        }
        if sequences.len() == 1 {
            self.out.push(' ');
            self.sequence(&sequences[0], INDENT);
            return;
        }
        self.alternatives_on_lines(&rule.body, INDENT);
    }

    /// Each alternative on its own line at `indent`, all but the last ending with ` |`.
    fn alternatives_on_lines(&mut self, alternatives: &Alternatives, indent: usize) {
        let count = alternatives.sequences.len();
        // Comments after `::=` or `(` on the same line stay there.
        self.trailing_comments(alternatives.sequences[0].span.start);
        for (index, sequence) in alternatives.sequences.iter().enumerate() {
            self.newline(indent);
            self.sequence(sequence, indent);
            if index + 1 < count {
                self.out.push_str(" |");
                self.trailing_comments(alternatives.sequences[index + 1].span.start);
            }
        }
    }

    fn sequence(&mut self, sequence: &Sequence, indent: usize) {
        for (index, term) in sequence.terms.iter().enumerate() {
            let wrote_comments = self.comments_before(term.span.start, indent);
            if index > 0 && !wrote_comments {
                self.out.push(' ');
            }
            self.term(term, indent);
        }
    }

    fn term(&mut self, term: &Term, indent: usize) {
        crate::stack::deep(|| match &term.kind {
            TermKind::Group(alternatives)
                if self.has_comment_within(term.span.start, term.span.end) =>
            {
                self.out.push('(');
                self.alternatives_on_lines(alternatives, indent + INDENT);
                self.comments_before(term.span.end, indent + INDENT);
                self.newline(indent);
                self.out.push(')');
            }
            TermKind::Repeat(inner, quantifier) => {
                self.term(inner, indent);
                write_quantifier(&mut self.out, quantifier);
            }
            _ => write_term_in(&mut self.out, term, self.source),
        })
    }

    /// Writes the comments that start before `limit`: own-line comments on their own lines,
    /// end-of-line comments after the current line. Leaves the cursor at the start of a
    /// fresh line at `indent`. Returns whether any comment was written.
    fn comments_before(&mut self, limit: u32, indent: usize) -> bool {
        let mut wrote = false;
        while let Some(comment) = self.peek_comment(limit) {
            self.trim_trailing_spaces();
            let line_is_blank = self.out.is_empty() || self.out.ends_with('\n');
            if self.is_own_line(comment) || line_is_blank {
                self.newline(indent);
            } else {
                self.out.push(' ');
            }
            self.push_comment_text(comment);
            self.newline(indent);
            wrote = true;
        }
        wrote
    }

    /// Appends the end-of-line comments that start before `limit` to the current line.
    fn trailing_comments(&mut self, limit: u32) {
        while let Some(&comment) = self.comments.get(self.next_comment) {
            if comment.start >= limit || self.is_own_line(comment) {
                return;
            }
            self.next_comment += 1;
            self.trim_trailing_spaces();
            self.out.push(' ');
            self.push_comment_text(comment);
            self.newline(0);
        }
    }

    /// The next unwritten comment if it starts before `limit`, consumed.
    fn peek_comment(&mut self, limit: u32) -> Option<Span> {
        let comment = *self.comments.get(self.next_comment)?;
        if comment.start >= limit {
            return None;
        }
        self.next_comment += 1;
        Some(comment)
    }

    fn has_comment_within(&self, start: u32, end: u32) -> bool {
        self.comments[self.next_comment..]
            .iter()
            .any(|comment| comment.start >= start && comment.start < end)
    }

    /// True when only whitespace precedes the comment on its line.
    fn is_own_line(&self, comment: Span) -> bool {
        let before = &self.source.as_bytes()[..comment.start as usize];
        before
            .iter()
            .rev()
            .take_while(|&&byte| byte != b'\n' && byte != b'\r')
            .all(|&byte| byte == b' ' || byte == b'\t')
    }

    fn push_comment_line(&mut self, comment: Span) {
        self.push_comment_text(comment);
        self.out.push('\n');
    }

    fn push_comment_text(&mut self, comment: Span) {
        self.out.push('#');
        self.out
            .push_str(Grammar::comment_text(self.source, comment));
    }

    fn blank_line_if_source_has_one(&mut self, previous_end: Option<u32>, next_start: u32) {
        let Some(previous_end) = previous_end else {
            return;
        };
        let between = self
            .source
            .get(previous_end as usize..next_start as usize)
            .unwrap_or("");
        if between.matches('\n').count() >= 2 && !self.out.ends_with("\n\n") {
            self.out.push('\n');
        }
    }

    /// Starts a new line at `indent`, unless the current line is still blank.
    fn newline(&mut self, indent: usize) {
        self.trim_trailing_spaces();
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
        self.out.extend(std::iter::repeat_n(' ', indent));
    }

    fn end_line(&mut self) {
        self.trim_trailing_spaces();
        if !self.out.ends_with('\n') {
            self.out.push('\n');
        }
    }

    fn trim_trailing_spaces(&mut self) {
        let trimmed = self.out.trim_end_matches(' ').len();
        self.out.truncate(trimmed);
    }
}
