//! Strings: length bounds, `pattern`, `format`, and strings excluded by value.

use std::collections::BTreeMap;

use grail_grammar::{CharSet, Expr};
use serde_json::Value;

use super::{Emitter, Primitive};
use crate::char_automaton::CharDfa;
use crate::format::{FormatGrammar, char_lengths, format_grammar, format_superset, is_annotation};
use crate::json_text::{encoded_char, encoded_set};
use crate::pattern::{pattern_char_lengths, pattern_expr};
use crate::shape::{Shape, Typed, Types};

impl Emitter<'_> {
    /// The strings `typed` allows, with their quotes; `None` when none. Strings under the
    /// same constraints share one grammar (a schema's three `curie` references, each a
    /// pattern under a `maxLength`, built one automaton of 846 states three times),
    /// unless writing it reported something, which is then reported at each place.
    pub(super) fn string(&mut self, typed: &Typed, name: &str) -> Option<Expr> {
        let key = string_key(typed);
        if let Some(expr) = self.string_rules.get(key.as_ref()) {
            return expr.clone();
        }
        let reported = self.reader.findings().count();
        let expr = self.string_uncached(typed, name);
        if self.reader.findings().count() == reported {
            self.string_rules.insert(key.into_owned(), expr.clone());
        }
        expr
    }

    fn string_uncached(&mut self, typed: &Typed, name: &str) -> Option<Expr> {
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
            .filter(|format| !is_annotation(&format.value))
            .cloned()
            .collect();
        if let Some(format) = formats.first() {
            // The format's grammar is kept; what it cannot say beside it is reported where
            // it is written (and dropped, leniently). Lengths every string of the format
            // already has (`minLength: 1` on a `uri`) are no constraint.
            let kept = format!("`format: {}`", format.value);
            for other in formats[1..].iter().chain(&rules.patterns) {
                self.unsupported(
                    &other.pointer,
                    other.keyword,
                    format!("beside {kept}, the grammar keeps the format alone"),
                );
            }
            for forbidden in &rules.forbidden {
                self.unsupported(
                    &forbidden.pointer,
                    forbidden.keyword,
                    format!("beside {kept}, the grammar keeps the format alone"),
                );
            }
            for value in typed
                .excluded
                .iter()
                .filter(|value| value.value.is_string())
            {
                self.unsupported(
                    &value.pointer,
                    value.keyword,
                    format!("excluding values beside {kept} is not expressed in the grammar"),
                );
            }
            let (least, most) = self.format_char_lengths(&format.value).unwrap_or((0, None));
            if min > least {
                self.unsupported(
                    &format.pointer,
                    "minLength",
                    format!(
                        "beside {kept} (whose strings have at least {least} characters), a least length is not expressed in the grammar"
                    ),
                );
            }
            if let Some(max) = max
                && most.is_none_or(|most| most > max)
            {
                self.unsupported(
                    &format.pointer,
                    "maxLength",
                    format!("beside {kept}, a greatest length is not expressed in the grammar"),
                );
            }
            return Some(self.format(format));
        }
        let plain_lengths =
            rules.patterns.is_empty() && rules.forbidden.is_empty() && excluded.is_empty();
        if plain_lengths {
            if min == 0 && max.is_none() {
                return Some(self.primitive(Primitive::String));
            }
            // One rule per pair of bounds, shared by every string with them: a schema
            // with twenty `maxLength: 255` fields compiles `char{0,255}` once.
            if let Some(expr) = self.length_strings.get(&(min, max)) {
                return Some(expr.clone());
            }
            let char = self.primitive(Primitive::Char);
            let body = self.repeat(char, min, max);
            let rule_name = match max {
                Some(max) => format!("string-{min}-to-{max}"),
                None => format!("string-{min}-or-more"),
            };
            let expr = self.quoted_rule(body, &rule_name);
            self.length_strings.insert((min, max), expr.clone());
            return Some(expr);
        }
        // One pattern whose lengths the bounds allow: the pattern's own grammar.
        if let [pattern] = rules.patterns.as_slice()
            && rules.forbidden.is_empty()
            && excluded.is_empty()
        {
            let lengths_implied = min == 0 && max.is_none()
                || pattern_char_lengths(&pattern.value).is_ok_and(|(least, most)| {
                    least >= min && max.is_none_or(|max| most.is_some_and(|most| most <= max))
                });
            if lengths_implied {
                return Some(self.pattern(pattern, name));
            }
        }
        // Only excluded values: a trie of them.
        if rules.patterns.is_empty() && rules.forbidden.is_empty() && min == 0 && max.is_none() {
            let rule_name = format!("{name}-other");
            let body = self.excluding(&excluded, &rule_name);
            let body = self.wrap_rule(body, &rule_name);
            return Some(Expr::sequence([Expr::literal("\""), body]));
        }
        // Everything else: the automaton of every constraint at once.
        let shape = Shape::typed(Typed {
            types: Types::STRING,
            ..typed.clone()
        });
        let located = rules
            .patterns
            .first()
            .map(|pattern| (pattern.pointer.clone(), pattern.keyword))
            .or_else(|| {
                rules
                    .forbidden
                    .first()
                    .map(|forbidden| (forbidden.pointer.clone(), forbidden.keyword))
            })
            .or_else(|| {
                typed
                    .excluded
                    .first()
                    .map(|excluded| (excluded.pointer.clone(), excluded.keyword))
            })
            .unwrap_or_default();
        let language = self.string_language(&shape);
        let limit = self.options.limits.max_string_states;
        if let Some(states) = language
            .as_ref()
            .map(CharDfa::state_count)
            .filter(|&states| states > limit)
        {
            self.unsupported(
                &located.0,
                located.1,
                format!(
                    "these string constraints together need an automaton of {states} states, over the limit of {limit} rules for one string (`SchemaLimits::max_string_states`); a pattern that counts words or characters with a `maxLength` multiplies the two"
                ),
            );
            return Some(self.primitive(Primitive::String));
        }
        let expr = language.and_then(|language| {
            language
                .to_expr(
                    &mut self.builder,
                    &format!("{name}-string"),
                    &Expr::literal("\""),
                )
                .ok()
        });
        match expr {
            Some(rest) => Some(Expr::sequence([Expr::literal("\""), rest])),
            None => {
                self.unsupported(
                    &located.0,
                    located.1,
                    "these string constraints together are too large (or use a pattern feature) to express as one grammar",
                );
                Some(self.primitive(Primitive::String))
            }
        }
    }

    /// `"` then a rule `name ::= body "`: the closing quote inside the rule, so a body
    /// that ends in a loop (`[a-z]+`, `.*`) does not return to its caller after every
    /// character (the mask engine serves a loop that leaves its rule by a byte outside it
    /// with a precomputed slice of the vocabulary).
    fn quoted_rule(&mut self, body: Expr, name: &str) -> Expr {
        let quote = Expr::literal("\"");
        let rest = self.wrap_rule(Expr::sequence([body, quote.clone()]), name);
        Expr::sequence([quote, rest])
    }

    /// A string in `format` (llama.cpp's grammar in its dialect): one rule per format
    /// name, shared by every use (a lenient weakening is still reported at each).
    fn format(&mut self, format: &crate::shape::Located<String>) -> Expr {
        if let Some(expr) = self.format_rules.get(&format.value) {
            return expr.clone();
        }
        let llama = self.options.llama_dialect();
        let grammar = match llama.then(|| crate::format_llama::llama_format(&format.value)) {
            Some(Some(expr)) => FormatGrammar::Exact(expr),
            _ => format_grammar(&format.value),
        };
        match grammar {
            FormatGrammar::Exact(expr) => {
                let rule = self.quoted_rule(expr, &format.value);
                self.format_rules.insert(format.value.clone(), rule.clone());
                rule
            }
            FormatGrammar::Unsupported(reason) => {
                let (pointer, keyword) = (format.pointer.clone(), format.keyword);
                self.unsupported(
                    &pointer,
                    keyword,
                    format!("format `{}`: {reason}", format.value),
                );
                // Lenient: the closest superset there is.
                match format_superset(&format.value) {
                    Some(superset) => {
                        self.quoted_rule(superset, &format!("{}-superset", format.value))
                    }
                    None => self.primitive(Primitive::String),
                }
            }
            FormatGrammar::Annotation => self.primitive(Primitive::String),
        }
    }

    /// The least and the most characters of the strings in the format named `name`, from
    /// the grammar [`Emitter::format`] writes for it, when they are known.
    fn format_char_lengths(&self, name: &str) -> Option<(u64, Option<u64>)> {
        let llama = self.options.llama_dialect();
        let expr = match llama.then(|| crate::format_llama::llama_format(name)) {
            Some(Some(expr)) => expr,
            _ => match format_grammar(name) {
                FormatGrammar::Exact(expr) => expr,
                _ => return None,
            },
        };
        char_lengths(&expr)
    }

    /// A string matching one `pattern` (as a whole-string match in llama.cpp's dialect).
    fn pattern(&mut self, pattern: &crate::shape::Located<String>, name: &str) -> Expr {
        let written = if self.options.llama_dialect() {
            format!("^(?:{})$", pattern.value)
        } else {
            pattern.value.clone()
        };
        let rule_name = format!("{name}-pattern");
        if !self.options.llama_dialect() && !anchored_both_ends(&written) {
            // Searched anywhere: the minimal automaton when small (`.*[a-z].*` for
            // `[a-z][a-z0-9]*`, with its loops inside its rules), since the pattern's own
            // tree keeps every place a match could start alive at once.
            let quote = Expr::literal("\"");
            if let Ok(automaton) = CharDfa::from_pattern(&written)
                && automaton.state_count() <= MAX_SEARCH_AUTOMATON_STATES
                && let Ok(rest) = automaton.to_expr(&mut self.builder, &rule_name, &quote)
            {
                return Expr::sequence([quote, rest]);
            }
        }
        match pattern_expr(&written) {
            Ok(expr) => self.quoted_rule(expr, &rule_name),
            Err(error) => {
                let (pointer, keyword) = (pattern.pointer.clone(), pattern.keyword);
                self.unsupported(
                    &pointer,
                    keyword,
                    format!("pattern `{}`: {error}", pattern.value),
                );
                self.primitive(Primitive::String)
            }
        }
    }

    /// The strings a string-only shape allows, as an automaton, when it is made of
    /// patterns, length bounds and constants.
    pub(super) fn string_language(&mut self, shape: &Shape) -> Option<CharDfa> {
        match shape {
            Shape::Any => Some(CharDfa::everything()),
            Shape::Never => Some(CharDfa::nothing()),
            Shape::Values(values) => {
                let strings: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
                CharDfa::from_strings(&strings).ok()
            }
            Shape::Ref(target) => {
                let target = target.clone();
                let shape = self.reader.read(&target);
                self.string_language(&shape)
            }
            Shape::AnyOf(branches) => {
                let mut language = CharDfa::nothing();
                for branch in branches {
                    let branch = self.string_language(branch)?;
                    language = language.union(&branch).ok()?;
                }
                Some(language)
            }
            Shape::Typed(typed) => {
                if !typed.types.has(Types::STRING) {
                    return Some(CharDfa::nothing());
                }
                let string = &typed.string;
                let formats_assert = string
                    .formats
                    .iter()
                    .any(|format| !is_annotation(&format.value));
                if formats_assert {
                    return None;
                }
                let mut language = CharDfa::lengths(string.min_length, string.max_length).ok()?;
                for pattern in &string.patterns {
                    let written = if self.options.llama_dialect() {
                        format!("^(?:{})$", pattern.value)
                    } else {
                        pattern.value.clone()
                    };
                    let pattern = CharDfa::from_pattern(&written).ok()?;
                    language = language.intersection(&pattern).ok()?;
                }
                let excluded: Vec<&str> = typed
                    .excluded
                    .iter()
                    .filter_map(|excluded| excluded.value.as_str())
                    .collect();
                if !excluded.is_empty() {
                    language = language
                        .difference(&CharDfa::from_strings(&excluded).ok()?)
                        .ok()?;
                }
                for forbidden in &string.forbidden {
                    let mut negated = Typed::of_types(Types::STRING);
                    negated.string = forbidden.value.clone();
                    let forbidden = self.string_language(&Shape::typed(negated))?;
                    language = language.difference(&forbidden).ok()?;
                }
                Some(language)
            }
        }
    }
}

