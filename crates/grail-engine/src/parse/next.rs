//! What may come next: next-character rules (CHAR, CHAR_EXCLUDE, END, as the `gbnf` npm
//! package reports them), token rules, and the forced continuation.

use crate::graph::{Node, TokenSet};
use crate::parse::matcher::Parser;
use grail_grammar::ScalarSet;

/// One rule about what may come next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextRule {
    /// Any code point in these inclusive ranges may come next.
    Char(Vec<(u32, u32)>),
    /// Any code point except these inclusive ranges may come next.
    CharExclude(Vec<(u32, u32)>),
    /// A whole token whose id is (or, negated, is not) in `ids` may come next.
    Token {
        /// Sorted token ids.
        ids: Vec<u32>,
        /// True for `!<...>`.
        negated: bool,
    },
    /// The input may end here.
    End,
}

/// Everything that may come next after the input so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextCharacters {
    /// The rules, merged and sorted: at most one CHAR or one CHAR_EXCLUDE rule, then
    /// token rules, then END.
    pub rules: Vec<NextRule>,
    /// Exactly the characters the matcher would accept next.
    pub allowed: ScalarSet,
    /// True when the input may end here.
    pub end: bool,
}

impl Parser {
    /// Writes into `key` all that [`Parser::next_characters`] depends on: the current
    /// items' grammar positions and partial characters, and whether the input may end
    /// here; not the stack of callers below them. Equal keys give equal rules, so a
    /// caller that reports the rules at every step (the `gbnf`-style Node API) can cache
    /// them by this key. The key of one state may vary with the order its items were
    /// found in, which only costs such a cache a miss.
    pub fn next_characters_key(&self, key: &mut Vec<u32>) {
        key.clear();
        key.push(u32::from(self.is_accepting()));
        for item in self.current_items() {
            key.push(item.node);
            key.push(item.partial.to_bits());
        }
    }

    /// True when the input so far is a complete match and nothing (no character, no
    /// token) may follow it: the grammar is done, as when a generator stops without an
    /// end-of-sequence token.
    pub fn allows_nothing_more(&self) -> bool {
        if !self.is_accepting() {
            return false;
        }
        let next = self.next_characters();
        next.allowed.is_empty()
            && !next
                .rules
                .iter()
                .any(|rule| matches!(rule, NextRule::Token { .. }))
    }

    /// The next-character rules after the input so far.
    ///
    /// Classes merge into one rule: a CHAR rule (the union of what every position
    /// allows) when no position allows "anything except", otherwise one CHAR_EXCLUDE rule
    /// whose ranges are the characters no position allows. Inside a multi-byte character,
    /// only the code points that complete it are reported (as CHAR).
    pub fn next_characters(&self) -> NextCharacters {
        let graph = self.graph();
        let mut positive = ScalarSet::empty();
        let mut excluded: Option<ScalarSet> = None;
        let mut tokens: Vec<TokenSet> = Vec::new();
        for item in self.current_items() {
            let node = graph.nodes[item.node as usize];
            if !item.partial.is_none() {
                // The input's own character: the item may carry a representative.
                let (low, high) = self.input_partial().code_point_range();
                let edge = edge_set(self, node);
                positive =
                    positive.union(&edge.intersection(&ScalarSet::from_ranges([(low, high)])));
                continue;
            }
            match node {
                Node::Char { code_point, .. } => {
                    positive = positive.union(&ScalarSet::from_ranges([(code_point, code_point)]))
                }
                Node::Class { set, .. } => {
                    let index = set as usize;
                    if graph.class_negated[index] {
                        let listed = &graph.class_listed[index];
                        excluded = Some(match excluded {
                            Some(previous) => previous.intersection(listed),
                            None => listed.clone(),
                        });
                    } else {
                        positive = positive.union(&graph.classes[index]);
                    }
                }
                Node::Any { .. } => excluded = Some(ScalarSet::empty()),
                Node::Token { set, .. } => {
                    let token_set = &graph.token_sets[set as usize];
                    if !tokens.contains(token_set) {
                        tokens.push(token_set.clone());
                    }
                }
                Node::Call { .. } | Node::Split { .. } | Node::Return => {}
            }
        }
        let mut rules = Vec::new();
        let allowed = match excluded {
            Some(excluded) => {
                let excluded = excluded.difference(&positive);
                let allowed = excluded.complement();
                rules.push(NextRule::CharExclude(excluded.ranges().to_vec()));
                allowed
            }
            None => {
                if !positive.is_empty() {
                    rules.push(NextRule::Char(positive.ranges().to_vec()));
                }
                positive
            }
        };
        tokens.sort_by(|a, b| (a.negated, &a.ids).cmp(&(b.negated, &b.ids)));
        rules.extend(tokens.into_iter().map(|set| NextRule::Token {
            ids: set.ids,
            negated: set.negated,
        }));
        let end = self.is_accepting();
        if end {
            rules.push(NextRule::End);
        }
        NextCharacters {
            rules,
            allowed,
            end,
        }
    }

    /// The text that is the only possible continuation (for jump-forward decoding): the
    /// characters forced one after another until a choice, a token or a possible end.
    /// At most `max_chars` characters.
    pub fn forced(&self, max_chars: usize) -> String {
        let mut forced = String::new();
        if self.in_partial_character() {
            return forced;
        }
        let mut probe = self.fork();
        probe.set_history_limit(Some(0));
        for _ in 0..max_chars {
            let next = probe.next_characters();
            if next.end || next.rules.len() != 1 || next.allowed.len() != 1 {
                break;
            }
            let Some(character) = next.allowed.nth(0).and_then(char::from_u32) else {
                break;
            };
            if probe.accept_char(character).is_err() {
                break;
            }
            forced.push(character);
        }
        forced
    }
}

/// The scalars a consuming node accepts.
fn edge_set(matcher: &Parser, node: Node) -> ScalarSet {
    let graph = matcher.graph();
    match node {
        Node::Char { code_point, .. } => ScalarSet::from_ranges([(code_point, code_point)]),
        Node::Class { set, .. } => graph.classes[set as usize].clone(),
        Node::Any { .. } => ScalarSet::all(),
        _ => ScalarSet::empty(),
    }
}

#[cfg(test)]
mod tests {
    use crate::{CompiledGrammar, Matcher};

    #[test]
    fn nothing_more_only_when_the_grammar_is_done() {
        let grammar =
            CompiledGrammar::from_gbnf("root ::= \"ab\" | \"abc\" | \"x\" [0-9]*").unwrap();
        let after = |text: &str| {
            let mut matcher = Matcher::new(&grammar);
            matcher.accept_str(text).unwrap();
            matcher.allows_nothing_more()
        };
        assert!(!after(""));
        assert!(!after("a"));
        // Complete, but `c` may follow.
        assert!(!after("ab"));
        assert!(after("abc"));
        // Complete, and digits may follow forever.
        assert!(!after("x12"));
    }
}
