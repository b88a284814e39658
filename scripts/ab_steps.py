#!/usr/bin/env python3
"""Two builds of `grail` against each other, mask by mask: which steps a change made faster
or slower.

Both binaries run `grail bench` on the same grammar, document and vocabulary, in turns
(base, new, base, new, ...), and each step keeps its fastest time over all runs, so the
noise of this shared machine mostly cancels. Prints the sum, p99, p95 and median of those
per-step minima for each build, and the steps that moved most.

    python scripts/ab_steps.py BASE_GRAIL NEW_GRAIL [--case json|toolcall|c]
        [--vocab smollm2|llama3] [--rounds 3] [--bench ../shared/bench]

Build the base from another worktree into its own target directory, e.g.
`git worktree add ../base <commit> && CARGO_TARGET_DIR=/tmp/base-target cargo build
--release -p grail-cli` in ../base.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

CASES = {
    "json": ("json.gbnf", "doc_json.json"),
    "toolcall": ("toolcall.llamacpp.gbnf", "doc_toolcall_file.json"),
    "c": ("c.gbnf", "doc_c.c"),
}


def step_times(grail, bench, case, vocab):
    """The per-step mask times (µs) of every run of one `grail bench` process."""
    grammar, doc = CASES[case]
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [
            grail, "bench",
            "--grammar", os.path.join(bench, "inputs", grammar),
            "--vocab", os.path.join(bench, "vocab", f"{vocab}.vocab.json"),
            "--doc", os.path.join(bench, "inputs", doc),
            "--format", "json", "--out", out.name,
        ]
        finished = subprocess.run(command, capture_output=True, text=True)
        if finished.returncode not in (0, 1):
            sys.exit(f"{grail} failed:\n{finished.stderr}")
        result = json.load(open(out.name))
    return [run["mask_us_raw"] for run in result["runs"]]


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--case", default="json", choices=sorted(CASES))
    parser.add_argument("--vocab", default="llama3")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bench", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "bench"))
    args = parser.parse_args()
    fastest = {"base": None, "new": None}
    for _ in range(args.rounds):
        for name, grail in (("base", args.base), ("new", args.new)):
            for run in step_times(grail, args.bench, args.case, args.vocab):
                known = fastest[name]
                fastest[name] = run if known is None else [min(a, b) for a, b in zip(known, run)]
    for name, times in fastest.items():
        print(f"{name}: sum {sum(times):.0f} µs, p99 {percentile(times, 0.99):.1f}, "
              f"p95 {percentile(times, 0.95):.1f}, median {percentile(times, 0.5):.2f}")
    base, new = fastest["base"], fastest["new"]
    moved = sorted(range(len(base)), key=lambda step: new[step] - base[step])
    show = lambda steps: ", ".join(f"{step}: {base[step]:.0f} → {new[step]:.0f}" for step in steps)
    print("faster:", show(moved[:12]))
    print("slower:", show(reversed(moved[-12:])))


if __name__ == "__main__":
    main()
