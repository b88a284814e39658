"""Comparing verdicts: labels for disagreements, and the known (documented) differences.

A label is `category/direction`:

  accept/llama-accepts          llama.cpp accepts the grammar, `grail check --target llama.cpp` refuses
  accept/grail-accepts          llama.cpp refuses it, Grail accepts
  accept/grail-accepts-llama-hang (or -crash)   llama.cpp hangs / crashes, Grail accepts
  accept/grail-accepts-llama-loops  Grail accepts, llama.cpp loads the grammar but hangs or
                                crashes on a text, and oracle.llama_loops finds the cause
                                (left recursion llama.cpp misses at load time)
  full-match/llama-only         the whole text matches for llama.cpp only (grail-only: the reverse)
  prefix/llama-viable           the text is a viable prefix for llama.cpp only (grail-viable: reverse)
  position/llama-later          both say "not viable" but llama.cpp fails at a later code point
                                (grail-later: the reverse)
  grail-error/check|match|match-hang   Grail failed to answer (exit 2, timeout, bad output)
  known/<name>                  explained by an entry of KNOWN_DIFFERENCES
  inconclusive/llama-hang|llama-crash  llama.cpp gave no answer for this text (no verdict to compare)

Only `known/*` and `inconclusive/*` leave the exit status at 0.
"""
import random

from . import gbnf, oracle
from .sides import viable_len


def oracle_view(grammar, text):
    """The independent recognizer's {"matched", "pos"} (pos as in viable_len), or None. It
    reads `{m,n>2000}` as llama.cpp does, so it has no opinion on grammars with them."""
    if gbnf.big_maxima(grammar):
        return None
    return oracle.verdict(grammar, text)


def agrees(view, result, text):
    return (view["matched"] == result["matched"]
            and view["pos"] == viable_len(result, len(text)))


def accept_label(llama, check):
    status = check["status"]
    if status not in ("accepted", "refused"):
        return "grail-error/check"
    accepted = status == "accepted"
    if llama["status"] == "ok":
        return None if accepted else "accept/llama-accepts"
    if llama["status"] == "refused":
        return "accept/grail-accepts" if accepted else None
    # llama.cpp hung or crashed while loading: Grail should refuse such grammars
    return f"accept/grail-accepts-llama-{llama['status']}" if accepted else None


def refine_accept(label, grammar, tester, probe=True):
    """llama.cpp loads some grammars it then loops on (left recursion through rules that are
    empty only indirectly, compatibility.md #6); Grail refusing those is agreement. Returns
    (label, the text llama.cpp hung on). Needs oracle.llama_loops to predict the loop and,
    with `probe`, llama.cpp to hang or crash on one of a few texts (Grail's samples and
    their prefixes) to confirm it."""
    if label != "accept/llama-accepts" or not oracle.llama_loops(grammar):
        return label, None
    if not probe:
        return None, None
    hung = tester.probe_loops(grammar)
    return (None, hung) if hung is not None else (label, None)


def string_label(text, llama, match):
    """The raw label of one text on a grammar both sides accept (None: they agree)."""
    if llama["status"] in ("hang", "crash", "refused"):
        return f"inconclusive/llama-{llama['status']}"
    if match["status"] != "ok":
        return "grail-error/match-hang" if match["status"] == "hang" else "grail-error/match"
    if llama["matched"] != match["matched"]:
        return "full-match/llama-only" if llama["matched"] else "full-match/grail-only"
    n = len(text)
    vl, vg = viable_len(llama, n), viable_len(match, n)
    if vl == vg:
        return None
    if (vl == n) != (vg == n):
        return "prefix/llama-viable" if vl > vg else "prefix/grail-viable"
    return "position/llama-later" if vl > vg else "position/grail-later"


# ---------------------------------------------------------------------------
# Known differences (docs/compatibility.md). Each entry: name, what it is, which raw labels
# it may explain, and a check `explains(case, ctx) -> bool` that must confirm it.


def _repetition_max_explains(case, ctx):
    """Grail keeps `{m,n}` with n > 2000; llama.cpp reads it as `{m,}`. Confirmed when Grail,
    given the grammar with those bounds written `{m,}`, answers exactly as llama.cpp did."""
    grammar = case["grammar"]
    if not gbnf.big_maxima(grammar):
        return False
    rewritten = gbnf.unbound_big_maxima(grammar)
    match = ctx.grail_match_other(rewritten, case["string"])
    if match["status"] != "ok":
        return False
    llama, n = case["llama"], len(case["string"])
    return (match["matched"] == llama["matched"]
            and viable_len(match, n) == viable_len(llama, n))


def _dead_stack_explains(case, ctx):
    """llama.cpp keeps stacks that can never finish (`root ::= "a" [z-a]`: "a" looks viable);
    Grail's `viable` means completable (compatibility.md #21). Known when Grail is right: the
    independent recognizer (oracle.py: Earley, viable = completable) gives Grail's exact
    answer. Without its opinion (grammar too big, or with {m,n>2000}): known unless a text
    llama.cpp fully matched (this grammar's tested texts) starts with the prefix Grail calls
    dead, which would prove Grail wrong."""
    if "oracle" not in case:
        case["oracle"] = oracle_view(case["grammar"], case["string"])
    if case["oracle"] is not None:
        return agrees(case["oracle"], case["grail"], case["string"])
    text, n = case["string"], len(case["string"])
    dead = text[:viable_len(case["grail"], n) + 1]
    witness = next((m for m in ctx.members if m.startswith(dead)), None)
    if witness is not None:
        case["witness"] = witness
        return False
    return True


