//! The vocabulary: every token's exact bytes and which tokens are special.

use rustc_hash::FxHashMap;

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vocabulary {
    name: String,
    tokens: Vec<Vec<u8>>,
    kinds: Vec<TokenKind>,
    end_of_generation: Vec<u32>,
    begin_of_text: Option<u32>,
    by_text: FxHashMap<Vec<u8>, u32>,
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
        let mut by_text = FxHashMap::default();
        for (id, bytes) in tokens.iter().enumerate() {
            // The first id wins for duplicate texts (special tokens first).
            let entry = by_text.entry(bytes.clone()).or_insert(id as u32);
            if kinds[*entry as usize] == TokenKind::Text && kinds[id] == TokenKind::Special {
                *entry = id as u32;
            }
        }
        let mut end_of_generation: Vec<u32> = end_of_generation
            .into_iter()
            .filter(|&id| id < count)
            .collect();
        end_of_generation.extend(
            END_OF_GENERATION_TEXTS
                .iter()
                .filter_map(|text| by_text.get(text.as_bytes()).copied())
                .filter(|&id| kinds[id as usize] == TokenKind::Special),
        );
        end_of_generation.sort_unstable();
        end_of_generation.dedup();
        Vocabulary {
            name: name.into(),
            tokens,
            kinds,
            end_of_generation,
            begin_of_text: begin_of_text.filter(|&id| id < count),
            by_text,
        }
    }

    /// The vocabulary's name (the file it came from, or the name it declares).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// True for a vocabulary with no tokens.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The exact bytes of token `id` (a special token's text for special tokens).
    pub fn bytes(&self, id: u32) -> &[u8] {
        &self.tokens[id as usize]
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
        self.by_text.get(text.as_bytes()).copied()
    }

    /// All ids with their bytes and kinds.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &[u8], TokenKind)> {
        self.tokens
            .iter()
            .zip(&self.kinds)
            .enumerate()
            .map(|(id, (bytes, &kind))| (id as u32, bytes.as_slice(), kind))
    }
}
