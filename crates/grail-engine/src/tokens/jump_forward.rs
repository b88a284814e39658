//! Jump-forward decoding: the bytes the grammar forces next, and the tokens a decoder may
//! append for them without sampling.
//!
//! The engine has no tokenizer: the caller hands one in as a function from bytes to token
//! ids. Which of its tokens are safe to append is the question this file answers; the
//! rule and why it holds are in `docs/jump-forward.md`.
//!
//! In short: the forced bytes `F` stop before the first byte where the grammar has a
//! choice (another byte, a token element, or ending). `F` is tokenized alone (Grail
//! appends after the current token boundary and never rewrites tokens already
//! generated). A token of some later text may start inside `F` and run past its end; let
//! `Q` be the positions where such a token may start (a vocabulary token whose bytes
//! begin with `F[q..]`, run past the end, and whose bytes past the end the grammar
//! accepts after `F`). The tokens kept are the longest prefix of `tokenize(F)` that ends
//! at or before every `q` in `Q` and is also a prefix of `tokenize(F[..q])` for every `q`
//! in `Q`: whatever the model writes next, a tokenizer whose tokens before a token
//! boundary are the tokenization of the text before it (BPE, WordPiece, and their
//! pre-tokenized forms) starts its tokenization of `F` and the continuation with them.

use grail_vocab::{TokenTrie, TrieNode, Vocabulary, VocabularyIndex};

use crate::error::AcceptError;
use crate::parse::next::NextRule;
use crate::tokens::matcher::Matcher;

/// Trie nodes visited at most when looking for a token that runs past the forced bytes
/// from one position; past it the position counts as one where such a token may start
/// (which can only keep fewer tokens).
const EXTENSION_VISIT_BUDGET: usize = 200_000;

/// The forced continuation, as bytes and as the tokens safe to append for them (see
/// [`Matcher::jump_forward_tokens`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JumpForward {
    /// The forced bytes ([`Matcher::jump_forward_bytes`]).
    pub bytes: Vec<u8>,
    /// The tokens a decoder may append without sampling, in order; they spell
    /// `bytes[..covered]`. The rest of `bytes` is left to sampling (the masks force it).
    pub tokens: Vec<u32>,
    /// How many of `bytes` the tokens spell.
    pub covered: usize,
}

/// Why [`Matcher::jump_forward_tokens`] could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JumpForwardError {
    /// The matcher has no vocabulary (see [`Matcher::with_vocabulary`]).
    #[error("jump-forward tokens need a matcher made with Matcher::with_vocabulary")]
    NoVocabulary,
    /// The tokenizer's tokens do not spell the bytes it was given (a beginning-of-text
    /// token or a SentencePiece prefix space was added, or the ids are of another
    /// vocabulary).
    #[error(
        "the tokenizer's tokens for {} byte(s) spell {} other byte(s): it must add no special token or prefix space, and use the matcher's vocabulary",
        input.len(),
        spelled.len()
    )]
    TokenizerMismatch {
        /// The bytes given to the tokenizer.
        input: Vec<u8>,
        /// What its tokens spell, by the vocabulary (empty when an id is outside it).
        spelled: Vec<u8>,
    },
}

impl Matcher {
    /// The bytes the grammar forces next, for jump-forward decoding: one after another
    /// while exactly one byte may come next, stopping before the first byte where the
    /// grammar has a choice, before a token element, and before any place where the
    /// input may end (when more may also follow, ending is a choice; when nothing may
    /// follow, the bytes end there anyway). At most `max_bytes` bytes. Unlike
    /// [`Matcher::forced`], this works in bytes: it goes on inside a character begun by
    /// a token that ended in it, and takes the first bytes of characters that all share
    /// them.
    ///
    /// ```
    /// use grail_engine::{CompiledGrammar, Matcher};
    /// let grammar =
    ///     CompiledGrammar::from_gbnf(r#"root ::= "{\"name\": \"" [a-z]+ "\"}""#).unwrap();
    /// let mut matcher = Matcher::new(&grammar);
    /// assert_eq!(matcher.jump_forward_bytes(64), b"{\"name\": \"");
    /// matcher.accept_str("{\"name\": \"x").unwrap();
    /// // A letter or the closing quote: a choice.
    /// assert_eq!(matcher.jump_forward_bytes(64), b"");
    /// ```
    pub fn jump_forward_bytes(&self, max_bytes: usize) -> Vec<u8> {
        self.forced_run(max_bytes).0
    }

