#!/usr/bin/env python3
"""Batches of sequences through Python: Grail's `fill_next_token_bitmasks` beside xgrammar's
`BatchGrammarMatcher.batch_fill_next_token_bitmask` and llguidance's
`fill_next_token_bitmask_par`, one call per engine per step over all rows of a batch.

    PY scripts/batch_side_by_side.py [--vocabs llama3,smollm2] [--cases json,toolcall]
        [--engines grail,llguidance,xgrammar] [--batch 64] [--threads 2]
        [--layouts same,spread] [--repeats 3] [--budget-s 20] [--toolcall-peers schema|gbnf]
        [--out FILE.json]

PY is a Python with grail_gbnf (built from crates/grail-py, e.g. `maturin develop --release`
into a venv), llguidance, xgrammar (which imports torch) and transformers (xgrammar's
tokenizer setup). Inputs come from ../shared/bench (`--bench`): the grammars, the documents
and each vocabulary's tokenizer.json, from which every engine builds its vocabulary and the
documents are tokenized (with the `tokenizers` package; the same ids for every engine).

For each vocabulary and case, a batch of N sequences (one matcher per sequence and engine)
goes through the document in lockstep. At each step one batch call per engine fills the N
rows of an int32 bitmask (timed alone), each row's bit of its next document token is
checked, and every matcher accepts its token (untimed). Layouts: `same`, every sequence at
the same place of the document (so in the same state); `spread`, sequence i starts
i * (L // N) tokens into the document of L tokens (its first tokens accepted before the
timing) and starts over (reset) when it reaches the end, so the rows are in N different
states at every step; both take L steps.

Runs, in this order for each layout: `cold` and `warm`, each with new matchers for every
engine. Grail's cold run uses a grammar compiled for it, its warm run new matchers of that
same grammar (which start from what the cold run's matchers learned: what a server's later
requests see). llguidance compiles afresh in every matcher it makes (its `LLMatcher`), so
both its runs are alike; xgrammar's grammar is compiled once per vocabulary and case (its
compile precomputes its mask cache) and its matchers are new in each run. No compile is
timed. Threads: `--threads` for every engine (rayon's pool through RAYON_NUM_THREADS for
Grail, `LLExecutor(num_threads)`, `BatchGrammarMatcher(max_threads)`).

An engine whose run passes `--budget-s` seconds stops after that step (xgrammar's masks on
json.gbnf take tens of milliseconds each); its totals then cover fewer steps, and the
ratios Grail / peer are taken over the steps both ran. Reported per engine: the total of
the batch calls, the median and p99 per step (µs, one call filling all N rows), and Grail's
ratio of totals and of p99s to each peer (below 1: Grail is faster). Each layout's cold and
warm runs are made `--repeats` times (a cold run then a warm one, the engines one after
another in each); the figures are medians over the repeats, the ratio of totals the median
of the repeats' ratios (their range beside it).

Agreement: every row's mask must allow its next document token (counted, not hidden). In
the first pass, each row's mask over the regular tokens (the special tokens of
`vocab/NAME.vocab.json` and the end-of-generation token left out) is digested, and rows
whose mask differs from Grail's on the same step are counted per peer. Grammar dialects can
differ: with `--toolcall-peers schema` (the default, as in scripts/python_side_by_side.py)
the peers get the tool call as its JSON Schema and Grail the GBNF llama.cpp's converter
makes of it (llguidance 1.9.1's GBNF reader fails on that GBNF, "maximum recursion depth
exceeded", so `gbnf` suits xgrammar alone). In the `same` layout, rows of one engine that
differ from its row 0 are counted too (they must be 0).
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# case: (Grail's grammar, the peers' grammar with --toolcall-peers schema, document)
CASES = {
    "json": ("json.gbnf", "json.gbnf", "doc_json.json"),
    "toolcall": ("toolcall.llamacpp.gbnf", "toolcall.schema.json", "doc_toolcall_file.json"),
}
ENGINES = ("grail", "llguidance", "xgrammar")


def quantile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


class Grail:
    """Grail: one Matcher per row, `fill_next_token_bitmasks` over all of them."""

    def __init__(self, tokenizer_path, eos):
        import grail_gbnf
        self.grail = grail_gbnf
        self.vocabulary = grail_gbnf.Vocabulary.from_file(tokenizer_path)
        self.size = self.vocabulary.size
        self.grammar = None

    def prepare(self, text, kind):
        assert kind == "gbnf"
        self.text = text

    def new_run(self, run, rows):
        if run == "cold" or self.grammar is None:
            self.grammar = self.grail.Grammar.from_gbnf(self.text)
        return GrailRun(self, rows)


class GrailRun:
    def __init__(self, engine, rows):
        grail = engine.grail
        self.matchers = [grail.Matcher(engine.grammar, engine.vocabulary) for _ in range(rows)]
        self.bitmask = grail.allocate_token_bitmask(rows, engine.size)
        self.array = self.bitmask
        fill, matchers, bitmask = grail.fill_next_token_bitmasks, self.matchers, self.bitmask
        self.fill = lambda: fill(matchers, bitmask)

    def accept(self, row, token):
        return self.matchers[row].accept_token(token)

    def reset(self, row):
        self.matchers[row].reset()


class LLGuidance:
    """llguidance: one LLMatcher per row, `llguidance.numpy.fill_next_token_bitmask_par`."""

    def __init__(self, tokenizer_path, eos, threads):
        import llguidance
        import llguidance.numpy
        self.llg = llguidance
        with open(tokenizer_path, encoding="utf-8") as handle:
            self.tokenizer = llguidance.LLTokenizer(handle.read(), eos_token=eos)
        self.size = self.tokenizer.vocab_size
        self.executor = llguidance.LLExecutor(num_threads=threads)

    def prepare(self, text, kind):
        self.grammar = (self.llg.LLMatcher.grammar_from_json_schema(text) if kind == "schema"
                        else self.llg.grammar_from("gbnf", text))

    def new_run(self, run, rows):
        return LLGuidanceRun(self, rows)


class LLGuidanceRun:
    def __init__(self, engine, rows):
        import numpy as np
        from llguidance.numpy import fill_next_token_bitmask_par
        self.engine = engine
        self.matchers = [self.new_matcher() for _ in range(rows)]
        self.bitmask = np.full((rows, (engine.size + 31) // 32), -1, dtype=np.int32)
        self.array = self.bitmask
        pairs = [(matcher, row) for row, matcher in enumerate(self.matchers)]
        executor, bitmask = engine.executor, self.bitmask
        self.fill = lambda: fill_next_token_bitmask_par(executor, pairs, bitmask)
        self.pairs = pairs

    def new_matcher(self):
        matcher = self.engine.llg.LLMatcher(self.engine.tokenizer, self.engine.grammar, log_level=1)
        if matcher.is_error():
            raise RuntimeError(f"llguidance: {matcher.get_error()}")
        return matcher

    def accept(self, row, token):
        return self.matchers[row].consume_token(token)

    def reset(self, row):
        if not self.matchers[row].reset():
            raise RuntimeError("llguidance: reset refused")


class XGrammar:
    """xgrammar: one GrammarMatcher per row, `BatchGrammarMatcher.batch_fill_next_token_bitmask`."""

    def __init__(self, tokenizer_path, eos, threads, size):
        import xgrammar
        from transformers import PreTrainedTokenizerFast
        self.xgr = xgrammar
        hf = PreTrainedTokenizerFast(tokenizer_file=tokenizer_path)
        self.info = xgrammar.TokenizerInfo.from_huggingface(hf, vocab_size=size, stop_token_ids=[eos])
        self.size = self.info.vocab_size
        self.batch = xgrammar.BatchGrammarMatcher(max_threads=threads)

    def prepare(self, text, kind):
        compiler = self.xgr.GrammarCompiler(self.info, cache_enabled=False)
        if kind == "schema":
            # No free whitespace: xgrammar's default separators (", " and ": ") are the document's.
            self.compiled = compiler.compile_json_schema(text, any_whitespace=False)
        else:
            # xgrammar's EBNF parser refuses an empty leading alternative (json.gbnf's
            # `ws ::= | " " ...`); the same language written `"" | " " ...`.
            self.compiled = compiler.compile_grammar(text.replace('::= | " "', '::= "" | " "'),
                                                     root_rule_name="root")

    def new_run(self, run, rows):
        return XGrammarRun(self, rows)


class XGrammarRun:
    def __init__(self, engine, rows):
        xgr = engine.xgr
        self.matchers = [xgr.GrammarMatcher(engine.compiled) for _ in range(rows)]
        self.bitmask = xgr.allocate_token_bitmask(rows, engine.size)
        self.array = self.bitmask.numpy()
        fill, matchers, bitmask = engine.batch.batch_fill_next_token_bitmask, self.matchers, self.bitmask
        self.fill = lambda: fill(matchers, bitmask)

    def accept(self, row, token):
        return self.matchers[row].accept_token(token)

    def reset(self, row):
        self.matchers[row].reset()


def schedule(layout, length, rows):
    """Each row's offset into the document at step 0."""
    if layout == "same":
        return [0] * rows
    stride = max(1, length // rows)
    return [(row * stride) % length for row in range(rows)]


def run_batch(engine_run, tokens, offsets, budget_s, keep):
    """One pass of `len(tokens)` steps; returns the per-step times (µs), how many rows'
    masks did not allow their next token, and each step's row digests (of the words and
    `keep`, which clears the special tokens' bits; none when `keep` is None)."""
    import numpy as np
    length, rows = len(tokens), len(offsets)
    token_array = np.asarray(tokens, dtype=np.int64)
    for row, offset in enumerate(offsets):
        for token in tokens[:offset]:
            if not engine_run.accept(row, token):
                raise RuntimeError(f"token {token} refused while moving row {row} to its start")
    words = engine_run.array.view(np.uint32)
    row_index = np.arange(rows)
    offsets_array = np.asarray(offsets)
    fill, accept, reset = engine_run.fill, engine_run.accept, engine_run.reset
    clock = time.perf_counter_ns
    times, digests, missing = [], [], 0
    started = time.monotonic()
    for step in range(length):
        start = clock()
        fill()
        times.append((clock() - start) / 1000)
        positions = (offsets_array + step) % length
        next_tokens = token_array[positions]
        bits = (words[row_index, next_tokens >> 5] >> (next_tokens & 31).astype(np.uint32)) & 1
        missing += int(rows - bits.sum())
        if keep is not None:
            kept = words & keep
            digests.append([hashlib.blake2b(kept[row].tobytes(), digest_size=8).digest() for row in range(rows)])
        for row in range(rows):
            position = int(positions[row])
            token = tokens[position]
            if not accept(row, token):
                raise RuntimeError(f"row {row}: token {token} (position {position}) refused")
            if position == length - 1:
                reset(row)
        if time.monotonic() - started > budget_s and step + 1 < length:
            break
    return times, missing, digests


def summary(times):
    return {"steps": len(times), "total_ms": sum(times) / 1000, "median_us": statistics.median(times),
            "p99_us": quantile(times, 0.99), "max_us": max(times)}


def measure(built, engines, run, tokens, offsets, args, keep):
    """One pass of every engine over the document: each engine's summary, its per-step
    times and, with `keep`, the agreement counts."""
    times, digests, row = {}, {}, {}
    for engine in engines:
        engine_run = built[engine].new_run(run, args.batch)
        times[engine], missing, digests[engine] = run_batch(engine_run, tokens, offsets, args.budget_s, keep)
        row[engine] = {**summary(times[engine]), "cut": len(times[engine]) < len(tokens),
                       "rows_next_token_refused": missing}
        if digests[engine] and all(offset == 0 for offset in offsets):
            row[engine]["rows_unlike_row_0"] = sum(digest != step[0] for step in digests[engine] for digest in step)
        del engine_run
    for peer in engines[1:]:
        common = min(len(times["grail"]), len(times[peer]))
        row[f"ratio_total_{peer}"] = sum(times["grail"][:common]) / sum(times[peer][:common])
        row[f"ratio_steps_{peer}"] = common
        if digests["grail"]:
            row[f"rows_differing_{peer}"] = differing(digests["grail"], digests[peer])
            row[f"rows_compared_{peer}"] = common * args.batch
    return row


def combined(passes, engines, peers):
    """Each figure's median over the repeated passes (the agreement counts of the first pass,
    the only one digested; refusals summed over all)."""
    row = {"passes": passes}
    for engine in engines:
        row[engine] = {key: statistics.median(p[engine][key] for p in passes)
                       for key in ("steps", "total_ms", "median_us", "p99_us", "max_us")}
        row[engine]["cut"] = any(p[engine]["cut"] for p in passes)
        row[engine]["rows_next_token_refused"] = sum(p[engine]["rows_next_token_refused"] for p in passes)
        if "rows_unlike_row_0" in passes[0][engine]:
            row[engine]["rows_unlike_row_0"] = passes[0][engine]["rows_unlike_row_0"]
    for peer in peers:
        row[f"ratio_total_{peer}"] = statistics.median(p[f"ratio_total_{peer}"] for p in passes)
        row[f"ratio_total_range_{peer}"] = [min(p[f"ratio_total_{peer}"] for p in passes),
                                            max(p[f"ratio_total_{peer}"] for p in passes)]
        row[f"ratio_p99_{peer}"] = row["grail"]["p99_us"] / row[peer]["p99_us"]
        row[f"ratio_median_{peer}"] = row["grail"]["median_us"] / row[peer]["median_us"]
        for key in (f"ratio_steps_{peer}", f"rows_differing_{peer}", f"rows_compared_{peer}"):
            if key in passes[0]:
                row[key] = passes[0][key]
    return row


def differing(ours, theirs):
    """Rows (over the steps both have) whose digests differ."""
    return sum(a != b for left, right in zip(ours, theirs) for a, b in zip(left, right))


def tokenize(tokenizer_path, text, bench, vocab, doc):
    from tokenizers import Tokenizer
    ids = Tokenizer.from_file(tokenizer_path).encode(text, add_special_tokens=False).ids
    try:
        with open(os.path.join(bench, "vocab", f"{vocab}.docs.json"), encoding="utf-8") as handle:
            known = json.load(handle).get(doc)
        known = known["ids"] if isinstance(known, dict) else known
        if known is not None and known != ids:
            print(f"note: {vocab} {doc}: the tokenizer's ids differ from {vocab}.docs.json", file=sys.stderr)
    except OSError:
        pass
    return ids


def git_head():
    try:
        return subprocess.run(["git", "-C", REPO, "log", "-1", "--format=%h %s"], capture_output=True,
                              text=True).stdout.strip()[:100]
    except OSError:
        return "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocabs", default="llama3,smollm2")
    parser.add_argument("--cases", default="json,toolcall")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--layouts", default="same,spread")
    parser.add_argument("--budget-s", type=float, default=20.0,
                        help="an engine's run stops after the step that passes this many seconds")
    parser.add_argument("--toolcall-peers", choices=("schema", "gbnf"), default="schema",
                        help="the peers' tool-call grammar: its JSON Schema (default) or Grail's GBNF")
    parser.add_argument("--repeats", type=int, default=3,
                        help="passes of each layout (a cold and a warm run each); figures are medians over them")
    parser.add_argument("--no-digests", action="store_true", help="skip the whole-mask comparison")
    parser.add_argument("--bench", default=os.path.join(REPO, "..", "shared", "bench"))
    parser.add_argument("--out", help="write the results here as JSON too")
    args = parser.parse_args()
    # Rayon reads this when its global pool starts (the first batch call).
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)
    engines = args.engines.split(",")
    assert engines[0] == "grail", "grail first: the ratios are Grail / peer"
    peers = engines[1:]
    bench = os.path.abspath(args.bench)
    command = " ".join([os.path.basename(sys.executable), "scripts/batch_side_by_side.py", *sys.argv[1:]])
    results = []
    cell = lambda s: f"{s['total_ms']:,.1f} ({s['median_us']:,.0f} · {s['p99_us']:,.0f})" + (
        f" [{s['steps']} steps]" if s["cut"] else "")
    header = " | ".join(f"{engine} total ms (median · p99 µs)" for engine in engines)
    ratio_header = " | ".join(f"Grail / {peer} total (range) · p99" for peer in peers)
    print(f"Batch of {args.batch}, {args.threads} threads; {datetime.datetime.now():%Y-%m-%d %H:%M}; {git_head()}")
    print(f"| vocab | case | states | run | steps | {header} | {ratio_header} |")
    print("|---" * (5 + len(engines) + len(peers)) + "|", flush=True)
    for vocab in args.vocabs.split(","):
        tokenizer_path = os.path.join(bench, "vocab", vocab, "tokenizer.json")
        with open(os.path.join(bench, "vocab", f"{vocab}.vocab.json"), encoding="utf-8") as handle:
            described = json.load(handle)
        eos = described["eos_token_id"]
        built = {"grail": Grail(tokenizer_path, eos)}
        size = built["grail"].size
        if "llguidance" in peers:
            built["llguidance"] = LLGuidance(tokenizer_path, eos, args.threads)
        if "xgrammar" in peers:
            built["xgrammar"] = XGrammar(tokenizer_path, eos, args.threads, size)
        sizes = {engine: built[engine].size for engine in engines}
        if len(set(sizes.values())) != 1:
            print(f"note: {vocab}: vocabulary sizes differ: {sizes}", file=sys.stderr)
        # Special tokens are left out of the whole-mask comparison: engines differ on whether
        # a special token's text may stand for its characters (xgrammar lets it).
        keep = None
        if not args.no_digests:
            import numpy as np
            keep = np.full((size + 31) // 32, 0xFFFFFFFF, dtype=np.uint32)
            for token in set(described.get("special_token_ids", [])) | {eos}:
                keep[token >> 5] &= ~np.uint32(1 << (token & 31))
        for case in args.cases.split(","):
            grail_file, peer_file, doc = CASES[case]
            if args.toolcall_peers == "gbnf":
                peer_file = grail_file
            read = lambda name: open(os.path.join(bench, "inputs", name), encoding="utf-8").read()
            tokens = tokenize(tokenizer_path, read(doc), bench, vocab, doc)
            for engine in engines:
                name = grail_file if engine == "grail" else peer_file
                built[engine].prepare(read(name), "schema" if name.endswith(".json") else "gbnf")
            for layout in args.layouts.split(","):
                offsets = schedule(layout, len(tokens), args.batch)
                passes = {"cold": [], "warm": []}
                for repeat in range(args.repeats):
                    for run in ("cold", "warm"):
                        passes[run].append(measure(built, engines, run, tokens, offsets, args,
                                                   keep if repeat == 0 else None))
                for run in ("cold", "warm"):
                    row = {"vocab": vocab, "case": case, "layout": layout, "run": run, "doc_tokens": len(tokens),
                           "rows": args.batch, "threads": args.threads, "repeats": args.repeats,
                           "grammars": {engine: grail_file if engine == "grail" else peer_file for engine in engines},
                           **combined(passes[run], engines, peers)}
                    results.append(row)
                    cells = " | ".join(cell(row[engine]) for engine in engines)
                    ratios = " | ".join(
                        f"{row[f'ratio_total_{peer}']:.3f} ({row[f'ratio_total_range_{peer}'][0]:.2f}–"
                        f"{row[f'ratio_total_range_{peer}'][1]:.2f}) · {row[f'ratio_p99_{peer}']:.3f}" for peer in peers)
                    print(f"| {vocab} | {case} | {layout} | {run} | {len(tokens)} | {cells} | {ratios} |", flush=True)
    print()
    print("Agreement (rows × steps): next token refused per engine; rows unlike Grail's; in `same`, rows unlike row 0")
    for row in results:
        parts = [f"{engine} refused {row[engine]['rows_next_token_refused']}" for engine in engines]
        parts += [f"unlike {peer} {row.get(f'rows_differing_{peer}', '–')}/{row.get(f'rows_compared_{peer}', '–')}"
                  for peer in peers]
        if row["layout"] == "same":
            parts += [f"{engine} rows≠row0 {row[engine].get('rows_unlike_row_0', '–')}" for engine in engines]
        print(f"  {row['vocab']} {row['case']} {row['layout']} {row['run']}: " + ", ".join(parts))
    if args.out:
        from importlib import metadata
        versions = {}
        for package in ("grail-gbnf", "llguidance", "xgrammar", "torch", "numpy"):
            try:
                versions[package] = metadata.version(package)
            except metadata.PackageNotFoundError:
                pass
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"), "command": command,
                       "commit": git_head(), "python": platform.python_version(), "cpus": os.cpu_count(),
                       "loadavg": open("/proc/loadavg").read().split()[:3], "versions": versions,
                       "budget_s": args.budget_s, "toolcall_peers": args.toolcall_peers, "results": results},
                      handle, indent=2)


if __name__ == "__main__":
    main()
