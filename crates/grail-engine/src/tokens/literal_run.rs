//! Walking a literal run down the token trie without learning a state per character.
//!
//! A state with one item at an ASCII character followed by more of them (a key name, an
//! enum value, a keyword: `step_cache::starts_literal_run`) goes, byte by byte, through
//! states of one item each: the next character of the run, in the same frame. A walk
//! that learned them paid for a transition and a state per character (a few thousand
//! instructions each), at every key start of an object whose names a cold mask meets
//! for the first time. Here the walk follows the run's bytes down the trie instead: each
//! node on the path takes its tokens (the one-item states are viable: their item can
//! complete its rule), every other child is dead. Only where the run ends with nodes
//! still below is a state interned, the one at the run's last character, exactly as the
//! general way would learn it (the same key, so the same state); the walk goes on from
//! there along the table.

use grail_vocab::TokenTrie;

use crate::automaton::step_cache::{StateId, continues_literal_run};
use crate::graph::Node;
use crate::tokens::matcher::Matcher;
use crate::tokens::table_walk::TokenSink;

/// How a walk down a literal run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LiteralRunEnd {
    /// Not walked (a limit is near): the walk goes on as usual.
    NotTaken,
    /// Every token below the start's trie node is accounted for.
    Walked,
    /// The run's last character is at trie node `at`, which has nodes below: the walk
    /// goes on below it from `last` (the state at that character, same slots as the
    /// start), with `dead_end` (a state every byte kills) standing for the nodes between
    /// the start's and `at`, where every child off the run is dead.
    Resume {
        at: usize,
        last: StateId,
        dead_end: StateId,
    },
}

impl Matcher {
    /// Walks the trie below `position` from `start`, a state that starts a literal run
    /// (`StepCache::starts_literal_run`) whose slot stands for `frames[0]`, adding the
    /// tokens the run accepts to `sink`.
    pub(crate) fn walk_literal_run<S: TokenSink + ?Sized>(
        &mut self,
        trie: &TokenTrie,
        sink: &mut S,
        start: StateId,
        frames: &[u32],
        position: usize,
    ) -> LiteralRunEnd {
        let Some(mut node) = self.parser.begin_literal_run(start, frames[0]) else {
            return LiteralRunEnd::NotTaken;
        };
        let graph = self.parser.graph();
        let nodes = trie.nodes();
        let mut at = position;
        while let Node::Char { code_point, next } = graph.nodes[node as usize]
            && continues_literal_run(graph, next)
        {
            let Some(child) = child_on(trie, at, code_point as u8) else {
                return LiteralRunEnd::Walked;
            };
            sink.add(trie.tokens_at(&nodes[child]));
            at = child;
            node = next;
            if nodes[at].subtree_len == 1 {
                return LiteralRunEnd::Walked;
            }
        }
        // `at` is below `position`: a run start's first character goes on with the run.
        debug_assert!(at > position, "a literal run starts with two characters");
        let Some((last, dead_end)) = self.parser.end_literal_run(node) else {
            // Not with the room checked at the start; were the cache full, the nodes would
            // be walked as usual (the tokens added again change nothing).
            return LiteralRunEnd::NotTaken;
        };
        LiteralRunEnd::Resume { at, last, dead_end }
    }
}

/// The child of the trie node at `parent` on `byte` (children are in byte order).
fn child_on(trie: &TokenTrie, parent: usize, byte: u8) -> Option<usize> {
    let nodes = trie.nodes();
    let end = parent + nodes[parent].subtree_len as usize;
    let mut child = parent + 1;
    while child < end {
        let node = &nodes[child];
        if node.byte >= byte {
            return (node.byte == byte).then_some(child);
        }
        child += node.subtree_len as usize;
    }
    None
}
