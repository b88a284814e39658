//! Ranges of character classes as their author wrote them: the rewrites offered for a
//! reversed range, and the lint for ranges that span more than their author likely meant
//! (`[,:;-à]` spans `;` to `à`, 166 characters, where a literal `-` was meant).

use grail_syntax::Span;
use grail_syntax::ast::{self, CharClass, ClassItem, TermKind};
use grail_syntax::escape::{class_item_spellings, write_class};
use unicode_general_category::{GeneralCategory, get_general_category};

use crate::finding::{Finding, FindingKind};

/// A class as written, with one item rewritten, as GBNF text that parses to the intended
/// items (the author's spellings of everything else kept), or `None` when no such text
/// was found. With `intended` `None`, any text that parses to one class will do, and
/// there is no canonical fallback.
fn rewrite_item(
    class: &CharClass,
    written: Option<&str>,
    class_span: Span,
    index: usize,
    replacement: &str,
    intended: Option<&[(u32, u32)]>,
) -> Option<String> {
    let item = &class.items[index];
    let from_source = written.and_then(|source| {
        let class_text = source.get(class_span.range())?;
        let start = item.span.start.checked_sub(class_span.start)? as usize;
        let end = item.span.end.checked_sub(class_span.start)? as usize;
        let mut text = class_text.get(..start)?.to_string();
        text.push_str(replacement);
        text.push_str(class_text.get(end..)?);
        Some(text)
    });
    let Some(intended) = intended else {
        return from_source.filter(|text| parses_to(text, class.negated, None));
    };
    let expected: Vec<(u32, u32)> = class.items[..index]
        .iter()
        .map(|item| (item.first, item.last))
        .chain(intended.iter().copied())
        .chain(
            class.items[index + 1..]
                .iter()
                .map(|item| (item.first, item.last)),
        )
        .collect();
    if let Some(text) = from_source.filter(|text| parses_to(text, class.negated, Some(&expected))) {
        return Some(text);
    }
    // Canonical spelling, which always parses back.
    let canonical = CharClass {
        negated: class.negated,
        items: expected
            .iter()
            .map(|&(first, last)| ClassItem {
                first,
                last,
                is_range: first != last,
                span: Span::default(),
            })
            .collect(),
    };
    let mut text = String::new();
    write_class(&mut text, &canonical);
    parses_to(&text, class.negated, Some(&expected)).then_some(text)
}

/// True when `text` parses to one class with exactly these items (when given), in order.
fn parses_to(text: &str, negated: bool, expected: Option<&[(u32, u32)]>) -> bool {
    let parsed = grail_syntax::parse(&format!("root ::= {text}\n"));
    let [rule] = parsed.grammar.rules.as_slice() else {
        return false;
    };
    let [sequence] = rule.body.sequences.as_slice() else {
        return false;
    };
    match sequence.terms.as_slice() {
        [term] => match &term.kind {
            TermKind::Class(class) => {
                parsed.is_ok()
                    && class.negated == negated
                    && expected.is_none_or(|expected| {
                        class.items.len() == expected.len()
                            && class
                                .items
                                .iter()
                                .zip(expected)
                                .all(|(item, &(first, last))| {
                                    item.first == first && item.last == last
                                })
                    })
            }
            _ => false,
        },
        _ => false,
    }
}

/// How an end of a range is written: the author's spelling, or the canonical one.
fn spelled(item: &ClassItem, source: Option<&str>) -> (String, String) {
    if let Some((first, Some(last))) = source.and_then(|source| class_item_spellings(item, source))
    {
        return (first.to_string(), last.to_string());
    }
    let mut out = String::new();
    write_class(
        &mut out,
        &CharClass {
            negated: false,
            items: vec![ClassItem {
                first: item.first,
                last: item.first,
                is_range: false,
                span: Span::default(),
            }],
        },
    );
    let first = out[1..out.len() - 1].to_string();
    out.clear();
    write_class(
        &mut out,
        &CharClass {
            negated: false,
            items: vec![ClassItem {
                first: item.last,
                last: item.last,
                is_range: false,
                span: Span::default(),
            }],
        },
    );
    (first, out[1..out.len() - 1].to_string())
}

