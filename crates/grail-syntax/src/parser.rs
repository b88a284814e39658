//! The GBNF parser: llama.cpp's dialect exactly, with spans and error recovery.
//!
//! The grammar it accepts is the one `llama_grammar_parser::parse` accepts (llama.cpp
//! `src/llama-grammar.cpp`), including the later `\-` escape:
//!
//! - Whitespace is spaces, tabs and `#` comments. Line breaks are whitespace only between
//!   rules, inside parentheses, and right after `::=` or `|`; anywhere else a line break
//!   ends the rule.
//! - A quantifier applies to the item before it; an empty string `""`, an empty class
//!   `[]` and a `{0}`-repeated item are "nothing", and repeating nothing is an error.
//!
//! Unlike llama.cpp, which stops at the first error, the parser records the error and
//! resumes at the next line that starts a rule (`name ::=`), so one run reports every
//! broken rule. Two errors leave the rest of their line readable, so parsing goes on
//! there: a name with `_` (the rule is kept, named as written) and a line that starts
//! with `|` after a rule has ended (its alternatives are read and dropped), so every
//! broken line of a rule is reported in one run. A text that does not parse and reads
//! like another notation (Lark, W3C EBNF, ISO EBNF) is said to, at its first error.

use std::collections::HashMap;

use crate::ast::{
    Alternatives, CharClass, ClassItem, Grammar, Name, Quantifier, QuantifierStyle, Rule, Sequence,
    Term, TermKind, TokenElement, TokenRef,
};
use crate::error::{ParseError, SyntaxError};
use crate::span::Span;

/// Limits that keep parsing untrusted grammars bounded in time and memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseLimits {
    /// Largest accepted source, in bytes. Default: 16 MiB.
    pub max_source_bytes: usize,
    /// Deepest nesting of parentheses, and the most quantifiers stacked on one item
    /// (`"a"**...`). Default: 10,000 (llama.cpp's JSON Schema converters nest a group
    /// per `maxLength` character; the recursive walks grow their stack as needed).
    pub max_nesting_depth: u32,
    /// Parsing stops after this many errors. Default: 100.
    pub max_errors: usize,
}

impl Default for ParseLimits {
    fn default() -> ParseLimits {
        ParseLimits {
            max_source_bytes: 16 * 1024 * 1024,
            max_nesting_depth: 10_000,
            max_errors: 100,
        }
    }
}

/// The result of parsing: the rules that parsed, and every error.
///
/// When `errors` is empty, `grammar` is exactly what llama.cpp would read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The syntax tree. Rules with errors are left out, except that a rule whose only
    /// errors are names with `_` is kept with the names as written; the alternatives of
    /// a line that starts with `|` after its rule ended are left out.
    pub grammar: Grammar,
    /// Syntax errors, in source order.
    pub errors: Vec<ParseError>,
}

impl Parsed {
    /// True when the text parsed without errors.
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }
}

/// Parses GBNF text with the default [`ParseLimits`].
pub fn parse(source: &str) -> Parsed {
    parse_with_limits(source, &ParseLimits::default())
}

/// Parses GBNF text with the given limits.
pub fn parse_with_limits(source: &str, limits: &ParseLimits) -> Parsed {
    if source.len() > limits.max_source_bytes {
        return Parsed {
            grammar: Grammar::default(),
            errors: vec![ParseError {
                kind: SyntaxError::SourceTooLarge {
                    size: source.len(),
                    limit: limits.max_source_bytes,
                },
                span: Span::empty_at(0),
                related: None,
            }],
        };
    }
    let mut errors = Vec::new();
    // llama.cpp reads a C string: a NUL byte ends the grammar. Grail reports it and
    // parses what comes before.
    let text = match source.find('\0') {
        Some(nul) => {
            errors.push(ParseError {
                kind: SyntaxError::NulByte,
                span: Span::new(nul, nul + 1),
                related: None,
            });
            &source[..nul]
        }
        None => source,
    };
    let mut parser = Parser {
        source: text,
        bytes: text.as_bytes(),
        position: 0,
        comments: Vec::new(),
        errors,
        depth: 0,
        limits: *limits,
        multiline_literal: None,
        content_end: None,
        underscore_names: HashMap::new(),
    };
    let rules = parser.parse_rules();
    parser.errors.sort_by_key(|error| error.span.start);
    name_other_dialect(text, &mut parser.errors);
    Parsed {
        grammar: Grammar {
            rules,
            comments: parser.comments,
        },
        errors: parser.errors,
    }
}

