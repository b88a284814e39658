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


def test_native_masking_of_float32_logits_equals_unpacking_the_bits():
    """float32 rows on the CPU take the native path (threads, -inf in place); float64 and
    a 1-D row the others: every one gives the reference's -inf pattern."""
    rng = np.random.default_rng(7)
    rows, width = 9, 200  # 7 words cover 224 columns: 200 within, the rest none
    words = rng.integers(-(2**31), 2**31, size=(rows, 7), dtype=np.int64).astype(np.int32)
    words[1] = 0
    words[2] = -1
    bits = np.unpackbits(words.view(np.uint8), axis=-1, bitorder="little").astype(bool)[:, :width]
    for dtype in (np.float32, np.float64):
        logits = rng.standard_normal((rows, width)).astype(dtype)
        expected = np.where(bits, logits, -np.inf)
        grail.apply_token_bitmask_inplace(logits, words.copy())
        assert np.array_equal(logits, expected), dtype
    row = rng.standard_normal(width).astype(np.float32)
    expected = np.where(bits[3], row, -np.inf)
    grail.apply_token_bitmask_inplace(row, words[3].copy())
    assert np.array_equal(row, expected)
    # A padded vocabulary: columns past the bitmask's words are disallowed.
    wide = np.zeros((1, 7 * 32 + 10), dtype=np.float32)
    grail.apply_token_bitmask_inplace(wide, np.full((1, 7), -1, dtype=np.int32))
    assert np.isfinite(wide[0, :224]).all() and np.isinf(wide[0, 224:]).all()
    with pytest.raises(ValueError):
        grail._native.mask_logits(np.zeros((2, 8), dtype=np.float32), np.zeros((2, 1), dtype=np.int32), [1, 1])
    with pytest.raises(TypeError):
        grail._native.mask_logits(np.zeros((2, 8), dtype=np.float16), np.zeros((2, 1), dtype=np.int32))


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


ROLLBACK_GRAMMAR = 'root ::= ("a" [b-d] | "bc" | "yes" | "no" | "b" | "." "a")*'


def random_walk(matcher, rng, steps):
    """Accepts up to `steps` random allowed tokens (not the end token); returns them."""
    walked = []
    for _ in range(steps):
        allowed = [token for token in matcher.allowed_tokens() if token != 0]
        if not allowed:
            break
        token = rng.choice(allowed)
        assert matcher.accept_token(token)
        walked.append(token)
    return walked


def state(matcher):
    return matcher.allowed_tokens(), matcher.is_accepting(), matcher.is_terminated()


def test_max_rollback_tokens_keeps_rollback_within_k_exact_and_refuses_beyond(tiny_vocabulary):
    import random

    grammar = grail.Grammar.from_gbnf(ROLLBACK_GRAMMAR)
    assert grail.Matcher(grammar, tiny_vocabulary).max_rollback_tokens is None
    for limit in (0, 1, 3, 20):
        rng = random.Random(limit)
        limited = grail.Matcher(grammar, tiny_vocabulary, max_rollback_tokens=limit)
        full = grail.Matcher(grammar, tiny_vocabulary)
        assert limited.max_rollback_tokens == limit
        for accepted in range(1, 80):
            token = random_walk(full, rng, 1)[0]
            assert limited.accept_token(token)
            if accepted % 7 and accepted < 70:
                continue
            # Within the limit: exactly the unlimited matcher's state.
            for back in range(min(limit, accepted) + 1):
                limited_back, full_back = limited.fork(), full.fork()
                limited_back.rollback(back)
                full_back.rollback(back)
                assert state(limited_back) == state(full_back), (limit, accepted, back)
            # Beyond it (or beyond what was accepted): refused, nothing changed.
            before = state(limited)
            beyond = min(limit, accepted) + 1
            with pytest.raises(ValueError, match=f"cannot roll back {beyond} tokens: {min(limit, accepted)} are in the history"):
                limited.rollback(beyond)
            assert state(limited) == before
        # After a refusal the kept tokens still roll back.
        if limit:
            limited.rollback(limit)
            full.rollback(limit)
            assert state(limited) == state(full)


def test_max_rollback_tokens_with_drafts_longer_than_k(tiny_vocabulary):
    import random

    grammar = grail.Grammar.from_gbnf(ROLLBACK_GRAMMAR)
    limited = grail.Matcher(grammar, tiny_vocabulary, max_rollback_tokens=2)
    full = grail.Matcher(grammar, tiny_vocabulary)
    rng = random.Random(7)
    for token in random_walk(full, rng, 40):
        assert limited.accept_token(token)
    draft = random_walk(full.fork(), rng, 6) + [token_id(tiny_vocabulary, "x")]
    assert limited.validate_tokens(draft) == full.validate_tokens(draft) == 6
    assert state(limited) == state(full)
    # All or nothing, also for more tokens than can be rolled back.
    assert not limited.accept_tokens(draft)
    assert state(limited) == state(full)
    assert limited.accept_tokens(draft[:6]) and full.accept_tokens(draft[:6])
    assert state(limited) == state(full)
    limited.rollback(2)
    full.rollback(2)
    assert state(limited) == state(full)
    with pytest.raises(ValueError, match="max_rollback_tokens=2"):
        limited.rollback(1)


