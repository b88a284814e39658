import os
import shutil

import pytest

import grail_gbnf as grail

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SHARED_BENCH = os.path.join(REPO, "..", "shared", "bench")


@pytest.fixture(scope="session")
def tiny_vocabulary():
    """Token 0 ends generation; then one token per printable ASCII byte; then words."""
    tokens = [b"<|end|>"] + [bytes([byte]) for byte in range(32, 127)] + [b'{"', b'":', b'"}', b"true", b"false", b"null", b"yes", b"no"]
    return grail.Vocabulary.from_tokens(tokens, special=[0], eos_token_ids=[0], name="tiny")


def token_id(vocabulary, text):
    data = text.encode()
    for index in range(vocabulary.size):
        if vocabulary.token_bytes(index) == data:
            return index
    raise KeyError(text)


@pytest.fixture(scope="session")
def grail_cli():
    """The `grail` binary of this checkout (built by the test command), or skip."""
    for profile in ("release", "debug"):
        path = os.path.join(REPO, "target", profile, "grail")
        if os.path.exists(path):
            return path
    found = shutil.which("grail")
    if not found:
        pytest.skip("no grail binary: cargo build -p grail-cli")
    return found