/// When the text has errors and reads like another notation ([`crate::dialect`]), the
/// first error (after a NUL byte's) becomes [`SyntaxError::OtherDialect`], at the first
/// sign of that notation; unless that error is a GBNF mistake with a repair of its own
/// (a name with `_`, a line that starts with `|`), which says more than the notation.
fn name_other_dialect(text: &str, errors: &mut [ParseError]) {
    let Some(first) = errors
        .iter()
        .position(|error| error.kind != SyntaxError::NulByte)
    else {
        return;
    };
    if matches!(
        errors[first].kind,
        SyntaxError::RuleNameUnderscore { .. } | SyntaxError::LineStartsWithBar
    ) {
        return;
    }
    let Some((dialect, span)) = crate::dialect::detect(text) else {
        return;
    };
    errors[first] = ParseError {
        kind: SyntaxError::OtherDialect { dialect },
        span,
        related: None,
    };
    errors.sort_by_key(|error| error.span.start);
}

/// Checks that `bytes` are UTF-8, with an error at the first invalid byte otherwise.
pub fn source_from_bytes(bytes: &[u8]) -> Result<&str, ParseError> {
    std::str::from_utf8(bytes).map_err(|error| {
        let start = error.valid_up_to();
        let length = error.error_len().unwrap_or(bytes.len() - start);
        ParseError {
            kind: SyntaxError::InvalidUtf8,
            span: Span::new(start, start + length),
            related: None,
        }
    })
}

/// True for the characters of a rule name: ASCII letters, digits and `-`.
pub fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'-'
}

type ParseResult<T> = Result<T, ParseError>;

struct Parser<'a> {
    source: &'a str,
    bytes: &'a [u8],
    position: usize,
    comments: Vec<Span>,
    errors: Vec<ParseError>,
    depth: u32,
    limits: ParseLimits,
    /// Opening quote of the first literal of the current rule that holds a line break.
    multiline_literal: Option<usize>,
    /// Where the text of the last rule read ended (its last alternative, or the last line
    /// that starts with `|` after it), when that rule parsed.
    content_end: Option<usize>,
    /// Each name with `_` met so far: the index of its error in `errors`.
    underscore_names: HashMap<String, usize>,
}

impl<'a> Parser<'a> {
    fn parse_rules(&mut self) -> Vec<Rule> {
        let mut rules = Vec::new();
        self.skip_space(true);
        while !self.at_end() && self.errors.len() < self.limits.max_errors {
            let rule_start = self.position;
            self.multiline_literal = None;
            let result = match self.content_end {
                Some(content_end) if self.peek() == b'|' => {
                    self.parse_line_starting_with_bar(content_end)
                }
                _ => self.parse_rule().map(|rule| rules.push(rule)),
            };
            if let Err(mut error) = result {
                self.content_end = None;
                if let Some(open) = self.multiline_literal
                    && error.related.is_none()
                {
                    error.related = Some((
                        Span::new(open, open + 1),
                        "this string runs over a line break: is its closing `\"` missing?",
                    ));
                }
                self.errors.push(error);
                if self.errors.len() >= self.limits.max_errors {
                    break;
                }
                self.depth = 0;
                self.recover_after(rule_start);
            }
        }
        self.errors.truncate(self.limits.max_errors);
        rules
    }

    /// Reads a line that starts with `|` after the rule that ended at `content_end`:
    /// reports it, then reads its alternatives (to report their errors too) and drops them.
    fn parse_line_starting_with_bar(&mut self, content_end: usize) -> ParseResult<()> {
        let bar = self.position;
        self.errors.push(ParseError {
            kind: SyntaxError::LineStartsWithBar,
            span: Span::new(bar, bar + 1),
            related: Some((
                Span::empty_at(content_end),
                "the rule ended at this line break",
            )),
        });
        self.position += 1;
        self.skip_space(true);
        let alternatives = self.parse_alternatives(false)?;
        let end = alternatives.span.end.max(bar as u32 + 1) as usize;
        self.end_rule()?;
        self.content_end = Some(end);
        Ok(())
    }

