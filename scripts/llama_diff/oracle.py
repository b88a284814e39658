"""A third opinion: an independent reading of a GBNF grammar (llama.cpp's dialect, written
from its documented behaviour) and an Earley recognizer over code points that answers with
Grail's meaning of "viable" (the prefix can still be completed).

It exists to confirm the `dead-stack` known difference: there llama.cpp calls a prefix viable
and Grail does not, and only a recognizer that knows which parses can finish can say who is
right. It is only used on grammars both engines accept; anything it cannot read, or work over
its budget, gives None (no opinion).
"""

MAX_CP = 0x10FFFF
UNBOUNDED = None


class Unreadable(Exception):
    pass


class OverBudget(Exception):
    pass


class _Reader:
    """Grammar text -> rules: {id: [[symbol, ...], ...]}; a symbol is ("t", negated,
    ((lo, hi), ...)) for one code point, or ("n", id)."""

    def __init__(self, text):
        self.src = text.split("\0", 1)[0]
        self.i = 0
        self.ids = {}
        self.rules = {}
        self.next_id = 0
        self.size = 0

    def peek(self, k=0):
        j = self.i + k
        return self.src[j] if j < len(self.src) else ""

    def fresh(self):
        self.next_id += 1
        return ("#", self.next_id)

    def rule_id(self, name):
        return self.ids.setdefault(name, ("@", name))

    def skip(self, newlines):
        while True:
            c = self.peek()
            if c in (" ", "\t") or (newlines and c in ("\r", "\n")):
                self.i += 1
            elif c == "#":
                while self.peek() not in ("", "\r", "\n"):
                    self.i += 1
            else:
                return

    def name(self):
        start = self.i
        while self.peek() and (self.peek().isascii() and (self.peek().isalnum() or self.peek() == "-")):
            self.i += 1
        if self.i == start:
            raise Unreadable("name expected")
        return self.src[start:self.i]

    def number(self):
        start = self.i
        while self.peek() and self.peek() in "0123456789":
            self.i += 1
        if self.i == start:
            raise Unreadable("number expected")
        return int(self.src[start:self.i])

    def char(self):
        c = self.peek()
        if c == "":
            raise Unreadable("end of input")
        if c != "\\":
            self.i += 1
            return ord(c)
        e = self.peek(1)
        named = {"n": 10, "t": 9, "r": 13, "\\": 92, '"': 34, "[": 91, "]": 93, "-": 45}
        if e in named:
            self.i += 2
            return named[e]
        width = {"x": 2, "u": 4, "U": 8}.get(e)
        if not width:
            raise Unreadable("unknown escape")
        digits = self.src[self.i + 2:self.i + 2 + width]
        if len(digits) != width or any(d not in "0123456789abcdefABCDEF" for d in digits):
            raise Unreadable("bad hex escape")
        self.i += 2 + width
        return int(digits, 16)

    def add(self, rid, alternatives):
        self.size += sum(len(a) + 1 for a in alternatives)
        if self.size > 200_000:
            raise OverBudget()
        self.rules[rid] = alternatives

    def repeat(self, seq, last, lo, hi):
        item = seq[last:]
        if not item:
            raise Unreadable("nothing to repeat")
        del seq[last:]
        seq.extend(item * lo)
        if hi is UNBOUNDED:
            star = self.fresh()
            self.add(star, [item + [("n", star)], []])
            seq.append(("n", star))
        elif hi > lo:
            tail = None
            for _ in range(hi - lo):  # optional chain: R ::= item R' | (empty)
                rid = self.fresh()
                self.add(rid, [item + ([("n", tail)] if tail else []), []])
                tail = rid
            seq.append(("n", tail))

    def sequence(self, nested):
        seq, last = [], 0
        while True:
            c = self.peek()
            if c == '"':
                self.i += 1
                last = len(seq)
                while self.peek() != '"':
                    seq.append(("t", False, ((self.char(),) * 2,)))
                self.i += 1
            elif c == "[":
                self.i += 1
                negated = self.peek() == "^"
                self.i += negated
                ranges = []
                while self.peek() != "]":
                    lo = self.char()
                    hi = lo
                    if self.peek() == "-" and self.peek(1) not in ("]", ""):
                        self.i += 1
                        hi = self.char()
                    elif self.peek() == "-" and self.peek(1) == "":
                        raise Unreadable("end of input")
                    ranges.append((lo, hi))
                self.i += 1
                last = len(seq)
                if ranges:
                    seq.append(("t", negated, tuple(ranges)))
            elif c == ".":
                self.i += 1
                last = len(seq)
                seq.append(("t", True, ()))
            elif c and c.isascii() and (c.isalnum() or c == "-"):
                last = len(seq)
                seq.append(("n", self.rule_id(self.name())))
            elif c == "(":
                self.i += 1
                self.skip(True)
                rid = self.fresh()
                self.add(rid, self.alternatives(True))
                if self.peek() != ")":
                    raise Unreadable("')' expected")
                self.i += 1
                last = len(seq)
                seq.append(("n", rid))
            elif c in ("*", "+", "?"):
                self.i += 1
                self.skip(nested)
                self.repeat(seq, last, 0 if c != "+" else 1, 1 if c == "?" else UNBOUNDED)
                continue
            elif c == "{":
                self.i += 1
                self.skip(nested)
                lo = self.number()
                self.skip(nested)
                hi = lo
                if self.peek() == ",":
                    self.i += 1
                    self.skip(nested)
                    hi = self.number() if self.peek() in tuple("0123456789") else UNBOUNDED
                    self.skip(nested)
                if self.peek() != "}":
                    raise Unreadable("'}' expected")
                self.i += 1
                if lo > 2000:
                    raise Unreadable("too many repetitions")
                if hi is not UNBOUNDED and (hi > 2000 or hi >= (1 << 64) - 1):
                    hi = UNBOUNDED  # llama.cpp's reading of large maxima
                if hi is not UNBOUNDED and hi < lo:
                    raise Unreadable("reversed bounds")
                self.skip(nested)
                self.repeat(seq, last, lo, hi)
                continue
            else:
                return seq
            self.skip(nested)

    def alternatives(self, nested):
        alts = [self.sequence(nested)]
        while self.peek() == "|":
            self.i += 1
            self.skip(True)
            alts.append(self.sequence(nested))
        return alts

    def read(self):
        self.skip(True)
        while self.peek():
            rid = self.rule_id(self.name())
            self.skip(False)
            if self.src[self.i:self.i + 3] != "::=":
                raise Unreadable("'::=' expected")
            self.i += 3
            self.skip(True)
            self.add(rid, self.alternatives(False))
            c = self.peek()
            if c == "\r":
                self.i += 2 if self.peek(1) == "\n" else 1
            elif c == "\n":
                self.i += 1
            elif c:
                raise Unreadable("end of rule expected")
            self.skip(True)
        for alts in self.rules.values():
            for alt in alts:
                for sym in alt:
                    if sym[0] == "n" and sym[1] not in self.rules:
                        raise Unreadable("undefined rule")
        if ("@", "root") not in self.rules:
            raise Unreadable("no root")
        return self.rules


