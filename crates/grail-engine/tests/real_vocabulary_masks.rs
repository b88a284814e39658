//! Masks over a real vocabulary (Llama 3's 128k tokens, from `../shared/bench/vocab`)
//! against brute force (tokens accepted by a fork of the matcher), where walks take
//! shortcuts that small test vocabularies exercise less: strings searched for a needle (a
//! JSON Schema `pattern` without anchors), whose free run takes subtrees whole while the
//! needle's letters move the state on. Skips with a message where `../shared` is absent.

use std::path::PathBuf;
use std::sync::Arc;

use grail_engine::{CompiledGrammar, Matcher, TokenBitmask, VocabularyIndex};

/// The Llama 3 vocabulary, when `../shared` is beside the repository.
fn llama3() -> Option<Arc<VocabularyIndex>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/bench/vocab/llama3.vocab.json");
    if !path.is_file() {
        eprintln!("skipped: {} not found", path.display());
        return None;
    }
    let vocabulary = grail_vocab::load(&path).expect("the shared Llama 3 vocabulary loads");
    Some(Arc::new(VocabularyIndex::new(vocabulary)))
}

/// The tokens checked one by one: every token with a quote or a backslash (where the
/// shortcuts could go wrong), and every 64th of the others, a byte past ASCII or not
/// (brute force over all 128k tokens takes minutes: a fork costs tens of microseconds).
fn checked_tokens(index: &VocabularyIndex) -> Vec<u32> {
    let vocabulary = index.vocabulary();
    (0..vocabulary.len() as u32)
        .filter(|&id| {
            let text = vocabulary.text(id).unwrap_or_default();
            id % 64 == 0 || text.iter().any(|&byte| matches!(byte, b'"' | b'\\'))
        })
        .collect()
}

/// Of `tokens`, those a fork of `matcher` accepts.
fn brute_force(matcher: &Matcher, tokens: &[u32]) -> Vec<u32> {
    tokens
        .iter()
        .copied()
        .filter(|&id| matcher.fork().accept_token(id).is_ok())
        .collect()
}

/// The token whose text is `text`.
fn token(index: &VocabularyIndex, text: &str) -> u32 {
    let vocabulary = index.vocabulary();
    (0..vocabulary.len() as u32)
        .find(|&id| vocabulary.text(id) == Some(text.as_bytes()))
        .unwrap_or_else(|| panic!("no token `{text}`"))
}

/// `^test|acceptance|production$` inside a JSON string, written as `grail schema` writes
/// it (a string starting with `test`, containing `acceptance` or ending with `production`,
/// its characters in canonical form), then `,` and another such string, or the end.
const SEARCHED_PATTERN: &str = r#"root ::= "\"" pattern ( "," root )?
char ::= [ -!#-[\]-~\x80-\U0010FFFF] | "\\" ["\\bfnrt] | "\\u00" ("0" [0-7BE-Fbe-f] | "1" [0-9A-Fa-f] | "7" [Ff])
pattern ::= ( "test" | "acceptance" | "production" | ( "test" | "acceptance" ) ( [ -!#-[\]-~\x80-\U0010FFFF] | "\\" ["\\bfnrt] | "\\u00" ("0" [0-7BE-Fbe-f] | "1" [0-9A-Fa-f] | "7" [Ff]) )+ | ( [ -!#-[\]-~\x80-\U0010FFFF] | "\\" ["\\bfnrt] | "\\u00" ("0" [0-7BE-Fbe-f] | "1" [0-9A-Fa-f] | "7" [Ff]) )+ ( "acceptance" | "production" ) | ( [ -!#-[\]-~\x80-\U0010FFFF] | "\\" ["\\bfnrt] | "\\u00" ("0" [0-7BE-Fbe-f] | "1" [0-9A-Fa-f] | "7" [Ff]) )+ "acceptance" ( [ -!#-[\]-~\x80-\U0010FFFF] | "\\" ["\\bfnrt] | "\\u00" ("0" [0-7BE-Fbe-f] | "1" [0-9A-Fa-f] | "7" [Ff]) )+ ) "\"""#;

#[test]
fn masks_equal_brute_force_in_a_searched_pattern_over_llama3() {
    let Some(index) = llama3() else {
        return;
    };
    let grammar = CompiledGrammar::from_gbnf(SEARCHED_PATTERN).expect("the grammar compiles");
    let size = index.vocabulary().len();
    let checked = checked_tokens(&index);
    // Twice: the second matcher walks along what the first learned (its first masks).
    for round in 0..2 {
        let mut matcher = Matcher::with_vocabulary(&grammar, index.clone());
        let mut mask = TokenBitmask::new(size);
        let texts = [
            "\"", "x", "accept", "ance", " pro", "duction", "\",\"", "test", "\"",
        ];
        for (step, text) in texts.iter().enumerate() {
            if step > 0 && (round == 0 || step <= 3) {
                matcher.fill_mask(&mut mask);
                let allowed: Vec<u32> = checked
                    .iter()
                    .copied()
                    .filter(|&id| mask.is_set(id))
                    .collect();
                assert_eq!(
                    allowed,
                    brute_force(&matcher, &checked),
                    "round {round}, before `{text}` (after {:?})",
                    &texts[..step]
                );
            }
            let id = token(&index, text);
            matcher
                .accept_token(id)
                .unwrap_or_else(|error| panic!("`{text}` refused: {error:?}"));
        }
    }
}
