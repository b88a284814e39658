//! The `pattern` keyword: an ECMA-262 regular expression → the JSON-encoded characters of
//! the strings it matches.
//!
//! # The dialect read
//!
//! JSON Schema says a `pattern` is an ECMA-262 regular expression, built with the `u` flag
//! (code points, not UTF-16 units), searched for anywhere in the string: `abc` matches
//! every string containing `abc`. The pattern is read as ECMA-262 with the `u` flag and no
//! other flags:
//!
//! - `\d` is `[0-9]` and `\w` is `[A-Za-z0-9_]` (ASCII only, unlike regex-syntax's
//!   Unicode defaults); `\s` is ECMA white space and line terminators (tab, LF, VT, FF, CR,
//!   space, U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000,
//!   U+FEFF); `\D`, `\W`, `\S` are their complements.
//! - `.` is any code point except the line terminators `\n`, `\r`, U+2028 and U+2029.
//! - `^` and `$` are the start and the very end of the string (no multiline flag; `$` does
//!   not allow a trailing newline).
//! - Escapes: `\f \n \r \t \v`, `\cX` (a letter), `\0` (not before a digit), `\xHH`,
//!   `\uHHHH` (a surrogate pair written as two escapes is one code point), `\u{H...}`,
//!   `\p{...}`/`\P{...}` (Unicode properties, looked up with regex-syntax, which also
//!   takes some names ECMA does not, such as a bare script name), and `[\b]` (backspace).
//!   A lone surrogate can be no character of a valid string, so it matches nothing.
//! - Classes follow ECMA: `[]` matches nothing, `[^]` any character, `[` is literal inside
//!   a class, `-` is literal first or last or after a range, and a class escape such as
//!   `\d` cannot end a range.
//! - Groups `(...)`, `(?:...)`, `(?<name>...)`; quantifiers `* + ? {n} {n,} {n,m}`, lazy
//!   or not (the same strings either way).
//!
//! Leniency, where every other common flavour (ECMA without `u`, Python, PCRE) agrees on
//! the meaning: an escaped character that is not an ASCII letter or digit stands for
//! itself (`\-`, `\@`, `\"` outside classes), and `]`, `}` and a `{` that does not begin
//! a quantifier are literal characters. Escapes of other letters and digits (`\a`, `\e`,
//! octal `\01`) differ between flavours and are syntax errors, as in ECMA with `u`.
//!
//! Refused as [`PatternError::Unsupported`], because a grammar cannot express them
//! exactly: lookahead and lookbehind (`(?=`, `(?!`, `(?<=`, `(?<!`), backreferences (`\1`,
//! `\k<name>`), word boundaries (`\b`, `\B`) and inline modifiers (`(?i:...)`). Case
//! insensitivity is no part of JSON Schema patterns.
//!
//! # How
//!
//! 1. A small recursive-descent parser reads the ECMA syntax (with byte offsets for every
//!    error) and builds regex-syntax's HIR through its smart constructors, which merge
//!    literals, flatten groups and turn alternations of characters into classes.
//! 2. Anchors are resolved exactly, wherever they are: the strings a sub-expression
//!    matches depend only on whether its match starts at the start of the string and ends
//!    at its end. Each sub-expression is rewritten for the cases it is used in, so `a^b`
//!    matches nothing, `(^|,)x` is `x` at the start or `,x` anywhere, and `(^a)*` is
//!    handled too. The search is then `R` where both ends are the string's, or `R`
//!    followed by at least one character, and so on (at most four alternatives; one,
//!    `any* R any*`, without anchors).
//! 3. The result is written over the canonical JSON encoding of the characters (see
//!    [`crate::json_text`]): each class becomes one `Chars` (plus one alternative per
//!    escaped character in it), literal runs one `Literal`, `{m,n}` stays a `Repeat`.
//!    An unbounded repetition of something that can match the empty string (`(a?)*`) is
//!    rewritten to a repetition of a non-empty body, which llama.cpp requires.
//!
//! A pattern that matches no string at all (`[]`, `a^b`) gives the expression
//! `Expr::Chars` of the empty set, which matches nothing.
//!
//! # Limits
//!
//! Groups may nest 250 deep (regex-syntax's default). The expression may have at most
//! 2,000,000 nodes (and 10,000 plus 16 per byte of pattern) and nest at most 1000 deep, so
//! every input is answered in time and memory proportional to its length and the result
//! is safe to walk recursively. Only huge patterns or many anchors in odd places (the
//! exact rewriting of `(^|a)(^|a)...` copies what follows each anchor) reach these;
//! they give [`PatternError::TooLarge`].

use std::collections::HashMap;

use grail_grammar::{CharSet, Expr};
use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look, Repetition};

use crate::json_text;

/// Why a pattern has no exact grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    /// The pattern is not a valid regular expression; `offset` is a byte offset into it.
    #[error("invalid regular expression at byte {offset}: {message}")]
    Syntax {
        /// What is wrong.
        message: String,
        /// Byte offset of the offending part of the pattern.
        offset: usize,
    },
    /// A feature a grammar cannot express exactly (lookaround, backreferences, word
    /// boundaries, inline modifiers), with where it is.
    #[error("{feature} at byte {offset} cannot be expressed exactly as a grammar")]
    Unsupported {
        /// The feature, as written.
        feature: String,
        /// Byte offset of the feature in the pattern.
        offset: usize,
    },
    /// A count or size beyond what Grail represents or builds: repetition counts above
    /// 4294967295, groups nested over 250 deep, or a grammar over 2,000,000 nodes (or
    /// 16 per byte of pattern, plus 10,000) or nested over 1000 deep, which only huge
    /// patterns or many anchors in odd places (whose exact rewriting copies what follows
    /// them) reach.
    #[error("{what} at byte {offset} is too large")]
    TooLarge {
        /// What is too large.
        what: String,
        /// Byte offset of it in the pattern (0 when it is the pattern as a whole).
        offset: usize,
    },
}

/// The strings matched by a JSON Schema `pattern` (ECMA-262 flavour, searched anywhere in
/// the string unless anchored, as the spec says), as an expression over their JSON-encoded
/// characters between the quotes (canonical encoding, see json_text).
///
/// A pattern that matches no string gives `Expr::Chars` of the empty set.
pub fn pattern_expr(pattern: &str) -> Result<Expr, PatternError> {
    Ok(encode(&search_language(pattern)?))
}

/// The least and greatest number of characters (code points) of a string the pattern
/// matches, `None` for no maximum. Used to tell whether minLength/maxLength beside a
/// pattern add anything (when the pattern's range lies inside them, they are implied).
///
/// A pattern that matches no string gives `(0, Some(0))`. Counts too large for `u64`
/// give `u64::MAX` as the least and `None` as the greatest.
pub fn pattern_char_lengths(pattern: &str) -> Result<(u64, Option<u64>), PatternError> {
    Ok(char_lengths(&search_language(pattern)?).unwrap_or((0, Some(0))))
}

/// Groups may nest this deep (regex-syntax's default nesting limit).
const MAX_GROUP_DEPTH: usize = 250;

