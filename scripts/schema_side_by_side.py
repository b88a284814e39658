#!/usr/bin/env python3
"""Grail against llguidance on MaskBench JSON-Schema grammars: per-mask median / p99 / max and
compile time on the same schema, the same document and the same Llama 3 token ids, with ratios.

    python3 scripts/schema_side_by_side.py [--count 30] [--seed 0] [--runs 2]
        [--groups Github_easy,Kubernetes,...] [--min-tokens 40] [--max-tokens 2000]
        [--property-order required-first|schema]
        [--grail-run cold|first|warm] [--python /work/venv/bin/python] [--grail target/release/grail]
        [--bench /work/shared/bench] [--maskbench /work/shared/corpora/maskbench]
        [--json OUT.json] [--keep-temp] [--select-only]

Selection (deterministic for a --seed): each MaskBench group (one .jsonl.gz per group) is shuffled
with its own seeded generator, and groups are visited round-robin until --count schemas are found
that (1) have a valid instance which, serialized as below, is --min-tokens..--max-tokens Llama 3
tokens (the longest such instance is taken), (2) Grail converts in strict mode (`grail schema`
exits 0), (3) llguidance compiles, and (4) both engines accept as a whole document (`grail match
--schema`; llguidance's matcher consuming every token and ending in an accepting state).
Refusals and documents the engines disagree on are listed, never dropped silently.

Property order: both engines fix it, differently. llguidance follows the order of `properties`
(then `required` names not in it; undeclared properties after; docs/json_schema.md "Property
order"); Grail, like llama.cpp's converter, puts the required properties first and the optional
ones after (each in `properties` order; "required" by a schema that declares `properties`: a name
only a presence condition requires keeps its place; --any-order lifts it). So that both constrain to the same
order, llguidance gets a copy of the schema in which every `properties` map lists the required
properties first (`required` of the same object, of the parent whose allOf/anyOf/oneOf branch it
is, and of allOf siblings) -- the same JSON Schema (key order in a JSON object carries no meaning
there); --property-order schema gives it the schema untouched instead. Orders that come from
merges through $ref are not rewritten; such documents show up as disagreements.

The document: the instance as compact JSON with the separators ", " and ": " (Python's
json.dumps, ensure_ascii=False: llguidance refuses \\uXXXX escapes of printable characters) and
the keys of every object in that order (through $ref/allOf/anyOf/oneOf; undeclared keys after, in
the instance's order). When the engines do not both accept it, the instance's own key order is
tried as well. Token ids come from the Llama 3 tokenizer.json of the harness (Python
`tokenizers`, no special tokens), are checked to re-concatenate to the document's bytes, and the
same ids are given to both engines.

Grail: `grail bench --schema S.json --vocab <bench>/vocab/llama3.vocab.json --doc D --ids IDS
--format json` with its defaults (strict, llama.cpp's whitespace rule, additionalProperties per
the specification). llguidance: the peer harness's bench.py (one fresh process per measurement,
`LLMatcher.grammar_from_json_schema` + `LLTokenizer(tokenizer.json)`) on the same schema with a
top-level `"x-guidance": {"whitespace_flexible": false, "item_separator": ", ", "key_separator":
": "}` (its compile options; the separators are regexes there). The harness is copied into a temp
dir first; each schema goes in as the copy's inputs/toolcall.schema.json and each document's ids
as a new entry of the copy's vocab/llama3.docs.json (bench.py's grammar kinds and documents are
fixed names). --bench is never written to.

Per engine one run (of --runs) is reported, chosen the same way for both: each run starts cold
and the run with the lowest median is reported. llguidance compiles its grammar afresh for every
run (a new LLMatcher); Grail is run with `grail bench --cold`, which gives every run a grammar
compiled for it, so no run inherits what an earlier one learned. For both, what depends on the
vocabulary alone (llguidance's token trie and slices, Grail's loop slices and run lengths) stays
built after the first run, and the process is warm. --grail-run first reports Grail's first run
instead (the first grammar of a fresh process: noisier, and not what the peer is given);
--grail-run warm runs without --cold and reports the lowest median, a run that starts from what
earlier matchers of the grammar learned (a server's later request with the same grammar). With
--rounds N every schema is measured N times, both engines back to back each time, round after
round over all schemas; each engine's runs of all rounds are pooled and chosen from as above. The
machine's speed drifts by up to half for minutes at a time (the same binary's median and p99 both
move), so a schema's two engines measured once may fall in different phases; rounds spread both
over the sitting alike. Ratios are Grail / llguidance (below 1: Grail is
faster). The summary gives the geometric means of the per-schema median and p99 ratios over the
schemas where every document token was in both engines' masks, and the schemas where Grail's p99
is above llguidance's. With --rounds N it also gives them paired by round: per schema, the median over
rounds of the round's p99 ratio (each engine's run of the round chosen as above), which compares the
two engines in the same phase of the machine; the pooled figures compare each engine's best phase.
The machine is shared and noisy: compare runs made together.
"""
import argparse
import gzip
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = "llama3"
X_GUIDANCE = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
SEPARATORS = (", ", ": ")


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def first_line(text, limit=200):
    for line in (text or "").splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[:limit] + "…"
    return ""