/// The finding for the reversed range `class.items[index]` of the class written at
/// `class_span` (in `source` when known), with both rewrites: the ends swapped, and the
/// `-` as a literal character.
pub fn reversed_range(
    class: &CharClass,
    class_span: Span,
    index: usize,
    source: Option<&str>,
) -> Finding {
    let item = &class.items[index];
    let (first, last) = spelled(item, source);
    // A raw `-` first in a range that follows another item would read as that item's
    // range; a raw `^` right after `[` would negate the class.
    let swapped_first = match last.as_str() {
        "-" if index > 0 => "\\x2D".to_string(),
        "^" if index == 0 && !class.negated => "\\x5E".to_string(),
        _ => last.clone(),
    };
    let swapped = rewrite_item(
        class,
        source,
        class_span,
        index,
        &format!("{swapped_first}-{first}"),
        Some(&[(item.last, item.first)]),
    );
    let literal_dash = rewrite_item(
        class,
        source,
        class_span,
        index,
        &format!("{first}\\x2D{last}"),
        Some(&[
            (item.first, item.first),
            (0x2D, 0x2D),
            (item.last, item.last),
        ]),
    );
    Finding::new(
        FindingKind::RangeReversed {
            first,
            last,
            swapped,
            literal_dash,
        },
        item.span,
    )
}

/// What a range's end is, for the suspicious-range lint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Letter,
    Digit,
    /// Punctuation, symbols and spaces.
    Punctuation,
    /// Controls, marks, format and unassigned code points.
    Other,
}

impl Kind {
    fn of(code_point: u32) -> Kind {
        // ASCII without the table (whose lookup copies it in debug builds).
        if code_point < 0x80 {
            return match code_point as u8 {
                byte if byte.is_ascii_alphabetic() => Kind::Letter,
                byte if byte.is_ascii_digit() => Kind::Digit,
                0x20..=0x7E => Kind::Punctuation,
                _ => Kind::Other,
            };
        }
        let Some(character) = char::from_u32(code_point) else {
            return Kind::Other;
        };
        use GeneralCategory::*;
        match get_general_category(character) {
            UppercaseLetter | LowercaseLetter | TitlecaseLetter | ModifierLetter | OtherLetter => {
                Kind::Letter
            }
            DecimalNumber | LetterNumber | OtherNumber => Kind::Digit,
            ConnectorPunctuation | DashPunctuation | OpenPunctuation | ClosePunctuation
            | InitialPunctuation | FinalPunctuation | OtherPunctuation | MathSymbol
            | CurrencySymbol | ModifierSymbol | OtherSymbol | SpaceSeparator => Kind::Punctuation,
            _ => Kind::Other,
        }
    }

    fn with_article(self) -> &'static str {
        match self {
            Kind::Letter => "a letter",
            Kind::Digit => "a digit",
            Kind::Punctuation => "punctuation",
            Kind::Other => "a control or mark",
        }
    }
}

/// Why a range looks unintended, or `None` when it looks deliberate.
fn suspicion(class: &CharClass, index: usize) -> Option<String> {
    let item = &class.items[index];
    let (first, last) = (item.first, item.last);
    let (first_kind, last_kind) = (Kind::of(first), Kind::of(last));
    let mut reasons = Vec::new();
    if first_kind != last_kind {
        reasons.push(format!(
            "from {} to {}",
            first_kind.with_article(),
            last_kind.with_article()
        ));
    }
    if (first < 0x80) != (last < 0x80) {
        reasons.push("from ASCII to non-ASCII".to_string());
    }
    if !reasons.is_empty() {
        return Some(reasons.join(" and "));
    }
    let ascii_letters = first_kind == Kind::Letter && last < 0x80;
    if ascii_letters && (first < 0x61) != (last < 0x61) {
        return Some("from an uppercase to a lowercase letter, across `[\\]^_`".to_string());
    }
    // Between two punctuation characters but across letters or digits, in a class that
    // lists letters or digits of its own: the range spans far more than its neighbours.
    let spans_words = (first..=last).any(|code_point| {
        char::from_u32(code_point).is_some_and(|character| character.is_ascii_alphanumeric())
    });
    let lists_words = class.items.iter().enumerate().any(|(other, neighbour)| {
        other != index && matches!(Kind::of(neighbour.first), Kind::Letter | Kind::Digit)
    });
    if first_kind == Kind::Punctuation && last < 0x80 && spans_words && lists_words {
        return Some(
            "between two punctuation characters, across letters or digits the class also lists"
                .to_string(),
        );
    }
    None
}

/// True for an escape of a code point (`\x`, `\u`, `\U`): the author thought in numbers.
fn is_numeric_escape(spelling: &str) -> bool {
    ["\\x", "\\u", "\\U"]
        .iter()
        .any(|prefix| spelling.starts_with(prefix))
}

/// Ranges whose ends are of different kinds (punctuation to a letter, ASCII to
/// non-ASCII, `A-z`) or that span letters between punctuation beside letters of their
/// own: most likely a `-` meant literally. Ranges with an end written as a code-point
/// escape (`[\x20-\uD7FF]`) are taken as deliberate, as are reversed ranges (reported
/// on their own).
pub fn suspicious_ranges(syntax: &ast::Grammar, source: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    for rule in &syntax.rules {
        visit_classes(&rule.body, &mut |class, span| {
            suspicious_in_class(class, span, source, &mut findings)
        });
    }
    findings
}

