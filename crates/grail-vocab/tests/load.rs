//! Loading vocabularies: small files kept in `testdata/vocab` (byte-level and
//! SentencePiece tokenizer.json, vocab.json, a GGUF written here), and, when
//! `../shared/bench/vocab` is present, the real Llama 3 and SmolLM2 vocabularies in every
//! form, which must agree token for token.

use std::path::{Path, PathBuf};

use grail_vocab::{TokenKind, VocabError, load};

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn testdata(name: &str) -> PathBuf {
    repository_root().join("testdata/vocab").join(name)
}

#[test]
fn byte_level_tokens_map_back_to_bytes() {
    let vocabulary = load(&testdata("byte-level.tokenizer.json")).unwrap();
    assert_eq!(vocabulary.len(), 9);
    assert_eq!(vocabulary.bytes(3), b" a");
    assert_eq!(vocabulary.bytes(4), b"\n");
    assert_eq!(vocabulary.bytes(5), &[0xC3]);
    assert_eq!(vocabulary.bytes(8), b"{\"");
    assert_eq!(vocabulary.kind(7), TokenKind::Special);
    assert_eq!(vocabulary.text(7), None);
    // No tokenizer_config.json: end of generation comes from the special tokens' names.
    assert_eq!(vocabulary.end_of_generation(), &[0, 7]);
    assert_eq!(vocabulary.id_of_text("<|im_end|>"), Some(7));
}

#[test]
fn sentencepiece_tokens_use_spaces_and_byte_fallback() {
    let vocabulary = load(&testdata("sentencepiece.tokenizer.json")).unwrap();
    assert_eq!(vocabulary.bytes(3), b"\n");
    assert_eq!(vocabulary.bytes(4), &[0xC3]);
    assert_eq!(vocabulary.bytes(5), b" hello");
    assert_eq!(vocabulary.end_of_generation(), &[2]);
}

#[test]
fn neutral_vocab_json_is_read_as_hex() {
    let vocabulary = load(&testdata("tiny.vocab.json")).unwrap();
    assert_eq!(vocabulary.name(), "tiny");
    assert_eq!(vocabulary.bytes(1), b" b");
    assert_eq!(vocabulary.bytes(2), &[0xC3]);
    assert!(vocabulary.is_special(3));
    assert_eq!(vocabulary.end_of_generation(), &[3]);
}

/// Writes a minimal GGUF (version 3, no tensors) with the given tokens and types.
fn write_gguf(path: &Path, model: &str, tokens: &[&[u8]], types: &[i32], eos: u32) {
    let mut out = Vec::new();
    let string = |out: &mut Vec<u8>, text: &[u8]| {
        out.extend_from_slice(&(text.len() as u64).to_le_bytes());
        out.extend_from_slice(text);
    };
    out.extend_from_slice(b"GGUF");
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&7u64.to_le_bytes());
    string(&mut out, b"general.architecture");
    out.extend_from_slice(&8u32.to_le_bytes());
    string(&mut out, b"llama");
    // Metadata the vocabulary skips: an array of strings and an array of floats.
    string(&mut out, b"tokenizer.ggml.merges");
    out.extend_from_slice(&9u32.to_le_bytes());
    out.extend_from_slice(&8u32.to_le_bytes());
    out.extend_from_slice(&2u64.to_le_bytes());
    string(&mut out, b"a b");
    string(&mut out, b"ab c");
    string(&mut out, b"tokenizer.ggml.scores");
    out.extend_from_slice(&9u32.to_le_bytes());
    out.extend_from_slice(&6u32.to_le_bytes());
    out.extend_from_slice(&(tokens.len() as u64).to_le_bytes());
    for _ in tokens {
        out.extend_from_slice(&(-1.5f32).to_le_bytes());
    }
    string(&mut out, b"tokenizer.ggml.model");
    out.extend_from_slice(&8u32.to_le_bytes());
    string(&mut out, model.as_bytes());
    string(&mut out, b"tokenizer.ggml.tokens");
    out.extend_from_slice(&9u32.to_le_bytes());
    out.extend_from_slice(&8u32.to_le_bytes());
    out.extend_from_slice(&(tokens.len() as u64).to_le_bytes());
    for token in tokens {
        string(&mut out, token);
    }
    string(&mut out, b"tokenizer.ggml.token_type");
    out.extend_from_slice(&9u32.to_le_bytes());
    out.extend_from_slice(&5u32.to_le_bytes());
    out.extend_from_slice(&(types.len() as u64).to_le_bytes());
    for token_type in types {
        out.extend_from_slice(&token_type.to_le_bytes());
    }
    string(&mut out, b"tokenizer.ggml.eos_token_id");
    out.extend_from_slice(&4u32.to_le_bytes());
    out.extend_from_slice(&eos.to_le_bytes());
    std::fs::write(path, out).unwrap();
}

