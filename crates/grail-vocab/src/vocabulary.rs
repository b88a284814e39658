//! The vocabulary: every token's exact bytes and which tokens are special.

/// What a token is to the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// Ordinary text: grammars match its bytes.
    Text,
    /// A special or control token (`<|eot_id|>`, `<|im_start|>`): never matched as text,
    /// only by token elements (`<[id]>`, `<|eot_id|>` written as `<...>`, `!<...>`).
    Special,
}

/// A token vocabulary: for each id its exact bytes (special tokens: their text) and
/// kind, plus the ids that end generation.
///
/// The bytes of all tokens are kept in one buffer, and the lookup by text is a list of
/// ids sorted by their bytes: a 128k vocabulary takes about its bytes plus 9 bytes a
/// token, not a heap allocation per token and a second copy in a hash map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vocabulary {
    name: String,
    /// Every token's bytes, one after the other.
    bytes: Vec<u8>,
    /// `ends[id]`: where token `id`'s bytes end in `bytes` (it starts where `id - 1`'s end).
    ends: Vec<u32>,
    kinds: Vec<TokenKind>,
    end_of_generation: Vec<u32>,
    begin_of_text: Option<u32>,
    /// The ids sorted by bytes; among equal bytes the one `id_of_text` answers first
    /// (special tokens first, then the lowest id).
    by_text: Vec<u32>,
}

/// Texts of special tokens that end generation in common model families (llama.cpp keeps
/// a similar list), added to the end-of-generation ids a vocabulary names.
pub const END_OF_GENERATION_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|end_of_text|>",
    "<|im_end|>",
    "<|endoftext|>",
    "<|eom_id|>",
    "<|end|>",
    "<end_of_turn>",
    "</s>",
    "<eos>",
    "<|return|>",
    "<|call|>",
];

impl Vocabulary {
    /// A vocabulary from token bytes and kinds. The end-of-generation ids are the given
    /// ones (those outside the vocabulary dropped) plus every special token whose text is
    /// in [`END_OF_GENERATION_TEXTS`] (as llama.cpp also ends on `<|eom_id|>`, ...).
    pub fn new(
        name: impl Into<String>,
        tokens: Vec<Vec<u8>>,
        kinds: Vec<TokenKind>,
        end_of_generation: Vec<u32>,
        begin_of_text: Option<u32>,
    ) -> Vocabulary {
        assert_eq!(tokens.len(), kinds.len(), "one kind per token");
        let count = tokens.len() as u32;
        let total: usize = tokens.iter().map(Vec::len).sum();
        assert!(
            u32::try_from(total).is_ok(),
            "a vocabulary's bytes fit in 4 GiB"
        );
        let mut bytes = Vec::with_capacity(total);
        let mut ends = Vec::with_capacity(tokens.len());
        for token in tokens {
            bytes.extend_from_slice(&token);
            ends.push(bytes.len() as u32);
        }
        let mut vocabulary = Vocabulary {
            name: name.into(),
            bytes,
            ends,
            kinds,
            end_of_generation: Vec::new(),
            begin_of_text: begin_of_text.filter(|&id| id < count),
            by_text: (0..count).collect(),
        };
        let mut by_text = std::mem::take(&mut vocabulary.by_text);
        by_text.sort_unstable_by(|&a, &b| {
            vocabulary
                .bytes(a)
                .cmp(vocabulary.bytes(b))
                .then_with(|| vocabulary.is_special(b).cmp(&vocabulary.is_special(a)))
                .then(a.cmp(&b))
        });
        vocabulary.by_text = by_text;
        let mut end_of_generation: Vec<u32> = end_of_generation
            .into_iter()
            .filter(|&id| id < count)
            .collect();
        end_of_generation.extend(
            END_OF_GENERATION_TEXTS
                .iter()
                .filter_map(|text| vocabulary.id_of_text(text))
                .filter(|&id| vocabulary.is_special(id)),
        );
        end_of_generation.sort_unstable();
        end_of_generation.dedup();
        vocabulary.end_of_generation = end_of_generation;
        vocabulary
    }

