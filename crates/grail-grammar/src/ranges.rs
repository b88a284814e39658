//! Ranges of character classes as their author wrote them: the rewrites offered for a
//! reversed range.

use grail_syntax::Span;
use grail_syntax::ast::{CharClass, ClassItem, TermKind};
use grail_syntax::escape::{class_item_spellings, write_class};

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
}
