#!/usr/bin/env python3
"""Grail against llguidance on a tool-call grammar: the seeds' eight tools
(testdata/tools/seeds.tools.json), a call required, OpenAI wire format, as `grail tools`
writes it; the same GBNF text given to both engines (llguidance reads GBNF through its
`gbnf_to_lark`, as the peer harness does for json.gbnf and c.gbnf).

    python scripts/tools_side_by_side.py [--vocabs smollm2,llama3] [--runs 2]
        [--python /work/venv/bin/python] [--grail target/release/grail]
        [--bench ../shared/bench] [--json OUT.json]

Documents: the accepted calls of testdata/tools/cases.json's first case ("seed tools, a call
required"), each serialized as Python's json.dumps writes it (", " and ": ", keys in the
corpus's order, which is the grammar's), tokenized with the vocabulary's tokenizer.json
(Python `tokenizers`, no special tokens); the same ids go to both engines. Grail: `grail
bench --grammar`; llguidance: the peer harness's bench.py (one fresh process per
measurement) on a scratch copy of the harness whose inputs/c.gbnf is the tool-call grammar
and whose vocab/NAME.docs.json holds the documents' ids (--bench is never written to).

Per document and engine, the run with the lowest median is reported, every run starting cold:
llguidance compiles afresh for every run, and Grail runs `grail bench --cold`, a grammar compiled
for every run (for both, what depends on the vocabulary alone stays built). `--grail-run first`
reports Grail's first run instead; `--grail-run warm` runs without --cold (later runs start
from what earlier matchers of the grammar learned) and takes the lowest median; ratios are Grail /
llguidance (below 1: Grail is faster); the summary gives the geometric means of the
per-document median and p99 ratios. The machine is shared and noisy: compare runs made
together.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))


def run(cmd, timeout=600, **kwargs):
    return subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace",
                          timeout=timeout, **kwargs)


def best(result, first_run_only=False):
    runs = [r for r in (result or {}).get("runs", []) if r.get("mask", {}).get("n")]
    if not runs:
        return None
    if first_run_only:
        chosen = min(runs, key=lambda r: r["run"])
    else:
        chosen = min(runs, key=lambda r: r["mask"]["median_us"])
    return {"median": chosen["mask"]["median_us"], "p99": chosen["mask"]["p99_us"],
            "max": chosen["mask"]["max_us"], "ok": all(r.get("ok") for r in result["runs"])}


def copy_harness(source, scratch, vocab):
    def ignore(directory, names):
        if os.path.abspath(directory) == os.path.abspath(source):
            return [n for n in names if n not in ("scripts", "inputs", "vocab")]
        if os.path.basename(directory) == "vocab":
            return [n for n in names if not n.startswith(vocab)]
        return [n for n in names if n.endswith(".gguf") or n == "__pycache__"]
    shutil.copytree(source, scratch, ignore=ignore, copy_function=shutil.copyfile)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocabs", default="smollm2,llama3")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--grail-run", choices=("cold", "first", "warm"), default="cold",
                        help="Grail's run reported: the lowest median of runs that all start cold (default, as "
                             "llguidance's), the first run, or the lowest median of runs that start warm")
    parser.add_argument("--python", default=sys.executable, help="the Python that has llguidance and tokenizers")
    parser.add_argument("--grail", default=os.path.join(ROOT, "target/release/grail"))
    parser.add_argument("--bench", default=os.path.join(ROOT, "../shared/bench"))
    parser.add_argument("--json", help="write the raw results here")
    args = parser.parse_args()
    bench = os.path.abspath(args.bench)
    registry = os.path.join(ROOT, "testdata/tools/seeds.tools.json")
    corpus = json.load(open(os.path.join(ROOT, "testdata/tools/cases.json"), encoding="utf-8"))
    calls = [output["calls"][0] for output in corpus["cases"][0]["accept"] if "calls" in output]
    documents = [json.dumps({"name": call["name"], "arguments": call["arguments"]}, ensure_ascii=False)
                 for call in calls]

    tmp = tempfile.mkdtemp(prefix="grail-tools-sbs-")
    grammar_path = os.path.join(tmp, "tools.gbnf")
    made = run([args.grail, "tools", registry, "--choice", "required"])
    if made.returncode != 0:
        sys.exit(f"grail tools failed: {made.stderr}")
    open(grammar_path, "w", encoding="utf-8").write(made.stdout)
    llg_version = run([args.python, "-c", "import llguidance; print(llguidance.__version__)"]).stdout.strip()

    results = []
    for vocab in args.vocabs.split(","):
        tokenizer = os.path.join(bench, "vocab", vocab, "tokenizer.json")
        ids_text = run([args.python, "-c",
                        "import json,sys; from tokenizers import Tokenizer; t=Tokenizer.from_file(sys.argv[1]); "
                        "print(json.dumps([t.encode(d, add_special_tokens=False).ids for d in json.loads(sys.argv[2])]))",
                        tokenizer, json.dumps(documents)])
        if ids_text.returncode != 0:
            sys.exit(f"tokenizing failed: {ids_text.stderr}")
        all_ids = json.loads(ids_text.stdout)
        scratch = os.path.join(tmp, f"harness-{vocab}")
        copy_harness(bench, scratch, vocab)
        shutil.copyfile(grammar_path, os.path.join(scratch, "inputs", "c.gbnf"))
        docs_path = os.path.join(scratch, "vocab", f"{vocab}.docs.json")
        docs = json.load(open(docs_path, encoding="utf-8"))
        for index, (document, ids) in enumerate(zip(documents, all_ids)):
            name = f"tools_doc_{index}.json"
            open(os.path.join(scratch, "inputs", name), "w", encoding="utf-8").write(document)
            docs[name] = ids
        json.dump(docs, open(docs_path, "w", encoding="utf-8"))
        for index, (call, ids) in enumerate(zip(calls, all_ids)):
            name = f"tools_doc_{index}.json"
            doc_path = os.path.join(scratch, "inputs", name)
            ids_path = os.path.join(tmp, f"{vocab}-{name}.ids")
            json.dump(ids, open(ids_path, "w"))
            out = os.path.join(tmp, f"{vocab}-{name}.grail.json")
            run([args.grail, "bench", "--grammar", grammar_path, "--vocab",
                 os.path.join(bench, "vocab", f"{vocab}.vocab.json"), "--doc", doc_path, "--ids", ids_path,
                 "--runs", str(args.runs), "--format", "json", "--out", out]
                + (["--cold"] if args.grail_run == "cold" else []))
            grail = best(json.load(open(out)), args.grail_run == "first") if os.path.exists(out) else None
            out = os.path.join(tmp, f"{vocab}-{name}.llg.json")
            run([args.python, os.path.join(scratch, "scripts", "bench.py"), "llguidance", vocab, "c_gbnf", name,
                 "--runs", str(args.runs), "--out", out], cwd=scratch)
            llg = best(json.load(open(out))) if os.path.exists(out) else None
            results.append({"vocab": vocab, "tool": call["name"], "tokens": len(ids), "grail": grail, "llguidance": llg})
            print(f"[{vocab}] {call['name']} ({len(ids)} tokens) done", file=sys.stderr, flush=True)

    print(f"Grail vs llguidance {llg_version} on the seeds' tool-call grammar ({args.runs} runs each; Grail: {args.grail_run} runs, "
          f"{'first run' if args.grail_run == 'first' else 'lowest median'}; llguidance: lowest median);"
          " ratios Grail / llguidance.\n")
    print("| vocab | call | tokens | grail median µs | p99 µs | llg median µs | p99 µs | median ratio | p99 ratio | all tokens in both masks |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    medians, p99s = [], []
    for row in results:
        g, l = row["grail"], row["llguidance"]
        if not g or not l:
            print(f"| {row['vocab']} | {row['tool']} | {row['tokens']} | n/a | | | | | | |")
            continue
        median_ratio, p99_ratio = g["median"] / l["median"], g["p99"] / l["p99"]
        medians.append(median_ratio)
        p99s.append(p99_ratio)
        print(f"| {row['vocab']} | {row['tool']} | {row['tokens']} | {g['median']:.2f} | {g['p99']:.1f} | "
              f"{l['median']:.2f} | {l['p99']:.1f} | {median_ratio:.3f} | {p99_ratio:.3f} | "
              f"{'yes' if g['ok'] and l['ok'] else 'NO'} |")
    if medians:
        geomean = lambda values: math.exp(sum(math.log(v) for v in values) / len(values))
        print(f"\n- geometric mean of the median ratios: {geomean(medians):.3f}; of the p99 ratios: {geomean(p99s):.3f} (goal ≤ 0.5)")
        print(f"- documents where Grail's p99 is above llguidance's: {sum(r > 1 for r in p99s)} of {len(p99s)}")
    if args.json:
        json.dump(results, open(args.json, "w"), indent=1)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