# ------------------------------------------------------------------ helper (runs under --python)
def helper_main(tokenizer_path, eos):
    """Line protocol on stdin/stdout: {"docs": [text...]} -> {"ids": [[...]...]};
    {"schema": text, "docs": [text...]} -> also {"llg": {...}} (llguidance compiles the schema
    and consumes each document's ids)."""
    import llguidance as llg
    from tokenizers import Tokenizer
    text = open(tokenizer_path, encoding="utf-8").read()
    hf = Tokenizer.from_str(text)
    tok = llg.LLTokenizer(text, eos_token=eos)
    print(json.dumps({"ready": True, "llguidance": llg.__version__}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        ids = [hf.encode(doc, add_special_tokens=False).ids for doc in req.get("docs", [])]
        out = {"ids": ids}
        if "schema" in req:
            try:
                grammar = llg.LLMatcher.grammar_from_json_schema(req["schema"])
                matcher = llg.LLMatcher(tok, grammar, log_level=0)
                error = matcher.get_error() if matcher.is_error() else None
                warnings = [] if error else list(matcher.get_grammar_warnings())
            except Exception as exc:  # ValueError on a non-object schema
                error = f"{type(exc).__name__}: {exc}"
            if error:
                out["llg"] = {"compiles": False, "error": first_line(error, 400)}
            else:
                docs = []
                for doc_ids in ids:
                    matcher = llg.LLMatcher(tok, grammar, log_level=0)
                    verdict = {"accepts": True}
                    for step, token in enumerate(doc_ids):
                        if not matcher.consume_token(token):
                            verdict = {"accepts": False, "step": step, "error": first_line(matcher.get_error(), 300)}
                            break
                    if verdict["accepts"] and not matcher.is_accepting():
                        verdict = {"accepts": False, "step": len(doc_ids), "error": "document ends before an accepting state"}
                    docs.append(verdict)
                out["llg"] = {"compiles": True, "warnings": warnings, "docs": docs}
        print(json.dumps(out), flush=True)


class Helper:
    def __init__(self, python, tokenizer_path, eos):
        self.proc = subprocess.Popen(
            [python, os.path.abspath(__file__), "--helper", tokenizer_path, "--helper-eos", str(eos)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8")
        ready = self._read()
        self.llguidance_version = ready.get("llguidance")

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the llguidance/tokenizers helper died (see its stderr above)")
        return json.loads(line)

    def ask(self, **request):
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


# ------------------------------------------------------------------ documents in schema key order
def resolve_pointer(root, ref):
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    fragment = urllib.parse.unquote(ref[1:])
    if fragment == "":
        return root
    if not fragment.startswith("/"):
        return None
    node = root
    for part in fragment[1:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


class Shape:
    """What the schemas that apply at one place of the instance say about objects and arrays."""

    def __init__(self):
        self.properties, self.required = [], []
        self.property_schemas, self.patterns, self.additional = {}, [], []
        self.items, self.prefixes = [], []


def collect(root, node, shape, seen, keys=None):
    if not isinstance(node, dict) or id(node) in seen or len(seen) > 10000:
        return
    seen.add(id(node))
    for key, value in node.items():  # in order of appearance, as llguidance merges them
        if key == "properties" and isinstance(value, dict):
            for name, sub in value.items():
                if name not in shape.property_schemas:
                    shape.properties.append(name)
                shape.property_schemas.setdefault(name, []).append(sub)
        elif key == "required" and isinstance(value, list) and "properties" in node:
            # Grail writes first the names required by schemas that declare properties;
            # a name only a presence condition requires keeps its place.
            shape.required.extend(name for name in value if isinstance(name, str) and name not in shape.required)
        elif key == "patternProperties" and isinstance(value, dict):
            shape.patterns.extend(value.items())
        elif key == "additionalProperties" and isinstance(value, dict):
            shape.additional.append(value)
        elif key in ("items", "additionalItems") and isinstance(value, dict):
            shape.items.append(value)
        elif key in ("items", "prefixItems") and isinstance(value, list):
            shape.prefixes.append(value)
        elif key == "$ref":
            collect(root, resolve_pointer(root, value), shape, seen, keys)
        elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            branches = value
            if key != "allOf" and keys is not None:
                # the first branch that declares every key of the object and whose required keys it has
                for sub in value:
                    trial = Shape()
                    collect(root, sub, trial, set(seen), keys)
                    if trial.property_schemas and keys <= set(trial.property_schemas) and set(trial.required) <= keys:
                        branches = [sub]
                        break
            for sub in branches:
                collect(root, sub, shape, seen, keys)
        elif key in ("then", "else"):
            collect(root, value, shape, seen, keys)


def in_schema_order(root, schemas, data, depth=0):
    if depth > 100 or not isinstance(data, (dict, list)):
        return data
    shape, seen = Shape(), set()
    keys = set(data) if isinstance(data, dict) else None
    for schema in schemas:
        collect(root, schema, shape, seen, keys)
    if isinstance(data, list):
        out = []
        for index, item in enumerate(data):
            subs = [prefix[index] for prefix in shape.prefixes if index < len(prefix)] or shape.items
            out.append(in_schema_order(root, subs, item, depth + 1))
        return out
    rank = {name: position for position, name in enumerate(shape.properties)}
    for position, name in enumerate(shape.required):
        rank.setdefault(name, len(shape.properties) + position)
    keys = sorted(enumerate(data), key=lambda pair: (rank.get(pair[1], 1 << 30), pair[0]))
    out = {}
    for _, name in keys:
        subs = list(shape.property_schemas.get(name, []))
        for pattern, sub in shape.patterns:
            try:
                if re.search(pattern, name):
                    subs.append(sub)
            except re.error:
                pass
        if not subs:
            subs = shape.additional
        out[name] = in_schema_order(root, subs, data[name], depth + 1)
    return out


SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "$defs", "dependentSchemas", "dependencies")
SCHEMA_LISTS = ("items", "prefixItems")
SCHEMA_ONE = ("items", "additionalItems", "additionalProperties", "contains", "not", "if", "then", "else",
              "propertyNames", "unevaluatedItems", "unevaluatedProperties")


def required_first(node):
    """A copy of the schema where every `properties` map lists the required properties first (each
    group in its own order): llama.cpp's property order, which Grail follows, in the form llguidance
    reads (it follows `properties`). `required` counts from the same object, from a parent whose
    allOf/anyOf/oneOf branch the object is, and from allOf siblings. Same JSON Schema semantics;
    returns (copy, number of maps reordered)."""
    changed = 0

    def names(value):
        # Only schemas that declare properties put their required names first (Grail's
        # order, docs/json-schema.md "Key order").
        if not isinstance(value, dict) or "properties" not in value:
            return []
        items = value.get("required")
        return [n for n in items if isinstance(n, str)] if isinstance(items, list) else []

    def walk(value, inherited=()):
        nonlocal changed
        if isinstance(value, list):
            return [walk(item) for item in value]
        if not isinstance(value, dict):
            return value
        required = list(inherited)
        for name in names(value) + [n for b in (value.get("allOf") if isinstance(value.get("allOf"), list) else [])
                                    for n in names(b)]:
            if name not in required:
                required.append(name)
        out = {}
        for key, item in value.items():  # schemas only: never into const, enum, default, examples
            if key in ("allOf", "anyOf", "oneOf") and isinstance(item, list):
                out[key] = [walk(branch, required) for branch in item]
            elif key in SCHEMA_MAPS and isinstance(item, dict):
                out[key] = {name: walk(sub) for name, sub in item.items()}
            elif key in SCHEMA_LISTS and isinstance(item, list):
                out[key] = [walk(sub) for sub in item]
            elif key in SCHEMA_ONE:
                out[key] = walk(item)
            else:
                out[key] = item
        props = out.get("properties")
        if isinstance(props, dict) and required:
            keys = list(props)
            order = [n for n in keys if n in required]
            # Grail (like llama.cpp) puts required names that `properties` lacks right after the
            # required properties, llguidance after all of `properties`; declaring them there with
            # the schema they have anyway (additionalProperties') moves them in llguidance, as its
            # docs suggest. Not done where that would change what the object accepts.
            extra, additional = [n for n in names(value) if n not in props], out.get("additionalProperties", True)
            if extra and isinstance(additional, (bool, dict)) and additional is not False and "patternProperties" not in out:
                props = {**props, **{n: additional for n in extra}}
                order += extra
            order += [n for n in keys if n not in required]
            if order != keys:
                changed += 1
                out["properties"] = {n: props[n] for n in order}
        return out

    return walk(node), changed


def serialize(data):
    return json.dumps(data, ensure_ascii=False, separators=SEPARATORS)


# ------------------------------------------------------------------ corpus
def load_groups(maskbench, wanted):
    groups = {}
    for name in sorted(os.listdir(maskbench)):
        if not name.endswith(".jsonl.gz"):
            continue
        group = name[: -len(".jsonl.gz")]
        if wanted and group not in wanted:
            continue
        with gzip.open(os.path.join(maskbench, name), "rt", encoding="utf-8") as handle:
            groups[group] = [json.loads(line) for line in handle if line.strip()]
    missing = set(wanted or ()) - set(groups)
    if missing:
        sys.exit(f"no such MaskBench group(s): {', '.join(sorted(missing))}")
    return groups


def round_robin(groups, seed):
    orders = {}
    for group, records in groups.items():
        order = list(range(len(records)))
        random.Random(f"{seed}:{group}").shuffle(order)
        orders[group] = order
    position = 0
    while any(position < len(order) for order in orders.values()):
        for group in groups:
            if position < len(orders[group]):
                yield group, groups[group][orders[group][position]]
        position += 1


# ------------------------------------------------------------------ engines
def run(cmd, timeout, **kwargs):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace",
                              timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        return None


def grail_converts(grail, schema_path, timeout):
    done = run([grail, "schema", schema_path], timeout)
    if done is None:
        return False, f"`grail schema` timed out after {timeout} s"
    if done.returncode == 0:
        return True, ""
    errors = list(dict.fromkeys(line for line in done.stderr.splitlines() if line.startswith("error")))
    detail = "; ".join(first_line(line, 160) for line in errors[:3]) or first_line(done.stderr)
    return False, f"exit {done.returncode}: {detail}"


def grail_accepts(grail, schema_path, doc_path, timeout):
    done = run([grail, "match", "--schema", schema_path, "--file", doc_path], timeout)
    if done is None:
        return {"accepts": False, "error": f"`grail match` timed out after {timeout} s"}
    if done.returncode == 0:
        return {"accepts": True}
    lines = done.stderr.splitlines()
    where = [line.strip()[4:] for line in lines if line.strip().startswith("--> ")]
    expected = [line.split("^", 1)[1].strip() for line in lines if "^" in line and line.lstrip().startswith("|")]
    detail = first_line(done.stderr)
    if where:
        detail += f" at {os.path.basename(where[0])}"
    if expected:
        detail += f": {expected[0]}"
    return {"accepts": False, "exit": done.returncode, "error": detail}


def summary(result, first_run_only=False):
    runs = [r for r in (result or {}).get("runs", []) if r.get("mask", {}).get("n")]
    if not runs:
        return None
    if first_run_only:
        best = min(runs, key=lambda r: r["run"])
    else:
        best = min(runs, key=lambda r: r["mask"]["median_us"])
    failures = [r.get("failure") for r in (result or {}).get("runs", []) if not r.get("ok")]
    return {
        "median": best["mask"]["median_us"], "p99": best["mask"]["p99_us"], "max": best["mask"]["max_us"],
        "compile_ms": result.get("compile_ms_median"),
        "all_in_mask": all(r.get("ok") for r in result["runs"]),
        "end_ok": all(r.get("eos_or_accepting_at_end") for r in result["runs"]),
        "failure": failures[0] if failures else None,
        "status": result.get("status"),
    }


def round_results(result, runs_per_round):
    """One engine's merged results split back into rounds (runs are numbered on across rounds, each
    round's from 0 + its offset: see merge_rounds), each a result of its own runs."""
    if not result or not result.get("runs"):
        return []
    rounds = {}
    for run in result["runs"]:
        rounds.setdefault(run.get("run", 0) // runs_per_round, []).append(run)
    return [dict(result, runs=runs) for _, runs in sorted(rounds.items())]


def paired_p99_ratio(grail_result, llguidance_result, runs_per_round, first_run_only=False):
    """The median over rounds of the round's p99 ratio (each engine's run of the round chosen as
    `summary` does), or None without a round that both engines completed. The two engines of a round
    are measured back to back, seconds apart, so a phase of the machine's speed (which drifts by up to a
    half for minutes) weighs on both alike; pooling every round's runs instead lets each engine's best
    phase be compared with the other's."""
    ratios = []
    for grail_round, llguidance_round in zip(round_results(grail_result, runs_per_round),
                                             round_results(llguidance_result, runs_per_round)):
        g = summary(grail_round, first_run_only=first_run_only)
        l = summary(llguidance_round)
        if g and l and l["p99"]:
            ratios.append(g["p99"] / l["p99"])
    return statistics.median(ratios) if ratios else None


def merge_rounds(earlier, later):
    """One engine's results of two rounds of a schema as one: the later round's runs appended
    (numbered after the earlier ones, so the first run stays the first round's) and the compile
    time the median of the rounds' medians (kept as a list). A round that failed is what is
    kept: a failure in any round is reported."""
    if not earlier or not earlier.get("runs"):
        return earlier
    if not later or not later.get("runs"):
        return later
    merged = dict(earlier)
    offset = 1 + max(r.get("run", 0) for r in earlier["runs"])
    merged["runs"] = earlier["runs"] + [dict(r, run=r.get("run", 0) + offset) for r in later["runs"]]
    compiles = earlier.get("compile_ms_rounds", [earlier.get("compile_ms_median")]) + [later.get("compile_ms_median")]
    compiles = [c for c in compiles if c is not None]
    merged["compile_ms_rounds"] = compiles
    merged["compile_ms_median"] = statistics.median(compiles) if compiles else None
    if earlier.get("status") in (None, "ok") and later.get("status") not in (None, "ok"):
        merged["status"] = later["status"]
    return merged


def bench_grail(args, case, vocab_json):
    out = os.path.join(case["dir"], "grail.bench.json")
    cold = ["--cold"] if args.grail_run == "cold" else []
    done = run([args.grail, "bench", "--schema", case["schema_path"], "--vocab", vocab_json,
                "--doc", case["doc_path"], "--ids", case["ids_path"], "--runs", str(args.runs),
                "--compile-reps", str(args.compile_reps), "--format", "json", "--out", out] + cold,
               args.bench_timeout)
    if done is None:
        return {"status": "timeout"}
    if done.returncode not in (0, 1) or not os.path.exists(out):
        return {"status": f"error (exit {done.returncode})", "stderr": first_line(done.stderr, 400)}
    return json.load(open(out, encoding="utf-8"))


def bench_llguidance(args, case, scratch):
    # bench.py knows fixed grammar kinds and reads the ids from vocab/NAME.docs.json: the schema goes
    # in as the scratch copy's toolcall schema, the document's ids as a new docs entry.
    with open(os.path.join(scratch, "inputs", "toolcall.schema.json"), "w", encoding="utf-8") as handle:
        handle.write(case["llg_schema_text"])
    docs_path = os.path.join(scratch, "vocab", f"{VOCAB}.docs.json")
    docs = json.load(open(docs_path, encoding="utf-8"))
    docs[case["doc_name"]] = case["ids"]
    with open(docs_path, "w", encoding="utf-8") as handle:
        json.dump(docs, handle)
    with open(os.path.join(scratch, "inputs", case["doc_name"]), "w", encoding="utf-8") as handle:
        handle.write(case["doc"])
    out = os.path.join(case["dir"], "llguidance.bench.json")
    done = run([args.python, os.path.join(scratch, "scripts", "bench.py"), "llguidance", VOCAB, "toolcall_schema",
                case["doc_name"], "--runs", str(args.runs), "--compile-reps", str(args.compile_reps), "--out", out],
               args.bench_timeout, cwd=scratch)
    if done is None:
        return {"status": "timeout"}
    if not os.path.exists(out):
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if lines:
            return json.loads(lines[-1])
        return {"status": f"error (exit {done.returncode})", "stderr": first_line(done.stderr.splitlines()[-1] if done.stderr else "", 400)}
    return json.load(open(out, encoding="utf-8"))


def copy_harness(source, scratch):
    def ignore(directory, names):
        if os.path.abspath(directory) == os.path.abspath(source):
            return [n for n in names if n not in ("scripts", "inputs", "vocab")]
        if os.path.basename(directory) == VOCAB:
            return [n for n in names if n.endswith(".gguf")]
        if os.path.basename(directory) == "vocab":
            return [n for n in names if not n.startswith(VOCAB)]
        return [n for n in names if n == "__pycache__"]
    shutil.copytree(source, scratch, ignore=ignore, copy_function=shutil.copyfile)
    for directory, _, files in os.walk(scratch):
        os.chmod(directory, 0o755)
        for name in files:
            os.chmod(os.path.join(directory, name), 0o644)


# ------------------------------------------------------------------ selection
def select(args, helper, groups, tmp, vocab):
    special = set(vocab["special_token_ids"])
    token_bytes = vocab["tokens_hex"]
    chosen, skipped, disagreements = [], [], []
    short = {}
    tried = 0
    for group, record in round_robin(groups, args.seed):
        if len(chosen) >= args.count:
            break
        file = record.get("file") or record.get("description", "?")
        schema = record.get("schema")
        valid = [test["data"] for test in record.get("tests", []) if test.get("valid")]
        if not isinstance(schema, dict) or not valid:
            short[group] = short.get(group, 0) + 1
            continue
        order_schema = required_first(schema)[0] if args.property_order == "required-first" else schema
        ordered = [serialize(in_schema_order(order_schema, [order_schema], data)) for data in valid]
        ids = helper.ask(docs=ordered)["ids"]
        fitting = [(len(i), n) for n, i in enumerate(ids) if args.min_tokens <= len(i) <= args.max_tokens]
        if not fitting:
            short[group] = short.get(group, 0) + 1
            continue
        pick = max(fitting, key=lambda pair: (pair[0], -pair[1]))[1]
        texts = [ordered[pick]]
        original = serialize(valid[pick])
        if original != texts[0]:
            texts.append(original)
        index = tried
        tried += 1
        case_dir = os.path.join(tmp, "cases", f"{index:03d}_" + re.sub(r"[^A-Za-z0-9_.-]", "_", file)[:80])
        os.makedirs(case_dir)
        schema_path = os.path.join(case_dir, "schema.json")
        with open(schema_path, "w", encoding="utf-8") as handle:
            json.dump(schema, handle, ensure_ascii=False)
        entry = {"id": file, "group": group}
        log(f"[select {len(chosen)}/{args.count}] {file}")
        ok, why = grail_converts(args.grail, schema_path, args.check_timeout)
        if not ok:
            skipped.append({**entry, "reason": "Grail refuses the schema (strict)", "detail": why})
            continue
        llg_schema, reordered = (required_first(schema) if args.property_order == "required-first" else (dict(schema), 0))
        entry["properties_reordered"] = reordered
        if "x-guidance" in llg_schema:
            entry["schema_had_x_guidance"] = llg_schema["x-guidance"]
        llg_schema["x-guidance"] = X_GUIDANCE
        llg_schema_text = json.dumps(llg_schema, ensure_ascii=False)
        answer = helper.ask(schema=llg_schema_text, docs=texts)
        if not answer["llg"]["compiles"]:
            skipped.append({**entry, "reason": "llguidance refuses the schema", "detail": answer["llg"]["error"]})
            continue
        attempts, used, grail_error = [], None, None
        for attempt, (text, doc_ids, llg_verdict) in enumerate(zip(texts, answer["ids"], answer["llg"]["docs"])):
            doc_path = os.path.join(case_dir, f"doc{attempt}.json")
            with open(doc_path, "w", encoding="utf-8") as handle:
                handle.write(text)
            grail_verdict = grail_accepts(args.grail, schema_path, doc_path, args.check_timeout)
            if grail_verdict.get("exit") == 2 or "timed out" in grail_verdict.get("error", ""):
                grail_error = grail_verdict["error"]
                break
            attempts.append({"key_order": ("schema", "instance")[attempt], "doc_path": doc_path, "tokens": len(doc_ids),
                             "grail": grail_verdict, "llguidance": llg_verdict})
            if grail_verdict["accepts"] != llg_verdict["accepts"]:
                disagreements.append({**entry, "key_order": ("schema", "instance")[attempt], "doc_path": doc_path,
                                      "grail": grail_verdict, "llguidance": llg_verdict})
            if grail_verdict["accepts"] and llg_verdict["accepts"]:
                used = (attempt, text, doc_ids, doc_path)
                break
        if grail_error:
            skipped.append({**entry, "reason": "Grail cannot compile the schema's grammar", "detail": grail_error})
            continue
        if used is None:
            both = all(not a["grail"]["accepts"] and not a["llguidance"]["accepts"] for a in attempts)
            skipped.append({**entry, "reason": "both engines reject the document" if both else "engines disagree on the document",
                            "detail": "; ".join(f"{a['key_order']} order: grail {'accepts' if a['grail']['accepts'] else 'rejects'}"
                                                f", llguidance {'accepts' if a['llguidance']['accepts'] else 'rejects'}" for a in attempts),
                            "attempts": attempts})
            continue
        attempt, text, doc_ids, doc_path = used
        if any(token in special for token in doc_ids):
            skipped.append({**entry, "reason": "the document tokenizes to a special token"})
            continue
        if b"".join(bytes.fromhex(token_bytes[token]) for token in doc_ids) != text.encode("utf-8"):
            skipped.append({**entry, "reason": "token ids do not re-concatenate to the document"})
            continue
        ids_path = os.path.join(case_dir, "ids.json")
        with open(ids_path, "w") as handle:
            json.dump(doc_ids, handle)
        chosen.append({**entry, "dir": case_dir, "schema_path": schema_path, "doc_path": doc_path, "ids_path": ids_path,
                       "doc": text, "ids": doc_ids, "tokens": len(doc_ids), "key_order": ("schema", "instance")[attempt],
                       "llg_schema_text": llg_schema_text, "llg_warnings": answer["llg"].get("warnings") or [],
                       "doc_name": f"maskbench_{index:03d}.json"})
    return chosen, skipped, disagreements, short


# ------------------------------------------------------------------ report
def cell(value, digits=1):
    return "–" if value is None else f"{value:,.{digits}f}"


def flag(s):
    if s is None:
        return "n/a"
    if s["all_in_mask"] and s["end_ok"]:
        return "yes"
    if s["failure"]:
        f = s["failure"]
        return f"NO (step {f.get('step')}, {json.dumps(f.get('piece'), ensure_ascii=False)})"
    return "NO (end not accepting)"


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def report(args, llg_version, chosen, results, skipped, disagreements, short):
    print(f"Grail vs llguidance {llg_version} on MaskBench schemas, {VOCAB} vocabulary; seed {args.seed}; "
          f"llguidance `properties` order: {args.property_order}; {args.runs} run(s) per measurement, {args.rounds} round(s); Grail's "
          f"run reported: {args.grail_run} (see the docstring); ratios Grail / llguidance.\n")
    totals = {"selected": len(chosen)}
    if args.select_only:
        print("| schema | group | doc tokens | key order | `properties` maps reordered for llguidance |")
        print("|---|---|---|---|---|")
        for case in chosen:
            print(f"| {case['id']} | {case['group']} | {case['tokens']} | {case['key_order']} | {case['properties_reordered']} |")
        print()
    else:
        print("| schema | doc tokens | grail median µs | p99 µs | max µs | llg median µs | p99 µs | max µs | "
              "median ratio | p99 ratio | grail compile ms | llg compile ms | all tokens in grail mask | all tokens in llg mask |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        median_ratios, p99_ratios, above, unclean = [], [], [], []
        paired_ratios, paired_above = [], []
        for case in chosen:
            grail_result, llguidance_result = results[case["id"]]
            g = summary(grail_result, first_run_only=args.grail_run == "first")
            l = summary(llguidance_result)
            ratio_median = g["median"] / l["median"] if g and l and l["median"] else None
            ratio_p99 = g["p99"] / l["p99"] if g and l and l["p99"] else None
            if g and l and flag(g) == "yes" and flag(l) == "yes":
                median_ratios.append(ratio_median)
                p99_ratios.append(ratio_p99)
                if g["p99"] > l["p99"]:
                    above.append((case["id"], g["p99"], l["p99"]))
                paired = paired_p99_ratio(grail_result, llguidance_result, args.runs,
                                          first_run_only=args.grail_run == "first")
                if paired is not None:
                    paired_ratios.append(paired)
                    if paired > 1:
                        paired_above.append((case["id"], paired))
            else:
                unclean.append(case["id"])
            print(f"| {case['id']} | {case['tokens']} | {cell(g and g['median'], 2)} | {cell(g and g['p99'])} | "
                  f"{cell(g and g['max'])} | {cell(l and l['median'], 2)} | {cell(l and l['p99'])} | {cell(l and l['max'])} | "
                  f"{cell(ratio_median, 3)} | {cell(ratio_p99, 3)} | {cell(g and g['compile_ms'], 2)} | "
                  f"{cell(l and l['compile_ms'], 2)} | {flag(g)} | {flag(l)} |")
        gm_median, gm_p99 = geomean(median_ratios), geomean(p99_ratios)
        totals.update({"clean": len(median_ratios), "geomean_median_ratio": gm_median, "geomean_p99_ratio": gm_p99,
                       "grail_p99_above": [a[0] for a in above], "not_clean": unclean})
        if args.rounds > 1:
            totals.update({"paired_geomean_p99_ratio": geomean(paired_ratios),
                           "paired_grail_p99_above": [a[0] for a in paired_above]})
        print()
        print(f"- schemas measured: {len(chosen)}; with every document token in both engines' masks (and an accepting "
              f"end): {len(median_ratios)}" + (f"; NOT clean, left out of the means: {', '.join(unclean)}" if unclean else ""))
        print(f"- geometric mean of the per-schema median ratios: {cell(gm_median, 3)} (goal ≤ 0.5)")
        print(f"- geometric mean of the per-schema p99 ratios: {cell(gm_p99, 3)} (goal ≤ 0.5)")
        print(f"- schemas where Grail's p99 is above llguidance's: {len(above)} (goal 0)"
              + "".join(f"\n  - {name}: {gp:,.1f} µs > {lp:,.1f} µs" for name, gp, lp in above))
        if args.rounds > 1:
            print(f"- paired by round (each round's p99 ratio, the two engines measured back to back; median over "
                  f"the {args.rounds} rounds): geometric mean {cell(geomean(paired_ratios), 3)}; schemas above 1: "
                  f"{len(paired_above)}" + "".join(f"\n  - {name}: {ratio:.3f}" for name, ratio in paired_above))
    reordered = [c["id"] for c in chosen if c.get("properties_reordered")]
    print(f"- schemas whose `properties` were put required-first for llguidance: {len(reordered)} of {len(chosen)}")
    if len(chosen) < args.count:
        print(f"- only {len(chosen)} schemas qualified (wanted {args.count})")
    print(f"- candidates passed over for want of a valid instance of {args.min_tokens}..{args.max_tokens} tokens, "
          f"per group: " + (", ".join(f"{g} {n}" for g, n in sorted(short.items())) or "none"))
    print(f"- skipped (listed below): {len(skipped)}; documents the engines disagree on: {len(disagreements)}")
    if disagreements:
        print("\nDocuments the engines disagree on (valid MaskBench instances):\n")
        print("| schema | key order | grail | llguidance |")
        print("|---|---|---|---|")
        verdict = lambda v: ("accepts" if v["accepts"] else f"rejects: {v.get('error', '')}").replace("|", "\\|")
        for d in disagreements:
            print(f"| {d['id']} | {d['key_order']} | {verdict(d['grail'])} | {verdict(d['llguidance'])} |")
    if skipped:
        print("\nSkipped schemas:\n")
        print("| schema | reason | detail |")
        print("|---|---|---|")
        for s in skipped:
            detail = (s.get("detail") or "").replace("|", "\\|")
            print(f"| {s['id']} | {s['reason']} | {detail} |")
    warned = [(c["id"], c["llg_warnings"]) for c in chosen if c["llg_warnings"]]
    if warned:
        print("\nllguidance grammar warnings:\n")
        for name, warnings in warned:
            print(f"- {name}: {'; '.join(warnings)}")
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--count", type=int, default=30, help="schemas to measure (default 30)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--groups", default="", help="comma-separated MaskBench groups (default: all)")
    parser.add_argument("--runs", type=int, default=2, help="runs per measurement, each a fresh matcher (default 2)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="times each schema is measured, both engines each time, round after round over "
                             "all schemas; the runs of all rounds are pooled (default 1)")
    parser.add_argument("--compile-reps", type=int, default=3)
    parser.add_argument("--grail-run", choices=("cold", "first", "warm"), default="cold",
                        help="Grail's run reported: the lowest median of runs that all start cold (default, as "
                             "llguidance's), the first run, or the lowest median of runs that start warm")
    parser.add_argument("--min-tokens", type=int, default=40)
    parser.add_argument("--max-tokens", type=int, default=2000)
    parser.add_argument("--property-order", choices=("required-first", "schema"), default="required-first",
                        help="order of `properties` in the schema given to llguidance (see the docstring)")
    parser.add_argument("--python", default="/work/venv/bin/python", help="Python with llguidance and tokenizers")
    parser.add_argument("--grail", default=os.path.join(HERE, "../target/release/grail"))
    parser.add_argument("--bench", default="/work/shared/bench", help="peer harness to copy (never written to)")
    parser.add_argument("--maskbench", default="/work/shared/corpora/maskbench")
    parser.add_argument("--json", help="write raw results (selection, skips, both engines' full bench JSON) here")
    parser.add_argument("--select-only", action="store_true", help="select and check documents, no timing")
    parser.add_argument("--keep-temp", action="store_true", help="keep the temp dir (schemas, documents, ids, harness copy)")
    parser.add_argument("--check-timeout", type=float, default=120, help="seconds for one `grail schema`/`grail match`")
    parser.add_argument("--bench-timeout", type=float, default=1800, help="seconds for one measurement")
    parser.add_argument("--helper", help=argparse.SUPPRESS)
    parser.add_argument("--helper-eos", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.helper:
        return helper_main(args.helper, args.helper_eos)

    args.grail = os.path.abspath(args.grail)
    if not os.access(args.grail, os.X_OK):
        sys.exit(f"no Grail binary at {args.grail} (build it with `cargo build --release` or pass --grail)")
    bench = os.path.abspath(args.bench)
    for needed in ("scripts/bench.py", f"vocab/{VOCAB}.vocab.json", f"vocab/{VOCAB}/tokenizer.json", f"vocab/{VOCAB}.docs.json"):
        if not os.path.exists(os.path.join(bench, needed)):
            sys.exit(f"{bench} is not the peer harness: {needed} is missing")
    tmp = tempfile.mkdtemp(prefix="grail-schema-sbs-")
    log(f"temp dir: {tmp}")
    scratch = os.path.join(tmp, "bench")
    helper = None
    try:
        copy_harness(bench, scratch)
        vocab_json = os.path.join(scratch, "vocab", f"{VOCAB}.vocab.json")
        tokenizer_json = os.path.join(scratch, "vocab", VOCAB, "tokenizer.json")
        vocab = json.load(open(vocab_json, encoding="utf-8"))
        groups = load_groups(args.maskbench, [g for g in args.groups.split(",") if g])
        helper = Helper(args.python, tokenizer_json, vocab["eos_token_id"])
        llg_version = helper.llguidance_version
        chosen, skipped, disagreements, short = select(args, helper, groups, tmp, vocab)
        helper.close()
        helper = None

        results = {}
        if not args.select_only:
            for round_number in range(args.rounds):
                for number, case in enumerate(chosen):
                    log(f"[round {round_number + 1}/{args.rounds}, bench {number + 1}/{len(chosen)}] "
                        f"{case['id']} ({case['tokens']} tokens)")
                    measured = (bench_grail(args, case, vocab_json), bench_llguidance(args, case, scratch))
                    earlier = results.get(case["id"])
                    results[case["id"]] = measured if earlier is None else tuple(
                        merge_rounds(before, now) for before, now in zip(earlier, measured))
        totals = report(args, llg_version, chosen, results, skipped, disagreements, short)
        if args.json:
            raw = {"seed": args.seed, "count": args.count, "runs": args.runs, "vocab": VOCAB, "x_guidance": X_GUIDANCE,
                   "property_order": args.property_order, "summary": totals,
                   "schemas": [{key: c.get(key) for key in ("id", "group", "tokens", "key_order", "properties_reordered",
                                                           "doc", "ids", "llg_warnings")}
                               | {"llguidance_schema": json.loads(c["llg_schema_text"]),
                                  "grail": results.get(c["id"], (None, None))[0],
                                  "llguidance": results.get(c["id"], (None, None))[1]} for c in chosen],
                   "skipped": skipped, "disagreements": disagreements, "too_short_per_group": short}
            with open(args.json, "w", encoding="utf-8") as handle:
                json.dump(raw, handle, ensure_ascii=False)
            log(f"raw results: {args.json}")
    finally:
        if helper is not None:
            helper.proc.kill()
        if args.keep_temp:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