def draft_rows_one_by_one(matcher, draft, width):
    """The rows fill_draft_bitmasks should write: each position's fill_next_token_bitmask
    on a copy that accepts the draft token by token, until a token is refused."""
    walker, rows = matcher.fork(), []
    for position in range(len(draft) + 1):
        row = np.full((1, width), 0x5A5A, dtype=np.int32)
        walker.fill_next_token_bitmask(row, 0)
        rows.append(row[0])
        if position == len(draft) or not walker.accept_token(draft[position]):
            break
    return rows


def check_draft_rows(matcher, draft, vocabulary, index=0, extra=1):
    width = (vocabulary.size + 31) // 32 + extra
    bitmask = np.full((index + len(draft) + 2, width), 0x1234, dtype=np.int32)
    before = state(matcher)
    expected = draft_rows_one_by_one(matcher, draft, width)
    filled = matcher.fill_draft_bitmasks(draft, bitmask, index)
    assert filled == len(expected) == matcher.validate_tokens(draft) + 1
    for position, row in enumerate(expected):
        assert (bitmask[index + position] == row).all(), (draft, position)
    # Rows before `index` and after the last filled are left as they are.
    assert (bitmask[:index] == 0x1234).all() and (bitmask[index + filled:] == 0x1234).all()
    assert state(matcher) == before
    return filled, bitmask


def test_fill_draft_bitmasks_equals_masks_token_by_token(tiny_vocabulary):
    import random

    tok = lambda text: token_id(tiny_vocabulary, text)  # noqa: E731
    matcher = grail.Matcher(grail.Grammar.from_gbnf('root ::= "yes" | "no" | [a-c]+'), tiny_vocabulary)
    # A whole draft, then one refused in the middle: the rows stop there.
    assert check_draft_rows(matcher, [tok("a"), tok("b"), tok("c")], tiny_vocabulary)[0] == 4
    filled, bitmask = check_draft_rows(matcher, [tok("a"), tok("y"), tok("b")], tiny_vocabulary, index=2)
    assert filled == 2
    assert grail.bitmask_to_token_ids(bitmask, 3, tiny_vocabulary.size) == [0] + [tok(c) for c in "abc"]
    # The end token in the draft: the row after it is empty, and nothing follows.
    draft = [tok("y"), tok("e"), tok("s"), 0, tok("y")]
    filled, bitmask = check_draft_rows(matcher, draft, tiny_vocabulary)
    assert filled == 5 and grail.bitmask_to_token_ids(bitmask, 3, tiny_vocabulary.size) == [0]
    assert not bitmask[4].any()
    assert check_draft_rows(matcher, [], tiny_vocabulary, index=1)[0] == 1
    ended = matcher.fork()
    assert ended.accept_tokens([tok("no"), 0]) and ended.is_terminated()
    assert check_draft_rows(ended, [0], tiny_vocabulary)[0] == 1
    # Random drafts on random walks, with and without a rollback limit shorter than them.
    for seed in range(40):
        rng = random.Random(seed)
        walker = grail.Matcher(grail.Grammar.from_gbnf(ROLLBACK_GRAMMAR), tiny_vocabulary,
                               max_rollback_tokens=[None, 0, 2][seed % 3])
        random_walk(walker, rng, rng.randrange(30))
        draft = random_walk(walker.fork(), rng, rng.randrange(8))
        if seed % 2:
            draft.insert(rng.randrange(len(draft) + 1), rng.randrange(tiny_vocabulary.size))
        check_draft_rows(walker, draft, tiny_vocabulary, index=seed % 3, extra=seed % 2)


def test_fill_draft_bitmasks_errors(tiny_vocabulary):
    matcher = grail.Matcher(grail.Grammar.from_gbnf('root ::= [a-c]+'), tiny_vocabulary)
    a = token_id(tiny_vocabulary, "a")
    width = (tiny_vocabulary.size + 31) // 32
    with pytest.raises(IndexError, match="rows 1 to 3 of a bitmask of 3 rows"):
        matcher.fill_draft_bitmasks([a, a], np.zeros((3, width), dtype=np.int32), 1)
    with pytest.raises(ValueError, match="words"):
        matcher.fill_draft_bitmasks([a], np.zeros((2, width - 1), dtype=np.int32))
    with pytest.raises(TypeError, match="int32"):
        matcher.fill_draft_bitmasks([a], np.zeros((2, width), dtype=np.int64))
    bitmask = np.zeros((3, width), dtype=np.int32)
    with pytest.raises(ValueError, match=f"token {tiny_vocabulary.size} \\(position 1 of the draft\\) is not in this vocabulary of {tiny_vocabulary.size} tokens"):
        matcher.fill_draft_bitmasks([a, tiny_vocabulary.size], bitmask)
    with pytest.raises(OverflowError):
        matcher.fill_draft_bitmasks([-1], bitmask)
    assert not bitmask.any()
    assert matcher.fill_draft_bitmasks([a, a], bitmask) == 3


def test_fill_draft_bitmasks_into_a_torch_tensor(tiny_vocabulary):
    torch = pytest.importorskip("torch")
    matcher = grail.Matcher(grail.Grammar.from_gbnf('root ::= [a-c]+'), tiny_vocabulary)
    draft = [token_id(tiny_vocabulary, "a"), token_id(tiny_vocabulary, "b")]
    tensor = torch.zeros((3, (tiny_vocabulary.size + 31) // 32), dtype=torch.int32)
    array = np.zeros(tuple(tensor.shape), dtype=np.int32)
    assert matcher.fill_draft_bitmasks(draft, tensor) == matcher.fill_draft_bitmasks(draft, array) == 3
    assert (tensor.numpy() == array).all() and array[1].any()
