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
    to_byte: std::collections::HashMap<char, u8>,
}

impl ByteLevelDecoder {
    /// The decoder for GPT-2's alphabet.
    pub fn new() -> ByteLevelDecoder {
        let to_byte = byte_to_char()
            .iter()
            .enumerate()
            .map(|(byte, &character)| (character, byte as u8))
            .collect();
        ByteLevelDecoder { to_byte }
    }

    /// The bytes a byte-level token string stands for; `None` if it holds a character
    /// outside the alphabet (then it is not a byte-level token).
    pub fn decode(&self, token: &str) -> Option<Vec<u8>> {
        token
            .chars()
            .map(|character| self.to_byte.get(&character).copied())
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
