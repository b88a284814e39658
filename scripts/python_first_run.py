#!/usr/bin/env python3
"""Grail's first run in a fresh Python process: the vocabulary loaded, a matcher made, and
a mask per token of one of the peer harness's documents, each timed (the call included).
Prints the per-step median, p99 and maximum in µs. Run it several times (each run is one
process) to see what a cold process pays, without the peers' noise in the same process:

    ~/.cache/grail/py-venv/bin/python scripts/python_first_run.py [--vocab llama3|smollm2]
        [--case json|toolcall|c]

Needs grail_gbnf (scripts/python_test.py installs it into ~/.cache/grail/py-venv) and
../shared/bench.
"""
import argparse
import json
import os
import time

import grail_gbnf as grail

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "bench")
CASES = {
    "json": ("json.gbnf", "doc_json.json"),
    "toolcall": ("toolcall.llamacpp.gbnf", "doc_toolcall_file.json"),
    "c": ("c.gbnf", "doc_c.c"),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", default="llama3", choices=("llama3", "smollm2"))
    parser.add_argument("--case", default="json", choices=sorted(CASES))
    args = parser.parse_args()
    grammar_file, document = CASES[args.case]
    vocabulary = grail.Vocabulary.from_file(os.path.join(BENCH, "vocab", f"{args.vocab}.vocab.json"))
    with open(os.path.join(BENCH, "vocab", f"{args.vocab}.docs.json"), encoding="utf-8") as handle:
        tokens = json.load(handle)[document]
    tokens = tokens["ids"] if isinstance(tokens, dict) else tokens
    with open(os.path.join(BENCH, "inputs", grammar_file), encoding="utf-8") as handle:
        grammar = grail.Grammar.from_gbnf(handle.read())
    matcher = grail.Matcher(grammar, vocabulary)
    bitmask = grail.allocate_token_bitmask(1, vocabulary.size)
    times = []
    for token in tokens:
        started = time.perf_counter()
        matcher.fill_next_token_bitmask(bitmask, 0)
        times.append((time.perf_counter() - started) * 1e6)
        if not matcher.accept_token(token):
            raise SystemExit(f"token {token} of the document is refused")
    times.sort()
    p99 = times[round(0.99 * (len(times) - 1))]
    print(f"{args.vocab} {args.case}: {len(times)} steps, median {times[len(times) // 2]:.2f} µs, "
          f"p99 {p99:.1f} µs, max {times[-1]:.0f} µs")


if __name__ == "__main__":
    main()