/// Unanchored patterns whose minimal automaton has at most this many states are written
/// as the automaton (see `Emitter::pattern`).
const MAX_SEARCH_AUTOMATON_STATES: usize = 64;

/// True when the pattern's text starts with `^` and ends with an unescaped `$` (a cheap
/// test: a pattern it misjudges is still written exactly, only the other way).
fn anchored_both_ends(pattern: &str) -> bool {
    let trailing_backslashes = pattern
        .strip_suffix('$')
        .map(|rest| rest.bytes().rev().take_while(|&byte| byte == b'\\').count());
    pattern.starts_with('^') && trailing_backslashes.is_some_and(|count| count % 2 == 0)
}

impl Emitter<'_> {
    /// The rest of a string whose first character is none of `children` (sorted), in
    /// canonical form, closing quote included: `([plain others] | canonical-escape)
    /// canonical-char* "\""`, a rule per set of children.
    fn string_tail(&mut self, children: &[char]) -> Expr {
        if let Some(tail) = self.string_tails.get(children) {
            return tail.clone();
        }
        let body = self.string_tail_body(children);
        let mut name = String::from("string-tail");
        if !children.is_empty()
            && children.len() <= 8
            && children.iter().all(char::is_ascii_alphanumeric)
        {
            name.push_str("-not-");
            name.extend(children);
        }
        let tail = self.wrap_rule(body, name);
        self.string_tails.insert(children.to_vec(), tail.clone());
        tail
    }

    /// What [`Emitter::string_tail`] names: `([plain others] | canonical-escape)
    /// canonical-char* "\""`.
    fn string_tail_body(&mut self, children: &[char]) -> Expr {
        let any = self.primitive(Primitive::CanonicalChar);
        let first = if children
            .iter()
            .all(|&character| crate::json_text::is_written_as_itself_char(character))
        {
            // The escaped characters by reference, when no child is one of them (most
            // tries: property names): the plain characters are those neither a child
            // nor escaped, built as one set.
            let plain = CharSet::new(
                children
                    .iter()
                    .map(|&character| (character as u32, character as u32))
                    .chain(crate::json_text::ESCAPED_RANGES),
                true,
            );
            Expr::choice([
                Expr::Chars(CharSet::new(plain.members(), false)),
                self.primitive(Primitive::CanonicalEscape),
            ])
        } else {
            encoded_set(&CharSet::new(
                children
                    .iter()
                    .map(|&character| (character as u32, character as u32)),
                true,
            ))
        };
        Expr::sequence([first, any.zero_or_more(), Expr::literal("\"")])
    }

    /// Any string in canonical encoding except the given ones, closing quote included: a
    /// trie of the excluded strings, where each node either follows one of its children,
    /// or takes another character and then anything up to the quote (a tail rule per set
    /// of children, [`Emitter::string_tail`]), or (if no excluded string ends there)
    /// takes the quote. A node where names part is a rule of its own, named `name`; a run
    /// of nodes with one child each (the rest of one name) nests in it, up to
    /// [`MAX_NESTED_TRIE_NODES`] deep, so no rule nests deeply (llama.cpp counts the
    /// groups under a repetition against its budget).
    ///
    /// The quote is inside every tail rather than after the whole trie: a rule that ended
    /// in `any*` could return to its caller after every character, and the mask engine can
    /// only serve a loop with a precomputed slice of the vocabulary when the loop leaves
    /// its rule by a byte outside it (measured: 7 ms → 0.1 ms per mask after a declared
    /// name, Llama 3); and a tail's first character is in the rule of its loop, since the
    /// engine serves the first character of a string by that slice only when it enters
    /// the loop without a call. Written once per set of children, the tails are compiled
    /// once: written out at every node, with their escapes, they were most of the grammar
    /// of big schemas (Kubernetes' definitions: 147,000 of 184,000 nodes). Small tries
    /// write them out all the same ([`MAX_TRIE_NODES_WITH_OWN_TAILS`]).
    pub(super) fn excluding(&mut self, excluded: &[impl AsRef<str>], name: &str) -> Expr {
        let mut trie = Trie::default();
        for text in excluded {
            trie.insert(text.as_ref());
        }
        let tails = if trie.node_count() <= MAX_TRIE_NODES_WITH_OWN_TAILS {
            Tails::Own
        } else {
            Tails::Shared
        };
        trie.expr(self, name, 0, tails)
    }
}

