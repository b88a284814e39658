//! The byte-level alphabet of GPT-2-style BPE (Llama 3, SmolLM2, Qwen, ...): each byte is
//! written as one printable character, so token strings must be mapped back to bytes.

/// The character that stands for each byte, in GPT-2's `bytes_to_unicode` order:
/// printable Latin-1 bytes stand for themselves, the others are shifted to U+0100 onwards.
pub fn byte_to_char() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut shifted = 0u32;
    for byte in 0..=255u8 {
        let printable = matches!(byte, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        table[byte as usize] = if printable {
            char::from(byte)
        } else {
            let character = char::from_u32(256 + shifted).expect("below U+0200");
            shifted += 1;
            character
        };
    }
    table
}

/// Maps byte-level characters back to bytes.
pub struct ByteLevelDecoder {
    /// For each character below U+0200 (the whole alphabet), its byte plus one; 0: none.
    to_byte: [u16; 512],
}

impl ByteLevelDecoder {
    /// The decoder for GPT-2's alphabet.
    pub fn new() -> ByteLevelDecoder {
        let mut to_byte = [0u16; 512];
        for (byte, &character) in byte_to_char().iter().enumerate() {
            to_byte[character as usize] = byte as u16 + 1;
        }
        ByteLevelDecoder { to_byte }
    }

    /// The bytes a byte-level token string stands for; `None` if it holds a character
    /// outside the alphabet (then it is not a byte-level token).
    pub fn decode(&self, token: &str) -> Option<Vec<u8>> {
        token
            .chars()
            .map(|character| match self.to_byte.get(character as usize) {
                Some(&entry) if entry > 0 => Some((entry - 1) as u8),
                _ => None,
            })
            .collect()
    }
}

impl Default for ByteLevelDecoder {
    fn default() -> ByteLevelDecoder {
        ByteLevelDecoder::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alphabet_is_a_bijection_with_known_points() {
        let table = byte_to_char();
        let distinct: std::collections::HashSet<char> = table.iter().copied().collect();
        assert_eq!(distinct.len(), 256);
        assert_eq!(table[b' ' as usize], 'Ġ');
        assert_eq!(table[b'\n' as usize], 'Ċ');
        assert_eq!(table[b'a' as usize], 'a');
        let decoder = ByteLevelDecoder::new();
        assert_eq!(decoder.decode("ĠHello").unwrap(), b" Hello");
        assert_eq!(decoder.decode("Ã©").unwrap(), "é".as_bytes());
        assert_eq!(decoder.decode("\u{4e16}"), None);
    }
}
