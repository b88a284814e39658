#!/usr/bin/env python3
"""Grail against the peer engines, in one sitting: per-mask median / p99 / max, compile
time and peak memory on the same grammar, document and vocabulary, with ratios.

Grail runs through `grail bench --format json`; each peer through the shared harness
(../shared/bench/scripts/bench.py, one fresh process per measurement, as it expects).
Run it with a Python that has the peers installed (see ../shared/bench/README.md):

    python scripts/side_by_side.py [--engines llguidance,xgrammar,llamacpp]
        [--vocabs smollm2,llama3] [--cases json,toolcall,c] [--bench ../shared/bench]

Every engine's runs start cold and its run with the lowest median is reported: each peer
compiles its grammar afresh for every run, and Grail runs `grail bench --cold`, which gives
every run a grammar compiled for it (what depends on the vocabulary alone stays built, for
every engine). `--grail-run first` reports Grail's first run instead (the first grammar of a
fresh process); `--grail-run warm` runs without --cold and reports the lowest median, a run
that starts from what earlier matchers of the grammar learned (parse states, walks and masks:
what a server's later requests with the same grammar see).

Ratios are Grail / peer (below 1: Grail is faster). The machine is shared and noisy;
compare runs made together, not against old tables.
"""
import argparse
import json
import os
import subprocess
import sys

# case: (grail grammar, peer grammar kind, document)
CASES = {
    "json": ("json.gbnf", "json_gbnf", "doc_json.json"),
    "toolcall": ("toolcall.llamacpp.gbnf", "toolcall_schema", "doc_toolcall_file.json"),
    "c": ("c.gbnf", "c_gbnf", "doc_c.c"),
}


def summary(result, first_run_only=False):
    runs = [run for run in result.get("runs", []) if run.get("mask", {}).get("n")]
    if not runs or result.get("status") not in ("ok", "mismatch"):
        return None
    if first_run_only:
        best = min(runs, key=lambda run: run["run"])
    else:
        best = min(runs, key=lambda run: run["mask"]["median_us"])
    return {
        "median": best["mask"]["median_us"],
        "p99": best["mask"]["p99_us"],
        "max": best["mask"]["max_us"],
        "compile_ms": result.get("compile_ms_median"),
        "peak_mib": (result.get("rss_kib", {}).get("peak_hwm") or 0) / 1024,
        "ok": all(run.get("ok") for run in runs),
    }


def run_grail(grail, bench, vocab, case, grail_run="cold"):
    grammar, _, doc = CASES[case]
    cold = ["--cold"] if grail_run == "cold" else []
    output = subprocess.run(
        [grail, "bench", "--grammar", os.path.join(bench, "inputs", grammar),
         "--vocab", os.path.join(bench, f"vocab/{vocab}.vocab.json"),
         "--doc", os.path.join(bench, "inputs", doc), "--runs", "2", "--format", "json"] + cold,
        capture_output=True, text=True)
    if not output.stdout.strip():
        return None
    return summary(json.loads(output.stdout), first_run_only=grail_run == "first")


def run_peer(python, bench, engine, vocab, case):
    _, kind, doc = CASES[case]
    output = subprocess.run(
        [python, os.path.join(bench, "scripts/bench.py"), engine, vocab, kind, doc, "--runs", "2"],
        capture_output=True, text=True, cwd=bench, timeout=1800)
    lines = [line for line in output.stdout.splitlines() if line.startswith("{")]
    return summary(json.loads(lines[-1])) if lines else None


def cell(value, digits=1):
    return "–" if value is None else f"{value:,.{digits}f}"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="llguidance,xgrammar,llamacpp")
    parser.add_argument("--vocabs", default="smollm2,llama3")
    parser.add_argument("--cases", default="json,toolcall,c")
    parser.add_argument("--bench", default=os.path.join(here, "../../shared/bench"))
    parser.add_argument("--grail", default=os.path.join(here, "../target/release/grail"))
    parser.add_argument("--python", default=sys.executable, help="the Python that has the peers")
    parser.add_argument("--grail-run", choices=("cold", "first", "warm"), default="cold",
                        help="Grail's run reported: the lowest median of runs that all start cold (default, as "
                             "the peers'), the first run, or the lowest median of runs that start warm")
    args = parser.parse_args()
    bench = os.path.abspath(args.bench)
    print("| vocab | case | engine | mask median µs | p99 µs | max µs | compile ms | peak MiB | all tokens in mask | grail/peer median | grail/peer p99 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for vocab in args.vocabs.split(","):
        for case in args.cases.split(","):
            grail = run_grail(args.grail, bench, vocab, case, args.grail_run)
            rows = [("grail", grail)]
            for engine in args.engines.split(","):
                try:
                    rows.append((engine, run_peer(args.python, bench, engine, vocab, case)))
                except subprocess.TimeoutExpired:
                    rows.append((engine, None))
            for engine, result in rows:
                if result is None:
                    print(f"| {vocab} | {case} | {engine} | n/a | | | | | | | |")
                    continue
                ratios = ("", "")
                if engine != "grail" and grail is not None:
                    ratios = (f"{grail['median'] / result['median']:.3f}" if result["median"] else "–",
                              f"{grail['p99'] / result['p99']:.3f}" if result["p99"] else "–")
                print(f"| {vocab} | {case} | {engine} | {cell(result['median'], 2)} | {cell(result['p99'])} | "
                      f"{cell(result['max'])} | {cell(result['compile_ms'], 2)} | {cell(result['peak_mib'])} | "
                      f"{'yes' if result['ok'] else 'NO'} | {ratios[0]} | {ratios[1]} |", flush=True)


if __name__ == "__main__":
    main()