/// The expression may nest this deep, so that code walking it recursively (`Drop`,
/// `Clone`, `Debug`) stays well within a thread's stack.
const MAX_EXPRESSION_DEPTH: usize = 1000;

/// Nodes the anchor rewriting may build: a base plus a share per byte of pattern, so any
/// pattern without anchors fits and anchors may at worst multiply the size a few times;
/// and at most a maximum, which bounds time and memory for huge patterns.
const NODE_BUDGET_BASE: usize = 10_000;
const NODE_BUDGET_PER_BYTE: usize = 16;
const NODE_BUDGET_MAX: usize = 2_000_000;

/// The strings the pattern matches as a search, anchors resolved (also the language tree
/// [`crate::char_automaton`] builds its automata from).
pub(crate) fn search_language(pattern: &str) -> Result<Node, PatternError> {
    let hir = EcmaParser::new(pattern).parse()?;
    let budget = NODE_BUDGET_BASE
        .saturating_add(pattern.len().saturating_mul(NODE_BUDGET_PER_BYTE))
        .min(NODE_BUDGET_MAX);
    let mut resolver = AnchorResolver::new(budget);
    let language = resolver.search(&hir)?;
    resolver.checked_depth(language)
}

fn syntax(message: impl Into<String>, offset: usize) -> PatternError {
    PatternError::Syntax {
        message: message.into(),
        offset,
    }
}

fn unsupported(feature: impl Into<String>, offset: usize) -> PatternError {
    PatternError::Unsupported {
        feature: feature.into(),
        offset,
    }
}

// ---------------------------------------------------------------------------------------
// Parsing ECMA-262 syntax into regex-syntax's HIR.
// ---------------------------------------------------------------------------------------

/// ECMA white space and line terminators (`\s`).
const ECMA_WHITESPACE: [(char, char); 10] = [
    ('\t', '\r'),
    (' ', ' '),
    ('\u{A0}', '\u{A0}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{2000}', '\u{200A}'),
    ('\u{2028}', '\u{2029}'),
    ('\u{202F}', '\u{202F}'),
    ('\u{205F}', '\u{205F}'),
    ('\u{3000}', '\u{3000}'),
    ('\u{FEFF}', '\u{FEFF}'),
];

/// ECMA line terminators, which `.` does not match.
const LINE_TERMINATORS: [(char, char); 3] = [('\n', '\n'), ('\r', '\r'), ('\u{2028}', '\u{2029}')];

const ASCII_DIGITS: [(char, char); 1] = [('0', '9')];

const ASCII_WORD: [(char, char); 4] = [('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')];

fn class_of_ranges(ranges: &[(char, char)]) -> ClassUnicode {
    ClassUnicode::new(
        ranges
            .iter()
            .map(|&(first, last)| ClassUnicodeRange::new(first, last)),
    )
}

/// `\d \D \s \S \w \W`.
fn escape_class(letter: char) -> ClassUnicode {
    let mut class = match letter.to_ascii_lowercase() {
        'd' => class_of_ranges(&ASCII_DIGITS),
        'w' => class_of_ranges(&ASCII_WORD),
        _ => class_of_ranges(&ECMA_WHITESPACE),
    };
    if letter.is_ascii_uppercase() {
        class.negate();
    }
    class
}

fn dot_class() -> ClassUnicode {
    let mut class = class_of_ranges(&LINE_TERMINATORS);
    class.negate();
    class
}

/// The characters from `first` to `last` (code points, possibly surrogates, which no
/// character is).
fn code_point_range_class(first: u32, last: u32) -> ClassUnicode {
    let pieces = [(first, last.min(0xD7FF)), (first.max(0xE000), last)];
    ClassUnicode::new(pieces.into_iter().filter_map(|(low, high)| {
        let (low, high) = (char::from_u32(low)?, char::from_u32(high)?);
        (low <= high).then(|| ClassUnicodeRange::new(low, high))
    }))
}

fn class_hir(class: ClassUnicode) -> Hir {
    Hir::class(Class::Unicode(class))
}

fn char_hir(character: char) -> Hir {
    Hir::literal(character.encode_utf8(&mut [0; 4]).as_bytes())
}

/// A code point as an atom; a lone surrogate is no character and matches nothing.
fn code_point_hir(code_point: u32) -> Hir {
    char::from_u32(code_point).map_or_else(Hir::fail, char_hir)
}

/// The class a parsed `\p{...}` stands for.
fn hir_as_class(hir: &Hir) -> Option<ClassUnicode> {
    match hir.kind() {
        HirKind::Class(Class::Unicode(class)) => Some(class.clone()),
        HirKind::Class(Class::Bytes(class)) if class.ranges().is_empty() => {
            Some(ClassUnicode::empty())
        }
        HirKind::Literal(literal) => {
            let text = std::str::from_utf8(&literal.0).ok()?;
            let mut characters = text.chars();
            let only = characters.next()?;
            characters
                .next()
                .is_none()
                .then(|| class_of_ranges(&[(only, only)]))
        }
        _ => None,
    }
}

/// ECMA group names are identifiers; this accepts letters, digits (not first), `_`, `$`
/// and the joiners.
fn is_group_name(name: &str) -> bool {
    let mut characters = name.chars();
    let Some(first) = characters.next() else {
        return false;
    };
    (first.is_alphabetic() || first == '_' || first == '$')
        && characters.all(|character| {
            character.is_alphanumeric() || matches!(character, '_' | '$' | '\u{200C}' | '\u{200D}')
        })
}

/// How many capturing groups the pattern has and their names, for telling a
/// backreference from a reference to a group that does not exist.
fn scan_capture_groups(pattern: &str) -> (u64, Vec<&str>) {
    let mut count = 0u64;
    let mut names = Vec::new();
    let mut in_class = false;
    let mut characters = pattern.char_indices();
    while let Some((offset, character)) = characters.next() {
        match character {
            '\\' => {
                characters.next();
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class => {
                let rest = &pattern[offset + 1..];
                if !rest.starts_with('?') {
                    count += 1;
                } else if let Some(named) = rest.strip_prefix("?<")
                    && !named.starts_with(['=', '!'])
                {
                    count += 1;
                    if let Some(end) = named.find('>') {
                        names.push(&named[..end]);
                    }
                }
            }
            _ => {}
        }
    }
    (count, names)
}

/// The upper bound of a braced quantifier as written.
enum BracedMaximum<'a> {
    /// `{n}`
    Exact,
    /// `{n,}`
    Unbounded,
    /// `{n,m}`
    Bounded(&'a str),
}

/// A braced quantifier as written: `{n}`, `{n,}` or `{n,m}`.
struct BracedQuantifier<'a> {
    length: usize,
    minimum: &'a str,
    maximum: BracedMaximum<'a>,
}