fn suspicious_in_class(
    class: &CharClass,
    class_span: Span,
    source: &str,
    findings: &mut Vec<Finding>,
) {
    for (index, item) in class.items.iter().enumerate() {
        if !item.is_range || item.first >= item.last {
            continue;
        }
        let Some((first, Some(last))) = class_item_spellings(item, source) else {
            continue;
        };
        if is_numeric_escape(first) || is_numeric_escape(last) {
            continue;
        }
        let Some(reason) = suspicion(class, index) else {
            continue;
        };
        let literal_dash = rewrite_item(
            class,
            Some(source),
            class_span,
            index,
            &format!("{first}\\x2D{last}"),
            None,
        );
        findings.push(Finding::new(
            FindingKind::RangeSuspicious {
                range: format!("{first}-{last}"),
                count: item.last - item.first + 1,
                reason,
                literal_dash,
            },
            item.span,
        ));
    }
}

/// Calls `visit` with every class in `alternatives` and the span it is written at.
fn visit_classes(alternatives: &ast::Alternatives, visit: &mut impl FnMut(&CharClass, Span)) {
    for term in alternatives
        .sequences
        .iter()
        .flat_map(|sequence| &sequence.terms)
    {
        visit_term(term, visit);
    }
}

fn visit_term(term: &ast::Term, visit: &mut impl FnMut(&CharClass, Span)) {
    grail_syntax::stack::deep(|| match &term.kind {
        TermKind::Class(class) => visit(class, term.span),
        TermKind::Group(alternatives) => visit_classes(alternatives, visit),
        TermKind::Repeat(inner, _) => visit_term(inner, visit),
        _ => {}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_class(source: &str) -> (CharClass, Span) {
        let parsed = grail_syntax::parse(source);
        let term = &parsed.grammar.rules[0].body.sequences[0].terms[0];
        match &term.kind {
            TermKind::Class(class) => (class.clone(), term.span),
            _ => panic!("a class"),
        }
    }

    #[test]
    fn reversed_range_rewrites_keep_the_escapes() {
        let source = r"root ::= [^a\]-[\x00-\x20]";
        let (class, span) = first_class(source);
        let finding = reversed_range(&class, span, 1, Some(source));
        let FindingKind::RangeReversed {
            first,
            last,
            swapped,
            literal_dash,
        } = finding.kind
        else {
            panic!()
        };
        assert_eq!((first.as_str(), last.as_str()), (r"\]", "["));
        assert_eq!(swapped.as_deref(), Some(r"[^a[-\]\x00-\x20]"));
        assert_eq!(literal_dash.as_deref(), Some(r"[^a\]\x2D[\x00-\x20]"));
    }

    #[test]
    fn reversed_range_rewrites_stay_valid_around_dashes_and_carets() {
        for (source, index, swapped) in [
            ("root ::= [az--b]", 1, r"[a\x2D-zb]"),
            ("root ::= [z-^]", 0, r"[\x5E-z]"),
            ("root ::= [^z-^]", 0, r"[^^-z]"),
            ("root ::= [--!]", 0, r"[!--]"),
        ] {
            let (class, span) = first_class(source);
            let finding = reversed_range(&class, span, index, Some(source));
            let FindingKind::RangeReversed { swapped: got, .. } = finding.kind else {
                panic!()
            };
            assert_eq!(got.as_deref(), Some(swapped), "{source}");
        }
    }

    #[test]
    fn suspicious_and_deliberate_ranges() {
        let codes = |source: &str| -> Vec<String> {
            let parsed = grail_syntax::parse(source);
            suspicious_ranges(&parsed.grammar, source)
                .into_iter()
                .map(|finding| finding.kind.to_string())
                .collect()
        };
        for suspicious in [
            "root ::= [A-Za-z'.?!,:;-à-üÀ-Ü0-9]",
            "root ::= [A-z]",
            "root ::= [a-z0-9+-=]",
            "root ::= [0-z]",
        ] {
            assert_eq!(codes(suspicious).len(), 1, "{suspicious}");
        }
        for deliberate in [
            "root ::= [a-zA-Z0-9_-]",
            "root ::= [ -~]",
            "root ::= [!-/:-@]",
            r"root ::= [\x20-\uD7FF\uE000-\uFFFD]",
            "root ::= [à-üÀ-Ü一-龥]",
            "root ::= [z-a]",
            "root ::= [^\"\\\\]",
        ] {
            assert!(
                codes(deliberate).is_empty(),
                "{deliberate}: {:?}",
                codes(deliberate)
            );
        }
    }
}
