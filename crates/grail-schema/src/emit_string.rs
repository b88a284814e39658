//! Strings: length bounds, `pattern`, `format`, and strings excluded by value.

use std::collections::BTreeMap;

use grail_grammar::{CharSet, Expr};
use serde_json::Value;

use crate::convert::Converter;
use crate::emit::Primitive;
use crate::format::{FormatGrammar, format_grammar, format_superset};
use crate::json_text::{encoded_char, encoded_set};
use crate::pattern::{pattern_char_lengths, pattern_expr};
use crate::shape::Typed;

impl Converter<'_> {
    /// The strings `typed` allows, with their quotes; `None` when none.
    pub fn string(&mut self, typed: &Typed, name: &str) -> Option<Expr> {
        let rules = &typed.string;
        let (min, max) = (rules.min_length, rules.max_length);
        if max.is_some_and(|max| max < min) {
            return None;
        }
        let excluded: Vec<String> = typed
            .excluded
            .iter()
            .filter_map(|excluded| match &excluded.value {
                Value::String(text) => Some(text.clone()),
                _ => None,
            })
            .collect();
        let formats: Vec<_> = rules
            .formats
            .iter()
            .filter(|format| !matches!(format_grammar(&format.value), FormatGrammar::Annotation))
            .cloned()
            .collect();
        let constrained = !formats.is_empty() || !rules.patterns.is_empty();
        if constrained && !excluded.is_empty() {
            let located = typed.excluded[0].clone();
            self.unsupported(
                &located.pointer,
                located.keyword,
                "excluding strings by value beside `pattern` or `format` is not expressed in the grammar",
            );
        }
        if formats.len() + rules.patterns.len() > 1 {
            let located = formats
                .get(1)
                .or(rules.patterns.get(usize::from(!formats.is_empty())))
                .or(rules.patterns.first())
                .cloned()
                .expect("two or more");
            self.unsupported(
                &located.pointer,
                located.keyword,
                "a string must match several patterns or formats at once; a grammar cannot intersect them here",
            );
        }
        if let Some(format) = formats.first() {
            if min > 0 || max.is_some() {
                self.unsupported(
                    &format.pointer,
                    format.keyword,
                    "`minLength`/`maxLength` beside `format` are not expressed in the grammar",
                );
            }
            if self.options.llama_dialect()
                && let Some(expr) = crate::format_llama::llama_format(&format.value)
            {
                let body = self.wrap_rule(expr, &format.value);
                return Some(quoted(body));
            }
            return match format_grammar(&format.value) {
                FormatGrammar::Exact(expr) => {
                    let body = self.wrap_rule(expr, &format.value);
                    Some(quoted(body))
                }
                FormatGrammar::Unsupported(reason) => {
                    let (pointer, keyword) = (format.pointer.clone(), format.keyword);
                    self.unsupported(
                        &pointer,
                        keyword,
                        format!("format `{}`: {reason}", format.value),
                    );
                    // Lenient: the closest superset there is.
                    Some(match format_superset(&format.value) {
                        Some(superset) => {
                            let body =
                                self.wrap_rule(superset, &format!("{}-superset", format.value));
                            quoted(body)
                        }
                        None => self.primitive(Primitive::String),
                    })
                }
                FormatGrammar::Annotation => unreachable!("filtered above"),
            };
        }
        if let Some(pattern) = rules.patterns.first() {
            let (pointer, keyword) = (pattern.pointer.clone(), pattern.keyword);
            // llama.cpp reads a pattern as a match of the whole string.
            let written = if self.options.llama_dialect() {
                format!("^(?:{})$", pattern.value)
            } else {
                pattern.value.clone()
            };
            let expr = match pattern_expr(&written) {
                Ok(expr) => expr,
                Err(error) => {
                    self.unsupported(
                        &pointer,
                        keyword,
                        format!("pattern `{}`: {error}", pattern.value),
                    );
                    return Some(self.primitive(Primitive::String));
                }
            };
            if min > 0 || max.is_some() {
                let implied = match pattern_char_lengths(&pattern.value) {
                    Ok((least, most)) => {
                        least >= min && max.is_none_or(|max| most.is_some_and(|most| most <= max))
                    }
                    Err(_) => false,
                };
                if !implied {
                    self.unsupported(
                        &pointer,
                        "maxLength",
                        "`minLength`/`maxLength` beside a `pattern` that allows other lengths are not expressed in the grammar",
                    );
                }
            }
            let body = self.wrap_rule(expr, &format!("{name}-pattern"));
            return Some(quoted(body));
        }
        if !excluded.is_empty() {
            if min > 0 || max.is_some() {
                let located = typed.excluded[0].clone();
                self.unsupported(
                    &located.pointer,
                    located.keyword,
                    "excluding strings by value beside `minLength`/`maxLength` is not expressed in the grammar",
                );
            }
            let any = self.primitive(Primitive::CanonicalChar);
            let body = excluding(&excluded, &any);
            let body = self.wrap_rule(body, &format!("{name}-other"));
            return Some(quoted(body));
        }
        if min == 0 && max.is_none() {
            return Some(self.primitive(Primitive::String));
        }
        let char = self.primitive(Primitive::Char);
        let body = self.repeat(char, min, max);
        Some(quoted(body))
    }
}