/// Tries of at most this many nodes (the names of a small object: `id` and `label` make
/// 8) write each node's tail out in place rather than calling the tail rule shared by
/// every node with the same children. A shared tail called from a trie node is a rule
/// call at every letter of a key, which the mask engine must take as a real step, with
/// a walk of its own below it; written out, the trie is one automaton it walks along
/// its table. Against shared tails everywhere (`cold_masks`, p99 of a document's masks,
/// alternating builds): Github_hard o33027 98–105 → 75–78 µs (the first key of an array
/// item `{"id", "label"}`), Github_easy o57450 87–89 → 69–72, Kubernetes kb_90's median
/// 6–7.7 → 0.7 µs, 15 other changed grammars within the noise; the MaskBench compile p99
/// 6.5 → 6.6–7.6 ms. Big tries keep the shared tails: written out at every node, with
/// their escapes, they were most of the grammar of big schemas (see
/// [`Emitter::excluding`]).
const MAX_TRIE_NODES_WITH_OWN_TAILS: usize = 32;

/// Whether a trie's nodes call the shared tail rules or write their tails out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tails {
    Shared,
    Own,
}

/// How many trie nodes with one child each nest in one rule of [`Emitter::excluding`] before the
/// next is a rule of its own (the nesting of groups in the printed grammar).
const MAX_NESTED_TRIE_NODES: usize = 12;