    /// Moves to the first line after the one holding `rule_start` that begins a rule.
    fn recover_after(&mut self, rule_start: usize) {
        let mut line_start = rule_start;
        loop {
            match self.bytes[line_start..].iter().position(|&b| b == b'\n') {
                None => {
                    self.position = self.bytes.len();
                    return;
                }
                Some(newline) => line_start += newline + 1,
            }
            if self.looks_like_rule_head(line_start) {
                self.position = line_start;
                self.skip_space(true);
                return;
            }
        }
    }

    /// True when the line at `start` reads `name ::=` (underscores allowed, to report them).
    fn looks_like_rule_head(&self, start: usize) -> bool {
        let mut at = start;
        while matches!(self.byte_at(at), b' ' | b'\t') {
            at += 1;
        }
        let name_start = at;
        while is_name_byte(self.byte_at(at)) || self.byte_at(at) == b'_' {
            at += 1;
        }
        if at == name_start {
            return false;
        }
        while matches!(self.byte_at(at), b' ' | b'\t') {
            at += 1;
        }
        self.bytes[at..].starts_with(b"::=")
    }

    fn parse_rule(&mut self) -> ParseResult<Rule> {
        let name = self.parse_name()?;
        self.skip_space(false);
        if !self.bytes[self.position..].starts_with(b"::=") {
            return Err(self.error_here(SyntaxError::DefinitionExpected));
        }
        self.position += 3;
        self.skip_space(true);
        let body = self.parse_alternatives(false)?;
        let content_end = (body.span.end as usize).max(name.span.end as usize);
        self.end_rule()?;
        self.content_end = Some(content_end);
        Ok(Rule {
            span: name.span.to(body.span),
            name,
            body,
        })
    }

    /// Reads the line break (or the end of the input) that ends a rule, and the space after.
    fn end_rule(&mut self) -> ParseResult<()> {
        match self.peek() {
            b'\r' => {
                self.position += if self.byte_at(self.position + 1) == b'\n' {
                    2
                } else {
                    1
                }
            }
            b'\n' => self.position += 1,
            _ if self.at_end() => {}
            b')' => return Err(self.error_here(SyntaxError::GroupUnmatchedClose)),
            _ if self.bytes[self.position..].starts_with(b"::=") => {
                let found = "`::=`: a new rule must start on its own line (a line that ends with `|` continues the rule on the next line)".to_string();
                return Err(ParseError {
                    kind: SyntaxError::RuleEndExpected { found },
                    span: Span::new(self.position, self.position + 3),
                    related: None,
                });
            }
            _ => {
                let found = self.describe_here();
                return Err(self.error_here(SyntaxError::RuleEndExpected { found }));
            }
        }
        self.skip_space(true);
        Ok(())
    }

    /// Parses a rule name. A name with `_` is recorded as an error (once per name) and
    /// read whole, so parsing goes on after it. A missing name is an error (only possible at a rule head:
    /// in a sequence, callers check for a name byte or `_` first).
    fn parse_name(&mut self) -> ParseResult<Name> {
        let start = self.position;
        while is_name_byte(self.peek()) || self.peek() == b'_' {
            self.position += 1;
        }
        if self.position == start {
            let found = self.describe_here();
            return Err(self.error_here(SyntaxError::RuleNameExpected { found }));
        }
        let text = &self.source[start..self.position];
        if text.contains('_') {
            match self.underscore_names.get(text) {
                Some(&index) => {
                    if let SyntaxError::RuleNameUnderscore { uses, .. } =
                        &mut self.errors[index].kind
                    {
                        *uses += 1;
                    }
                }
                None => {
                    self.underscore_names
                        .insert(text.to_string(), self.errors.len());
                    self.errors.push(ParseError {
                        kind: SyntaxError::RuleNameUnderscore {
                            name: text.to_string(),
                            uses: 1,
                        },
                        span: Span::new(start, self.position),
                        related: None,
                    });
                }
            }
        }
        Ok(Name {
            text: text.to_string(),
            span: Span::new(start, self.position),
        })
    }

    fn parse_alternatives(&mut self, nested: bool) -> ParseResult<Alternatives> {
        crate::stack::deep(|| {
            let first = self.parse_sequence(nested)?;
            let mut span = first.span;
            let mut sequences = vec![first];
            while self.peek() == b'|' {
                self.position += 1;
                self.skip_space(true);
                let sequence = self.parse_sequence(nested)?;
                span = span.to(sequence.span);
                sequences.push(sequence);
            }
            Ok(Alternatives { sequences, span })
        })
    }