impl<'a> BracedQuantifier<'a> {
    /// The braced quantifier `text` starts with, if it starts with one.
    fn scan(text: &'a str) -> Option<BracedQuantifier<'a>> {
        let bytes = text.as_bytes();
        if bytes.first() != Some(&b'{') {
            return None;
        }
        let digits_end = |from: usize| {
            from + bytes[from..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count()
        };
        let minimum_end = digits_end(1);
        if minimum_end == 1 {
            return None;
        }
        let (maximum, close) = if bytes.get(minimum_end) == Some(&b',') {
            let maximum_end = digits_end(minimum_end + 1);
            let maximum = if maximum_end == minimum_end + 1 {
                BracedMaximum::Unbounded
            } else {
                BracedMaximum::Bounded(&text[minimum_end + 1..maximum_end])
            };
            (maximum, maximum_end)
        } else {
            (BracedMaximum::Exact, minimum_end)
        };
        if bytes.get(close) != Some(&b'}') {
            return None;
        }
        Some(BracedQuantifier {
            length: close + 1,
            minimum: &text[1..minimum_end],
            maximum,
        })
    }

    fn bounds(&self, offset: usize) -> Result<(u32, Option<u32>), PatternError> {
        let count = |digits: &str| {
            digits.parse::<u32>().map_err(|_| PatternError::TooLarge {
                what: format!("repetition count {digits}"),
                offset,
            })
        };
        let minimum = count(self.minimum)?;
        let maximum = match self.maximum {
            BracedMaximum::Exact => Some(minimum),
            BracedMaximum::Unbounded => None,
            BracedMaximum::Bounded(digits) => Some(count(digits)?),
        };
        if let Some(maximum) = maximum
            && maximum < minimum
        {
            return Err(syntax("numbers out of order in a `{}` quantifier", offset));
        }
        Ok((minimum, maximum))
    }
}

/// One item of a character class: a character or a set (`\d`, `\p{L}`).
enum ClassAtom {
    CodePoint(u32),
    Set(ClassUnicode),
}

impl ClassAtom {
    fn into_class(self) -> ClassUnicode {
        match self {
            ClassAtom::CodePoint(code_point) => code_point_range_class(code_point, code_point),
            ClassAtom::Set(class) => class,
        }
    }
}

/// Reads ECMA-262 (`u` flag) pattern syntax into HIR. Positions are byte offsets.
struct EcmaParser<'a> {
    pattern: &'a str,
    position: usize,
    depth: usize,
    capture_count: u64,
    group_names: Vec<&'a str>,
}

impl<'a> EcmaParser<'a> {
    fn new(pattern: &'a str) -> EcmaParser<'a> {
        let (capture_count, group_names) = scan_capture_groups(pattern);
        EcmaParser {
            pattern,
            position: 0,
            depth: 0,
            capture_count,
            group_names,
        }
    }

    fn parse(mut self) -> Result<Hir, PatternError> {
        let hir = self.disjunction()?;
        if self.position < self.pattern.len() {
            // Only a `)` without its `(` ends the top-level disjunction early.
            return Err(syntax("unmatched `)`", self.position));
        }
        Ok(hir)
    }

    fn rest(&self) -> &'a str {
        &self.pattern[self.position..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let character = self.peek()?;
        self.position += character.len_utf8();
        Some(character)
    }

    fn eat(&mut self, expected: char) -> bool {
        if self.peek() == Some(expected) {
            self.position += expected.len_utf8();
            true
        } else {
            false
        }
    }

    fn disjunction(&mut self) -> Result<Hir, PatternError> {
        let mut branches = vec![self.alternative()?];
        while self.eat('|') {
            branches.push(self.alternative()?);
        }
        Ok(Hir::alternation(branches))
    }

    fn alternative(&mut self) -> Result<Hir, PatternError> {
        let mut terms = Vec::new();
        while let Some(next) = self.peek() {
            if next == '|' || next == ')' {
                break;
            }
            terms.push(self.term()?);
        }
        Ok(Hir::concat(terms))
    }

    fn term(&mut self) -> Result<Hir, PatternError> {
        // An assertion takes no quantifier: one after it is read as an atom, and refused
        // as "nothing to repeat".
        if self.eat('^') {
            return Ok(Hir::look(Look::Start));
        }
        if self.eat('$') {
            return Ok(Hir::look(Look::End));
        }
        let atom = self.atom()?;
        self.quantified(atom)
    }

    fn quantified(&mut self, atom: Hir) -> Result<Hir, PatternError> {
        let offset = self.position;
        let (min, max) = match self.peek() {
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('?') => (0, Some(1)),
            Some('{') => match BracedQuantifier::scan(self.rest()) {
                Some(braced) => {
                    let bounds = braced.bounds(offset)?;
                    // The closing `}` is consumed below, like a one-character quantifier.
                    self.position += braced.length - 1;
                    bounds
                }
                None => return Ok(atom),
            },
            _ => return Ok(atom),
        };
        self.position += 1;
        // Lazy or greedy, the same strings match.
        self.eat('?');
        Ok(Hir::repetition(Repetition {
            min,
            max,
            greedy: true,
            sub: Box::new(atom),
        }))
    }

    fn atom(&mut self) -> Result<Hir, PatternError> {
        let offset = self.position;
        let Some(character) = self.bump() else {
            return Err(syntax("expected an expression", offset));
        };
        match character {
            '.' => Ok(class_hir(dot_class())),
            '(' => self.group(offset),
            '[' => Ok(class_hir(self.class(offset)?)),
            '\\' => self.atom_escape(offset),
            '*' | '+' | '?' => Err(syntax(
                format!("nothing to repeat before `{character}`"),
                offset,
            )),
            '{' if BracedQuantifier::scan(&self.pattern[offset..]).is_some() => {
                Err(syntax("nothing to repeat before `{`", offset))
            }
            ')' | '|' => Err(syntax(format!("unexpected `{character}`"), offset)),
            literal => Ok(char_hir(literal)),
        }
    }

    /// A group; `offset` is its `(`, already consumed.
    fn group(&mut self, offset: usize) -> Result<Hir, PatternError> {
        let rest = self.rest();
        if rest.starts_with("?=") || rest.starts_with("?!") {
            return Err(unsupported(format!("lookahead `({}`", &rest[..2]), offset));
        }
        if rest.starts_with("?<=") || rest.starts_with("?<!") {
            return Err(unsupported(format!("lookbehind `({}`", &rest[..3]), offset));
        }
        if rest.starts_with("?:") {
            self.position += 2;
        } else if rest.starts_with("?<") {
            self.position += 2;
            self.group_name()?;
        } else if let Some(after) = rest.strip_prefix('?') {
            let flags_length = after
                .find(|character: char| !matches!(character, 'i' | 'm' | 's' | '-'))
                .unwrap_or(after.len());
            if flags_length > 0 && after[flags_length..].starts_with(':') {
                return Err(unsupported(
                    format!("inline modifiers `(?{}:`", &after[..flags_length]),
                    offset,
                ));
            }
            return Err(syntax(
                "invalid group: `(?` must begin `(?:` or `(?<name>`",
                offset,
            ));
        }
        if self.depth >= MAX_GROUP_DEPTH {
            return Err(PatternError::TooLarge {
                what: format!("nesting of groups deeper than {MAX_GROUP_DEPTH}"),
                offset,
            });
        }
        self.depth += 1;
        let inner = grail_syntax::stack::deep(|| self.disjunction())?;
        self.depth -= 1;
        if !self.eat(')') {
            return Err(syntax("unterminated group: missing `)`", offset));
        }
        Ok(inner)
    }

    /// The name of a `(?<name>` group, up to and with its `>`.
    fn group_name(&mut self) -> Result<(), PatternError> {
        let start = self.position;
        let Some(length) = self.rest().find('>') else {
            return Err(syntax("unterminated group name: missing `>`", start));
        };
        let name = &self.rest()[..length];
        if !is_group_name(name) {
            return Err(syntax(format!("invalid group name `{name}`"), start));
        }
        self.position += length + 1;
        Ok(())
    }

    /// A character class; `offset` is its `[`, already consumed.
    fn class(&mut self, offset: usize) -> Result<ClassUnicode, PatternError> {
        let negated = self.eat('^');
        let mut class = ClassUnicode::empty();
        loop {
            let atom_offset = self.position;
            match self.peek() {
                None => {
                    return Err(syntax("unterminated character class: missing `]`", offset));
                }
                Some(']') => {
                    self.position += 1;
                    break;
                }
                Some(_) => {}
            }
            let first = self.class_atom()?;
            let rest = self.rest();
            let is_range = rest.starts_with('-') && rest.len() > 1 && !rest[1..].starts_with(']');
            if !is_range {
                class.union(&first.into_class());
                continue;
            }
            self.position += 1;
            let last = self.class_atom()?;
            match (first, last) {
                (ClassAtom::CodePoint(first), ClassAtom::CodePoint(last)) => {
                    if first > last {
                        return Err(syntax("range out of order in character class", atom_offset));
                    }
                    class.union(&code_point_range_class(first, last));
                }
                _ => {
                    return Err(syntax(
                        "a class escape such as `\\d` cannot be an end of a range",
                        atom_offset,
                    ));
                }
            }
        }
        if negated {
            class.negate();
        }
        Ok(class)
    }

    fn class_atom(&mut self) -> Result<ClassAtom, PatternError> {
        let offset = self.position;
        let Some(character) = self.bump() else {
            return Err(syntax("unterminated character class: missing `]`", offset));
        };
        if character != '\\' {
            return Ok(ClassAtom::CodePoint(character as u32));
        }
        match self.peek() {
            Some('b') => {
                self.position += 1;
                Ok(ClassAtom::CodePoint(0x08))
            }
            Some(letter @ ('d' | 'D' | 's' | 'S' | 'w' | 'W')) => {
                self.position += 1;
                Ok(ClassAtom::Set(escape_class(letter)))
            }
            Some('p' | 'P') => Ok(ClassAtom::Set(self.property_class(offset)?)),
            _ => Ok(ClassAtom::CodePoint(self.character_escape(offset)?)),
        }
    }

    /// An escape outside a class; `offset` is its `\`, already consumed.
    fn atom_escape(&mut self, offset: usize) -> Result<Hir, PatternError> {
        match self.peek() {
            None => Err(syntax("`\\` at the end of the pattern", offset)),
            Some('b') => Err(unsupported("word boundary `\\b`", offset)),
            Some('B') => Err(unsupported("non-word-boundary `\\B`", offset)),
            Some(letter @ ('d' | 'D' | 's' | 'S' | 'w' | 'W')) => {
                self.position += 1;
                Ok(class_hir(escape_class(letter)))
            }
            Some('p' | 'P') => Ok(class_hir(self.property_class(offset)?)),
            Some('k') => {
                self.position += 1;
                Err(self.named_backreference(offset))
            }
            Some('1'..='9') => Err(self.numbered_backreference(offset)),
            Some(_) => Ok(code_point_hir(self.character_escape(offset)?)),
        }
    }

    /// `\k<name>`, after the `k`.
    fn named_backreference(&mut self, offset: usize) -> PatternError {
        if !self.eat('<') {
            return syntax(
                "`\\k` must be followed by a group name: `\\k<name>`",
                offset,
            );
        }
        let Some(length) = self.rest().find('>') else {
            return syntax("unterminated group name: missing `>`", offset);
        };
        let name = &self.rest()[..length];
        self.position += length + 1;
        if self.group_names.contains(&name) {
            unsupported(format!("backreference `\\k<{name}>`"), offset)
        } else {
            syntax(
                format!("backreference to a group named `{name}`, which does not exist"),
                offset,
            )
        }
    }

    /// `\1`, `\12`: a backreference (the `u` flag reads no octal escapes).
    fn numbered_backreference(&mut self, offset: usize) -> PatternError {
        let digits_length = self
            .rest()
            .bytes()
            .take_while(|byte| byte.is_ascii_digit())
            .count();
        let digits = &self.rest()[..digits_length];
        self.position += digits_length;
        let number = digits.parse::<u64>().unwrap_or(u64::MAX);
        if number <= self.capture_count {
            unsupported(format!("backreference `\\{digits}`"), offset)
        } else {
            syntax(
                format!("backreference `\\{digits}` to a group that does not exist"),
                offset,
            )
        }
    }

    /// An escape standing for one code point, after the `\` at `offset`.
    fn character_escape(&mut self, offset: usize) -> Result<u32, PatternError> {
        let Some(character) = self.bump() else {
            return Err(syntax("`\\` at the end of the pattern", offset));
        };
        Ok(match character {
            'f' => 0x0C,
            'n' => 0x0A,
            'r' => 0x0D,
            't' => 0x09,
            'v' => 0x0B,
            'c' => match self.peek() {
                Some(letter) if letter.is_ascii_alphabetic() => {
                    self.position += 1;
                    letter as u32 % 32
                }
                _ => return Err(syntax("`\\c` must be followed by an ASCII letter", offset)),
            },
            '0' => {
                if self.peek().is_some_and(|next| next.is_ascii_digit()) {
                    return Err(syntax("octal escapes are not allowed", offset));
                }
                0
            }
            'x' => match self.hex_digits(2) {
                Some(value) => value,
                None => return Err(syntax("`\\x` must be followed by two hex digits", offset)),
            },
            'u' => self.unicode_escape(offset)?,
            other if !other.is_ascii_alphanumeric() => other as u32,
            other => return Err(syntax(format!("invalid escape `\\{other}`"), offset)),
        })
    }

    /// Exactly `count` hex digits, consumed when present.
    fn hex_digits(&mut self, count: usize) -> Option<u32> {
        let digits = self.rest().get(..count)?;
        if !digits.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return None;
        }
        let value = u32::from_str_radix(digits, 16).ok()?;
        self.position += count;
        Some(value)
    }