def _matches(sym, cp):
    _, negated, ranges = sym
    inside = any(lo <= cp <= hi for lo, hi in ranges)
    return inside != negated


def _terminal_productive(sym):
    """Some valid Unicode scalar value (what valid UTF-8 text holds) matches it."""
    _, negated, ranges = sym
    pieces = []
    for lo, hi in ranges:
        lo, hi = max(lo, 0), min(hi, MAX_CP)
        for a, b in ((lo, min(hi, 0xD7FF)), (max(lo, 0xE000), hi)):
            if a <= b:
                pieces.append((a, b))
    if not negated:
        return bool(pieces)
    at = 0  # negated: is some scalar value outside every piece (and not a surrogate)?
    for a, b in sorted(pieces + [(0xD800, 0xDFFF)]):
        if a > at:
            return True
        at = max(at, b + 1)
    return at <= MAX_CP


class Grammar:
    def __init__(self, text):
        rules = _Reader(text).read()
        # keep only alternatives made of productive symbols (fixpoint)
        productive = set()
        changed = True
        while changed:
            changed = False
            for rid, alts in rules.items():
                if rid in productive:
                    continue
                for alt in alts:
                    if all((s[1] in productive) if s[0] == "n" else _terminal_productive(s)
                           for s in alt):
                        productive.add(rid)
                        changed = True
                        break
        self.rules = {rid: [alt for alt in alts if all(
            (s[1] in productive) if s[0] == "n" else _terminal_productive(s) for s in alt)]
            for rid, alts in rules.items()}
        nullable = set()
        changed = True
        while changed:
            changed = False
            for rid, alts in self.rules.items():
                if rid not in nullable and any(all(s[0] == "n" and s[1] in nullable for s in alt)
                                               for alt in alts):
                    nullable.add(rid)
                    changed = True
        self.nullable = nullable
        self.root = ("@", "root")

    def run(self, text, budget=400_000):
        """(matched, pos): pos = code points of the longest completable prefix (len(text)
        when all of it; -1 when the language is empty)."""
        rules, nullable = self.rules, self.nullable
        work = [0]
        waiting_at = []  # per position: {rule: [items waiting for it]}

        def closure(seed, k):
            items, waiting, scan, agenda = set(), {}, [], []

            def add(item):
                if item not in items:
                    items.add(item)
                    agenda.append(item)

            for item in seed:
                add(item)
            while agenda:
                work[0] += 1
                if work[0] > budget:
                    raise OverBudget()
                item = agenda.pop()
                rid, a, dot, origin = item
                alt = rules[rid][a]
                if dot < len(alt):
                    sym = alt[dot]
                    if sym[0] == "t":
                        scan.append((item, sym))
                        continue
                    target = sym[1]
                    waiters = waiting.setdefault(target, [])
                    waiters.append(item)
                    if len(waiters) == 1:
                        for b in range(len(rules[target])):
                            add((target, b, 0, k))
                    if target in nullable:
                        add((rid, a, dot + 1, origin))
                else:
                    source = waiting if origin == k else waiting_at[origin]
                    for (r2, a2, d2, o2) in list(source.get(rid, ())):
                        add((r2, a2, d2 + 1, o2))
            waiting_at.append(waiting)
            return items, scan

        items, scan = closure([(self.root, b, 0, 0) for b in range(len(rules[self.root]))], 0)
        if not items:
            return False, -1
        for k, ch in enumerate(text):
            cp = ord(ch)
            nxt = [(rid, a, dot + 1, origin) for (rid, a, dot, origin), sym in scan
                   if _matches(sym, cp)]
            if not nxt:
                return False, k
            items, scan = closure(nxt, k + 1)
        matched = any(rid == self.root and dot == len(rules[rid][a]) and origin == 0
                      for (rid, a, dot, origin) in items)
        return matched, len(text)