    fn parse_sequence(&mut self, nested: bool) -> ParseResult<Sequence> {
        let start = self.position;
        let mut terms: Vec<Term> = Vec::new();
        // Whether the last item produced something a quantifier can repeat (llama.cpp's
        // `last_sym_start < rule.size()`).
        let mut last_is_repeatable = false;
        // How many quantifiers are stacked on the last term.
        let mut stacked_quantifiers = 0u32;
        loop {
            let byte = self.peek();
            let term_start = self.position;
            let kind = match byte {
                b'"' => {
                    let characters = self.parse_literal()?;
                    last_is_repeatable = !characters.is_empty();
                    TermKind::Literal(characters)
                }
                b'[' => {
                    let class = self.parse_class()?;
                    last_is_repeatable = !class.items.is_empty();
                    TermKind::Class(class)
                }
                b'<' | b'!' => {
                    last_is_repeatable = true;
                    TermKind::Token(self.parse_token()?)
                }
                b'(' => {
                    last_is_repeatable = true;
                    TermKind::Group(self.parse_group()?)
                }
                b'.' => {
                    self.position += 1;
                    last_is_repeatable = true;
                    TermKind::Any
                }
                b'*' | b'+' | b'?' | b'{' => {
                    let Some(last) = terms.pop().filter(|_| last_is_repeatable) else {
                        let span = self.char_span(self.position);
                        return Err(ParseError {
                            kind: SyntaxError::QuantifierWithoutItem {
                                quantifier: byte as char,
                            },
                            span,
                            related: None,
                        });
                    };
                    let quantifier = self.parse_quantifier(nested)?;
                    stacked_quantifiers += 1;
                    if stacked_quantifiers > self.limits.max_nesting_depth {
                        return Err(ParseError {
                            kind: SyntaxError::NestingTooDeep {
                                limit: self.limits.max_nesting_depth,
                            },
                            span: quantifier.span,
                            related: None,
                        });
                    }
                    // `x{0}` and `x{0,0}` leave nothing behind, so nothing can follow-repeat.
                    last_is_repeatable = quantifier.max != Some(0);
                    terms.push(Term {
                        span: last.span.to(quantifier.span),
                        kind: TermKind::Repeat(Box::new(last), quantifier),
                    });
                    self.skip_space(nested);
                    continue;
                }
                _ if is_name_byte(byte) || byte == b'_' => {
                    last_is_repeatable = true;
                    TermKind::RuleRef(self.parse_name()?)
                }
                _ => break,
            };
            stacked_quantifiers = 0;
            terms.push(Term {
                kind,
                span: Span::new(term_start, self.position),
            });
            self.skip_space(nested);
        }
        let span = match (terms.first(), terms.last()) {
            (Some(first), Some(last)) => first.span.to(last.span),
            _ => Span::empty_at(start),
        };
        Ok(Sequence { terms, span })
    }

    fn parse_group(&mut self) -> ParseResult<Alternatives> {
        let open = self.position;
        self.depth += 1;
        if self.depth > self.limits.max_nesting_depth {
            return Err(ParseError {
                kind: SyntaxError::NestingTooDeep {
                    limit: self.limits.max_nesting_depth,
                },
                span: Span::new(open, open + 1),
                related: None,
            });
        }
        self.position += 1;
        self.skip_space(true);
        let alternatives = self.parse_alternatives(true)?;
        if self.peek() != b')' || self.at_end() {
            let found = self.describe_here();
            return Err(ParseError {
                kind: SyntaxError::GroupUnclosed { found },
                span: self.char_span(self.position),
                related: Some((Span::new(open, open + 1), "group opened here")),
            });
        }
        self.position += 1;
        self.depth -= 1;
        Ok(alternatives)
    }

    fn parse_literal(&mut self) -> ParseResult<Vec<u32>> {
        let open = self.position;
        self.position += 1;
        let mut characters = Vec::new();
        loop {
            if self.at_end() {
                return Err(ParseError {
                    kind: SyntaxError::LiteralUnterminated,
                    span: Span::new(open, open + 1),
                    related: None,
                });
            }
            if self.peek() == b'"' {
                self.position += 1;
                if self.multiline_literal.is_none()
                    && characters.contains(&u32::from('\n'))
                    && self.source[open..self.position].contains('\n')
                {
                    self.multiline_literal = Some(open);
                }
                return Ok(characters);
            }
            characters.push(self.parse_character(open, SyntaxError::LiteralUnterminated)?);
        }
    }