    /// `\uHHHH` (joining a surrogate pair written as two escapes) or `\u{H...}`, after
    /// the `u`.
    fn unicode_escape(&mut self, offset: usize) -> Result<u32, PatternError> {
        if self.eat('{') {
            let rest = self.rest();
            let digits_length = rest
                .bytes()
                .take_while(|byte| byte.is_ascii_hexdigit())
                .count();
            if digits_length == 0 || !rest[digits_length..].starts_with('}') {
                return Err(syntax(
                    "`\\u{` must hold hex digits and end with `}`",
                    offset,
                ));
            }
            let value = rest[..digits_length]
                .chars()
                .try_fold(0u32, |value, digit| {
                    value.checked_mul(16)?.checked_add(digit.to_digit(16)?)
                })
                .filter(|&value| value <= 0x10FFFF)
                .ok_or_else(|| syntax("code point above U+10FFFF", offset))?;
            self.position += digits_length + 1;
            return Ok(value);
        }
        let Some(first) = self.hex_digits(4) else {
            return Err(syntax(
                "`\\u` must be followed by four hex digits or `{...}`",
                offset,
            ));
        };
        if (0xD800..=0xDBFF).contains(&first) && self.rest().starts_with("\\u") {
            let before_second = self.position;
            self.position += 2;
            match self.hex_digits(4) {
                Some(second) if (0xDC00..=0xDFFF).contains(&second) => {
                    return Ok(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00));
                }
                _ => self.position = before_second,
            }
        }
        Ok(first)
    }

