//! Parsing a pattern's ECMA-262 syntax into regex-syntax's HIR, with the located
//! refusals of what a grammar cannot say (lookaround, backreferences).

use super::*;

// ---------------------------------------------------------------------------------------
// Parsing ECMA-262 syntax into regex-syntax's HIR.
// ---------------------------------------------------------------------------------------

/// ECMA white space and line terminators (`\s`).
pub(super) const ECMA_WHITESPACE: [(char, char); 10] = [
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
pub(super) const LINE_TERMINATORS: [(char, char); 3] =
    [('\n', '\n'), ('\r', '\r'), ('\u{2028}', '\u{2029}')];

pub(super) const ASCII_DIGITS: [(char, char); 1] = [('0', '9')];

pub(super) const ASCII_WORD: [(char, char); 4] = [('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')];

pub(super) fn class_of_ranges(ranges: &[(char, char)]) -> ClassUnicode {
    ClassUnicode::new(
        ranges
            .iter()
            .map(|&(first, last)| ClassUnicodeRange::new(first, last)),
    )
}

/// `\d \D \s \S \w \W`.
pub(super) fn escape_class(letter: char) -> ClassUnicode {
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

pub(super) fn dot_class() -> ClassUnicode {
    let mut class = class_of_ranges(&LINE_TERMINATORS);
    class.negate();
    class
}

/// The characters from `first` to `last` (code points, possibly surrogates, which no
/// character is).
pub(super) fn code_point_range_class(first: u32, last: u32) -> ClassUnicode {
    let pieces = [(first, last.min(0xD7FF)), (first.max(0xE000), last)];
    ClassUnicode::new(pieces.into_iter().filter_map(|(low, high)| {
        let (low, high) = (char::from_u32(low)?, char::from_u32(high)?);
        (low <= high).then(|| ClassUnicodeRange::new(low, high))
    }))
}

pub(super) fn class_hir(class: ClassUnicode) -> Hir {
    Hir::class(Class::Unicode(class))
}

pub(super) fn char_hir(character: char) -> Hir {
    Hir::literal(character.encode_utf8(&mut [0; 4]).as_bytes())
}

/// A code point as an atom; a lone surrogate is no character and matches nothing.
pub(super) fn code_point_hir(code_point: u32) -> Hir {
    char::from_u32(code_point).map_or_else(Hir::fail, char_hir)
}

/// The class a parsed `\p{...}` stands for.
pub(super) fn hir_as_class(hir: &Hir) -> Option<ClassUnicode> {
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
pub(super) fn is_group_name(name: &str) -> bool {
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
pub(super) fn scan_capture_groups(pattern: &str) -> (u64, Vec<&str>) {
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
pub(super) enum BracedMaximum<'a> {
    /// `{n}`
    Exact,
    /// `{n,}`
    Unbounded,
    /// `{n,m}`
    Bounded(&'a str),
}

/// A braced quantifier as written: `{n}`, `{n,}` or `{n,m}`.
pub(super) struct BracedQuantifier<'a> {
    pub(super) length: usize,
    pub(super) minimum: &'a str,
    pub(super) maximum: BracedMaximum<'a>,
}

impl<'a> BracedQuantifier<'a> {
    /// The braced quantifier `text` starts with, if it starts with one.
    pub(super) fn scan(text: &'a str) -> Option<BracedQuantifier<'a>> {
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

    pub(super) fn bounds(&self, offset: usize) -> Result<(u32, Option<u32>), PatternError> {
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
pub(super) enum ClassAtom {
    CodePoint(u32),
    Set(ClassUnicode),
}

impl ClassAtom {
    pub(super) fn into_class(self) -> ClassUnicode {
        match self {
            ClassAtom::CodePoint(code_point) => code_point_range_class(code_point, code_point),
            ClassAtom::Set(class) => class,
        }
    }
}

/// Reads ECMA-262 (`u` flag) pattern syntax into HIR. Positions are byte offsets.
pub(super) struct EcmaParser<'a> {
    pub(super) pattern: &'a str,
    pub(super) position: usize,
    pub(super) depth: usize,
    pub(super) capture_count: u64,
    pub(super) group_names: Vec<&'a str>,
}

impl<'a> EcmaParser<'a> {
    pub(super) fn new(pattern: &'a str) -> EcmaParser<'a> {
        let (capture_count, group_names) = scan_capture_groups(pattern);
        EcmaParser {
            pattern,
            position: 0,
            depth: 0,
            capture_count,
            group_names,
        }
    }

    pub(super) fn parse(mut self) -> Result<Hir, PatternError> {
        let hir = self.disjunction()?;
        if self.position < self.pattern.len() {
            // Only a `)` without its `(` ends the top-level disjunction early.
            return Err(syntax("unmatched `)`", self.position));
        }
        Ok(hir)
    }

    pub(super) fn rest(&self) -> &'a str {
        &self.pattern[self.position..]
    }

    pub(super) fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    pub(super) fn bump(&mut self) -> Option<char> {
        let character = self.peek()?;
        self.position += character.len_utf8();
        Some(character)
    }

    pub(super) fn eat(&mut self, expected: char) -> bool {
        if self.peek() == Some(expected) {
            self.position += expected.len_utf8();
            true
        } else {
            false
        }
    }

    pub(super) fn disjunction(&mut self) -> Result<Hir, PatternError> {
        let mut branches = vec![self.alternative()?];
        while self.eat('|') {
            branches.push(self.alternative()?);
        }
        Ok(Hir::alternation(branches))
    }

    pub(super) fn alternative(&mut self) -> Result<Hir, PatternError> {
        let mut terms = Vec::new();
        while let Some(next) = self.peek() {
            if next == '|' || next == ')' {
                break;
            }
            terms.push(self.term()?);
        }
        Ok(Hir::concat(terms))
    }

    pub(super) fn term(&mut self) -> Result<Hir, PatternError> {
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

    pub(super) fn quantified(&mut self, atom: Hir) -> Result<Hir, PatternError> {
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

    pub(super) fn atom(&mut self) -> Result<Hir, PatternError> {
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
    pub(super) fn group(&mut self, offset: usize) -> Result<Hir, PatternError> {
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
    pub(super) fn group_name(&mut self) -> Result<(), PatternError> {
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
    pub(super) fn class(&mut self, offset: usize) -> Result<ClassUnicode, PatternError> {
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

    pub(super) fn class_atom(&mut self) -> Result<ClassAtom, PatternError> {
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
    pub(super) fn atom_escape(&mut self, offset: usize) -> Result<Hir, PatternError> {
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
    pub(super) fn named_backreference(&mut self, offset: usize) -> PatternError {
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
    pub(super) fn numbered_backreference(&mut self, offset: usize) -> PatternError {
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
    pub(super) fn character_escape(&mut self, offset: usize) -> Result<u32, PatternError> {
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
    pub(super) fn hex_digits(&mut self, count: usize) -> Option<u32> {
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
    pub(super) fn unicode_escape(&mut self, offset: usize) -> Result<u32, PatternError> {
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
    pub(super) fn property_class(&mut self, offset: usize) -> Result<ClassUnicode, PatternError> {
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