    fn parse_class(&mut self) -> ParseResult<CharClass> {
        let open = self.position;
        self.position += 1;
        let negated = self.peek() == b'^';
        if negated {
            self.position += 1;
        }
        let unterminated = || ParseError {
            kind: SyntaxError::ClassUnterminated,
            span: Span::new(open, open + 1),
            related: None,
        };
        let mut items = Vec::new();
        loop {
            if self.at_end() {
                return Err(unterminated());
            }
            if self.peek() == b']' {
                self.position += 1;
                return Ok(CharClass { negated, items });
            }
            let item_start = self.position;
            let first = self.parse_character(open, SyntaxError::ClassUnterminated)?;
            let mut last = first;
            let is_range = self.peek() == b'-' && self.byte_at(self.position + 1) != b']';
            if is_range {
                if self.position + 1 >= self.bytes.len() {
                    return Err(unterminated());
                }
                self.position += 1;
                last = self.parse_character(open, SyntaxError::ClassUnterminated)?;
            }
            items.push(ClassItem {
                first,
                last,
                is_range,
                span: Span::new(item_start, self.position),
            });
        }
    }

    /// Parses one character of a literal or class: an escape or a raw UTF-8 character.
    /// `open` and `unterminated` describe the enclosing literal or class, for an input
    /// that ends right after a backslash.
    fn parse_character(&mut self, open: usize, unterminated: SyntaxError) -> ParseResult<u32> {
        let start = self.position;
        if self.peek() != b'\\' {
            let character = self.source[start..].chars().next().expect("not at end");
            self.position += character.len_utf8();
            return Ok(character as u32);
        }
        let Some(escape) = self.source[start + 1..].chars().next() else {
            return Err(ParseError {
                kind: unterminated,
                span: Span::new(open, open + 1),
                related: None,
            });
        };
        let simple = match escape {
            't' => Some('\t'),
            'r' => Some('\r'),
            'n' => Some('\n'),
            '\\' | '"' | '[' | ']' | '-' => Some(escape),
            _ => None,
        };
        if let Some(character) = simple {
            self.position += 2;
            return Ok(character as u32);
        }
        let digits = match escape {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => {
                return Err(ParseError {
                    kind: SyntaxError::EscapeUnknown { escape },
                    span: Span::new(start, start + 1 + escape.len_utf8()),
                    related: None,
                });
            }
        };
        let hex_start = start + 2;
        let found = self.bytes[hex_start..]
            .iter()
            .take(digits)
            .take_while(|byte| byte.is_ascii_hexdigit())
            .count();
        if found < digits {
            return Err(ParseError {
                kind: SyntaxError::EscapeHexDigits {
                    prefix: escape,
                    digits,
                },
                span: Span::new(start, hex_start + found),
                related: None,
            });
        }
        self.position = hex_start + digits;
        let value = u32::from_str_radix(&self.source[hex_start..self.position], 16)
            .expect("at most 8 hex digits fit in u32");
        Ok(value)
    }

    fn parse_token(&mut self) -> ParseResult<TokenElement> {
        let start = self.position;
        let negated = self.peek() == b'!';
        if negated {
            self.position += 1;
            if self.peek() != b'<' {
                return Err(ParseError {
                    kind: SyntaxError::TokenNegationWithoutToken,
                    span: Span::new(start, start + 1),
                    related: None,
                });
            }
        }
        let open = self.position;
        self.position += 1;
        if self.peek() == b'[' {
            self.position += 1;
            let digits_start = self.position;
            while self.peek().is_ascii_digit() {
                self.position += 1;
            }
            if self.position == digits_start {
                return Err(self.error_here(SyntaxError::TokenMalformed {
                    expected: "a token id after `<[`",
                }));
            }
            let id = self.source[digits_start..self.position]
                .parse::<u32>()
                .map_err(|_| ParseError {
                    kind: SyntaxError::TokenIdOverflow,
                    span: Span::new(digits_start, self.position),
                    related: None,
                })?;
            for (expected_byte, expected) in [(b']', "`]` after the token id"), (b'>', "`>`")] {
                if self.peek() != expected_byte || self.at_end() {
                    return Err(self.error_here(SyntaxError::TokenMalformed { expected }));
                }
                self.position += 1;
            }
            return Ok(TokenElement {
                negated,
                token: TokenRef::Id(id),
            });
        }
        match self.bytes[self.position..].iter().position(|&b| b == b'>') {
            Some(close) => {
                self.position += close + 1;
                Ok(TokenElement {
                    negated,
                    token: TokenRef::Text(self.source[open..self.position].to_string()),
                })
            }
            None => Err(ParseError {
                kind: SyntaxError::TokenMalformed {
                    expected: "`>` to close the token",
                },
                span: Span::new(open, open + 1),
                related: None,
            }),
        }
    }

