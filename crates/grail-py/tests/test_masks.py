"""Masks through Python equal the Rust CLI's (`grail mask --format json`) on json.gbnf with
the Llama 3 and SmolLM2 vocabularies of ../shared/bench; a batch filled from threads
equals the serial fill."""

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import grail_gbnf as grail
from conftest import SHARED_BENCH, token_id

PREFIXES = ['', '{', '{"a', '{"key": ', '{"key": [1, 2', '{"key": {"n": true}, "s": "x\\u00', '{"n": 1.5e']


def bench_file(*parts):
    path = os.path.join(SHARED_BENCH, *parts)
    if not os.path.exists(path):
        pytest.skip(f"{path} is absent (../shared is not beside the checkout)")
    return path


@pytest.mark.parametrize("vocab", ["llama3", "smollm2"])
def test_masks_equal_the_cli(vocab, grail_cli):
    grammar_path = bench_file("inputs", "json.gbnf")
    vocab_path = bench_file("vocab", f"{vocab}.vocab.json")
    vocabulary = grail.Vocabulary.from_file(vocab_path)
    with open(grammar_path, encoding="utf-8") as handle:
        grammar = grail.Grammar.from_gbnf(handle.read())
    bitmask = grail.allocate_token_bitmask(1, vocabulary.size)
    for prefix in PREFIXES:
        matcher = grail.Matcher(grammar, vocabulary)
        assert matcher.accept_text(prefix), prefix
        matcher.fill_next_token_bitmask(bitmask, 0)
        ours = grail.bitmask_to_token_ids(bitmask, 0, vocabulary.size)
        output = subprocess.run([grail_cli, "mask", "--vocab", vocab_path, "--format", "json", grammar_path, "--", prefix],
                                capture_output=True, text=True, check=False)
        cli = json.loads(output.stdout)
        assert ours == sorted(token["id"] for token in cli["tokens"]), prefix
        assert len(ours) == cli["count"]


def test_a_batch_filled_from_threads_equals_the_serial_fill():
    vocabulary = grail.Vocabulary.from_file(bench_file("vocab", "smollm2.vocab.json"))
    with open(bench_file("inputs", "json.gbnf"), encoding="utf-8") as handle:
        grammar = grail.Grammar.from_gbnf(handle.read())
    matchers = []
    for index in range(16):
        matcher = grail.Matcher(grammar, vocabulary)
        assert matcher.accept_text(PREFIXES[index % len(PREFIXES)])
        matchers.append(matcher)
    serial = grail.allocate_token_bitmask(len(matchers), vocabulary.size)
    for row, matcher in enumerate(matchers):
        matcher.fill_next_token_bitmask(serial, row)
    threaded = grail.allocate_token_bitmask(len(matchers), vocabulary.size)
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda row: matchers[row].fill_next_token_bitmask(threaded, row), range(len(matchers))))
    assert np.array_equal(serial, threaded)


def test_a_batch_fills_each_row_as_its_matcher_alone(tiny_vocabulary):
    grammars = [grail.Grammar.from_gbnf(text) for text in ('root ::= [a-c]+', 'root ::= "yes" | "no"', 'root ::= "{" [0-9]* "}"')]
    matchers = [grail.Matcher(grammars[i % 3], tiny_vocabulary) for i in range(12)]
    first_tokens = ["a", "y", "{"]  # a first token for each grammar
    for i, matcher in enumerate(matchers):
        if i % 2:
            assert matcher.accept_token(token_id(tiny_vocabulary, first_tokens[i % 3]))
    alone = grail.allocate_token_bitmask(12, tiny_vocabulary.size)
    for i, matcher in enumerate(matchers):
        matcher.fill_next_token_bitmask(alone, i)
    batch = grail.allocate_token_bitmask(14, tiny_vocabulary.size)
    order = [13 - i for i in range(12)]  # rows in another order than the matchers
    grail.fill_next_token_bitmasks(matchers, batch, order)
    for i in range(12):
        assert (batch[order[i]] == alone[i]).all()
    assert (batch[0] == -1).all() and (batch[1] == -1).all()  # rows not named stay as they were
    plain = grail.allocate_token_bitmask(12, tiny_vocabulary.size)
    grail.fill_next_token_bitmasks(matchers, plain)
    assert (plain == alone).all()
    with pytest.raises(ValueError):
        grail.fill_next_token_bitmasks(matchers[:2], batch, [3, 3])
    with pytest.raises(IndexError):
        grail.fill_next_token_bitmasks(matchers[:1], batch, [14])
    with pytest.raises(ValueError):
        grail.fill_next_token_bitmasks(matchers[:2], batch, [1])
