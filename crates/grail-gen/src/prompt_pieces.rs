//! Long prompts cut into pieces that llama.cpp tokenizes one by one with the tokens it
//! gives the whole. Its reading of special tokens in a text rescans the text's fragments
//! for every occurrence, which grows with the square of a long conversation (SmolLM2,
//! `llama-tokenize` with special tokens parsed: 5,000 / 10,000 / 20,000 messages in
//! 0.97 / 2.45 / 7.66 s, 0.6 s for 20,000 without); pieces keep each rescan short.

/// Prompts up to this many bytes are tokenized whole.
pub(crate) const PIECE_BYTES: usize = 32 * 1024;

/// Cuts `text` into pieces of at least `piece_bytes` bytes (the last may be shorter), each
/// cut right before an occurrence of one of `anchors` (texts llama.cpp reads as special
/// tokens and strips no whitespace beside, such as a chat template's end-of-turn token)
/// where
/// - the byte before it is not whitespace,
/// - and no occurrence of a text of `specials` (every text llama.cpp reads as a special
///   token, anchors included) overlaps it, but those starting where it starts,
///
/// so the cut is a boundary of llama.cpp's own split of the whole text into special tokens
/// and the text between them, which it tokenizes fragment by fragment. Without such a
/// place, the text stays whole.
pub(crate) fn special_token_pieces<'t>(
    text: &'t str,
    anchors: &[&str],
    specials: &[&str],
    piece_bytes: usize,
) -> Vec<&'t str> {
    let anchors: Vec<&str> = anchors
        .iter()
        .copied()
        .filter(|anchor| !anchor.is_empty())
        .collect();
    let specials: Vec<&str> = specials
        .iter()
        .chain(&anchors)
        .copied()
        .filter(|special| !special.is_empty())
        .collect();
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut search = piece_bytes;
    while search < text.len() {
        let Some(cut) = next_cut(text, &anchors, &specials, search) else {
            break;
        };
        if cut > start {
            pieces.push(&text[start..cut]);
            start = cut;
        }
        search = cut + piece_bytes.max(1);
    }
    pieces.push(&text[start..]);
    pieces
}

/// The first place at or after `from` where [`special_token_pieces`] may cut.
fn next_cut(text: &str, anchors: &[&str], specials: &[&str], mut from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let longest = specials.iter().map(|special| special.len()).max()?;
    while from < text.len() {
        while !text.is_char_boundary(from) {
            from += 1;
        }
        let found = anchors
            .iter()
            .filter_map(|anchor| {
                text[from..]
                    .find(anchor)
                    .map(|at| (from + at, anchor.len()))
            })
            .min()?;
        let (at, length) = found;
        let clear_before = at > 0 && !bytes[at - 1].is_ascii_whitespace();
        if clear_before && !overlapped(text, specials, at, at + length, longest) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// True when an occurrence of an anchor other than one starting at `start` overlaps
/// `start..end`.
fn overlapped(text: &str, anchors: &[&str], start: usize, end: usize, longest: usize) -> bool {
    let bytes = text.as_bytes();
    let first = start.saturating_sub(longest - 1);
    (first..end).filter(|&at| at != start).any(|at| {
        anchors
            .iter()
            .any(|anchor| bytes[at..].starts_with(anchor.as_bytes()) && at + anchor.len() > start)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_texts_and_texts_without_anchors_stay_whole() {
        assert_eq!(
            special_token_pieces("abc<e>", &["<e>"], &[], 64),
            ["abc<e>"]
        );
        let long = "x".repeat(200);
        assert_eq!(
            special_token_pieces(&long, &["<e>"], &[], 16),
            [long.as_str()]
        );
        assert_eq!(special_token_pieces(&long, &[], &[], 16), [long.as_str()]);
    }

    #[test]
    fn cuts_fall_before_anchors_that_follow_no_whitespace() {
        let text = "hello<e>\n<s>user\nthere <e>\n<s>a\nb<e>\n<s>c\nend";
        let pieces = special_token_pieces(text, &["<e>"], &["<s>"], 4);
        assert_eq!(pieces.concat(), text);
        assert_eq!(
            pieces,
            [
                "hello",
                "<e>\n<s>user\nthere <e>\n<s>a\nb",
                "<e>\n<s>c\nend"
            ]
        );
    }

    #[test]
    fn an_overlapping_anchor_blocks_the_cut() {
        // `<e>` inside `x<e` (another special text starting earlier) is not a boundary.
        let text = "aaaaax<e>bbbbbb<e>";
        let pieces = special_token_pieces(text, &["<e>"], &["x<e"], 2);
        assert_eq!(pieces.concat(), text);
        assert!(
            pieces.iter().all(|piece| !piece.starts_with("<e>bbb")),
            "{pieces:?}"
        );
        assert_eq!(pieces, ["aaaaax<e>bbbbbb", "<e>"]);
    }

    #[test]
    fn pieces_always_join_to_the_text() {
        let mut text = String::new();
        for turn in 0..500 {
            text.push_str("<s>user\n");
            text.push_str(&"é word ".repeat(turn % 7));
            text.push_str(if turn % 3 == 0 { " " } else { "." });
            text.push_str("<e>\n");
        }
        for piece_bytes in [1, 7, 100, 1000, 100_000] {
            let pieces = special_token_pieces(&text, &["<e>", "<s>"], &[], piece_bytes);
            assert_eq!(pieces.concat(), text);
            for piece in &pieces[1..] {
                assert!(piece.starts_with("<e>") || piece.starts_with("<s>"));
            }
        }
    }
}
