//! Token masks equal brute force (each token tried on a fork) over a small vocabulary
//! kept here, in random grammar states reached by accepting random allowed tokens,
//! including states inside a multi-byte character; `is_token_allowed` agrees with the
//! mask; masks leave the matcher unchanged; `rollback_tokens` restores earlier states.

mod common;

use std::sync::Arc;

use common::{compile, grammar_text};
use grail_engine::{CompiledGrammar, Matcher, TokenBitmask, VocabularyIndex};
use grail_vocab::{TokenKind, Vocabulary};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A small vocabulary with whole characters, split characters, multi-character tokens,
/// an invalid byte, an empty token and special tokens.
fn vocabulary() -> Arc<VocabularyIndex> {
    let world = "世".as_bytes();
    let face = "😀".as_bytes();
    let texts: Vec<(Vec<u8>, TokenKind)> = vec![
        (b"<eos>".to_vec(), TokenKind::Special),
        (b"a".to_vec(), TokenKind::Text),
        (b"b".to_vec(), TokenKind::Text),
        (b"ab".to_vec(), TokenKind::Text),
        (b"ba".to_vec(), TokenKind::Text),
        (b"c".to_vec(), TokenKind::Text),
        (b"d".to_vec(), TokenKind::Text),
        ("é".as_bytes().to_vec(), TokenKind::Text),
        (vec![0xC3], TokenKind::Text),
        (vec![0xA9], TokenKind::Text),
        (world[..2].to_vec(), TokenKind::Text),
        (world[2..].to_vec(), TokenKind::Text),
        (face.to_vec(), TokenKind::Text),
        (face[..1].to_vec(), TokenKind::Text),
        (face[1..].to_vec(), TokenKind::Text),
        ("aé".as_bytes().to_vec(), TokenKind::Text),
        ("a😀b".as_bytes().to_vec(), TokenKind::Text),
        (b"<think>".to_vec(), TokenKind::Special),
        (Vec::new(), TokenKind::Text),
        (b"abc".to_vec(), TokenKind::Text),
        (b"x".to_vec(), TokenKind::Text),
        (vec![0xFF], TokenKind::Text),
        ("é世".as_bytes().to_vec(), TokenKind::Text),
        (b"ab".to_vec(), TokenKind::Text),
    ];
    let (tokens, kinds) = texts.into_iter().unzip();
    Arc::new(VocabularyIndex::new(Vocabulary::new(
        "test",
        tokens,
        kinds,
        vec![0],
        None,
    )))
}

fn brute_force(matcher: &Matcher, size: usize) -> Vec<u32> {
    (0..size as u32)
        .filter(|&id| matcher.fork().accept_token(id).is_ok())
        .collect()
}

/// Walks random allowed tokens from the start, checking the mask at every step.
fn check_walk(grammar: &CompiledGrammar, seed: u64) -> Result<(), TestCaseError> {
    check_walk_with(grammar, seed, vocabulary(), 12)
}

/// A vocabulary big enough for subtrees that walks take whole (every string of one to
/// three units over quotes, backslash, letters, `é`, its halves and DEL; `世`'s first two
/// bytes; `世` followed by up to two of a, b, é), with an end-of-generation token.
fn bulk_vocabulary() -> Arc<VocabularyIndex> {
    let units: [&[u8]; 8] = [
        b"a",
        b"b",
        b"\"",
        b"\\",
        "é".as_bytes(),
        &[0xC3],
        &[0xA9],
        &[0x7F],
    ];
    let mut tokens: Vec<Vec<u8>> = vec![b"<eos>".to_vec()];
    tokens.extend(strings_over(&units, 3));
    tokens.push("世".as_bytes()[..2].to_vec());
    // `世` followed by up to two of a, b, é: a big subtree below `世`'s first byte that is
    // valid UTF-8 from inside the character, so walks can take it whole there.
    let tails = ["", "a", "b", "é"];
    for first in tails {
        for second in tails {
            if first.is_empty() && !second.is_empty() {
                continue;
            }
            tokens.push(format!("世{first}{second}").into_bytes());
        }
    }
    let mut kinds = vec![TokenKind::Text; tokens.len()];
    kinds[0] = TokenKind::Special;
    Arc::new(VocabularyIndex::new(Vocabulary::new(
        "bulk",
        tokens,
        kinds,
        vec![0],
        None,
    )))
}

/// Walks up to `steps` random allowed tokens, checking the mask at every step.
fn check_walk_with(
    grammar: &CompiledGrammar,
    seed: u64,
    index: Arc<VocabularyIndex>,
    steps: usize,
) -> Result<(), TestCaseError> {
    check_walk_after(grammar, seed, index, steps, b"")
}