    fn parse_quantifier(&mut self, nested: bool) -> ParseResult<Quantifier> {
        let start = self.position;
        let byte = self.peek();
        self.position += 1;
        let (min, max, style) = match byte {
            b'*' => (0, None, QuantifierStyle::Star),
            b'+' => (1, None, QuantifierStyle::Plus),
            b'?' => (0, Some(1), QuantifierStyle::Question),
            _ => {
                self.skip_space(nested);
                let min = self.parse_count()?;
                self.skip_space(nested);
                let max = match self.peek() {
                    b'}' if !self.at_end() => Some(min),
                    b',' if !self.at_end() => {
                        self.position += 1;
                        self.skip_space(nested);
                        let max = if self.peek().is_ascii_digit() && !self.at_end() {
                            let max = self.parse_count()?;
                            self.skip_space(nested);
                            Some(max)
                        } else {
                            None
                        };
                        if self.peek() != b'}' || self.at_end() {
                            let found = self.describe_here();
                            return Err(self.error_here(SyntaxError::RepetitionUnclosed {
                                expected: "`}`",
                                found,
                            }));
                        }
                        max
                    }
                    _ => {
                        let found = self.describe_here();
                        return Err(self.error_here(SyntaxError::RepetitionUnclosed {
                            expected: "`}` or `,`",
                            found,
                        }));
                    }
                };
                self.position += 1;
                (min, max, QuantifierStyle::Braces)
            }
        };
        Ok(Quantifier {
            min,
            max,
            style,
            span: Span::new(start, self.position),
        })
    }

    fn parse_count(&mut self) -> ParseResult<u64> {
        let start = self.position;
        while self.peek().is_ascii_digit() && !self.at_end() {
            self.position += 1;
        }
        if self.position == start {
            return Err(self.error_here(SyntaxError::RepetitionCountExpected));
        }
        self.source[start..self.position]
            .parse::<u64>()
            .map_err(|_| ParseError {
                kind: SyntaxError::RepetitionCountOverflow,
                span: Span::new(start, self.position),
                related: None,
            })
    }

    /// Skips spaces, tabs and comments, and line breaks when `newline_ok`.
    fn skip_space(&mut self, newline_ok: bool) {
        loop {
            match self.peek() {
                b' ' | b'\t' if !self.at_end() => self.position += 1,
                b'\r' | b'\n' if newline_ok => self.position += 1,
                b'#' => {
                    let start = self.position;
                    while !self.at_end() && !matches!(self.peek(), b'\r' | b'\n') {
                        self.position += 1;
                    }
                    if self
                        .comments
                        .last()
                        .is_none_or(|last| last.start < start as u32)
                    {
                        self.comments.push(Span::new(start, self.position));
                    }
                }
                _ => return,
            }
        }
    }

    fn at_end(&self) -> bool {
        self.position >= self.bytes.len()
    }

    /// The byte at the cursor, or 0 at the end (the text holds no NUL bytes).
    fn peek(&self) -> u8 {
        self.byte_at(self.position)
    }

    fn byte_at(&self, position: usize) -> u8 {
        self.bytes.get(position).copied().unwrap_or(0)
    }

    /// The span of the character at `position`; zero-width at the end.
    fn char_span(&self, position: usize) -> Span {
        let length = self.source[position..]
            .chars()
            .next()
            .map_or(0, char::len_utf8);
        Span::new(position, position + length)
    }

    fn error_here(&self, kind: SyntaxError) -> ParseError {
        ParseError {
            kind,
            span: self.char_span(self.position),
            related: None,
        }
    }

    fn describe_here(&self) -> String {
        match self.source[self.position..].chars().next() {
            None => "the end of the input".to_string(),
            Some('\n' | '\r') => "a line break".to_string(),
            Some(character) if character.is_control() => {
                format!("the control character U+{:04X}", character as u32)
            }
            Some(character) => format!("`{character}`"),
        }
    }
}