/// `"` body `"`.
fn quoted(body: Expr) -> Expr {
    Expr::sequence([Expr::literal("\""), body, Expr::literal("\"")])
}

/// Any string in canonical encoding except the given ones: a trie of the excluded strings,
/// where each node either follows one of its children, or takes another character and
/// then anything, or (if no excluded string ends there) stops.
/// `any` is one character in canonical form (a rule, to keep the trie small).
pub(crate) fn excluding(excluded: &[String], any: &Expr) -> Expr {
    let mut trie = Trie::default();
    for text in excluded {
        trie.insert(text);
    }
    trie.expr(any)
}

/// llama.cpp's grammar of the keys of additional properties: a trie of the declared names
/// where, below the root, a branch must go on (so prefixes of names that are not names
/// themselves are refused too, as llama.cpp does), a node that ends a name needs one more
/// character, and any other first character is written as itself, then `char*`.
pub(crate) fn excluding_llama(excluded: &[String], char: &Expr) -> Expr {
    let mut trie = Trie::default();
    for text in excluded {
        trie.insert(text);
    }
    let body = trie.llama_expr(char);
    if trie.ends_here {
        body
    } else {
        body.optional()
    }
}

#[derive(Default)]
struct Trie {
    children: BTreeMap<char, Trie>,
    ends_here: bool,
}

impl Trie {
    fn insert(&mut self, text: &str) {
        let mut node = self;
        for character in text.chars() {
            node = node.children.entry(character).or_default();
        }
        node.ends_here = true;
    }

    fn llama_expr(&self, char: &Expr) -> Expr {
        grail_syntax::stack::deep(|| {
            let mut choices = Vec::new();
            for (&character, child) in &self.children {
                let rest = if child.children.is_empty() {
                    char.clone().one_or_more()
                } else {
                    child.llama_expr(char)
                };
                choices.push(Expr::sequence([
                    Expr::chars([(character, character)]),
                    rest,
                ]));
            }
            let others = CharSet::new(
                self.children
                    .keys()
                    .map(|&character| (character as u32, character as u32))
                    .chain([('"' as u32, '"' as u32)]),
                true,
            );
            choices.push(Expr::sequence([
                Expr::Chars(others),
                char.clone().zero_or_more(),
            ]));
            Expr::Choice(choices)
        })
    }

    /// The canonical texts that continue this node's prefix into a string not excluded.
    fn expr(&self, any: &Expr) -> Expr {
        grail_syntax::stack::deep(|| {
            let mut choices = Vec::new();
            for (&character, child) in &self.children {
                choices.push(Expr::sequence([encoded_char(character), child.expr(any)]));
            }
            let others = CharSet::new(
                self.children
                    .keys()
                    .map(|&character| (character as u32, character as u32)),
                true,
            );
            choices.push(Expr::sequence([
                encoded_set(&others),
                any.clone().zero_or_more(),
            ]));
            let continuing = Expr::Choice(choices);
            if self.ends_here {
                continuing
            } else {
                continuing.optional()
            }
        })
    }
}
