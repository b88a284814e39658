//! Other grammar notations pasted as GBNF: Lark, W3C EBNF (the XML specification's) and
//! ISO EBNF. When a grammar does not parse and reads like one of them, the parser says so
//! instead of reporting what GBNF expected at the first difference.

use crate::span::Span;

/// A grammar notation that is not GBNF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Dialect {
    /// Lark (Python): `name: a | b`, terminals in capitals, `/regex/`, `%import`.
    Lark,
    /// W3C EBNF, the notation of the XML specification: `[1] Name ::= ...`, `#x20`,
    /// `[#x20-#xD7FF]`, `'text'`, `A - B`, `/* comments */`.
    W3cEbnf,
    /// ISO 14977 EBNF: `name = a | b ;`, `[optional]`, `{repeated}`.
    IsoEbnf,
}

impl Dialect {
    /// The notation's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Lark => "Lark",
            Dialect::W3cEbnf => "W3C EBNF (the notation of the XML specification)",
            Dialect::IsoEbnf => "ISO EBNF",
        }
    }

    /// What to change to write the grammar in GBNF.
    pub fn help(self) -> &'static str {
        match self {
            Dialect::Lark => {
                "rules are written `name ::= …` in GBNF (not `name: …`), with names of letters, digits and `-`; strings take double quotes, `/regex/` becomes classes such as `[a-z]+`, and there is no `%import` or `%ignore` (write the whitespace where it may appear)"
            }
            Dialect::W3cEbnf => {
                "in GBNF `#` starts a comment: write `#x20` as `\\x20` and `[#x20-#xD7FF]` as `[\\x20-\\uD7FF]`; strings take double quotes, comments are `# …` (not `/* … */`), productions have no `[1]` numbers, and there is no `A - B` (list what is allowed instead)"
            }
            Dialect::IsoEbnf => {
                "rules are written `name ::= …` in GBNF, with no `;` at the end; `[x]` is written `x?`, `{x}` is `x*`, and strings take double quotes"
            }
        }
    }
}