    /// `\p{...}` or `\P{...}`; `offset` is the `\`, the position is at the `p`.
    fn property_class(&mut self, offset: usize) -> Result<ClassUnicode, PatternError> {
        let negated = self.bump() == Some('P');
        if !self.eat('{') {
            return Err(syntax(
                "`\\p` must be followed by a property in braces: `\\p{...}`",
                offset,
            ));
        }
        let Some(length) = self.rest().find('}') else {
            return Err(syntax("unterminated `\\p{`: missing `}`", offset));
        };
        let name = &self.rest()[..length];
        self.position += length + 1;
        let well_formed = !name.is_empty()
            && name.chars().all(|character| {
                character.is_ascii_alphanumeric() || matches!(character, '_' | '=')
            })
            && name.matches('=').count() <= 1
            && !name.starts_with('=')
            && !name.ends_with('=');
        if !well_formed {
            return Err(syntax(format!("invalid Unicode property `{name}`"), offset));
        }
        let mut class = regex_syntax::ParserBuilder::new()
            .build()
            .parse(&format!("\\p{{{name}}}"))
            .ok()
            .and_then(|hir| hir_as_class(&hir))
            .ok_or_else(|| syntax(format!("unknown Unicode property `{name}`"), offset))?;
        if negated {
            class.negate();
        }
        Ok(class)
    }
}

// ---------------------------------------------------------------------------------------
// Anchors resolved: HIR → Node.
// ---------------------------------------------------------------------------------------

/// A regular expression over characters without anchors, kept simplified by its
/// constructors (`Nothing` only ever stands alone). Composite nodes know their depth and
/// whether they match the empty string. Cloning grows the stack as needed and dropping
/// uses none, so trees of any depth are safe while they are built.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Node {
    /// No string.
    Nothing,
    /// The empty string.
    Empty,
    /// A non-empty literal text.
    Text(String),
    /// One character of a non-empty set.
    Set(CharSet),
    /// The items one after another.
    Seq(Vec<Node>, Shape),
    /// Any one of the items.
    Alt(Vec<Node>, Shape),
    /// The item `min` to `max` times (`None`: no maximum).
    Repeat(Box<Node>, u32, Option<u32>, Shape),
}

/// What a composite node knows about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    depth: usize,
    nullable: bool,
}

impl Node {
    fn set(set: CharSet) -> Node {
        if set.matches_nothing() {
            Node::Nothing
        } else {
            Node::Set(set)
        }
    }

    fn depth(&self) -> usize {
        match self {
            Node::Seq(_, shape) | Node::Alt(_, shape) | Node::Repeat(_, _, _, shape) => shape.depth,
            _ => 1,
        }
    }

    /// True when the empty string matches.
    fn nullable(&self) -> bool {
        match self {
            Node::Nothing | Node::Text(_) | Node::Set(_) => false,
            Node::Empty => true,
            Node::Seq(_, shape) | Node::Alt(_, shape) | Node::Repeat(_, _, _, shape) => {
                shape.nullable
            }
        }
    }

    fn children_depth(items: &[Node]) -> usize {
        1 + items.iter().map(Node::depth).max().unwrap_or(0)
    }

    fn new_seq(items: Vec<Node>) -> Node {
        let shape = Shape {
            depth: Node::children_depth(&items),
            nullable: items.iter().all(Node::nullable),
        };
        Node::Seq(items, shape)
    }

    fn new_alt(items: Vec<Node>) -> Node {
        let shape = Shape {
            depth: Node::children_depth(&items),
            nullable: items.iter().any(Node::nullable),
        };
        Node::Alt(items, shape)
    }

    fn new_repeat(item: Node, min: u32, max: Option<u32>) -> Node {
        let shape = Shape {
            depth: 1 + item.depth(),
            nullable: min == 0 || item.nullable(),
        };
        Node::Repeat(Box::new(item), min, max, shape)
    }

    fn seq(items: impl IntoIterator<Item = Node>) -> Node {
        fn push(items: &mut Vec<Node>, item: Node) {
            if let (Some(Node::Text(previous)), Node::Text(next)) = (items.last_mut(), &item) {
                previous.push_str(next);
            } else {
                items.push(item);
            }
        }
        let mut flat = Vec::new();
        for mut item in items {
            match &mut item {
                Node::Nothing => return Node::Nothing,
                Node::Empty => {}
                Node::Seq(inner, _) => std::mem::take(inner)
                    .into_iter()
                    .for_each(|item| push(&mut flat, item)),
                _ => push(&mut flat, item),
            }
        }
        match flat.len() {
            0 => Node::Empty,
            1 => flat.pop().unwrap_or(Node::Empty),
            _ => Node::new_seq(flat),
        }
    }

    fn alt(items: impl IntoIterator<Item = Node>) -> Node {
        let mut flat = Vec::new();
        for mut item in items {
            match &mut item {
                Node::Nothing => {}
                Node::Alt(inner, _) => flat.append(inner),
                _ => flat.push(item),
            }
        }
        // Alternatives that are single characters make one class.
        if flat.len() > 1
            && let Some(sets) = flat
                .iter()
                .map(Node::as_single_character_set)
                .collect::<Option<Vec<CharSet>>>()
        {
            let union = sets
                .iter()
                .fold(CharSet::new([], false), |union, set| union.union(set));
            return Node::set(union);
        }
        // An empty alternative says nothing beside another that can be empty.
        let other_nullable = flat
            .iter()
            .any(|item| *item != Node::Empty && item.nullable());
        let mut empty_kept = other_nullable;
        flat.retain(|item| {
            if *item != Node::Empty {
                return true;
            }
            let keep = !empty_kept;
            empty_kept = true;
            keep
        });
        match flat.len() {
            0 => Node::Nothing,
            1 => flat.pop().unwrap_or(Node::Nothing),
            _ => Node::new_alt(flat),
        }
    }

    fn repeat(item: Node, min: u32, max: Option<u32>) -> Node {
        if max == Some(0) {
            return Node::Empty;
        }
        match item {
            Node::Nothing if min == 0 => Node::Empty,
            Node::Nothing => Node::Nothing,
            Node::Empty => Node::Empty,
            item if min == 1 && max == Some(1) => item,
            // llama.cpp refuses an unbounded repetition of something that can be empty
            // (left recursion), so repeat a body that cannot: x{m,} = x* when x can be
            // empty.
            item if max.is_none() && item.nullable() => match item.star_body() {
                Node::Nothing | Node::Empty => Node::Empty,
                body => Node::new_repeat(body, 0, None),
            },
            item => Node::new_repeat(item, min, max),
        }
    }