KNOWN_DIFFERENCES = [
    ("repetition-max-over-2000",
     "compatibility.md #3: {m,n} with n > 2000 is {m,} in llama.cpp, bounded in Grail",
     ("full-match/", "prefix/", "position/"), _repetition_max_explains),
    ("dead-stack",
     "compatibility.md #21: llama.cpp keeps dead stacks, Grail's viable means completable",
     ("prefix/llama-viable", "position/llama-later"), _dead_stack_explains),
]
# Not generated at all, so never classified: invalid UTF-8 in texts or grammars (#13, #19),
# NUL bytes in grammars (#12), token elements <...> (#15, #18, #23).


def classify(label, case, ctx):
    """The final label: `known/<name>` when a known difference explains the raw label."""
    if label is None:
        return None
    for name, _doc, applies, explains in KNOWN_DIFFERENCES:
        if label.startswith(applies) and explains(case, ctx):
            if name == "dead-stack" and viable_len(case["grail"], len(case["string"])) < 0:
                return "known/dead-stack-empty-language"  # the whole language is empty
            return f"known/{name}"
    return label


def is_failure(label):
    return not label.startswith(("known/", "inconclusive/"))


class Tester:
    """Runs both sides on a grammar and texts, in one process's workspace."""

    def __init__(self, llama, grail, ws):
        self.llama, self.grail, self.ws = llama, grail, ws
        self.members = []

    # context for the known-difference checks
    def grail_match_other(self, grammar, text):
        self.ws.write_grammar(grammar, self.ws.alt)
        self.ws.write_text(text)
        return self.grail.match(self.ws.alt, self.ws.text, text)

    def load(self, grammar):
        self.ws.write_grammar(grammar)
        self.members = []

    def check(self):
        return self.grail.check(self.ws.grammar)

    def run_text(self, text):
        """(llama result, grail match result) on the loaded grammar."""
        self.ws.write_text(text)
        match = self.grail.match(self.ws.grammar, self.ws.text, text)
        llama = self.llama.run(self.ws.grammar, self.ws.text)
        return llama, match

    def probe_loops(self, grammar):
        """A text llama.cpp hangs or crashes on (the grammar is loaded), or None."""
        probes = oracle.loop_probes(grammar, random.Random(0))
        for sample in self.grail.sample(self.ws.grammar, 4, 0, 30) or []:
            probes.extend(sample[:k] for k in range(1, len(sample) + 1))
        probes.extend(gbnf.mentioned_chars(grammar, random.Random(0)))
        for probe in list(dict.fromkeys(probes))[:16]:
            self.ws.write_text(probe)
            if self.llama.run(self.ws.grammar, self.ws.text)["status"] in ("hang", "crash"):
                return probe
        return None

    def evaluate(self, grammar, text, want, members=()):
        """The label of (grammar, text) as the main run would give it; for the minimizer.
        Runs the cheap Grail side first and stops as soon as the label cannot be `want`."""
        self.load(grammar)
        check = self.check()
        if want.startswith(("accept/", "grail-error/check")):
            if want.startswith("accept/") and check["status"] not in ("accepted", "refused"):
                return "grail-error/check"
            if want == "accept/llama-accepts" and check["status"] != "refused":
                return None
            if want.startswith("accept/grail-accepts") and check["status"] != "accepted":
                return None
            self.ws.write_text("")
            label = accept_label(self.llama.run(self.ws.grammar, self.ws.text), check)
            return refine_accept(label, grammar, self)[0]
        if check["status"] != "accepted":
            return "grail-refuses"
        if want == "accept/grail-accepts-llama-loops":
            if not oracle.llama_loops(grammar):
                return None
            self.ws.write_text(text)
            status = self.llama.run(self.ws.grammar, self.ws.text)["status"]
            return want if status in ("hang", "crash") else None
        self.ws.write_text(text)
        match = self.grail.match(self.ws.grammar, self.ws.text, text)
        if want.startswith("grail-error/") and match["status"] == "ok":
            return None
        llama = self.llama.run(self.ws.grammar, self.ws.text)
        if llama["status"] != "ok":
            return f"llama-{llama['status']}"
        self.members = list(members)
        case = {"grammar": grammar, "string": text, "llama": llama, "grail": match}
        return classify(string_label(text, llama, match), case, self)

    def describe(self, grammar, text):
        """Both sides' full answers on one case (for reports and --replay)."""
        self.load(grammar)
        out = {"grail_check": self.check()}
        self.ws.write_text(text or "")
        out["llama"] = self.llama.run(self.ws.grammar, self.ws.text)
        if text is not None:
            out["grail_match"] = self.grail.match(self.ws.grammar, self.ws.text, text)
            out["oracle"] = oracle_view(grammar, text)
        return out
