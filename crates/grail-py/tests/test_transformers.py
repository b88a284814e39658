"""The transformers logits processor on a tiny Llama built here from a config (random
weights, no hub): greedy, sampled, batched (rows ending at different steps) and beam
search outputs all follow the grammar. Skips with a message where torch or transformers
cannot be imported (scripts/python_test.py tries to install them)."""

import json

import pytest

import grail_gbnf as grail

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/python_test.py installs it where it can)")
transformers = pytest.importorskip("transformers", reason="transformers is not installed")

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"enum": ["yes", "no", "maybe"]}, "score": {"type": "integer", "minimum": 0, "maximum": 9}},
    "required": ["answer", "score"],
    "additionalProperties": False,
}
# Multi-character tokens so that the model has real choices between token boundaries.
WORDS = ['{"', '":', '"answer', '"score', '", "', '"yes"', '"no', 'maybe', ', ', '}', ' {']
END = "<|end|>"


@pytest.fixture(scope="module")
def tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    pieces = sorted(alphabet) + [
        "".join(alphabet_char(byte) for byte in word.encode()) for word in WORDS
    ]
    vocab = {piece: index for index, piece in enumerate(dict.fromkeys(pieces))}
    vocab[END] = len(vocab)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens([END])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=backend, eos_token=END, pad_token=END)


def alphabet_char(byte):
    """The byte-level alphabet's character for `byte` (GPT-2's bytes-to-unicode table)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    if byte in printable:
        return chr(byte)
    return chr(256 + [b for b in range(256) if b not in printable].index(byte))


@pytest.fixture(scope="module")
def model(tokenizer):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        # Padded past the tokenizer, as real checkpoints often are: the extra ids must
        # never be drawn.
        vocab_size=len(tokenizer) + 13,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=256,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    return transformers.LlamaForCausalLM(config).eval()


def generate(model, tokenizer, prompts, **options):
    grammar = grail.Grammar.from_json_schema(SCHEMA)
    processor = grail.GrailLogitsProcessor(grammar, grail.Vocabulary.from_hf(tokenizer))
    tokenizer.padding_side = "left"
    inputs = tokenizer(prompts, return_tensors="pt", padding=True)
    with torch.no_grad():
        output = model.generate(
            **inputs,
            logits_processor=transformers.LogitsProcessorList([processor]),
            max_new_tokens=40,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            **options,
        )
    return output[:, inputs["input_ids"].shape[1]:]


def assert_valid_answers(tokenizer, rows):
    for row in rows.tolist():
        assert all(token < len(tokenizer) for token in row), row
        text = tokenizer.decode(row, skip_special_tokens=True)
        value = json.loads(text)
        assert value["answer"] in ("yes", "no", "maybe") and 0 <= value["score"] <= 9, text
        assert set(value) == {"answer", "score"}, text
        # The row ends with the end token (the grammar is finite, so it always completes
        # within 40 tokens) and nothing but padding follows it.
        end = row.index(tokenizer.eos_token_id)
        assert all(token == tokenizer.pad_token_id for token in row[end:])


def test_greedy_output_follows_the_schema(model, tokenizer):
    assert_valid_answers(tokenizer, generate(model, tokenizer, ["Answer: "], do_sample=False))


def test_sampled_batch_with_rows_ending_at_different_steps(model, tokenizer):
    torch.manual_seed(1)
    rows = generate(model, tokenizer, ["Answer: ", "Is it?", "x"] * 2, do_sample=True, temperature=1.5)
    assert_valid_answers(tokenizer, rows)
    # Rows of different lengths: some ended and were padded while others went on.
    assert len({row.index(tokenizer.eos_token_id) for row in rows.tolist()}) > 1


def test_beam_search_rows_follow_the_schema(model, tokenizer):
    rows = generate(model, tokenizer, ["Answer: "], do_sample=False, num_beams=3, num_return_sequences=3)
    assert_valid_answers(tokenizer, rows)


def test_processor_refuses_a_token_outside_the_grammar(tokenizer):
    grammar = grail.Grammar.from_json_schema(SCHEMA)
    processor = grail.GrailLogitsProcessor(grammar, grail.Vocabulary.from_hf(tokenizer))
    vocab_size = len(tokenizer)
    prompt = torch.tensor([[5, 6]])
    scores = torch.zeros((1, vocab_size))
    processor(prompt, scores)
    assert torch.isinf(scores[0, tokenizer.convert_tokens_to_ids("}")])
    # A token the mask forbade, appended as if drawn anyway.
    forbidden = tokenizer.convert_tokens_to_ids("}")
    with pytest.raises(ValueError, match="does not follow the grammar"):
        processor(torch.tensor([[5, 6, forbidden]]), torch.zeros((1, vocab_size)))