    /// The tokens a decoder may append without sampling: a prefix of `tokenize`'s
    /// tokenization of [`Matcher::jump_forward_bytes`] that no continuation the grammar
    /// allows could tokenize differently, each accepted by the matcher in turn. The
    /// matcher is left as it was; the decoder appends [`JumpForward::tokens`] with
    /// [`Matcher::accept_tokens`] and samples the rest of the forced bytes as usual.
    ///
    /// `tokenize` is the model's tokenizer: the token ids of exactly the bytes given, from
    /// this matcher's vocabulary, with no beginning-of-text token or SentencePiece prefix
    /// space added; `None` when it cannot tokenize them (for instance bytes that are not
    /// whole UTF-8 characters, for a tokenizer that reads text), which keeps fewer
    /// tokens. It is called once on the forced bytes and once on each prefix of them
    /// where a token of a longer text could start (a few, near the end).
    ///
    /// The tokens come after the current token boundary: the forced bytes are tokenized
    /// alone, not together with the text before them, and tokens already generated are
    /// never rewritten. See `docs/jump-forward.md` for the rule and its assumption about
    /// the tokenizer.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use grail_engine::{CompiledGrammar, Matcher, VocabularyIndex};
    /// use grail_vocab::{TokenKind, Vocabulary};
    ///
    /// // Tokens: `{"`, `order`, `Id`, `orderId`, `"`, `":`, and the letters.
    /// let texts = ["{\"", "order", "Id", "orderId", "\"", "\":", "o", "r", "d", "e", "I", "N", "a", "m", ":", "{", "1", "}"];
    /// let tokens: Vec<Vec<u8>> = texts.iter().map(|t| t.as_bytes().to_vec()).collect();
    /// let kinds = vec![TokenKind::Text; tokens.len()];
    /// let vocabulary = Vocabulary::new("example", tokens, kinds, vec![], None);
    /// let index = Arc::new(VocabularyIndex::new(vocabulary));
    /// // A greedy longest-match tokenizer over that vocabulary.
    /// let tokenize = |bytes: &[u8]| {
    ///     let mut ids = Vec::new();
    ///     let mut rest = bytes;
    ///     while !rest.is_empty() {
    ///         let (id, text) = texts.iter().enumerate()
    ///             .filter(|(_, text)| rest.starts_with(text.as_bytes()))
    ///             .max_by_key(|(_, text)| text.len())?;
    ///         ids.push(id as u32);
    ///         rest = &rest[text.len()..];
    ///     }
    ///     Some(ids)
    /// };
    /// let grammar = CompiledGrammar::from_gbnf(
    ///     r#"root ::= "{\"order" ("Id" | "Name") "\":1}""#,
    /// ).unwrap();
    /// let matcher = Matcher::with_vocabulary(&grammar, index);
    /// let jump = matcher.jump_forward_tokens(64, tokenize).unwrap();
    /// assert_eq!(jump.bytes, b"{\"order");
    /// // `order` is not appended: `orderId` may follow `{"`, and the model would write it.
    /// assert_eq!(jump.tokens, [0]);
    /// assert_eq!(jump.covered, 2);
    /// ```
    pub fn jump_forward_tokens(
        &self,
        max_bytes: usize,
        mut tokenize: impl FnMut(&[u8]) -> Option<Vec<u32>>,
    ) -> Result<JumpForward, JumpForwardError> {
        let index = self
            .vocabulary()
            .cloned()
            .ok_or(JumpForwardError::NoVocabulary)?;
        let vocabulary = index.vocabulary();
        let (bytes, after) = self.forced_run(max_bytes);
        let mut jump = JumpForward {
            bytes,
            ..JumpForward::default()
        };
        let Some(mut after) = after.filter(|_| !jump.bytes.is_empty()) else {
            return Ok(jump);
        };
        let Some(tokens) = tokenize(&jump.bytes) else {
            return Ok(jump);
        };
        check_spelling(vocabulary, &tokens, &jump.bytes)?;
        // `ends[i]`: where token `i` ends in the forced bytes.
        let ends: Vec<usize> = tokens
            .iter()
            .scan(0, |end, &id| {
                *end += vocabulary.bytes(id).len();
                Some(*end)
            })
            .collect();
        let mut keep = tokens.len();
        after.set_history_limit(None);
        for start in crossing_starts(&index, &jump.bytes, &mut after) {
            keep = keep.min(ends.partition_point(|&end| end <= start));
            if keep == 0 {
                break;
            }
            let head = &jump.bytes[..start];
            let Some(head_tokens) = tokenize(head) else {
                keep = 0;
                break;
            };
            check_spelling(vocabulary, &head_tokens, head)?;
            keep = keep.min(common_prefix(&tokens, &head_tokens));
        }
        let mut walker = self.fork();
        let accepted = tokens[..keep]
            .iter()
            .take_while(|&&id| walker.accept_token(id).is_ok())
            .count();
        jump.tokens = tokens[..accepted].to_vec();
        jump.covered = accepted.checked_sub(1).map_or(0, |last| ends[last]);
        Ok(jump)
    }