    fn as_single_character_set(&self) -> Option<CharSet> {
        match self {
            Node::Set(set) => Some(set.clone()),
            Node::Text(text) => {
                let mut characters = text.chars();
                let only = characters.next()?;
                characters
                    .next()
                    .is_none()
                    .then(|| CharSet::single(only as u32))
            }
            _ => None,
        }
    }

    /// A node that cannot match the empty string whose `*` is this node's `*`.
    fn star_body(mut self) -> Node {
        grail_syntax::stack::deep(|| match &mut self {
            Node::Nothing | Node::Empty => Node::Nothing,
            // (a|b)* = (a'|b')* when a'* = a* and b'* = b*.
            Node::Alt(items, _) => {
                Node::alt(std::mem::take(items).into_iter().map(Node::star_body))
            }
            // (a b)* = (a|b)* when both can be empty.
            Node::Seq(items, shape) if shape.nullable => {
                Node::alt(std::mem::take(items).into_iter().map(Node::star_body))
            }
            // (x{m,n})* = x* when x{m,n} can be empty.
            Node::Repeat(item, _, _, shape) if shape.nullable => {
                std::mem::replace(item.as_mut(), Node::Empty).star_body()
            }
            _ => self,
        })
    }

    fn size(&self) -> usize {
        grail_syntax::stack::deep(|| match self {
            Node::Seq(items, _) | Node::Alt(items, _) => {
                1 + items.iter().map(Node::size).sum::<usize>()
            }
            Node::Repeat(item, _, _, _) => 1 + item.size(),
            _ => 1,
        })
    }
}

impl Clone for Node {
    fn clone(&self) -> Node {
        grail_syntax::stack::deep(|| match self {
            Node::Nothing => Node::Nothing,
            Node::Empty => Node::Empty,
            Node::Text(text) => Node::Text(text.clone()),
            Node::Set(set) => Node::Set(set.clone()),
            Node::Seq(items, shape) => Node::Seq(items.clone(), *shape),
            Node::Alt(items, shape) => Node::Alt(items.clone(), *shape),
            Node::Repeat(item, min, max, shape) => Node::Repeat(item.clone(), *min, *max, *shape),
        })
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        fn take_children(node: &mut Node, pending: &mut Vec<Node>) {
            match node {
                Node::Seq(items, _) | Node::Alt(items, _) => pending.append(items),
                Node::Repeat(item, _, _, _) => {
                    pending.push(std::mem::replace(item.as_mut(), Node::Empty))
                }
                _ => {}
            }
        }
        let mut pending = Vec::new();
        take_children(self, &mut pending);
        while let Some(mut node) = pending.pop() {
            take_children(&mut node, &mut pending);
        }
    }
}

/// How many items a sequence or alternation of `items` handles once flattened.
fn flattened_length(items: &[Node]) -> usize {
    items
        .iter()
        .map(|item| match item {
            Node::Seq(inner, _) | Node::Alt(inner, _) => inner.len(),
            _ => 1,
        })
        .sum()
}

fn has_start(hir: &Hir) -> bool {
    hir.properties().look_set().contains(Look::Start)
}

fn has_end(hir: &Hir) -> bool {
    hir.properties().look_set().contains(Look::End)
}

/// Rewrites HIR with anchors into [`Node`]s without them.
///
/// `resolve(x, at_start, at_end)` is the strings `x` matches where its match starts at the
/// start of the whole string exactly when `at_start` and ends at its end exactly when
/// `at_end` (`^` then matches the empty string where `at_start` and the match has consumed
/// nothing yet, and nothing elsewhere; `$` likewise). A flag is dropped where `x` has no
/// such anchor, so the rewriting only duplicates what holds anchors.
struct AnchorResolver {
    budget: usize,
    nullable_memo: HashMap<(usize, bool, bool), bool>,
}

impl AnchorResolver {
    fn new(budget: usize) -> AnchorResolver {
        AnchorResolver {
            budget,
            nullable_memo: HashMap::new(),
        }
    }

    fn charge(&mut self, nodes: usize) -> Result<(), PatternError> {
        self.budget = self
            .budget
            .checked_sub(nodes)
            .ok_or_else(|| PatternError::TooLarge {
                what: "the pattern's grammar (or its exact rewriting of anchors)".to_string(),
                offset: 0,
            })?;
        Ok(())
    }

    /// A copy of the sequence of `reversed_items` (last item first).
    fn duplicate_sequence(&mut self, reversed_items: &[Node]) -> Result<Node, PatternError> {
        self.charge(reversed_items.iter().map(Node::size).sum())?;
        self.seq(reversed_items.iter().rev().cloned())
    }

    /// [`Node::seq`], its work charged and its depth checked.
    fn seq(&mut self, items: impl IntoIterator<Item = Node>) -> Result<Node, PatternError> {
        let items: Vec<Node> = items.into_iter().collect();
        self.charge(flattened_length(&items))?;
        self.checked_depth(Node::seq(items))
    }

    /// [`Node::alt`], its work charged and its depth checked.
    fn alt(&mut self, items: impl IntoIterator<Item = Node>) -> Result<Node, PatternError> {
        let items: Vec<Node> = items.into_iter().collect();
        self.charge(flattened_length(&items))?;
        self.checked_depth(Node::alt(items))
    }

    /// [`Node::repeat`], its work charged and its depth checked.
    fn repeat(&mut self, item: Node, min: u32, max: Option<u32>) -> Result<Node, PatternError> {
        self.charge(1)?;
        self.checked_depth(Node::repeat(item, min, max))
    }

    /// `node`, unless it nests deeper than an expression may.
    fn checked_depth(&self, node: Node) -> Result<Node, PatternError> {
        if node.depth() > MAX_EXPRESSION_DEPTH {
            return Err(PatternError::TooLarge {
                what: format!("the pattern's grammar, nested deeper than {MAX_EXPRESSION_DEPTH},"),
                offset: 0,
            });
        }
        Ok(node)
    }

    /// The strings the whole search matches: some substring matches the pattern, with
    /// `^` and `$` at the string's ends.
    fn search(&mut self, hir: &Hir) -> Result<Node, PatternError> {
        let anywhere = self.resolve(hir, false, false)?;
        let any = || Node::Set(CharSet::new([(0, 0x10FFFF)], false));
        let any_star = || Node::new_repeat(any(), 0, None);
        let any_plus = || Node::new_repeat(any(), 1, None);
        if anywhere.nullable() {
            return Ok(any_star());
        }
        Ok(match (has_start(hir), has_end(hir)) {
            (false, false) => Node::seq([any_star(), anywhere, any_star()]),
            (true, false) => Node::alt([
                Node::seq([self.resolve(hir, true, false)?, any_star()]),
                Node::seq([any_plus(), anywhere, any_star()]),
            ]),
            (false, true) => Node::alt([
                Node::seq([any_star(), self.resolve(hir, false, true)?]),
                Node::seq([any_star(), anywhere, any_plus()]),
            ]),
            (true, true) => Node::alt([
                self.resolve(hir, true, true)?,
                Node::seq([self.resolve(hir, true, false)?, any_plus()]),
                Node::seq([any_plus(), self.resolve(hir, false, true)?]),
                Node::seq([any_plus(), anywhere, any_plus()]),
            ]),
        })
    }