/// llama.cpp's grammar of the keys of additional properties: a trie of the declared names
/// where, below the root, a branch must go on (so prefixes of names that are not names
/// themselves are refused too, as llama.cpp does), a node that ends a name needs one more
/// character, and any other first character is written as itself, then `char*`.
pub(super) fn excluding_llama(
    excluded: &[impl AsRef<str>],
    char: &Expr,
    hoist: &mut dyn FnMut(Expr) -> Expr,
) -> Expr {
    let mut trie = Trie::default();
    for text in excluded {
        trie.insert(text.as_ref());
    }
    let body = trie.llama_expr(char, hoist);
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
    /// How many nodes the trie has, its root included.
    fn node_count(&self) -> usize {
        // Iteratively: a name may be as long as the schema's size limit allows.
        let mut count = 0;
        let mut pending = vec![self];
        while let Some(node) = pending.pop() {
            count += 1;
            pending.extend(node.children.values());
        }
        count
    }

    fn insert(&mut self, text: &str) {
        let mut node = self;
        for character in text.chars() {
            node = node.children.entry(character).or_default();
        }
        node.ends_here = true;
    }

    fn llama_expr(&self, char: &Expr, hoist: &mut dyn FnMut(Expr) -> Expr) -> Expr {
        grail_syntax::stack::deep(|| {
            let mut choices = Vec::new();
            for (&character, child) in &self.children {
                let rest = if child.children.is_empty() {
                    char.clone().one_or_more()
                } else {
                    let rest = child.llama_expr(char, hoist);
                    hoist(rest)
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

    /// The canonical texts that continue this node's prefix into a string not excluded,
    /// each followed by the closing quote (see [`Emitter::excluding`]); `depth` counts
    /// the nodes nested in the current rule, `tails` says how the tails are written.
    fn expr(&self, emitter: &mut Emitter<'_>, name: &str, depth: usize, tails: Tails) -> Expr {
        grail_syntax::stack::deep(|| {
            let mut choices = Vec::new();
            for (&character, child) in &self.children {
                let hoisted = child.children.len() > 1
                    || !child.children.is_empty() && depth + 1 >= MAX_NESTED_TRIE_NODES;
                let child_depth = if hoisted { 0 } else { depth + 1 };
                let child_expr = child.expr(emitter, name, child_depth, tails);
                let child_expr = if hoisted {
                    emitter.wrap_rule(child_expr, name)
                } else {
                    child_expr
                };
                choices.push(Expr::sequence([encoded_char(character), child_expr]));
            }
            let children: Vec<char> = self.children.keys().copied().collect();
            choices.push(match tails {
                Tails::Shared => emitter.string_tail(&children),
                Tails::Own => emitter.string_tail_body(&children),
            });
            if !self.ends_here {
                choices.push(Expr::literal("\""));
            }
            Expr::Choice(choices)
        })
    }
}

/// What the grammar of a string under `typed` depends on, as text: every constraint's
/// value (each written with its length, so no two lists read alike), none of their
/// locations.
fn string_key(typed: &Typed) -> std::borrow::Cow<'static, str> {
    use std::fmt::Write;
    let rules = &typed.string;
    // Most strings have no constraint: their key without formatting.
    if rules.min_length == 0
        && rules.max_length.is_none()
        && rules.patterns.is_empty()
        && rules.formats.is_empty()
        && rules.forbidden.is_empty()
        && typed.excluded.is_empty()
    {
        return std::borrow::Cow::Borrowed(UNCONSTRAINED_STRING_KEY);
    }
    fn rules_key(rules: &crate::shape::StringRules, key: &mut String) {
        let _ = write!(key, "{}..{:?}", rules.min_length, rules.max_length);
        for pattern in &rules.patterns {
            let _ = write!(key, "p{}:{}", pattern.value.len(), pattern.value);
        }
        for format in &rules.formats {
            let _ = write!(key, "f{}:{}", format.value.len(), format.value);
        }
        for forbidden in &rules.forbidden {
            key.push('(');
            rules_key(&forbidden.value, key);
            key.push(')');
        }
    }
    let mut key = String::new();
    rules_key(rules, &mut key);
    for excluded in &typed.excluded {
        let value = excluded.value.to_string();
        let _ = write!(key, "x{}:{}", value.len(), value);
    }
    std::borrow::Cow::Owned(key)
}

/// [`string_key`] of a string without constraints (as `rules_key` writes it).
const UNCONSTRAINED_STRING_KEY: &str = "0..None";
