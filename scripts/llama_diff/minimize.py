"""Delta debugging of one disagreement: shrink the grammar (rules, alternatives, items,
quantifiers, bounds, names, then single characters) and the text while the label stays the
same. Bounded by a number of evaluations and a time budget."""
import time

from . import gbnf


class Budget(Exception):
    pass


def _greedy(value, ok, candidates):
    """Passes over the candidates; after a success, go on from the same index in the new
    value's candidates (re-testing the ones that failed just before is mostly wasted)."""
    progress = True
    while progress:
        progress, i = False, 0
        cands = candidates(value)
        while i < len(cands):
            if ok(cands[i]):
                value, progress = cands[i], True
                cands = candidates(value)
            else:
                i += 1
    return value


def _ddmin(value, ok):
    """Classic ddmin over characters: drop chunks, halving the chunk size."""
    n = 2
    while value:
        chunk = max(1, -(-len(value) // n))
        for start in range(0, len(value), chunk):
            cand = value[:start] + value[start + chunk:]
            if ok(cand):
                value, n = cand, max(n - 1, 2)
                break
        else:
            if chunk == 1:
                break
            n = min(n * 2, len(value))
    return value


def minimize(tester, case, max_evals=300, max_seconds=45.0):
    """A dict: grammar, string (None for acceptance cases), evals, seconds, complete."""
    label = case["label"]
    members = [case["witness"]] if case.get("witness") is not None else []
    grammar, text = case["grammar"], case["string"]
    cache, stats = {}, {"evals": 0}
    best = [grammar, text]  # the smallest reproduction so far, kept when the budget runs out
    start = time.monotonic()

    def ok(g, s):
        key = (g, s)
        if key not in cache:
            if stats["evals"] >= max_evals or time.monotonic() - start > max_seconds:
                raise Budget()
            stats["evals"] += 1
            cache[key] = tester.evaluate(g, s, label, members) == label
            if cache[key]:  # every success is derived from the current state: keep it
                best[:] = [g, s]
        return cache[key]

    complete = True
    try:
        if not ok(grammar, text):  # flaky (timeouts) or the binary changed: keep the original
            return {"grammar": grammar, "string": text, "evals": stats["evals"],
                    "seconds": round(time.monotonic() - start, 2), "complete": False,
                    "reproduced": False}
        for _ in range(2):
            before = (grammar, text)
            grammar = _greedy(grammar, lambda g: ok(g, text), gbnf.candidates)
            if text is not None:
                text = _ddmin(text, lambda s: ok(grammar, s))
            grammar = _ddmin(grammar, lambda g: ok(g, text))
            if (grammar, text) == before:
                break
    except Budget:
        complete = False
        grammar, text = best
    return {"grammar": grammar, "string": text, "evals": stats["evals"],
            "seconds": round(time.monotonic() - start, 2), "complete": complete,
            "reproduced": True}
