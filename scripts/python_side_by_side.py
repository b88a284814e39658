#!/usr/bin/env python3
"""Token masks through Python: grail_gbnf against llguidance's and xgrammar's Python APIs,
in one process and one sitting, per step of a real document (the call included).

    ~/.cache/grail/py-venv/bin/python scripts/python_side_by_side.py [--vocabs llama3,smollm2]
        [--cases json,toolcall,c] [--engines llguidance,xgrammar] [--runs 2] [--grail-run cold|first|warm]
        [--processes N] [--json OUT]

Needs grail_gbnf (scripts/python_test.py installs it into ~/.cache/grail/py-venv), the
peers in the same venv (`pip install llguidance xgrammar`; xgrammar's tokenizer setup goes
through transformers), and ../shared/bench: its grammars,
documents, tokenized documents (`vocab/NAME.docs.json`) and tokenizers
(`vocab/NAME/tokenizer.json`). Each engine gets the same token ids; at each step the
mask is computed into a preallocated int32 bitmask (Grail: `fill_next_token_bitmask`
into a numpy row; llguidance: `unsafe_compute_mask_ptr`, its fastest documented path;
xgrammar: `fill_next_token_bitmask` into its own bitmask),
the document's token is checked to be allowed, then accepted. Grail takes the GBNF the
peer harness gives llama.cpp (`toolcall.llamacpp.gbnf` for the tool call, which
the peers are given as its JSON Schema, as ../shared/bench/scripts/bench.py does;
xgrammar without free whitespace).

Setup is timed in fresh processes: `import` plus the vocabulary from the same
tokenizer.json. Reported: per-step median and p99 (µs) of each engine and the ratios Grail /
peer. Per peer, its run of --runs with the lowest median (llguidance compiles afresh in every
run; xgrammar compiles once, its masks precomputed then). Grail, by default, compiles its
grammar afresh for every run too (untimed), so every run starts cold, and its run with the
lowest median is reported; `--grail-run first` reports its first run instead, `--grail-run warm`
compiles once (a new matcher per run keeps what earlier runs learned) and takes the lowest
median.

`--processes N` repeats all of that in N fresh processes (one run each, so every engine's
figures are its first run in a new process) and reports, per engine, the median over the
processes of its median and of its p99: one sitting's figures move a lot on a shared machine.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(os.path.dirname(HERE), "..", "shared", "bench")
CASES = {
    "json": ("json.gbnf", "json.gbnf", "doc_json.json"),
    "toolcall": ("toolcall.llamacpp.gbnf", "toolcall.schema.json", "doc_toolcall_file.json"),
    "c": ("c.gbnf", "c.gbnf", "doc_c.c"),
}


def read(*parts):
    with open(os.path.join(BENCH, *parts), encoding="utf-8") as handle:
        return handle.read()


def quantile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


def allowed(buffer, token):
    return (int(buffer[token >> 5]) >> (token & 31)) & 1


def run_grail(vocabulary, grammar, tokens):
    import grail_gbnf as grail
    matcher = grail.Matcher(grammar, vocabulary)
    buffer = grail.allocate_token_bitmask(1, vocabulary.size)
    fill = matcher.fill_next_token_bitmask
    times = []
    clock = time.perf_counter_ns
    for token in tokens:
        start = clock()
        fill(buffer, 0)
        times.append((clock() - start) / 1000)
        if not allowed(buffer[0], token):
            raise RuntimeError(f"grail: token {token} not in its mask")
        if not matcher.accept_token(token):
            raise RuntimeError(f"grail: token {token} refused")
    return times


def run_llguidance(tokenizer, grammar, tokens, size):
    import llguidance as llg
    matcher = llg.LLMatcher(tokenizer, grammar, log_level=1)
    if matcher.is_error():
        raise RuntimeError(matcher.get_error())
    buffer = np.full(((size + 31) // 32,), -1, dtype=np.int32)
    address, length = buffer.ctypes.data, buffer.size * 4
    compute = matcher.unsafe_compute_mask_ptr
    times = []
    clock = time.perf_counter_ns
    for token in tokens:
        start = clock()
        compute(address, length)
        times.append((clock() - start) / 1000)
        if not allowed(buffer, token):
            raise RuntimeError(f"llguidance: token {token} not in its mask")
        if not matcher.consume_token(token):
            raise RuntimeError(f"llguidance: token {token} refused")
    return times


def run_xgrammar(compiled, tokens, size):
    import xgrammar as xgr
    matcher = xgr.GrammarMatcher(compiled)
    buffer = xgr.allocate_token_bitmask(1, size)
    fill = matcher.fill_next_token_bitmask
    times = []
    clock = time.perf_counter_ns
    for token in tokens:
        start = clock()
        fill(buffer, 0)
        times.append((clock() - start) / 1000)
        if not allowed(buffer[0], token):
            raise RuntimeError(f"xgrammar: token {token} not in its mask")
        if not matcher.accept_token(token):
            raise RuntimeError(f"xgrammar: token {token} refused")
    return times


def xgrammar_compile(tokenizer_info, text, kind):
    import xgrammar as xgr
    compiler = xgr.GrammarCompiler(tokenizer_info, cache_enabled=False)
    if kind == "schema":
        # No free whitespace: xgrammar's default separators then (", " and ": ") are the
        # ones of the document.
        return compiler.compile_json_schema(text, any_whitespace=False)
    # xgrammar's EBNF parser refuses an empty leading alternative (`ws ::= | " "`), as
    # ../shared/bench/scripts/bench.py notes; the same language written `"" | " "`.
    return compiler.compile_grammar(text.replace('ws     ::= | " "', 'ws     ::= "" | " "'), root_rule_name="root")


def xgrammar_tokenizer_info(tokenizer_path, size, eos):
    import xgrammar as xgr
    from transformers import PreTrainedTokenizerFast
    hf = PreTrainedTokenizerFast(tokenizer_file=tokenizer_path)
    return xgr.TokenizerInfo.from_huggingface(hf, vocab_size=size, stop_token_ids=[eos])


# Fresh processes: import, then the vocabulary from the same tokenizer.json.
SETUP = {
    "grail": "import grail_gbnf as g; v = g.Vocabulary.from_file({path!r})",
    "llguidance": "import llguidance as l; t = l.LLTokenizer(open({path!r}).read())",
    "xgrammar": ("import xgrammar as x; from transformers import PreTrainedTokenizerFast as F; "
                 "i = x.TokenizerInfo.from_huggingface(F(tokenizer_file={path!r}))"),
}


def setup_seconds(engine, path, repeats=3):
    code = "import time; s = time.perf_counter(); " + SETUP[engine].format(path=path) + "; print(time.perf_counter() - s)"
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
            for _ in range(repeats)]
    return statistics.median(runs)


def print_header(engines, peers):
    """The header of the results table."""
    header = " | ".join(f"{engine} median µs | p99" for engine in engines)
    ratios = " | ".join(f"median / {peer} | p99 / {peer}" for peer in peers)
    print(f"| vocab | case | steps | {header} | {ratios} |")
    print("|---" * (3 + 2 * len(engines) + 2 * len(peers)) + "|")


def with_ratios_printed(row, engines, peers):
    """Adds Grail's median and p99 ratios to each peer to `row` (which holds each engine's
    {"median", "p99"}), prints it as a table row and returns it."""
    for peer in peers:
        row[f"median_ratio_{peer}"] = row["grail"]["median"] / row[peer]["median"]
        row[f"p99_ratio_{peer}"] = row["grail"]["p99"] / row[peer]["p99"]
    cells = " | ".join(f"{row[engine]['median']:.2f} | {row[engine]['p99']:.1f}" for engine in engines)
    ratio_cells = " | ".join(f"{row[f'median_ratio_{peer}']:.3f} | {row[f'p99_ratio_{peer}']:.3f}" for peer in peers)
    print(f"| {row['vocab']} | {row['case']} | {row['steps']} | {cells} | {ratio_cells} |", flush=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocabs", default="llama3,smollm2")
    parser.add_argument("--cases", default="json,toolcall,c")
    parser.add_argument("--engines", default="llguidance,xgrammar", help="the peers to run beside grail")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--grail-run", choices=("cold", "first", "warm"), default="cold",
                        help="Grail's run reported: the lowest median of runs that all start cold (default, as "
                             "the peers'), the first run, or the lowest median of runs that start warm")
    parser.add_argument("--processes", type=int, default=1,
                        help="repeat in this many fresh processes (one run each) and report medians over them")
    parser.add_argument("--no-setup", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    if args.processes > 1:
        return over_processes(args)
    import grail_gbnf as grail
    import llguidance as llg

    peers = args.engines.split(",")
    engines = ["grail"] + peers
    results = []
    print_header(engines, peers)
    for vocab in args.vocabs.split(","):
        tokenizer_path = os.path.join(BENCH, "vocab", vocab, "tokenizer.json")
        vocab_json = json.loads(read("vocab", f"{vocab}.vocab.json"))
        eos = vocab_json["eos_token_id"]
        docs = json.loads(read("vocab", f"{vocab}.docs.json"))
        vocabulary = grail.Vocabulary.from_file(os.path.join(BENCH, "vocab", f"{vocab}.vocab.json"))
        size = vocabulary.size
        tokenizer = llg.LLTokenizer(read("vocab", vocab, "tokenizer.json"), eos_token=eos)
        tokenizer_info = xgrammar_tokenizer_info(tokenizer_path, size, eos) if "xgrammar" in peers else None
        if not args.no_setup:
            setup = {engine: setup_seconds(engine, tokenizer_path) for engine in engines}
            cells = " | ".join(f"{setup[engine]:.3f} | " for engine in engines)
            setup_ratios = " | ".join(f"{setup['grail'] / setup[peer]:.2f} | " for peer in peers)
            print(f"| {vocab} | import + vocabulary setup (s) | | {cells} | {setup_ratios} |", flush=True)
        for case in args.cases.split(","):
            grail_file, peer_file, doc = CASES[case]
            tokens = docs[doc]
            tokens = tokens["ids"] if isinstance(tokens, dict) else tokens
            grail_grammar = grail.Grammar.from_gbnf(read("inputs", grail_file))
            peer_text = read("inputs", peer_file)
            kind = "schema" if peer_file.endswith(".json") else "gbnf"
            grail_text = read("inputs", grail_file)
            if args.grail_run == "cold":
                runners = {"grail": lambda: run_grail(vocabulary, grail.Grammar.from_gbnf(grail_text), tokens)}
            else:
                runners = {"grail": lambda: run_grail(vocabulary, grail_grammar, tokens)}
            if "llguidance" in peers:
                peer_grammar = (llg.LLMatcher.grammar_from_json_schema(peer_text) if kind == "schema"
                                else llg.grammar_from("gbnf", peer_text))
                runners["llguidance"] = lambda: run_llguidance(tokenizer, peer_grammar, tokens, size)
            if "xgrammar" in peers:
                compiled = xgrammar_compile(tokenizer_info, peer_text, kind)
                runners["xgrammar"] = lambda: run_xgrammar(compiled, tokens, size)
            best = {}
            for _ in range(args.runs):
                for engine in engines:
                    times = runners[engine]()
                    summary = {"median": statistics.median(times), "p99": quantile(times, 0.99)}
                    first_only = engine == "grail" and args.grail_run == "first"
                    if engine not in best or (not first_only and summary["median"] < best[engine]["median"]):
                        best[engine] = summary
            row = {"vocab": vocab, "case": case, "steps": len(tokens), **best}
            results.append(with_ratios_printed(row, engines, peers))
        if not args.no_setup:
            results.append({"vocab": vocab, "setup_s": setup})
    if args.json:
        versions = {"grail": grail.__version__, "llguidance": llg.__version__}
        if "xgrammar" in peers:
            import xgrammar
            versions["xgrammar"] = getattr(xgrammar, "__version__", "?")
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"versions": versions, "results": results}, handle, indent=2)


def over_processes(args):
    """Runs this script in `args.processes` fresh processes (one run each, no setup timing)
    and prints, per vocabulary and case, each engine's median over the processes of its
    median and p99, with the ratios of those."""
    import tempfile
    peers = args.engines.split(",")
    engines = ["grail"] + peers
    rows = {}
    for process in range(args.processes):
        with tempfile.NamedTemporaryFile(suffix=".json") as output:
            command = [sys.executable, os.path.abspath(__file__), "--vocabs", args.vocabs, "--cases", args.cases,
                       "--engines", args.engines, "--runs", "1", "--no-setup", "--json", output.name]
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            with open(output.name, encoding="utf-8") as handle:
                for row in json.load(handle)["results"]:
                    rows.setdefault((row["vocab"], row["case"], row["steps"]), []).append(row)
        print(f"process {process + 1} of {args.processes} done", file=sys.stderr, flush=True)
    print(f"Medians over {args.processes} fresh processes (each engine's first run in each):")
    print_header(engines, peers)
    summary = []
    for (vocab, case, steps), runs in rows.items():
        row = {"vocab": vocab, "case": case, "steps": steps, "processes": len(runs)}
        for engine in engines:
            row[engine] = {stat: statistics.median(run[engine][stat] for run in runs) for stat in ("median", "p99")}
        summary.append(with_ratios_printed(row, engines, peers))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"processes": args.processes, "results": summary}, handle, indent=2)


if __name__ == "__main__":
    main()
