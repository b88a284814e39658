#!/usr/bin/env python3
"""Compare Grail's token masks with a peer engine's, step by step, on one document.

Runs `grail bench --dump-masks` for Grail, and the peer through the engine classes of the
shared peer harness (../shared/bench/scripts/bench.py), with the same grammar, vocabulary
and token ids. Compares regular tokens only (special and end-of-generation tokens are
handled differently by design). Run it with a Python that has the peer installed:

    python scripts/mask_agreement.py --engine llguidance --vocab smollm2 \
        --grammar json.gbnf --doc doc_json.json [--steps 200] [--bench ../shared/bench]
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

# The harness's grammar kinds; "c_gbnf" is plain GBNF text to every peer, so it also
# carries llama.cpp's conversion of the tool-call schema.
GRAMMAR_KINDS = {
    "json.gbnf": "json_gbnf",
    "c.gbnf": "c_gbnf",
    "toolcall.llamacpp.gbnf": "c_gbnf",
    "toolcall.schema.json": "toolcall_schema",
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", required=True, help="peer engine name in bench.py (llguidance, xgrammar, ...)")
    parser.add_argument("--vocab", required=True, help="vocabulary name under BENCH/vocab (smollm2, llama3)")
    parser.add_argument("--grammar", required=True, help="grammar file under BENCH/inputs (json.gbnf, c.gbnf, toolcall.llamacpp.gbnf)")
    parser.add_argument("--doc", required=True, help="document under BENCH/inputs")
    parser.add_argument("--steps", type=int, default=0, help="compare only the first N steps (0: all)")
    parser.add_argument("--bench", default=os.path.join(here, "../../shared/bench"))
    parser.add_argument("--grail", default=os.path.join(here, "../target/release/grail"))
    args = parser.parse_args()
    bench = os.path.abspath(args.bench)

    spec = importlib.util.spec_from_file_location("bench", os.path.join(bench, "scripts/bench.py"))
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    vocab, tokens = harness.load_vocab(args.vocab)
    ids = json.load(open(os.path.join(bench, f"vocab/{args.vocab}.docs.json")))[args.doc]
    if args.steps:
        ids = ids[: args.steps]
    special = set(vocab["special_token_ids"]) | {vocab["eos_token_id"]}
    regular = np.array([i for i in range(vocab["vocab_size"]) if i not in special])

    with tempfile.TemporaryDirectory() as scratch:
        id_file = os.path.join(scratch, "ids.json")
        json.dump(ids, open(id_file, "w"))
        dump = os.path.join(scratch, "masks.jsonl")
        subprocess.run(
            [args.grail, "bench", "--grammar", os.path.join(bench, "inputs", args.grammar),
             "--vocab", os.path.join(bench, f"vocab/{args.vocab}.vocab.json"),
             "--doc", os.path.join(bench, "inputs", args.doc), "--ids", id_file,
             "--runs", "1", "--compile-reps", "1", "--format", "json", "--dump-masks", dump],
            check=False, stdout=subprocess.DEVNULL)
        grail = []
        for line in open(dump):
            words = np.frombuffer(bytes.fromhex(json.loads(line)["words"]), dtype="<u4")
            bits = ((words[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool).reshape(-1)
            grail.append(bits[: vocab["vocab_size"]][regular])

    engine = harness.ENGINES[args.engine](vocab, tokens)
    engine.setup_vocab()
    text = open(os.path.join(bench, "inputs", args.grammar)).read()
    compiled = engine.compile(engine.grammar(GRAMMAR_KINDS[args.grammar], text))
    matcher = engine.new_matcher(compiled)
    buffer = engine.alloc()
    peer = []
    for token in ids:
        if hasattr(engine, "prepare"):
            engine.prepare()
        engine.mask(matcher, buffer)
        words = np.asarray(buffer).reshape(-1).view(np.uint32)
        bits = ((words[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool).reshape(-1)[: engine.n]
        peer.append(bits[regular])
        engine.accept(matcher, token)

    steps = min(len(grail), len(peer))
    differing = [i for i in range(steps) if not np.array_equal(grail[i], peer[i])]
    print(f"grail vs {args.engine} on {args.grammar} / {args.doc} / {args.vocab}: "
          f"{steps - len(differing)}/{steps} steps with identical masks over regular tokens")
    for i in differing[:10]:
        only_grail = regular[grail[i] & ~peer[i]][:6]
        only_peer = regular[peer[i] & ~grail[i]][:6]
        context = b"".join(tokens[j] for j in ids[max(0, i - 5): i]).decode("utf-8", "replace")
        print(f"  step {i} after {context[-30:]!r}: grail {grail[i].sum()} tokens, {args.engine} {peer[i].sum()};"
              f" only grail {[tokens[x] for x in only_grail]}, only {args.engine} {[tokens[x] for x in only_peer]}")
    sys.exit(0 if not differing and steps == len(ids) else 1)


if __name__ == "__main__":
    main()