/// The notation `source` reads like, with where it first shows, when it is not GBNF.
///
/// Lines of the other notation must outnumber GBNF rule heads (`name ::=`), so a GBNF
/// grammar with one mistyped rule is not taken for another notation.
pub fn detect(source: &str) -> Option<(Dialect, Span)> {
    let mut gbnf_heads = 0usize;
    let mut lark: Vec<Span> = Vec::new();
    let mut lark_directive: Option<Span> = None;
    let mut iso: Vec<Span> = Vec::new();
    let mut iso_ends_with_semicolon = false;
    let mut w3c: Option<Span> = None;
    let mut line_start = 0usize;
    for line in source.split_inclusive('\n') {
        let offset = line_start;
        line_start += line.len();
        let trimmed = line.trim_start_matches([' ', '\t']);
        let indent = offset + (line.len() - trimmed.len());
        let content = trimmed.trim_end();
        if content.is_empty() || content.starts_with('#') && !content.starts_with("#x") {
            continue;
        }
        if w3c.is_none() {
            w3c = w3c_marker(content, indent);
        }
        if let Some(directive) = ["%import", "%ignore", "%declare", "%override", "%extend"]
            .iter()
            .find(|directive| content.starts_with(**directive))
        {
            lark_directive.get_or_insert(Span::new(indent, indent + directive.len()));
            continue;
        }
        let name_length = content
            .bytes()
            .take_while(|&byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-'))
            .count();
        // Lark's `?name:` inlines a rule and `!name:` keeps its tokens.
        let lark_prefix = usize::from(content.starts_with(['?', '!']));
        let lark_name_length = content[lark_prefix..]
            .bytes()
            .take_while(|&byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.'))
            .count();
        let after_lark_name = content[lark_prefix + lark_name_length..].trim_start();
        let after_name = content[name_length..].trim_start();
        if name_length > 0 && after_name.starts_with("::=") {
            gbnf_heads += 1;
        } else if lark_name_length > 0
            && after_lark_name.starts_with(':')
            && !after_lark_name.starts_with("::")
        {
            let colon = indent + content.len() - after_lark_name.len();
            lark.push(Span::new(colon, colon + 1));
        } else if name_length > 0 && after_name.starts_with('=') && !after_name.starts_with("==") {
            let equals = indent + content.len() - after_name.len();
            iso.push(Span::new(equals, equals + 1));
            iso_ends_with_semicolon |= content.ends_with(';');
        }
    }
    if let Some(marker) = w3c {
        return Some((Dialect::W3cEbnf, marker));
    }
    if let Some(directive) = lark_directive {
        return Some((Dialect::Lark, lark.first().copied().unwrap_or(directive)));
    }
    if lark.len() > gbnf_heads {
        return Some((Dialect::Lark, lark[0]));
    }
    if iso.len() > gbnf_heads && iso_ends_with_semicolon {
        return Some((Dialect::IsoEbnf, iso[0]));
    }
    None
}

/// The first sign of W3C EBNF on a line (at `offset` in the source): a production number
/// `[12]` before a name, a `#x` code point, or a `/*` comment.
fn w3c_marker(content: &str, offset: usize) -> Option<Span> {
    if let Some(rest) = content.strip_prefix('[') {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(']') {
            let after = rest[digits + 1..].trim_start();
            if after.starts_with(|character: char| character.is_ascii_alphabetic()) {
                return Some(Span::new(offset, offset + digits + 2));
            }
        }
    }
    let bytes = content.as_bytes();
    // Where the scan is: GBNF's string literals and classes may hold `/*` or `#x` as
    // text (`"/*"`, `[/*]`); a `#` outside them that is no code point starts a comment.
    let (mut in_string, mut in_class, mut escaped) = (false, false, false);
    for (index, &byte) in bytes.iter().enumerate() {
        if escaped {
            escaped = false;
            continue;
        }
        let next = |ahead: usize| bytes.get(index + ahead).copied().unwrap_or(0);
        // `#x` right after `[`, `|`, `(`, `-` or a space: a code point (W3C writes them in
        // its classes too), not a comment that happens to start with an x.
        let hex_code_point = byte == b'#' && next(1) == b'x' && next(2).is_ascii_hexdigit();
        let in_expression =
            index > 0 && matches!(bytes[index - 1], b'[' | b'|' | b'(' | b'-' | b' ' | b'\t');
        if hex_code_point && in_expression && !in_string {
            let length = 2 + bytes[index + 2..]
                .iter()
                .take_while(|byte| byte.is_ascii_hexdigit())
                .count();
            return Some(Span::new(offset + index, offset + index + length));
        }
        match byte {
            b'\\' if in_string || in_class => escaped = true,
            b'"' if !in_class => in_string = !in_string,
            b'[' if !in_string => in_class = true,
            b']' if in_class => in_class = false,
            b'#' if !in_string && !in_class => return None,
            b'/' if !in_string && !in_class && next(1) == b'*' => {
                return Some(Span::new(offset + index, offset + index + 2));
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dialect(source: &str) -> Option<Dialect> {
        detect(source).map(|(dialect, _)| dialect)
    }

    #[test]
    fn other_notations_are_recognised() {
        assert_eq!(
            dialect(
                "start: greeting NAME\ngreeting: \"hi\" | \"hello\"\n%import common.CNAME -> NAME\n"
            ),
            Some(Dialect::Lark)
        );
        assert_eq!(
            dialect("?value: dict\n     | list\n     | ESCAPED_STRING\n"),
            Some(Dialect::Lark)
        );
        assert_eq!(
            dialect("[2] Char ::= #x9 | #xA | [#x20-#xD7FF]\n"),
            Some(Dialect::W3cEbnf)
        );
        assert_eq!(
            dialect("document ::= prolog element Misc*\nS ::= (#x20 | #x9)+\n"),
            Some(Dialect::W3cEbnf)
        );
        assert_eq!(
            dialect("digit = \"0\" | \"1\" ;\nnumber = digit , { digit } ;\n"),
            Some(Dialect::IsoEbnf)
        );
    }

    #[test]
    fn comment_markers_inside_strings_classes_and_comments_are_gbnf_text() {
        assert_eq!(dialect("c_comment ::= \"/*\" [^*]* \"*/\"\n"), None);
        assert_eq!(dialect("root ::= [/*] \"#x20\"\n"), None);
        assert_eq!(dialect("root ::= \"a\" # see /* below\n"), None);
        // W3C's own classes keep their code points.
        assert_eq!(dialect("Char ::= [#x20-#x7E]\n"), Some(Dialect::W3cEbnf));
    }

    #[test]
    fn gbnf_with_a_mistake_is_gbnf() {
        assert_eq!(dialect("root ::= a b\na ::= \"x\"\nb: \"y\"\n"), None);
        assert_eq!(dialect("root ::= \"a\" # x marks the spot\n"), None);
        assert_eq!(dialect("root ::= [#x] \"=\"\n"), None);
        assert_eq!(dialect("root = \"a\"\n"), None);
        assert_eq!(dialect("root ::= \"a\"\n#xyz comment\n"), None);
    }

    #[test]
    fn markers_point_at_the_first_difference() {
        let source = "start: a\n";
        assert_eq!(detect(source), Some((Dialect::Lark, Span::new(5, 6))));
        let source = "[1] doc ::= a\n";
        assert_eq!(detect(source), Some((Dialect::W3cEbnf, Span::new(0, 3))));
        let source = "S ::= #x20+\n";
        assert_eq!(detect(source), Some((Dialect::W3cEbnf, Span::new(6, 10))));
    }
}
