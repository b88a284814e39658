//! Property tests of the matcher over random grammars on a small alphabet:
//! sampled strings match and all their prefixes are viable; next-character rules are
//! exactly what the matcher accepts (brute force); `forced()` agrees with the rules;
//! rollback restores the earlier state; a fork evolves independently; partial UTF-8
//! is viable exactly when some allowed character starts with it.

mod common;

use common::{ALPHABET, compile, grammar_text, samples};
use grail_engine::Matcher;
use proptest::prelude::*;

/// The characters of ALPHABET the matcher accepts next, tried one by one on forks.
fn brute_force_next(matcher: &Matcher) -> Vec<char> {
    ALPHABET
        .iter()
        .copied()
        .filter(|&character| matcher.fork().accept_char(character).is_ok())
        .collect()
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn sampled_strings_match_and_every_prefix_is_viable(text in grammar_text(), seed in any::<u64>()) {
        let grammar = compile(&text);
        for sample in samples(&grammar, seed, 8) {
            let mut matcher = Matcher::new(&grammar);
            for (offset, byte) in sample.bytes().enumerate() {
                prop_assert!(matcher.accept_bytes(&[byte]).is_ok(), "{text}{sample:?} rejected at byte {offset}");
                prop_assert!(matcher.is_viable());
            }
            prop_assert!(matcher.is_accepting(), "{text}{sample:?} is not a complete match");
        }
    }

    #[test]
    fn next_characters_are_exactly_what_is_accepted(text in grammar_text(), seed in any::<u64>(), cut in any::<prop::sample::Index>()) {
        let grammar = compile(&text);
        let mut inputs = samples(&grammar, seed, 4);
        inputs.push(String::new());
        for sample in inputs {
            let characters: Vec<char> = sample.chars().collect();
            let prefix: String = characters[..cut.index(characters.len() + 1)].iter().collect();
            let mut matcher = Matcher::new(&grammar);
            prop_assert!(matcher.accept_str(&prefix).is_ok());
            let next = matcher.next_characters();
            let claimed: Vec<char> = ALPHABET.iter().copied().filter(|&c| next.allowed.contains(u32::from(c))).collect();
            prop_assert_eq!(&claimed, &brute_force_next(&matcher), "{} after {:?}: {:?}", text, prefix, next.rules);
            prop_assert_eq!(next.end, matcher.is_accepting());
            // `forced()` agrees: each forced character is the only one allowed, with no end.
            let forced = matcher.forced(20);
            let mut probe = matcher.fork();
            for character in forced.chars() {
                let rules = probe.next_characters();
                prop_assert!(!rules.end && rules.allowed.len() == 1 && rules.allowed.contains(u32::from(character)));
                probe.accept_char(character).unwrap();
            }
            if forced.chars().count() < 20 {
                let rules = probe.next_characters();
                prop_assert!(rules.end || rules.allowed.len() != 1 || !rules.rules.iter().all(|rule| matches!(rule, grail_engine::NextRule::Char(_))));
            }
        }
    }

    #[test]
    fn rollback_restores_and_forks_are_independent(text in grammar_text(), seed in any::<u64>(), back in 0usize..12) {
        let grammar = compile(&text);
        for sample in samples(&grammar, seed, 3) {
            let mut matcher = Matcher::new(&grammar);
            matcher.accept_str(&sample).unwrap();
            let fork = matcher.fork();
            let back = back.min(matcher.history_len());
            prop_assert!(matcher.rollback(back));
            let kept = &sample.as_bytes()[..sample.len() - back];
            let mut fresh = Matcher::new(&grammar);
            fresh.accept_bytes(kept).unwrap();
            prop_assert_eq!(matcher.is_accepting(), fresh.is_accepting());
            prop_assert_eq!(matcher.next_characters(), fresh.next_characters());
            prop_assert_eq!(matcher.offset(), kept.len() as u64);
            // Continuing after the rollback behaves like continuing the fresh matcher.
            let rest = &sample.as_bytes()[sample.len() - back..];
            prop_assert!(matcher.accept_bytes(rest).is_ok());
            prop_assert!(matcher.is_accepting());
            // The fork taken before the rollback still sits at the end of the sample.
            prop_assert!(fork.is_accepting());
            prop_assert_eq!(fork.offset(), sample.len() as u64);
        }
    }

    #[test]
    fn a_partial_character_is_viable_exactly_when_an_allowed_character_starts_with_it(text in grammar_text(), seed in any::<u64>()) {
        let grammar = compile(&text);
        for sample in samples(&grammar, seed, 3) {
            let mut matcher = Matcher::new(&grammar);
            for character in sample.chars() {
                let allowed = matcher.next_characters().allowed;
                for lead in [0xC3u8, 0xE4, 0xF0] {
                    let viable = matcher.fork().accept_bytes(&[lead]).is_ok();
                    let (low, high) = lead_range(lead);
                    let starts_an_allowed_character = !allowed
                        .intersection(&grail_engine::ScalarSet::from_ranges([(low, high)]))
                        .is_empty();
                    prop_assert_eq!(viable, starts_an_allowed_character, "{} lead {:x}", text, lead);
                }
                matcher.accept_char(character).unwrap();
            }
        }
    }
}

/// The code points whose UTF-8 encoding starts with `lead`.
fn lead_range(lead: u8) -> (u32, u32) {
    match lead {
        0xC3 => (0xC0, 0xFF),
        0xE4 => (0x4000, 0x4FFF),
        0xF0 => (0x10000, 0x3FFFF),
        _ => unreachable!(),
    }
}