_CACHE = {}


def verdict(grammar_text, text, budget=400_000):
    """{"matched", "pos"} from the independent recognizer, or None (no opinion)."""
    try:
        grammar = _CACHE.get(grammar_text)
        if grammar is None:
            if len(_CACHE) > 64:
                _CACHE.clear()
            grammar = _CACHE[grammar_text] = Grammar(grammar_text)
        matched, pos = grammar.run(text, budget)
    except (Unreadable, OverBudget, RecursionError, KeyError, IndexError, ValueError):
        return None
    return {"matched": matched, "pos": pos}


def llama_loops(grammar_text, want_rules=False):
    """True when llama.cpp's matcher would expand stacks forever on this grammar: a cycle of
    leftmost references (reached through prefixes that derive the empty string) in which
    some reference is not last in its alternative, so each turn pushes one more element.
    llama.cpp's load-time check only catches cycles through rules with a literally empty
    alternative (compatibility.md #6). Rules unreachable from root are ignored (they are
    never expanded). None when the grammar cannot be read."""
    try:
        rules = _Reader(grammar_text).read()
    except (Unreadable, OverBudget, RecursionError):
        return None
    if ("@", "root") not in rules:
        return None
    nullable, changed = set(), True
    while changed:
        changed = False
        for rid, alts in rules.items():
            if rid not in nullable and any(all(s[0] == "n" and s[1] in nullable for s in alt)
                                           for alt in alts):
                nullable.add(rid)
                changed = True
    reach, todo = {("@", "root")}, [("@", "root")]
    while todo:
        for alt in rules[todo.pop()]:
            for s in alt:
                if s[0] == "n" and s[1] not in reach:
                    reach.add(s[1])
                    todo.append(s[1])
    edges = {}  # rule -> {target: grows}
    for rid in reach:
        out = edges.setdefault(rid, {})
        for alt in rules[rid]:
            for i, s in enumerate(alt):
                if s[0] != "n":
                    break
                out[s[1]] = out.get(s[1], False) or i < len(alt) - 1
                if s[1] not in nullable:
                    break
    # strongly connected components (iterative Tarjan)
    index, low, stack, on, comp, counter = {}, {}, [], set(), {}, [0]
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(edges.get(nxt, {}))))
                    advanced = True
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    on.discard(member)
                    comp[member] = node
                    if member == node:
                        break
    looping = {comp[a] for a, outs in edges.items() for b, grows in outs.items()
               if grows and comp.get(a) == comp.get(b)}
    if want_rules:
        return {r for r in edges if comp.get(r) in looping}, rules
    return bool(looping)