#[test]
fn gguf_metadata_gives_tokens_types_and_end_of_generation() {
    let directory = std::env::temp_dir().join(format!("grail-vocab-test-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let spm = directory.join("spm.gguf");
    write_gguf(
        &spm,
        "llama",
        &[b"<s>", b"</s>", "▁hi".as_bytes(), b"<0x0A>"],
        &[3, 3, 1, 6],
        1,
    );
    let vocabulary = load(&spm).unwrap();
    assert_eq!(vocabulary.bytes(2), b" hi");
    assert_eq!(vocabulary.bytes(3), b"\n");
    assert!(vocabulary.is_special(0));
    assert_eq!(vocabulary.end_of_generation(), &[1]);
    let gpt2 = directory.join("gpt2.gguf");
    write_gguf(&gpt2, "gpt2", &["Ġa".as_bytes(), b"<|eot_id|>"], &[1, 3], 1);
    let vocabulary = load(&gpt2).unwrap();
    assert_eq!(vocabulary.bytes(0), b" a");
    assert_eq!(vocabulary.text(1), None);
    // Truncated files are errors, not panics.
    let bytes = std::fs::read(&gpt2).unwrap();
    for cut in [5, 20, bytes.len() - 3] {
        let truncated = directory.join("cut.gguf");
        std::fs::write(&truncated, &bytes[..cut]).unwrap();
        assert!(
            matches!(load(&truncated), Err(VocabError::Malformed { .. })),
            "cut at {cut}"
        );
    }
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn bad_files_are_clear_errors() {
    let missing = load(Path::new("/nonexistent/tokenizer.json")).unwrap_err();
    assert!(matches!(missing, VocabError::Io { .. }));
    let directory = std::env::temp_dir().join(format!("grail-vocab-bad-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let other = directory.join("other.json");
    std::fs::write(&other, r#"{"hello": 1}"#).unwrap();
    assert!(matches!(load(&other), Err(VocabError::Unsupported { .. })));
    std::fs::write(&other, r#"{"tokens_hex": ["6"]}"#).unwrap();
    let error = load(&other).unwrap_err().to_string();
    assert!(error.contains("tokens_hex[0]"), "{error}");
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn real_vocabularies_agree_in_every_form() {
    let shared = repository_root().join("../shared/bench/vocab");
    if !shared.is_dir() {
        eprintln!("skipped: ../shared/bench/vocab not found");
        return;
    }
    for name in ["llama3", "smollm2"] {
        let neutral = load(&shared.join(format!("{name}.vocab.json"))).unwrap();
        let hf = load(&shared.join(name).join("tokenizer.json")).unwrap();
        assert_eq!(neutral.len(), hf.len(), "{name}");
        for id in 0..neutral.len() as u32 {
            assert_eq!(neutral.bytes(id), hf.bytes(id), "{name}: token {id}");
            assert_eq!(neutral.kind(id), hf.kind(id), "{name}: token {id} kind");
        }
        assert!(
            hf.end_of_generation()
                .iter()
                .all(|id| neutral.is_end_of_generation(*id) || neutral.is_special(*id))
        );
        println!(
            "{name}: {} tokens, end of generation {:?}",
            hf.len(),
            hf.end_of_generation()
        );
    }
    let gguf = load(&shared.join("llama3/llama3-vocab-only.gguf")).unwrap();
    let neutral = load(&shared.join("llama3.vocab.json")).unwrap();
    assert_eq!(gguf.len(), neutral.len());
    for id in 0..neutral.len() as u32 {
        assert_eq!(gguf.bytes(id), neutral.bytes(id), "gguf token {id}");
        assert_eq!(gguf.kind(id), neutral.kind(id), "gguf token {id} kind");
    }
    println!(
        "llama3 gguf: end of generation {:?}",
        gguf.end_of_generation()
    );
}

#[test]
fn a_ggufs_chat_template_is_read_from_its_metadata() {
    let directory =
        std::env::temp_dir().join(format!("grail-vocab-template-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let template = "{% for m in messages %}{{ m.content }}{% endfor %}<tool_call>";
    let mut out = Vec::new();
    out.extend_from_slice(b"GGUF");
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&2u64.to_le_bytes());
    for (key, value) in [
        ("general.architecture", "llama"),
        ("tokenizer.chat_template", template),
    ] {
        out.extend_from_slice(&(key.len() as u64).to_le_bytes());
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(&8u32.to_le_bytes());
        out.extend_from_slice(&(value.len() as u64).to_le_bytes());
        out.extend_from_slice(value.as_bytes());
    }
    let path = directory.join("template.gguf");
    std::fs::write(&path, out).unwrap();
    assert_eq!(
        grail_vocab::chat_template_of_gguf(&path)
            .unwrap()
            .as_deref(),
        Some(template)
    );
    let plain = directory.join("plain.gguf");
    write_gguf(&plain, "gpt2", &[b"a", b"b"], &[1, 1], 1);
    assert_eq!(grail_vocab::chat_template_of_gguf(&plain).unwrap(), None);
    let error = grail_vocab::chat_template_of_gguf(&directory.join("none.gguf"));
    assert!(error.is_err());
    std::fs::remove_dir_all(&directory).unwrap();
}