    fn resolve(&mut self, hir: &Hir, at_start: bool, at_end: bool) -> Result<Node, PatternError> {
        let at_start = at_start && has_start(hir);
        let at_end = at_end && has_end(hir);
        self.charge(1)?;
        let node = grail_syntax::stack::deep(|| self.resolve_kind(hir, at_start, at_end))?;
        self.checked_depth(node)
    }

    fn resolve_kind(
        &mut self,
        hir: &Hir,
        at_start: bool,
        at_end: bool,
    ) -> Result<Node, PatternError> {
        match hir.kind() {
            HirKind::Empty => Ok(Node::Empty),
            HirKind::Literal(literal) => match std::str::from_utf8(&literal.0) {
                Ok(text) => Ok(Node::Text(text.to_string())),
                Err(_) => Err(unsupported("a literal that is not UTF-8", 0)),
            },
            HirKind::Class(Class::Unicode(class)) => Ok(Node::set(CharSet::new(
                class
                    .ranges()
                    .iter()
                    .map(|range| (range.start() as u32, range.end() as u32)),
                false,
            ))),
            HirKind::Class(Class::Bytes(class)) => {
                if class.ranges().iter().all(|range| range.end() < 0x80) {
                    Ok(Node::set(CharSet::new(
                        class
                            .ranges()
                            .iter()
                            .map(|range| (u32::from(range.start()), u32::from(range.end()))),
                        false,
                    )))
                } else {
                    Err(unsupported("a class of bytes", 0))
                }
            }
            HirKind::Look(Look::Start) => Ok(if at_start { Node::Empty } else { Node::Nothing }),
            HirKind::Look(Look::End) => Ok(if at_end { Node::Empty } else { Node::Nothing }),
            HirKind::Look(other) => Err(unsupported(format!("assertion {other:?}"), 0)),
            HirKind::Capture(capture) => self.resolve(&capture.sub, at_start, at_end),
            HirKind::Alternation(branches) => {
                let mut resolved = Vec::with_capacity(branches.len());
                for branch in branches {
                    resolved.push(self.resolve(branch, at_start, at_end)?);
                }
                self.alt(resolved)
            }
            HirKind::Concat(items) => self.concat(items, at_start, at_end),
            HirKind::Repetition(repetition) => self.repetition(repetition, at_start, at_end),
        }
    }

    /// True when `hir` matches the empty string at a place described by the flags.
    fn nullable(&mut self, hir: &Hir, at_start: bool, at_end: bool) -> bool {
        let at_start = at_start && has_start(hir);
        let at_end = at_end && has_end(hir);
        let key = (hir as *const Hir as usize, at_start, at_end);
        if let Some(&known) = self.nullable_memo.get(&key) {
            return known;
        }
        let nullable = grail_syntax::stack::deep(|| match hir.kind() {
            HirKind::Empty => true,
            HirKind::Literal(_) | HirKind::Class(_) => false,
            HirKind::Look(Look::Start) => at_start,
            HirKind::Look(Look::End) => at_end,
            HirKind::Look(_) => false,
            HirKind::Capture(capture) => self.nullable(&capture.sub, at_start, at_end),
            HirKind::Repetition(repetition) => {
                repetition.min == 0 || self.nullable(&repetition.sub, at_start, at_end)
            }
            HirKind::Concat(items) => items
                .iter()
                .all(|item| self.nullable(item, at_start, at_end)),
            HirKind::Alternation(branches) => branches
                .iter()
                .any(|branch| self.nullable(branch, at_start, at_end)),
        });
        self.nullable_memo.insert(key, nullable);
        nullable
    }

    /// `x1 x2 ... xn` at the place the flags describe.
    ///
    /// For `X Y` starting at the start (S) and ending at the end (E): `X` from S to the
    /// middle, then `Y` from the middle to E; or `X` empty at S, then `Y` from S to E; or
    /// `X` from S to E, then `Y` empty at E; or both empty with S and E at one place (the
    /// empty string). Folded from the right, with the suffixes at the middle and, while
    /// every item before them can be empty at S, at S.
    fn concat(
        &mut self,
        items: &[Hir],
        at_start: bool,
        at_end: bool,
    ) -> Result<Node, PatternError> {
        if !at_start && !at_end {
            let mut resolved = Vec::with_capacity(items.len());
            for item in items {
                resolved.push(self.resolve(item, false, false)?);
            }
            return self.seq(resolved);
        }
        let count = items.len();
        let mut suffix_has_start = vec![false; count + 1];
        let mut suffix_nullable_from_middle = vec![true; count + 1];
        let mut suffix_nullable_from_start = vec![true; count + 1];
        for index in (0..count).rev() {
            let item = &items[index];
            suffix_has_start[index] = suffix_has_start[index + 1] || has_start(item);
            suffix_nullable_from_middle[index] =
                suffix_nullable_from_middle[index + 1] && self.nullable(item, false, at_end);
            suffix_nullable_from_start[index] =
                suffix_nullable_from_start[index + 1] && self.nullable(item, at_start, at_end);
        }
        let mut needs_start = vec![false; count + 1];
        needs_start[0] = at_start;
        for index in 0..count {
            needs_start[index + 1] =
                needs_start[index] && self.nullable(&items[index], at_start, false);
        }
        // The suffix after `index` from the middle, as its items in reverse order (made a
        // node only where it branches, so long sequences are not rebuilt item by item),
        // and from the start, as its alternatives (gathered in one list for the same
        // reason).
        let mut rest_from_middle: Vec<Node> = Vec::new();
        let mut rest_from_start: Vec<Node> = Vec::new();
        for index in (0..count).rev() {
            let item = &items[index];
            let item_ends_here = at_end && has_end(item) && suffix_nullable_from_middle[index + 1];
            if needs_start[index] && suffix_has_start[index] {
                let item_empty_at_start = self.nullable(item, at_start, false);
                // `item` empty at the start, then the rest from the start: keep its
                // alternatives; otherwise they are not wanted any more.
                if !(item_empty_at_start && suffix_has_start[index + 1]) {
                    rest_from_start.clear();
                }
                let first = self.resolve(item, at_start, false)?;
                let rest = self.duplicate_sequence(&rest_from_middle)?;
                let alternative = self.seq([first, rest])?;
                rest_from_start.push(alternative);
                if item_ends_here {
                    rest_from_start.push(self.resolve(item, at_start, at_end)?);
                }
                if at_end
                    && self.nullable(item, at_start, at_end)
                    && suffix_nullable_from_start[index + 1]
                    && !(item_empty_at_start && suffix_nullable_from_middle[index + 1])
                {
                    rest_from_start.push(Node::Empty);
                }
            } else {
                rest_from_start.clear();
            }
            let item_from_middle = self.resolve(item, false, false)?;
            if item_ends_here {
                let rest = self.seq(rest_from_middle.drain(..).rev())?;
                let ending = self.resolve(item, false, at_end)?;
                let continuing = self.seq([item_from_middle, rest])?;
                rest_from_middle.push(self.alt([continuing, ending])?);
            } else {
                rest_from_middle.push(item_from_middle);
            }
        }
        if at_start && suffix_has_start[0] {
            self.alt(rest_from_start)
        } else {
            self.seq(rest_from_middle.into_iter().rev())
        }
    }

