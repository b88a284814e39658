"""The Python API on small vocabularies made here."""

import json

import numpy as np
import pytest

import grail_gbnf as grail
from conftest import token_id


def greedy_tokenizer(vocabulary):
    """Longest token first, over the vocabulary's text tokens (not the end token)."""
    texts = {vocabulary.token_bytes(index): index for index in range(1, vocabulary.size)}
    longest = max(len(text) for text in texts)

    def tokenize(data):
        ids, start = [], 0
        while start < len(data):
            for end in range(min(len(data), start + longest), start, -1):
                if data[start:end] in texts:
                    ids.append(texts[data[start:end]])
                    start = end
                    break
            else:
                return None
        return ids

    return tokenize


def test_jump_forward_holds_back_a_token_that_could_merge_with_what_follows(tiny_vocabulary):
    grammar = grail.Grammar.from_gbnf('root ::= "{\\"yes\\"" ("}" | ",\\"no\\"}")')
    matcher = grail.Matcher(grammar, tiny_vocabulary)
    tokenize = greedy_tokenizer(tiny_vocabulary)
    assert matcher.jump_forward_bytes() == b'{"yes"'
    assert tokenize(b'{"yes"') == [token_id(tiny_vocabulary, t) for t in ['{"', "yes", '"']]
    # The closing quote may be the start of `"}`: only `{"` and `yes` are safe.
    tokens = matcher.jump_forward_tokens(tokenize)
    assert tokens == [token_id(tiny_vocabulary, '{"'), token_id(tiny_vocabulary, "yes")]
    assert matcher.jump_forward_bytes(max_bytes=2) == b'{"'
    assert matcher.accept_tokens(tokens)
    assert matcher.jump_forward_tokens(tokenize) == []  # `"` then a choice
    assert matcher.accept_tokens([token_id(tiny_vocabulary, '"}'), 0])
    assert matcher.jump_forward_bytes() == b"" and matcher.jump_forward_tokens(tokenize) == []


def test_jump_forward_reports_a_tokenizer_that_fails_or_misspells(tiny_vocabulary):
    matcher = grail.Matcher(grail.Grammar.from_gbnf('root ::= "no" [0-9]'), tiny_vocabulary)
    assert matcher.jump_forward_tokens(lambda data: None) == []
    with pytest.raises(ValueError, match="spell"):
        matcher.jump_forward_tokens(lambda data: [token_id(tiny_vocabulary, "yes")])

    def broken(data):
        raise RuntimeError("no tokenizer here")

    with pytest.raises(RuntimeError, match="no tokenizer here"):
        matcher.jump_forward_tokens(broken)
    with pytest.raises(TypeError):
        matcher.jump_forward_tokens(lambda data: "no")


def test_grammar_from_gbnf_and_its_text():
    grammar = grail.Grammar.from_gbnf('root ::= "yes" | "no"')
    assert "root ::=" in grammar.gbnf
    assert str(grammar) == grammar.gbnf


def test_bad_grammar_raises_with_diagnostics():
    with pytest.raises(grail.GrammarError) as caught:
        grail.Grammar.from_gbnf('root ::= item\nitem ::= "a" missing')
    diagnostics = caught.value.diagnostics
    assert diagnostics[0]["code"] == "rule-undefined"
    assert (diagnostics[0]["line"], diagnostics[0]["column"]) == (2, 14)
    assert "missing" in diagnostics[0]["message"]
    assert isinstance(caught.value, ValueError)


def test_refused_schema_raises_with_pointer_and_keyword():
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "(?=x)"}}}
    with pytest.raises(grail.SchemaError) as caught:
        grail.Grammar.from_json_schema(schema)
    diagnostic = caught.value.diagnostics[0]
    assert (diagnostic["pointer"], diagnostic["keyword"]) == ("/properties/a", "pattern")
    # Lenient: weakened, not refused.
    grail.Grammar.from_json_schema(schema, lenient=True)
    # JSON text works as well as a dict.
    grail.Grammar.from_json_schema(json.dumps({"type": "integer"}))


def test_matcher_accepts_rolls_back_and_terminates(tiny_vocabulary):
    grammar = grail.Grammar.from_gbnf('root ::= "yes" | "no"')
    matcher = grail.Matcher(grammar, tiny_vocabulary)
    yes, no, y = token_id(tiny_vocabulary, "yes"), token_id(tiny_vocabulary, "no"), token_id(tiny_vocabulary, "y")
    assert matcher.allowed_tokens() == sorted([yes, no, y, token_id(tiny_vocabulary, "n")])
    assert not matcher.accept_token(token_id(tiny_vocabulary, "x"))
    assert matcher.accept_token(y)
    assert not matcher.is_accepting()
    assert matcher.forced() == "es"
    matcher.rollback(1)
    assert matcher.accept_token(yes)
    assert matcher.is_accepting() and matcher.is_terminated()
    assert matcher.allowed_tokens() == [0]  # only the end token
    assert matcher.accept_token(0)
    assert matcher.is_terminated() and matcher.allowed_tokens() == []
    matcher.rollback(2)
    assert matcher.allowed_tokens() == sorted([yes, no, y, token_id(tiny_vocabulary, "n")])
    with pytest.raises(ValueError):
        matcher.rollback(1)
    assert matcher.accept_tokens([token_id(tiny_vocabulary, "n"), token_id(tiny_vocabulary, "o")])
    assert not matcher.accept_tokens([0, 0])  # all or nothing
    assert matcher.is_accepting()
    matcher.reset()
    # A draft checked without moving: "y", "e", "s", the end, and nothing after it.
    draft = [y, token_id(tiny_vocabulary, "e"), token_id(tiny_vocabulary, "s"), 0, y]
    assert matcher.validate_tokens(draft) == 4
    assert matcher.validate_tokens([token_id(tiny_vocabulary, "x")]) == 0
    assert matcher.allowed_tokens() == sorted([yes, no, y, token_id(tiny_vocabulary, "n")])
    assert not matcher.is_accepting()