/// Accepts `prefix` (one token per byte), then walks as [`check_walk_with`] does.
fn check_walk_after(
    grammar: &CompiledGrammar,
    seed: u64,
    index: Arc<VocabularyIndex>,
    steps: usize,
    prefix: &[u8],
) -> Result<(), TestCaseError> {
    let size = index.vocabulary().len();
    let mut matcher = Matcher::with_vocabulary(grammar, index.clone());
    for &byte in prefix {
        let id = (0..size as u32)
            .find(|&id| index.vocabulary().text(id) == Some(&[byte][..]))
            .expect("a one-byte token for each byte of the prefix");
        matcher.accept_token(id).unwrap();
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut mask = TokenBitmask::new(size);
    let mut accepted: Vec<u32> = Vec::new();
    let mut masks: Vec<Vec<u32>> = Vec::new();
    for _ in 0..steps {
        let before = (
            matcher.offset(),
            matcher.next_characters(),
            matcher.history_len(),
        );
        matcher.fill_mask(&mut mask);
        // A mask served from the cache alone is the mask.
        let mut cached = TokenBitmask::new(size);
        if matcher.fill_mask_words_if_cached(cached.words_mut()) {
            prop_assert_eq!(cached.words(), mask.words());
        }
        let allowed: Vec<u32> = mask.ids().collect();
        prop_assert_eq!(
            &allowed,
            &brute_force(&matcher, size),
            "after tokens {:?}",
            accepted
        );
        prop_assert_eq!(
            before,
            (
                matcher.offset(),
                matcher.next_characters(),
                matcher.history_len()
            )
        );
        for id in 0..size as u32 {
            prop_assert_eq!(
                matcher.is_token_allowed(id),
                mask.is_set(id),
                "token {}",
                id
            );
        }
        masks.push(allowed.clone());
        if allowed.is_empty() {
            break;
        }
        let id = allowed[rng.random_range(0..allowed.len())];
        matcher.accept_token(id).unwrap();
        accepted.push(id);
    }
    if masks.len() == accepted.len() {
        matcher.fill_mask(&mut mask);
        masks.push(mask.ids().collect());
    }
    // Rolling back k tokens gives the mask seen k tokens ago.
    let back = rng.random_range(0..=accepted.len());
    prop_assert!(matcher.rollback_tokens(back));
    let index = accepted.len() - back;
    matcher.fill_mask(&mut mask);
    prop_assert_eq!(mask.ids().collect::<Vec<_>>(), masks[index].clone());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn masks_equal_brute_force_on_random_grammars(text in grammar_text(), seed in any::<u64>()) {
        check_walk(&compile(&text), seed)?;
    }

    #[test]
    fn masks_equal_brute_force_with_token_elements(seed in any::<u64>(), which in 0usize..4) {
        let grammars = [
            "root ::= \"a\" (<[17]> | !<[2]>)* \"b\"",
            "root ::= (<think> [^<]* </think>)? \"ab\"",
            "root ::= ([a-d]+ | !<[1]> | !<[2]>)*",
            "root ::= \"é\" .? <[0]>?",
        ];
        let source = grammars[which].replace("<think>", "<[17]>").replace("</think>", "<[17]>");
        check_walk(&CompiledGrammar::from_gbnf(&source).unwrap(), seed)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Loops over big classes let walks take whole subtrees: masks still equal brute force.
    #[test]
    fn masks_equal_brute_force_where_walks_take_whole_subtrees(seed in any::<u64>(), which in 0usize..14) {
        let grammars = [
            r#"root ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ["\\ab] )* "\"" [ab]*"#,
            r#"root ::= ( [^"] )* "\"" "a"?"#,
            r##"root ::= [ab\x7F]* ( "é" [^a]* )? "\"""##,
            r#"root ::= ( [a-z"] | "\\" )* "é" [ab]*"#,
            r#"root ::= "a" [^\x80-\U0010FFFF]* "\\" .*"#,
            "root ::= ( item \"\\\"\" )*\nitem ::= [ab]+ | \"é\"+",
            // Loops over every ASCII unit of the vocabulary, none past ASCII: subtrees are
            // taken whole except their tokens with bytes past ASCII.
            r#"root ::= "x"? [^\x80-\U0010FFFF]*"#,
            // The same loop inside a rule whose caller takes `é` after any character: the
            // tokens past ASCII must not be dropped.
            // (`inner` calls itself, so it is not inlined and its returns escape.)
            "root ::= ( inner \"é\" )*\ninner ::= [^\\x80-\\U0010FFFF]+ | \"(\" inner \")\"",
            // A loop before a rule call (as whitespace before a value): every `b` predicts
            // `item` again, which walks cross without real steps (renewed calls).
            "root ::= ( \"a\" \"b\"+ item )*\nitem ::= \"\\\"\" [ab]* \"\\\"\" | \"\\\\\" item",
            // The same with a counted loop: each `b` is a new state, the call renewed.
            "root ::= ( \"a\" \"b\"{0,4} item )*\nitem ::= \"\\\"\" [ab]* \"\\\"\" | \"\\\\\" item",
            // A first character that enters a loop (a string that must not be empty):
            // walks take the loop's tokens from the state before it.
            r#"root ::= "\"" [^"\\] [^"\\]* "\"" "a"?"#,
            r#"root ::= "\"" ( [^"\\] | "\\" ["\\ab] ) ( [^"\\a] | "\\" ["\\ab] )* "\"""#,
            // The same from the start (every case meets that state).
            r#"root ::= [^"\\] [^"\\]* "\"" "a"?"#,
            // A first character narrower than the loop: not entered by every loop byte.
            r#"root ::= "\"" [^"\\b] [^"\\]* "\"""#,
        ];
        let grammar = CompiledGrammar::from_gbnf(grammars[which])
            .unwrap_or_else(|error| panic!("grammar {which}: {error:?}"));
        check_walk_with(&grammar, seed, bulk_vocabulary(), 12)?;
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, failure_persistence: None, ..ProptestConfig::default() })]

    /// Matchers made one after another from one compiled grammar start from what the
    /// earlier ones learned (parse states, walks and masks, per vocabulary): with two
    /// vocabularies taking turns, every mask of every walk still equals brute force.
    #[test]
    fn later_matchers_of_a_grammar_inherit_learning_without_mixing_vocabularies(
        text in grammar_text(),
        seed in any::<u64>(),
    ) {
        let grammar = compile(&text);
        let (small, bulk) = (vocabulary(), bulk_vocabulary());
        for walk in 0..6u64 {
            let index = if walk % 2 == 0 { small.clone() } else { bulk.clone() };
            check_walk_with(&grammar, seed.wrapping_add(walk / 2), index, 6)?;
        }
    }
}