    /// The forced bytes and a fork that accepted them (its history limited to none), or
    /// no bytes and no fork.
    fn forced_run(&self, max_bytes: usize) -> (Vec<u8>, Option<Matcher>) {
        // Most steps of generation force nothing: answer those without a fork.
        if max_bytes == 0 || forced_byte(self).is_none() {
            return (Vec::new(), None);
        }
        let mut probe = self.fork();
        probe.set_history_limit(Some(0));
        let mut bytes = Vec::new();
        while bytes.len() < max_bytes {
            let Some(byte) = forced_byte(&probe) else {
                break;
            };
            if probe.accept_bytes(&[byte]).is_err() {
                break;
            }
            bytes.push(byte);
        }
        (bytes, Some(probe))
    }
}

/// The one byte that may come next, if exactly one may and the input may not end here.
fn forced_byte(matcher: &Matcher) -> Option<u8> {
    let next = matcher.next_characters();
    if next.end
        || next
            .rules
            .iter()
            .any(|rule| matches!(rule, NextRule::Token { .. }))
    {
        return None;
    }
    let ranges = next.allowed.ranges();
    let low = encode(ranges.first()?.0)?;
    let high = encode(ranges.last()?.1)?;
    // UTF-8 keeps code point order, so every allowed character's encoding lies between
    // these two: where they agree on the next byte (and on its length), all do. Inside a
    // character, the allowed characters are those that complete it.
    let seen = matcher.parser.input_partial().bytes_seen();
    (low.len() == high.len() && seen < low.len() && low[seen] == high[seen]).then(|| low[seen])
}

/// The UTF-8 bytes of a code point (`None` for a surrogate or past U+10FFFF).
fn encode(code_point: u32) -> Option<Vec<u8>> {
    let character = char::from_u32(code_point)?;
    let mut buffer = [0; 4];
    Some(character.encode_utf8(&mut buffer).as_bytes().to_vec())
}

/// An error unless `tokens` spell exactly `bytes` in `vocabulary`.
fn check_spelling(
    vocabulary: &Vocabulary,
    tokens: &[u32],
    bytes: &[u8],
) -> Result<(), JumpForwardError> {
    let mut spelled = Vec::with_capacity(bytes.len());
    for &id in tokens {
        if id as usize >= vocabulary.len() {
            spelled.clear();
            break;
        }
        spelled.extend_from_slice(vocabulary.bytes(id));
    }
    if spelled == bytes && tokens.iter().all(|&id| (id as usize) < vocabulary.len()) {
        return Ok(());
    }
    Err(JumpForwardError::TokenizerMismatch {
        input: bytes.to_vec(),
        spelled,
    })
}