    /// `x{min,max}` at the place the flags describe: the iterations before the first that
    /// consumes a character see the start, those after the last that does see the end.
    fn repetition(
        &mut self,
        repetition: &Repetition,
        at_start: bool,
        at_end: bool,
    ) -> Result<Node, PatternError> {
        let item = &*repetition.sub;
        let (min, max) = (repetition.min, repetition.max);
        if !at_start && !at_end {
            let body = self.resolve(item, false, false)?;
            return self.repeat(body, min, max);
        }
        let max_less_one = max.map(|max| max.saturating_sub(1));
        let mut alternatives = Vec::new();
        match (at_start, at_end) {
            (true, true) => {
                let first_empty = self.nullable(item, true, false);
                let last_empty = self.nullable(item, false, true);
                // Empty iterations at either end fill up the count.
                let padded = first_empty || last_empty;
                if min == 0 || self.nullable(item, true, true) {
                    alternatives.push(Node::Empty);
                }
                // One iteration consumes everything.
                if max != Some(0) && (min <= 1 || padded) {
                    alternatives.push(self.resolve(item, true, true)?);
                }
                // A first and a last that consume, any in between.
                if max.is_none_or(|max| max >= 2) {
                    let low = if padded { 0 } else { min.max(2) - 2 };
                    let first = self.resolve(item, true, false)?;
                    let middle = self.resolve(item, false, false)?;
                    let middle = self.repeat(middle, low, max.map(|max| max.saturating_sub(2)))?;
                    let last = self.resolve(item, false, true)?;
                    alternatives.push(self.seq([first, middle, last])?);
                }
            }
            (true, false) => {
                // Empty iterations before the first that consumes fill up the count.
                // (The item away from the start can be empty only if it can at the start.)
                let padded = self.nullable(item, true, false);
                if min == 0 || padded {
                    alternatives.push(Node::Empty);
                }
                if max != Some(0) {
                    let low = if padded { 0 } else { min.max(1) - 1 };
                    let first = self.resolve(item, true, false)?;
                    let rest = self.resolve(item, false, false)?;
                    let rest = self.repeat(rest, low, max_less_one)?;
                    alternatives.push(self.seq([first, rest])?);
                }
            }
            (false, _) => {
                let padded = self.nullable(item, false, true);
                if min == 0 || padded {
                    alternatives.push(Node::Empty);
                }
                if max != Some(0) {
                    let low = if padded { 0 } else { min.max(1) - 1 };
                    let rest = self.resolve(item, false, false)?;
                    let rest = self.repeat(rest, low, max_less_one)?;
                    let last = self.resolve(item, false, true)?;
                    alternatives.push(self.seq([rest, last])?);
                }
            }
        }
        self.alt(alternatives)
    }
}

// ---------------------------------------------------------------------------------------
// Node → lengths and expressions.
// ---------------------------------------------------------------------------------------

/// The least and greatest length in code points, `None` when nothing matches.
fn char_lengths(node: &Node) -> Option<(u64, Option<u64>)> {
    grail_syntax::stack::deep(|| match node {
        Node::Nothing => None,
        Node::Empty => Some((0, Some(0))),
        Node::Text(text) => {
            let length = text.chars().count() as u64;
            Some((length, Some(length)))
        }
        Node::Set(_) => Some((1, Some(1))),
        Node::Seq(items, _) => items
            .iter()
            .try_fold((0u64, Some(0u64)), |(min, max), item| {
                let (item_min, item_max) = char_lengths(item)?;
                let max = match (max, item_max) {
                    (Some(max), Some(item_max)) => max.checked_add(item_max),
                    _ => None,
                };
                Some((min.saturating_add(item_min), max))
            }),
        Node::Alt(items, _) => {
            items
                .iter()
                .filter_map(char_lengths)
                .reduce(|(min, max), (item_min, item_max)| {
                    let max = match (max, item_max) {
                        (Some(max), Some(item_max)) => Some(max.max(item_max)),
                        _ => None,
                    };
                    (min.min(item_min), max)
                })
        }
        Node::Repeat(item, min, max, _) => {
            let Some((item_min, item_max)) = char_lengths(item) else {
                return (*min == 0).then_some((0, Some(0)));
            };
            let most = match (item_max, max) {
                (Some(0), _) => Some(0),
                (Some(item_max), Some(max)) => item_max.checked_mul(u64::from(*max)),
                _ => None,
            };
            Some((item_min.saturating_mul(u64::from(*min)), most))
        }
    })
}

/// The expression over the canonical JSON encoding of the node's strings.
fn encode(node: &Node) -> Expr {
    grail_syntax::stack::deep(|| match node {
        Node::Nothing => Expr::Chars(CharSet::new([], false)),
        Node::Empty => Expr::Empty,
        Node::Text(text) => {
            let mut parts = Vec::new();
            for character in text.chars() {
                push_into_sequence(&mut parts, json_text::encoded_char(character));
            }
            finish_sequence(parts)
        }
        Node::Set(set) => json_text::encoded_set(set),
        Node::Seq(items, _) => {
            let mut parts = Vec::new();
            for item in items {
                push_into_sequence(&mut parts, encode(item));
            }
            finish_sequence(parts)
        }
        Node::Alt(items, _) => {
            let mut choices = Vec::with_capacity(items.len());
            for item in items {
                match encode(item) {
                    Expr::Choice(inner) => choices.extend(inner),
                    other => choices.push(other),
                }
            }
            Expr::Choice(choices)
        }
        Node::Repeat(item, min, max, _) => Expr::Repeat(Box::new(encode(item)), *min, *max),
    })
}

/// Appends to a sequence, flattening sequences and merging neighbouring literals.
fn push_into_sequence(parts: &mut Vec<Expr>, expr: Expr) {
    match expr {
        Expr::Empty => {}
        Expr::Literal(text) if text.is_empty() => {}
        Expr::Sequence(inner) => {
            for part in inner {
                push_into_sequence(parts, part);
            }
        }
        Expr::Literal(text) => match parts.last_mut() {
            Some(Expr::Literal(previous)) => previous.push_str(&text),
            _ => parts.push(Expr::Literal(text)),
        },
        other => parts.push(other),
    }
}

fn finish_sequence(mut parts: Vec<Expr>) -> Expr {
    match parts.len() {
        0 => Expr::Empty,
        1 => parts.pop().unwrap_or(Expr::Empty),
        _ => Expr::Sequence(parts),
    }
}

#[cfg(test)]
mod tests;