proptest! {
    // Brute force over 585 tokens per step: fewer cases (each is slow in debug builds).
    #![proptest_config(ProptestConfig { cases: 16, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn masks_equal_brute_force_on_random_grammars_with_a_bigger_vocabulary(text in grammar_text(), seed in any::<u64>()) {
        check_walk_with(&compile(&text), seed, bulk_vocabulary(), 6)?;
    }
}

#[test]
fn a_mask_is_served_from_the_cache_only_once_computed() {
    let index = vocabulary();
    let size = index.vocabulary().len();
    let grammar = compile(r#"root ::= "a" [a-d]* "x""#);
    let mut matcher = Matcher::with_vocabulary(&grammar, index.clone());
    let mut words = TokenBitmask::new(size);
    assert!(!matcher.fill_mask_words_if_cached(words.words_mut()));
    let mut mask = TokenBitmask::new(size);
    matcher.fill_mask(&mut mask);
    assert!(matcher.fill_mask_words_if_cached(words.words_mut()));
    assert_eq!(words.words(), mask.words());
    // In a bounded repetition, masks are cached under its twin loop's state: served from
    // there once computed, far from the bound and near it.
    let counted = compile(r#"root ::= "a" [a-d]{0,40} "x""#);
    let mut matcher = Matcher::with_vocabulary(&counted, index.clone());
    let a = (0..size as u32)
        .find(|&id| index.vocabulary().text(id) == Some(&b"a"[..]))
        .expect("a token `a`");
    for _ in 0..41 {
        matcher.accept_token(a).unwrap();
        assert!(
            !matcher.fill_mask_words_if_cached(words.words_mut()) || {
                matcher.fill_mask(&mut mask);
                words.words() == mask.words()
            }
        );
        matcher.fill_mask(&mut mask);
        assert!(matcher.fill_mask_words_if_cached(words.words_mut()));
        assert_eq!(words.words(), mask.words());
    }
}

#[test]
fn end_of_generation_is_allowed_exactly_when_the_grammar_may_end() {
    let grammar = CompiledGrammar::from_gbnf(r#"root ::= "ab" | "abc""#).unwrap();
    let mut matcher = Matcher::with_vocabulary(&grammar, vocabulary());
    assert!(!matcher.is_token_allowed(0));
    matcher.accept_token(3).unwrap();
    assert!(matcher.is_token_allowed(0));
    assert!(matcher.is_token_allowed(5));
    matcher.accept_token(0).unwrap();
    let mut mask = TokenBitmask::new(24);
    matcher.fill_mask(&mut mask);
    // After the end, only the end again (and the empty token, which adds nothing).
    assert_eq!(mask.ids().collect::<Vec<_>>(), [0, 18]);
    assert!(matcher.rollback_tokens(1));
    assert!(matcher.is_token_allowed(5));
}

/// Every string of one to `longest` units over `units`, shortest first.
fn strings_over(units: &[&[u8]], longest: usize) -> Vec<Vec<u8>> {
    let mut strings = Vec::new();
    let mut layer: Vec<Vec<u8>> = vec![Vec::new()];
    for _ in 0..longest {
        layer = layer
            .iter()
            .flat_map(|prefix| {
                units
                    .iter()
                    .map(move |unit| [prefix.as_slice(), unit].concat())
            })
            .collect();
        strings.extend(layer.iter().cloned());
    }
    strings
}

/// Strings of one or two characters from several scripts (Latin, Cyrillic, Hangul Jamo
/// at U+1100, U+1140 and U+1160, CJK at U+4E16 and below U+4E00, an emoji, U+10000),
/// with the quote and backslash, plus every proper prefix and suffix of the multi-byte
/// ones (one with an `a` after it too): tokens that end or begin inside a character.
fn scripts_vocabulary() -> Arc<VocabularyIndex> {
    let characters = [
        "a", "\"", "\\", "é", "ж", "ᄀ", "ᅀ", "ᅠ", "世", "䀀", "😀", "𐀀",
    ];
    let units: Vec<&[u8]> = characters.iter().map(|text| text.as_bytes()).collect();
    let mut tokens = strings_over(&units, 2);
    for character in characters {
        let bytes = character.as_bytes();
        for cut in 1..bytes.len() {
            tokens.push(bytes[..cut].to_vec());
            tokens.push(bytes[cut..].to_vec());
            tokens.push([&bytes[cut..], b"a"].concat());
        }
    }
    tokens.sort();
    tokens.dedup();
    with_end_of_generation("scripts", tokens)
}

/// Every string of one to `longest` units over `units`, with an end-of-generation token
/// first.
fn strings_vocabulary(units: &[&[u8]], longest: usize) -> Arc<VocabularyIndex> {
    with_end_of_generation("strings", strings_over(units, longest))
}

/// A vocabulary of `<eos>` (id 0, special, ending generation) then the text `tokens`.
fn with_end_of_generation(name: &str, tokens: Vec<Vec<u8>>) -> Arc<VocabularyIndex> {
    let tokens: Vec<Vec<u8>> = std::iter::once(b"<eos>".to_vec()).chain(tokens).collect();
    let mut kinds = vec![TokenKind::Text; tokens.len()];
    kinds[0] = TokenKind::Special;
    Arc::new(VocabularyIndex::new(Vocabulary::new(
        name,
        tokens,
        kinds,
        vec![0],
        None,
    )))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

    /// Steps that come back to the same state with new frames (renewed calls) where the
    /// new frames' callers differ from the dropped frames': a recursive rule whose first
    /// byte predicts itself again (after `b`, the new `item` returns into the old one's
    /// `c`, not to the old one's caller), and a whitespace loop renewing a call whose
    /// caller moves. Walks must not take those steps as renewals.
    #[test]
    fn masks_equal_brute_force_where_steps_renew_calls(seed in any::<u64>(), which in 0usize..3) {
        let grammars = [
            "root ::= item \"x\"\nitem ::= \"b\" item \"c\" | \"d\"",
            "root ::= ( item \"x\" )+\nitem ::= \"b\" item \"c\" | \"b\"* \"d\"",
            "root ::= \"b\"* item\nitem ::= \"b\" item \"c\" | \"d\" \"x\"?",
        ];
        let grammar = CompiledGrammar::from_gbnf(grammars[which])
            .unwrap_or_else(|error| panic!("grammar {which}: {error:?}"));
        let units: [&[u8]; 4] = [b"b", b"c", b"d", b"x"];
        check_walk_with(&grammar, seed, strings_vocabulary(&units, 4), 10)?;
    }

    /// Right recursion: a rule that calls itself (or another) as its last symbol makes a
    /// new frame at every byte, each returning through the one before (tail calls). Masks
    /// must reach what follows the whole chain: a caller that goes on (`"x"`), the end of
    /// the root (end of generation), a nullable callee, and mutual recursion.
    #[test]
    fn masks_equal_brute_force_through_tail_calls(seed in any::<u64>(), which in 0usize..5) {
        let grammars = [
            "root ::= s \"x\"\ns ::= \"b\" s | \"d\"",
            "root ::= \"b\" root | \"d\"",
            "root ::= s\ns ::= \"b\" t | \"c\" s | \"d\"\nt ::= \"b\" s | \"c\" t | \"\"",
            "root ::= s s\ns ::= \"b\" s | \"c\"",
            "root ::= \"x\" s | s \"d\"\ns ::= \"b\" s | \"bc\" | \"\"",
        ];
        let grammar = CompiledGrammar::from_gbnf(grammars[which])
            .unwrap_or_else(|error| panic!("grammar {which}: {error:?}"));
        let units: [&[u8]; 4] = [b"b", b"c", b"d", b"x"];
        check_walk_with(&grammar, seed, strings_vocabulary(&units, 4), 12)?;
    }

    /// Items in the middle of a character whose every completion their class takes carry
    /// one representative partial per shape (E4 and E5 alike), so walks that learn such
    /// states must still give the masks that stepping each token gives, across scripts,
    /// classes that take only part of a lead byte's range (CJK from U+4E00), overlapping
    /// classes, `.`, and tokens that end or begin inside a character.
    #[test]
    fn masks_equal_brute_force_inside_characters_of_many_scripts(seed in any::<u64>(), which in 0usize..7) {
        let grammars = [
            "root ::= \"\\\"\" [^\"\\\\]* \"\\\"\"",
            "root ::= [一-龥]* \"a\"",
            "root ::= ([а-я] | [^a-z])* \"a\"",
            "root ::= .* \"a\"",
            "root ::= ([\\u0080-\\u07FF] \"a\" | [\\U00010000-\\U0010FFFF])* \"a\"",
            "root ::= ([^a] [ᄀ-ᅟ世])* \"a\"",
            // After E1 85 some completions are in (U+1140) and some not (U+1160): that
            // partial keeps its own bytes, though all of E1 80's are in the class.
            "root ::= [\\u1000-\\u103Fᄀ-ᅟ]* \"a\"",
        ];
        let grammar = CompiledGrammar::from_gbnf(grammars[which])
            .unwrap_or_else(|error| panic!("grammar {which}: {error:?}"));
        check_walk_with(&grammar, seed, scripts_vocabulary(), 10)?;
    }

    /// A string loop entered from a state where a few of its bytes lead elsewhere (keys
    /// that must not be some names: their first letters go into a trie of the names):
    /// masks take the loop's slice less those bytes' subtrees, which must equal brute
    /// force (the loop's class, not the vocabulary, decides that a slice is used).
    #[test]
    fn masks_equal_brute_force_where_a_loop_is_entered_but_for_a_few_bytes(seed in any::<u64>(), which in 0usize..3) {
        let grammars = [
            "root ::= ( \"\\\"\" key \"\\\"\" \":\" [0-9]+ \",\" )*\nkey ::= ( \"t\" ( \"i\" tail | [^i\"\\\\] tail )? | [^t\"\\\\] tail )?\ntail ::= [^\"\\\\]*",
            "root ::= ( \"\\\"\" key \"\\\"\" \":\" [0-9]+ \",\" )*\nkey ::= ( \"a\" ( \"b\" [^\"\\\\] tail | [^b\"\\\\] tail )? | \"c\" [^\"\\\\]* | \"9\" | [^ac9\"\\\\] tail )?\ntail ::= [^\"\\\\]*",
            "root ::= ( \"\\\"\" ( \"ab\" | key ) \"\\\"\" \":\" [0-9]+ \",\" )*\nkey ::= ( \"a\" ( \"b\" [^\"\\\\] [^\"\\\\]* | [^b\"\\\\] [^\"\\\\]* )? | [^a\"\\\\] [^\"\\\\]* )?",
        ];
        let grammar = CompiledGrammar::from_gbnf(grammars[which])
            .unwrap_or_else(|error| panic!("grammar {which}: {error:?}"));
        let units: [&[u8]; 12] = [b"a", b"b", b"c", b"t", b"i", b"x", b"9", b"0", b"\"", b"\\", b":", b","];
        // From the start of a key, then on from there.
        check_walk_after(&grammar, seed, strings_vocabulary(&units, 3), 12, b"\"")?;
    }

    /// Loops whose class leaves out bytes that no item takes (a JSON string refuses line
    /// breaks): the slice's exits through those bytes are dead from the loop and skipped
    /// unwalked, the others (a closing quote, a backslash) walked; masks must still equal
    /// brute force, from a key start (the slice less a name's first letter) and inside a
    /// string (the loop's own state).
    #[test]
    fn masks_equal_brute_force_where_a_slice_has_dead_exits(seed in any::<u64>(), which in 0usize..2) {
        let grammars = [
            "root ::= ( \"\\\"\" key \"\\\"\" \":\" [0-9]+ \"\\n\"? \",\" )*\nkey ::= ( \"t\" ( \"i\" tail | [^i\"\\\\\\n] tail )? | [^t\"\\\\\\n] tail )?\ntail ::= [^\"\\\\\\n]*",
            "root ::= ( \"\\\"\" [^\"\\\\\\n]* \"\\\"\" \"\\n\"? )*",
        ];
        let grammar = CompiledGrammar::from_gbnf(grammars[which])
            .unwrap_or_else(|error| panic!("grammar {which}: {error:?}"));
        let units: [&[u8]; 11] = [b"a", b"t", b"i", b"x", b"9", b"\"", b"\\", b"\n", b"\r", b":", b","];
        check_walk_after(&grammar, seed, strings_vocabulary(&units, 3), 12, b"\"")?;
    }

    /// As above with more first letters leading elsewhere than a handful (an open object
    /// with many properties): a key must not be any of 14 names `a1`..`n1`, and no key
    /// but the names starts with `m` or `n`; the slice less 14 subtrees must still equal
    /// brute force.
    #[test]
    fn masks_equal_brute_force_where_a_loop_is_entered_but_for_many_bytes(seed in any::<u64>()) {
        let letters = "abcdefghijklmn";
        let names: Vec<String> = letters.chars().map(|letter| format!("\"{letter}1\"")).collect();
        let mut key: Vec<String> = letters
            .chars()
            .filter(|&letter| letter < 'm')
            .map(|letter| format!("\"{letter}\" ( \"1\" [^\"\\\\] tail | [^1\"\\\\] tail )?"))
            .collect();
        key.push(format!("[^{letters}\"\\\\] tail"));
        let text = format!(
            "root ::= ( \"\\\"\" ( name \"\\\"\" \":\" \"1\" | key \"\\\"\" \":\" [0-9]+ ) \",\" )*\n\
             name ::= {}\nkey ::= ( {} )?\ntail ::= [^\"\\\\]*",
            names.join(" | "),
            key.join(" | "),
        );
        let grammar = CompiledGrammar::from_gbnf(&text)
            .unwrap_or_else(|error| panic!("{text}: {error:?}"));
        let mut units: Vec<&[u8]> = (0..letters.len()).map(|at| &letters.as_bytes()[at..at + 1]).collect();
        units.extend([&b"1"[..], b"x", b"\"", b":", b","]);
        check_walk_after(&grammar, seed, strings_vocabulary(&units, 2), 12, b"\"")?;
    }

    /// Literal runs (key names, enum values) are walked down the trie without a state per
    /// character, standing in for the positions inside a run by a state where every byte
    /// is dead: masks must still equal brute force where tokens end inside a run, run
    /// past its end, turn off it onto a byte the run takes elsewhere, meet a run inside a
    /// called rule, a recursive one, one that cannot complete, one of a bounded
    /// repetition's copies, one next to a character past ASCII, and one that ends where
    /// the grammar may end.
    #[test]
    fn masks_equal_brute_force_along_literal_runs(seed in any::<u64>(), which in 0usize..7) {
        let grammars = [
            r#"root ::= ( "{\"" ( "aabab" | "babba" | "bab" ) "\":" ( "abba" | "b" ) "}" )+"#,
            "root ::= item ( \",\" item )*\nitem ::= \"abba\" | \"baab\" | \"aaab\" ( \",\" item )?",
            "root ::= \"ab\" root \"ba\" | \"x\"",
            "root ::= \"abab\" \"ba\" dead | \"aabb\" | \"abba\"\ndead ::= \"x\" dead",
            r#"root ::= ( "ab" ){2,4} "b" | "a"{3,7} "x""#,
            "root ::= \"aé\" \"ab\" | \"abé\" | \"ba\" [ab]+ \"x\"",
            "root ::= \"abab\" | \"ab\" | \"aab\" root",
        ];
        let grammar = CompiledGrammar::from_gbnf(grammars[which])
            .unwrap_or_else(|error| panic!("grammar {which}: {error:?}"));
        let units: [&[u8]; 8] = [b"a", b"b", b"x", b"\"", b"{", b"}", b":", b","];
        let mut tokens = strings_over(&units, 2);
        // Every run of up to five of a and b (siblings on the byte a run takes
        // elsewhere), some longer ones, and a few past ASCII.
        tokens.extend(strings_over(&[b"a", b"b"], 5).into_iter().filter(|token| token.len() > 2));
        for extra in ["abbab\":", "aabab\":abba}", "babbab", "é", "aé", "éab", "abé"] {
            tokens.push(extra.as_bytes().to_vec());
        }
        tokens.sort();
        tokens.dedup();
        let vocabulary = with_end_of_generation("literals", tokens);
        check_walk_with(&grammar, seed, vocabulary.clone(), 12)?;
        // A second matcher starts from what the first learned.
        check_walk_with(&grammar, seed.rotate_left(17), vocabulary, 12)?;
    }

    /// Strings searched for a needle (as a JSON Schema `pattern` without anchors is
    /// compiled): the free run's class loops inside every state of the search while the
    /// needle's letters move the state on, so walks take subtrees by that looping item
    /// (`loop_items.rs`), not by the state looping. Tokens past ASCII, a lone lead byte
    /// and escapes included; masks must still equal brute force.
    #[test]
    fn masks_equal_brute_force_in_strings_searched_for_a_needle(seed in any::<u64>(), which in 0usize..3) {
        let grammars = [
            // Starts with `ab`, contains `ba` or ends with `ab`.
            r#"root ::= ( "\"" ( "ab" ch* | ch+ "ba" ch* | ch+ "ab" | "ba" ch* ) "\"" "," )*
ch ::= [^"\\] | "\\" ["\\n]"#,
            // The free run written inline, escapes inside the loop.
            r#"root ::= ( "\"" ( ( [^"\\] | "\\" ["\\n] )+ "ab" ( [^"\\] | "\\" ["\\n] )* | "b" ) "\"" "," )*"#,
            // A run of letters only, around a needle of two letters.
            r#"root ::= "\"" [a-n]* "ba" [a-nx]* "\"" ( "," root )?"#,
        ];
        let grammar = CompiledGrammar::from_gbnf(grammars[which])
            .unwrap_or_else(|error| panic!("grammar {which}: {error:?}"));
        // Every string of up to two units, longer ones of letters (and `é`, and a lone lead
        // byte) alone, and runs of letters then a quote: subtrees the free run takes
        // whole, next to ones it must walk.
        let units: [&[u8]; 9] = [b"a", b"b", b"x", b"\"", b"\\", b"n", b",", "é".as_bytes(), b"\xC3"];
        let letters: [&[u8]; 6] = [b"a", b"b", b"x", b"n", "é".as_bytes(), b"\xC3"];
        let mut tokens = strings_over(&units, 2);
        tokens.extend(strings_over(&letters, 4).into_iter().filter(|token| token.len() > 2));
        // Runs of letters that close the string.
        tokens.extend(strings_over(&letters, 2).into_iter().map(|run| [&run[..], b"\""].concat()));
        tokens.sort();
        tokens.dedup();
        let vocabulary = with_end_of_generation("needle", tokens);
        // Twice: the second matcher starts from what the first learned, so its masks walk
        // along the learned table (where subtrees are taken whole).
        check_walk_after(&grammar, seed, vocabulary.clone(), 14, b"\"")?;
        check_walk_after(&grammar, seed.rotate_left(17), vocabulary, 14, b"\"")?;
    }

    /// Bounded repetitions long enough for masks to read their copies as a loop far from
    /// the bound (tokens here are at most 4 bytes): masks still equal brute force, near
    /// the bound included.
    #[test]
    fn masks_equal_brute_force_in_long_bounded_repetitions(seed in any::<u64>(), which in 0usize..11) {
        let grammars = [
            // One class: the bound is the longest run of its bytes a token starts with.
            "root ::= \"x\" [bc]{0,12} \"d\" \"x\"?",
            // Several characters per copy.
            "root ::= \"x\" ( \"b\" | \"cd\" ){0,10} \"x\"",
            // A chain of nested optionals, as JSON Schema converters write maxLength.
            "root ::= \"x\" (item (item (item (item (item (item (item (item (item)?)?)?)?)?)?)?)?)? \"d\"\nitem ::= \"b\" | \"c\" \"c\"",
            // Mandatory copies first, repeated.
            "root ::= ( [bc]{2,11} \"d\" )*",
            // Inside a rule called from two places.
            "root ::= \"x\" s \"d\" s\ns ::= [bc]{0,9} \"x\"? | \"d\" s",
            // Nested: the inner repetition keeps its twin, the outer has none.
            "root ::= ( \"x\" [bc]{0,9} ){0,9} \"d\"",
            // Copies that differ (an alternative that is empty): no twin, still exact.
            "root ::= ( \"b\" | \"c\" \"d\"? ){0,12} \"x\"",
            // What follows can take the repeated class: near the bound, no shortcut.
            "root ::= \"x\" [bc]{0,12} \"b\" \"d\"",
            "root ::= \"x\" [bc]{0,12} ( \"d\" | [cd] \"x\" )",
            // A copy written before the repetition (`minLength: 1`) joins it.
            "root ::= \"x\" [bc] [bc]{0,10} \"d\"",
            "root ::= \"x\" item (item (item (item (item (item (item (item (item)?)?)?)?)?)?)?)? \"d\"\nitem ::= \"b\" | \"c\" \"c\"",
        ];
        let grammar = CompiledGrammar::from_gbnf(grammars[which])
            .unwrap_or_else(|error| panic!("grammar {which}: {error:?}"));
        let units: [&[u8]; 4] = [b"b", b"c", b"d", b"x"];
        check_walk_with(&grammar, seed, strings_vocabulary(&units, 4), 16)?;
    }

    /// The same, starting near the bound (8 to 12 of the 12 copies used), where masks
    /// take the twin's mask less the tokens too long for the copies left, unless what
    /// follows could take the rest of such a token.
    #[test]
    fn masks_equal_brute_force_near_the_bound_of_a_repetition(seed in any::<u64>(), which in 0usize..4, used in 8usize..=12) {
        let grammars = [
            "root ::= \"x\" [bc]{0,12} \"d\"",
            "root ::= \"x\" [bc]{0,12} \"b\" \"d\"",
            "root ::= \"x\" [bc]{0,12} ( \"d\" | [cd] \"x\" )",
            "root ::= \"x\" ( \"d\" [bc]{0,12} )* \"x\"",
        ];
        let grammar = CompiledGrammar::from_gbnf(grammars[which])
            .unwrap_or_else(|error| panic!("grammar {which}: {error:?}"));
        let units: [&[u8]; 4] = [b"b", b"c", b"d", b"x"];
        let mut prefix = if which == 3 { b"xd".to_vec() } else { b"x".to_vec() };
        prefix.extend(std::iter::repeat_n(b'b', used));
        check_walk_after(&grammar, seed, strings_vocabulary(&units, 4), 8, &prefix)?;
    }
}

/// Strings of one to three units over `b`, `c`, `d`, `x`, plus runs of `b` and `c` up to
/// 14 long, alone and between an `x` and a `d`: tokens that cross into a bounded
/// repetition and run past its bound.
fn long_runs_vocabulary() -> Arc<VocabularyIndex> {
    let units: [&[u8]; 4] = [b"b", b"c", b"d", b"x"];
    let mut tokens = strings_over(&units, 3);
    for run in 4..=14 {
        for unit in [b"b", b"c"] {
            let body = unit.repeat(run);
            for (before, after) in [(&b""[..], &b""[..]), (b"x", b""), (b"", b"d"), (b"x", b"d")] {
                tokens.push([before, body.as_slice(), after].concat());
            }
        }
        tokens.push([&b"x"[..], &b"bc".repeat(run / 2)].concat());
    }
    with_end_of_generation("long runs", tokens)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Walks that enter a bounded repetition from before it step through its twin loop
    /// counting the bytes of its class (`CountedView`): tokens whose run is longer than
    /// the copies are refused at the bound, what follows is still walked, and rule calls
    /// predicted after the repetition (renewed at every byte) or returns from a rule
    /// ending in it keep their frames.
    #[test]
    fn masks_equal_brute_force_where_walks_count_through_a_repetition(seed in any::<u64>(), which in 0usize..7) {
        let grammars = [
            "root ::= \"x\" [bc]{0,8} \"d\"",
            "root ::= \"x\" [bc]{0,9} \"x\"?",
            "root ::= ( \"x\" ws )* \"d\"\nws ::= [bc]{0,9}",
            "root ::= \"x\" ws value\nvalue ::= \"d\" | \"x\" ws value\nws ::= [bc]{0,10}",
            "root ::= \"x\" ( [bc]{0,8} \"d\" | [b]{0,12} \"x\" )",
            "root ::= ( \"x\" [b]{2,10} )* \"d\"",
            // JSON's shape: whitespace ending a recursive value, returning to an object.
            "root ::= object\nobject ::= \"x\" ws ( value ( \"x\" ws value )* )? \"d\" ws\nvalue ::= object | \"c\" ws\nws ::= | \"b\" | \"c\" [b]{0,9}",
        ];
        let grammar = CompiledGrammar::from_gbnf(grammars[which])
            .unwrap_or_else(|error| panic!("grammar {which}: {error:?}"));
        check_walk_with(&grammar, seed, long_runs_vocabulary(), 10)?;
    }
}

/// A JSON string character as converters write it: itself, a short escape, `\u` with four
/// hex digits, or a surrogate pair.
const JSON_CHAR: &str = r#"char ::= [^\x00-\x1F"\\\x7F] | "\\" (["/\\bfnrt] | "u" ([0-9A-CE-Fa-ce-f] [0-9A-Fa-f] [0-9A-Fa-f] [0-9A-Fa-f] | [Dd] [0-7] [0-9A-Fa-f] [0-9A-Fa-f]) | "u" [Dd] [8-9A-Ba-b] [0-9A-Fa-f] [0-9A-Fa-f] "\\u" [Dd] [C-Fc-f] [0-9A-Fa-f] [0-9A-Fa-f])"#;

/// Strings of one to three units over letters, `é`, a quote, a comma and the pieces of
/// escapes, plus whole escapes, surrogate pairs and their halves, and long runs.
fn json_string_vocabulary() -> Arc<VocabularyIndex> {
    let units: [&[u8]; 11] = [
        b"a",
        "é".as_bytes(),
        b"\\",
        b"n",
        b"u",
        b"0",
        b"d",
        b"8",
        b"c",
        b"\"",
        b",",
    ];
    let mut tokens = strings_over(&units, 3);
    for extra in [
        "\\u00e9",
        "\\u00",
        "e9",
        "\\ud83d",
        "\\ude00",
        "\\ud83d\\ude00",
        "a\\ud83d\\ude00\",",
        "\\ud83d\\u",
        "aaaaaa",
        "aaaaaaaaaaaa",
        "aaaaaaaaa\",",
        "é世界\"",
    ] {
        tokens.push(extra.as_bytes().to_vec());
    }
    with_end_of_generation("json strings", tokens)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

    /// Strings with a `maxLength` or a `minLength` (`char{0,n}`, `char{m,n}`, `char{m,}`):
    /// masks read the copies as the loop, less the tokens with more characters than
    /// copies remain, or less those that end the string too soon (characters counted as
    /// written: escapes and surrogate pairs are one); they must equal brute force, also
    /// where the count cannot be used (a copy that is not one character, something after
    /// the string that takes a character).
    #[test]
    fn masks_equal_brute_force_in_json_strings_with_lengths(seed in any::<u64>(), which in 0usize..8) {
        let grammars = [
            "root ::= ( \"\\\"\" char{0,10} \"\\\"\" \",\" )*",
            "root ::= ( \"\\\"\" char{3,12} \"\\\"\" \",\" )*",
            "root ::= ( \"\\\"\" char{4,} \"\\\"\" \",\" )*",
            "root ::= ( \"\\\"\" char{2,} \"\\\"\" \",\" )*",
            "root ::= ( \"\\\"\" char{0,40} \"\\\"\" \",\" )*",
            // Something after the string takes a character: no count.
            "root ::= ( \"\\\"\" char{0,10} ( \"\\\"\" | \"a\" ) \",\" )*",
            // A copy that is not one character (an escape JSON does not have).
            "root ::= ( \"\\\"\" ( [a-z] | \"\\\\\" \"x\" | \"\\\\n\" ){0,10} \"\\\"\" \",\" )*",
            "root ::= ( \"\\\"\" ( [a-z] | \"\\\\u\" [0-9a-f]{4} ){3,} \"\\\"\" \",\" )*",
        ];
        let text = format!("{}\n{JSON_CHAR}", grammars[which]);
        let grammar = CompiledGrammar::from_gbnf(&text)
            .unwrap_or_else(|error| panic!("grammar {which}: {error:?}"));
        check_walk_with(&grammar, seed, json_string_vocabulary(), 24)?;
    }
}

/// Inside a character, next-character rules name exactly the code points that complete
/// the input's own bytes, though items may carry a representative partial of the same
/// shape (E1 for E4): checked against accepting each completion, for prefixes of one to
/// three bytes, in classes that take all of a lead byte's range, part of it, or none.
#[test]
fn next_characters_inside_a_character_are_those_that_complete_its_bytes() {
    let grammars = [
        "root ::= [^a]* \"a\"",
        "root ::= [一-龥]* \"a\"",
        "root ::= (. | [ᄀ-ᅟ] \"b\")* \"a\"",
        // After E1 85, U+1140 completes it and U+1160 does not, though every completion
        // of E1 80 is in the class.
        "root ::= [\\u1000-\\u103Fᄀ-ᅟ]* \"a\"",
    ];
    let prefixes: [&[u8]; 7] = [
        &[0xC3],
        &[0xE1, 0x85],
        &[0xE4],
        &[0xE5],
        &[0xE4, 0xB8],
        &[0xE1, 0x84],
        &[0xF0, 0x9F, 0x98],
    ];
    for source in grammars {
        let grammar = CompiledGrammar::from_gbnf(source).expect("compiles");
        for prefix in prefixes {
            let mut matcher = Matcher::new(&grammar);
            // A whole character first where the grammar takes one, so the prefix's items
            // have been through a step.
            if matcher.accept_str("é").is_err() {
                matcher = Matcher::new(&grammar);
            }
            if matcher.accept_bytes(prefix).is_err() {
                continue;
            }
            let next = matcher.next_characters();
            let length = match prefix[0] {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            let completing: Vec<u32> = (0..=0x10FFFFu32)
                .filter_map(char::from_u32)
                .filter(|character| {
                    let mut bytes = [0; 4];
                    let encoded = character.encode_utf8(&mut bytes).as_bytes();
                    encoded.len() == length && encoded.starts_with(prefix)
                })
                .filter(|character| {
                    let mut bytes = [0; 4];
                    let encoded = character.encode_utf8(&mut bytes).as_bytes();
                    matcher
                        .fork()
                        .accept_bytes(&encoded[prefix.len()..])
                        .is_ok()
                })
                .map(u32::from)
                .collect();
            let claimed: Vec<u32> = completing
                .iter()
                .copied()
                .filter(|&code_point| next.allowed.contains(code_point))
                .collect();
            assert_eq!(claimed, completing, "{source} after {prefix:02X?}");
            assert_eq!(
                next.allowed.len(),
                completing.len() as u64,
                "{source} after {prefix:02X?}: {:?}",
                next.rules
            );
        }
    }
}