/// How many tokens two tokenizations share from the start.
fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(a, b)| a == b).count()
}

/// The positions `q` (ascending) where a token of a longer text may start and run past
/// the end of `forced`: a text token of the vocabulary begins with `forced[q..]`, is
/// longer, and `after` (a matcher after `forced`) accepts the rest of its bytes.
fn crossing_starts(index: &VocabularyIndex, forced: &[u8], after: &mut Matcher) -> Vec<usize> {
    let trie = index.trie();
    // A token that runs past the end from `q` is longer than `forced.len() - q`.
    let longest = trie.longest_token() as usize;
    let first = forced.len().saturating_sub(longest.saturating_sub(1));
    (first..forced.len())
        .filter(|&start| {
            descend(trie, &forced[start..])
                .is_some_and(|node| has_accepted_extension(trie, node, after))
        })
        .collect()
}

/// The trie node reached from the root by `bytes`, if any token begins with them.
fn descend(trie: &TokenTrie, bytes: &[u8]) -> Option<usize> {
    let nodes = trie.nodes();
    let mut position = 0;
    for &byte in bytes {
        let end = position + nodes[position].subtree_len as usize;
        let mut child = position + 1;
        loop {
            if child >= end {
                return None;
            }
            if nodes[child].byte == byte {
                break;
            }
            child += nodes[child].subtree_len as usize;
        }
        position = child;
    }
    Some(position)
}