def test_bitmask_rows_and_apply(tiny_vocabulary):
    grammar = grail.Grammar.from_gbnf('root ::= [a-c]+')
    matcher = grail.Matcher(grammar, tiny_vocabulary)
    bitmask = grail.allocate_token_bitmask(2, tiny_vocabulary.size)
    assert bitmask.dtype == np.int32 and bitmask.shape == (2, (tiny_vocabulary.size + 31) // 32)
    assert (bitmask == -1).all()
    matcher.fill_next_token_bitmask(bitmask, 1)
    allowed = [token_id(tiny_vocabulary, c) for c in "abc"]
    assert grail.bitmask_to_token_ids(bitmask, 1) == allowed
    assert grail.bitmask_to_token_ids(bitmask, 0, tiny_vocabulary.size) == list(range(tiny_vocabulary.size))
    logits = np.zeros((2, tiny_vocabulary.size + 5), dtype=np.float32)
    grail.apply_token_bitmask_inplace(logits, bitmask)
    assert np.flatnonzero(np.isfinite(logits[1])).tolist() == allowed
    # Past the vocabulary (a model's padding), a filled row allows nothing; an unfilled
    # row (all bits set) constrains nothing within its words.
    assert np.isinf(logits[1, tiny_vocabulary.size:]).all()
    assert np.isfinite(logits[0]).all()
    with pytest.raises(IndexError):
        matcher.fill_next_token_bitmask(bitmask, 2)
    with pytest.raises(ValueError):
        matcher.fill_next_token_bitmask(np.zeros((1, 1), dtype=np.int32), 0)
    with pytest.raises(TypeError):
        matcher.fill_next_token_bitmask(np.zeros((1, 8), dtype=np.float32), 0)


def test_next_characters_in_the_gbnf_package_shape(tiny_vocabulary):
    matcher = grail.Matcher(grail.Grammar.from_gbnf('root ::= [a-c] | "x" | [^q]'), tiny_vocabulary)
    rules = matcher.next_characters()
    assert rules == [{"type": "char_exclude", "value": [ord("q")]}]
    matcher = grail.Matcher(grail.Grammar.from_gbnf('root ::= "a" [0-9]?'), tiny_vocabulary)
    assert matcher.accept_text("a")
    assert matcher.next_characters() == [{"type": "char", "value": [(ord("0"), ord("9"))]}, {"type": "end"}]
    assert not matcher.accept_text("z")


def test_tools_grammar_and_validate_call(tiny_vocabulary):
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    grammar = grail.Grammar.from_tools(tools, choice="required")
    matcher = grail.Matcher(grammar, tiny_vocabulary)
    assert matcher.accept_text('{"name": "get_weather", "arguments": {"city": "Oslo"}}')
    assert matcher.is_accepting()
    checked = grail.validate_call(tools, '{"name": "get_weather", "arguments": {"city": "Oslo"}}', choice="required")
    assert checked["valid"]
    assert json.loads(checked["tool_calls"][0]["function"]["arguments"]) == {"city": "Oslo"}
    refused = grail.validate_call(tools, '{"name": "get_weather", "arguments": {}}', choice="required")
    assert not refused["valid"]
    assert refused["feedback"] == "missing required arguments ['city'] for tool 'get_weather'"
    with pytest.raises(grail.ToolsError):
        grail.Grammar.from_tools([{"type": "function", "function": {"parameters": {}}}])
    with pytest.raises(grail.ToolsError) as caught:
        grail.Grammar.from_tools([{"type": "function", "function": {"name": "f", "parameters": {
            "type": "object", "properties": {"a": {"type": "array", "uniqueItems": True}}}}}])
    assert caught.value.diagnostics[0]["tool"] == "f"
    assert caught.value.diagnostics[0]["keyword"] == "uniqueItems"


def test_vocabulary_errors_and_fields(tiny_vocabulary, tmp_path):
    assert tiny_vocabulary.size == len(tiny_vocabulary) == 104
    assert tiny_vocabulary.eos_token_ids == [0]
    assert tiny_vocabulary.token_bytes(0) == b"<|end|>"
    with pytest.raises(grail.VocabularyError):
        grail.Vocabulary.from_file(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(grail.VocabularyError):
        grail.Vocabulary.from_file(bad)


def test_a_bad_prefault_setting_is_refused_by_name(monkeypatch):
    # GRAIL_PREFAULT_MIB sizes the heap made resident at the first vocabulary (see
    # prefault.rs); it is read at every load, so a bad value is refused even after that.
    monkeypatch.setenv("GRAIL_PREFAULT_MIB", "lots")
    with pytest.raises(ValueError, match="GRAIL_PREFAULT_MIB.*`lots`"):
        grail.Vocabulary.from_tokens([b"a", b"b"])
    monkeypatch.setenv("GRAIL_PREFAULT_MIB", "0")
    assert grail.Vocabulary.from_tokens([b"a", b"b"]).size == 2