    /// The vocabulary's name (the file it came from, or the name it declares).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many tokens.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True for a vocabulary with no tokens.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The exact bytes of token `id` (a special token's text for special tokens).
    pub fn bytes(&self, id: u32) -> &[u8] {
        let id = id as usize;
        let start = if id == 0 {
            0
        } else {
            self.ends[id - 1] as usize
        };
        &self.bytes[start..self.ends[id] as usize]
    }

    /// The kind of token `id`.
    pub fn kind(&self, id: u32) -> TokenKind {
        self.kinds[id as usize]
    }

    /// True when token `id` is special (never matched as text).
    pub fn is_special(&self, id: u32) -> bool {
        self.kinds[id as usize] == TokenKind::Special
    }

    /// The text a grammar matches for token `id`: its bytes, or `None` for special tokens.
    pub fn text(&self, id: u32) -> Option<&[u8]> {
        (!self.is_special(id)).then(|| self.bytes(id))
    }

    /// The ids that end generation (sorted).
    pub fn end_of_generation(&self) -> &[u32] {
        &self.end_of_generation
    }

    /// True when `id` ends generation.
    pub fn is_end_of_generation(&self, id: u32) -> bool {
        self.end_of_generation.binary_search(&id).is_ok()
    }

    /// The beginning-of-text id, if the vocabulary names one.
    pub fn begin_of_text(&self) -> Option<u32> {
        self.begin_of_text
    }

    /// The id of the token whose text is exactly `text` (special tokens preferred), for
    /// grammar tokens written as `<text>`.
    pub fn id_of_text(&self, text: &str) -> Option<u32> {
        let first = self
            .by_text
            .partition_point(|&id| self.bytes(id) < text.as_bytes());
        let &id = self.by_text.get(first)?;
        (self.bytes(id) == text.as_bytes()).then_some(id)
    }

    /// The id of the special token whose text is exactly `text`, if there is one.
    pub fn special_id_of_text(&self, text: &str) -> Option<u32> {
        self.id_of_text(text).filter(|&id| self.is_special(id))
    }

    /// All ids with their bytes and kinds.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &[u8], TokenKind)> {
        (0..self.len() as u32).map(|id| (id, self.bytes(id), self.kinds[id as usize]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocabulary(tokens: &[(&str, TokenKind)]) -> Vocabulary {
        Vocabulary::new(
            "test",
            tokens
                .iter()
                .map(|(text, _)| text.as_bytes().to_vec())
                .collect(),
            tokens.iter().map(|&(_, kind)| kind).collect(),
            Vec::new(),
            None,
        )
    }

    #[test]
    fn bytes_come_back_as_given() {
        let tokens = [
            ("", TokenKind::Text),
            ("ab", TokenKind::Text),
            ("<s>", TokenKind::Special),
            ("é", TokenKind::Text),
        ];
        let vocabulary = vocabulary(&tokens);
        assert_eq!(vocabulary.len(), 4);
        let read: Vec<(u32, Vec<u8>, TokenKind)> = vocabulary
            .iter()
            .map(|(id, bytes, kind)| (id, bytes.to_vec(), kind))
            .collect();
        let expected: Vec<(u32, Vec<u8>, TokenKind)> = tokens
            .iter()
            .enumerate()
            .map(|(id, (text, kind))| (id as u32, text.as_bytes().to_vec(), *kind))
            .collect();
        assert_eq!(read, expected);
    }

    #[test]
    fn text_lookup_prefers_special_tokens_then_the_first_id() {
        let vocabulary = vocabulary(&[
            ("a", TokenKind::Text),
            ("<s>", TokenKind::Text),
            ("a", TokenKind::Special),
            ("<s>", TokenKind::Special),
            ("<s>", TokenKind::Special),
            ("b", TokenKind::Text),
            ("b", TokenKind::Text),
            ("<|eot_id|>", TokenKind::Special),
        ]);
        assert_eq!(vocabulary.id_of_text("a"), Some(2));
        assert_eq!(vocabulary.id_of_text("<s>"), Some(3));
        assert_eq!(vocabulary.id_of_text("b"), Some(5));
        assert_eq!(vocabulary.id_of_text("c"), None);
        assert_eq!(vocabulary.id_of_text(""), None);
        assert_eq!(vocabulary.end_of_generation(), [7]);
    }
}