/// True when some token strictly below trie node `node` has its bytes below `node`
/// accepted by `after` (or when the search runs out of its budget). `after` is left as
/// it was.
fn has_accepted_extension(trie: &TokenTrie, node: usize, after: &mut Matcher) -> bool {
    let nodes = trie.nodes();
    let base = nodes[node].depth as usize;
    let end = node + nodes[node].subtree_len as usize;
    let mut position = node + 1;
    let mut stepped = 0;
    let mut visited = 0;
    let mut found = false;
    while position < end {
        let child: &TrieNode = &nodes[position];
        // Back up to the child's parent: `depth - base - 1` bytes below `node`.
        let parent_depth = child.depth as usize - base - 1;
        after.rollback(stepped - parent_depth);
        stepped = parent_depth;
        visited += 1;
        if visited > EXTENSION_VISIT_BUDGET {
            found = true;
            break;
        }
        match after.accept_bytes(&[child.byte]) {
            Ok(()) => {
                stepped += 1;
                if !trie.tokens_at(child).is_empty() {
                    found = true;
                    break;
                }
                position += 1;
            }
            Err(AcceptError::Rejected { .. }) => position += child.subtree_len as usize,
            // A limit: the byte may be fine, so count the extension as possible.
            Err(_) => {
                found = true;
                break;
            }
        }
    }
    after.rollback(stepped);
    found
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use grail_vocab::{TokenKind, Vocabulary, VocabularyIndex};

    use super::{JumpForwardError, descend};
    use crate::{CompiledGrammar, Matcher};

    fn index(texts: &[&str]) -> Arc<VocabularyIndex> {
        let tokens: Vec<Vec<u8>> = texts.iter().map(|t| t.as_bytes().to_vec()).collect();
        let kinds = vec![TokenKind::Text; tokens.len()];
        Arc::new(VocabularyIndex::new(Vocabulary::new(
            "jump",
            tokens,
            kinds,
            vec![],
            None,
        )))
    }

    /// Byte-pair merging by rank: the adjacent pair whose join is a token with the lowest
    /// id merges first (leftmost on ties), as tiktoken-style BPE does.
    fn bpe(texts: &[&str], bytes: &[u8]) -> Option<Vec<u32>> {
        let id_of = |piece: &[u8]| texts.iter().position(|t| t.as_bytes() == piece);
        let mut pieces: Vec<Vec<u8>> = bytes.iter().map(|&b| vec![b]).collect();
        loop {
            let best = (0..pieces.len().saturating_sub(1))
                .filter_map(|i| {
                    id_of(&[pieces[i].clone(), pieces[i + 1].clone()].concat()).map(|id| (id, i))
                })
                .min();
            let Some((_, i)) = best else { break };
            let right = pieces.remove(i + 1);
            pieces[i].extend(right);
        }
        pieces
            .iter()
            .map(|piece| id_of(piece).map(|id| id as u32))
            .collect()
    }

    #[test]
    fn forced_bytes_stop_before_a_choice_an_end_and_a_token() {
        let grammar =
            CompiledGrammar::from_gbnf("root ::= \"ab\" (\"c\" | \"d\") \"ef\" \"g\"? \"h\"\n")
                .unwrap();
        let mut matcher = Matcher::new(&grammar);
        assert_eq!(matcher.jump_forward_bytes(10), b"ab");
        assert_eq!(matcher.jump_forward_bytes(1), b"a");
        matcher.accept_str("abd").unwrap();
        assert_eq!(matcher.jump_forward_bytes(10), b"ef");
        matcher.accept_str("efg").unwrap();
        assert_eq!(matcher.jump_forward_bytes(10), b"h");
        matcher.accept_str("h").unwrap();
        assert_eq!(matcher.jump_forward_bytes(10), b"");
        // Ending is a choice when more may follow.
        let grammar = CompiledGrammar::from_gbnf("root ::= \"ab\" \"c\"?\n").unwrap();
        let mut matcher = Matcher::new(&grammar);
        matcher.accept_str("ab").unwrap();
        assert_eq!(matcher.jump_forward_bytes(10), b"");
    }

    #[test]
    fn forced_bytes_go_inside_characters() {
        // `é` and `ê` share their first byte, then differ.
        let grammar = CompiledGrammar::from_gbnf("root ::= [éê] \"x\"\n").unwrap();
        let matcher = Matcher::new(&grammar);
        assert_eq!(matcher.jump_forward_bytes(10), [0xC3]);
        // After a token that ended inside `世`: the rest of it, the next character, then
        // a choice.
        let grammar = CompiledGrammar::from_gbnf("root ::= \"世界\" [ab]\n").unwrap();
        let mut matcher = Matcher::new(&grammar);
        matcher.accept_bytes(&"世".as_bytes()[..1]).unwrap();
        assert_eq!(
            matcher.jump_forward_bytes(10),
            &"世界".as_bytes()[1..],
            "the rest of the character and the next one"
        );
        assert_eq!(matcher.forced(10), "", "forced() stops inside a character");
    }

    #[test]
    fn a_token_that_could_run_past_the_end_is_not_appended() {
        let texts = ["a", "b", "c", "ab", "bc", "abc", "cd", "d"];
        let index = index(&texts);
        // `ab` then a choice of `c` or `d`: `abc` may be one token, so nothing is safe.
        let grammar = CompiledGrammar::from_gbnf("root ::= \"ab\" (\"c\" | \"d\")\n").unwrap();
        let matcher = Matcher::with_vocabulary(&grammar, index.clone());
        let jump = matcher
            .jump_forward_tokens(10, |bytes| bpe(&texts, bytes))
            .unwrap();
        assert_eq!(jump.bytes, b"ab");
        assert_eq!(jump.tokens, Vec::<u32>::new());
        // `d` or `a` may follow: no token runs from `ab` into them, so `ab` is safe.
        let grammar = CompiledGrammar::from_gbnf("root ::= \"ab\" (\"d\" | \"a\")\n").unwrap();
        let matcher = Matcher::with_vocabulary(&grammar, index.clone());
        let jump = matcher
            .jump_forward_tokens(10, |bytes| bpe(&texts, bytes))
            .unwrap();
        assert_eq!((jump.tokens, jump.covered), (vec![3], 2));
    }

    #[test]
    fn a_merge_that_changes_the_tokens_before_the_crossing_one_is_caught() {
        // Ranks: `cd` before `bc` before `ab`. Alone, `abc` is `a` `bc`; followed by `d`
        // it is `ab` `cd`: the token that runs past the end (`cd`) starts inside `bc`,
        // and the tokens before it are those of `ab` alone, not `a`.
        let texts = ["a", "b", "c", "d", "cd", "bc", "ab"];
        let index = index(&texts);
        assert_eq!(bpe(&texts, b"abc").unwrap(), [0, 5]);
        assert_eq!(bpe(&texts, b"abcd").unwrap(), [6, 4]);
        let grammar = CompiledGrammar::from_gbnf("root ::= \"abc\" (\"d\" | \"a\")\n").unwrap();
        let matcher = Matcher::with_vocabulary(&grammar, index.clone());
        let jump = matcher
            .jump_forward_tokens(10, |bytes| bpe(&texts, bytes))
            .unwrap();
        assert_eq!(jump.bytes, b"abc");
        assert_eq!(
            jump.tokens,
            Vec::<u32>::new(),
            "`a` alone would be a wrong split"
        );
        // When `d` cannot follow, `cd` never forms and both tokens are safe.
        let grammar = CompiledGrammar::from_gbnf("root ::= \"abc\" (\"a\" | \"b\")\n").unwrap();
        let matcher = Matcher::with_vocabulary(&grammar, index.clone());
        let jump = matcher
            .jump_forward_tokens(10, |bytes| bpe(&texts, bytes))
            .unwrap();
        assert_eq!((jump.tokens, jump.covered), (vec![0, 5], 3));
    }

    #[test]
    fn a_tokenizer_that_adds_bytes_or_fails_is_handled() {
        let texts = ["a", "b", " "];
        let index = index(&texts);
        let grammar = CompiledGrammar::from_gbnf("root ::= \"ab\" [ab]\n").unwrap();
        let matcher = Matcher::with_vocabulary(&grammar, index.clone());
        // A SentencePiece-style prefix space.
        let error = matcher
            .jump_forward_tokens(10, |_| Some(vec![2, 0, 1]))
            .unwrap_err();
        assert_eq!(
            error,
            JumpForwardError::TokenizerMismatch {
                input: b"ab".to_vec(),
                spelled: b" ab".to_vec()
            }
        );
        assert!(matches!(
            matcher.jump_forward_tokens(10, |_| Some(vec![9])),
            Err(JumpForwardError::TokenizerMismatch { .. })
        ));
        let jump = matcher.jump_forward_tokens(10, |_| None).unwrap();
        assert_eq!((jump.bytes.as_slice(), jump.tokens.len()), (&b"ab"[..], 0));
        let plain = Matcher::new(&grammar);
        assert_eq!(
            plain.jump_forward_tokens(10, |_| None),
            Err(JumpForwardError::NoVocabulary)
        );
    }

    #[test]
    fn a_special_token_from_the_tokenizer_is_not_appended() {
        let tokens = vec![b"<s>".to_vec(), b"<".to_vec(), b"s".to_vec(), b">".to_vec()];
        let kinds = vec![
            TokenKind::Special,
            TokenKind::Text,
            TokenKind::Text,
            TokenKind::Text,
        ];
        let index = Arc::new(VocabularyIndex::new(Vocabulary::new(
            "special",
            tokens,
            kinds,
            vec![],
            None,
        )));
        let grammar = CompiledGrammar::from_gbnf("root ::= \"<s>\" [ab]\n").unwrap();
        let matcher = Matcher::with_vocabulary(&grammar, index);
        // The text `<s>` read as the special token: the grammar refuses it.
        let jump = matcher.jump_forward_tokens(10, |_| Some(vec![0])).unwrap();
        assert_eq!((jump.bytes.as_slice(), jump.tokens.len()), (&b"<s>"[..], 0));
        let jump = matcher
            .jump_forward_tokens(10, |_| Some(vec![1, 2, 3]))
            .unwrap();
        assert_eq!((jump.tokens, jump.covered), (vec![1, 2, 3], 3));
    }

    #[test]
    fn descend_follows_bytes_down_the_trie() {
        let index = index(&["ab", "abc", "b"]);
        let trie = index.trie();
        let node = descend(trie, b"ab").unwrap();
        assert_eq!(trie.nodes()[node].depth, 2);
        assert!(descend(trie, b"ac").is_none());
        assert_eq!(descend(trie, b""), Some(0));
    }
}