def loop_probes(grammar_text, rng, count=5, tries=300, max_len=40):
    """Short texts after which llama.cpp has to expand a rule of a loop found by
    llama_loops (random leftmost walks through the grammar, dead branches included: llama.cpp
    keeps those stacks too). Shortest first."""
    found = llama_loops(grammar_text, want_rules=True)
    if not found:
        return []
    looping, rules = found
    probes = set()
    for _ in range(tries):
        todo, text = [("n", ("@", "root"))], []
        while todo and len(text) <= max_len:
            sym = todo.pop()
            if sym[0] == "n":
                if sym[1] in looping:
                    probes.add("".join(text))
                    break
                todo.extend(reversed(rng.choice(rules[sym[1]])))
            else:
                cp = _pick_char(sym, rng) if sym[2] or sym[1] else None
                if cp is None:
                    break
                text.append(chr(cp))
    return sorted(probes, key=len)[:count]


_PICKS = [ord(c) for c in "abcxyz AZ09-\n\té日😀"] + [0x7F, 0x80, 0x7FF, 0x800, 0xFFFF,
                                                    0x10000, MAX_CP]


def _pick_char(sym, rng):
    _, negated, ranges = sym
    if not negated:
        lo, hi = rng.choice(ranges)
        lo, hi = max(lo, 0), min(hi, MAX_CP)
        for _ in range(20):
            cp = rng.choice([lo, hi, rng.randint(lo, hi)]) if lo <= hi else lo
            if 0 <= cp <= MAX_CP and not 0xD800 <= cp <= 0xDFFF:
                return cp
        return None
    for _ in range(40):
        cp = rng.choice(_PICKS) if rng.random() < 0.7 else rng.randint(0, MAX_CP)
        if not 0xD800 <= cp <= 0xDFFF and _matches(sym, cp):
            return cp
    return None


def samples(grammar_text, rng, count, max_len=80):
    """Random strings of the language, derived from this module's own reading of the grammar
    (independent of `grail sample`): random alternatives, the shortest ones once the text
    gets long."""
    try:
        grammar = Grammar(grammar_text)
    except (Unreadable, OverBudget, RecursionError):
        return []
    rules = grammar.rules
    inf = float("inf")
    minlen = {rid: inf for rid in rules}
    changed = True
    while changed:
        changed = False
        for rid, alts in rules.items():
            for alt in alts:
                n = sum(1 if s[0] == "t" else minlen[s[1]] for s in alt)
                if n < minlen[rid]:
                    minlen[rid], changed = n, True
    if minlen.get(grammar.root, inf) == inf:
        return []
    max_len = max(max_len, minlen[grammar.root] + 20)
    out = []
    for _ in range(count):
        text, todo, steps = [], [("n", grammar.root)], 0
        while todo and steps < 20000:
            steps += 1
            sym = todo.pop()
            if sym[0] == "t":
                cp = _pick_char(sym, rng)
                if cp is None:
                    break
                text.append(chr(cp))
                continue
            alts = [a for a in rules[sym[1]]
                    if sum(1 if s[0] == "t" else minlen[s[1]] for s in a) < inf]
            if len(text) + len(todo) > max_len or steps > 5000:
                alt = min(alts, key=lambda a: sum(1 if s[0] == "t" else minlen[s[1]]
                                                  for s in a))
            else:
                alt = rng.choice(alts)
            todo.extend(reversed(alt))
        else:
            if not todo and len(text) <= 4 * max_len:
                out.append("".join(text))
    return out
