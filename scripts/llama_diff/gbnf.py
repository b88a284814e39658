"""A loose GBNF tokenizer: enough to find rules, alternatives, items and quantifiers for the
minimizer, the characters a grammar mentions (for test strings) and `{m,n}` bounds (for the
known-difference classifier). It never decides validity: both engines do that.
"""
import re

TOKEN = re.compile(
    r'(?P<lit>"(?:\\.|[^"\\])*"?)'
    r'|(?P<cls>\[(?:\\.|[^\]\\])*\]?)'
    r'|(?P<def>::=)'
    r'|(?P<name>[A-Za-z0-9-]+)'
    r'|(?P<bar>\|)'
    r'|(?P<lp>\()'
    r'|(?P<rp>\))'
    r'|(?P<quant>[*+?]|\{[^}\r\n]*\}?)'
    r'|(?P<dot>\.)'
    r'|(?P<comment>#[^\r\n]*)'
    r'|(?P<nl>\r\n|\r|\n)'
    r'|(?P<ws>[ \t]+)'
    r'|(?P<other>.)', re.S)

BRACE = re.compile(r"\{([ \t]*)(\d+)([ \t]*)(?:(,)([ \t]*)(\d*)([ \t]*))?\}")


class Tok:
    __slots__ = ("kind", "start", "end", "text")

    def __init__(self, kind, start, end, text):
        self.kind, self.start, self.end, self.text = kind, start, end, text

    def __repr__(self):
        return f"{self.kind}:{self.text!r}"


def tokenize(src):
    return [Tok(m.lastgroup, m.start(), m.end(), m.group()) for m in TOKEN.finditer(src)]


def _decode_escape(body, i):
    """(code point or None, next index) for the character at body[i] (which may be `\\`)."""
    if body[i] != "\\":
        return ord(body[i]), i + 1
    if i + 1 >= len(body):
        return None, i + 1
    c = body[i + 1]
    simple = {"n": 10, "t": 9, "r": 13, "\\": 92, '"': 34, "[": 91, "]": 93, "-": 45}
    if c in simple:
        return simple[c], i + 2
    width = {"x": 2, "u": 4, "U": 8}.get(c)
    if width:
        digits = body[i + 2:i + 2 + width]
        if len(digits) == width and all(d in "0123456789abcdefABCDEF" for d in digits):
            return int(digits, 16), i + 2 + width
    return None, i + 2


def literal_code_points(tok):
    body = tok.text[1:-1] if tok.text.endswith('"') and len(tok.text) > 1 else tok.text[1:]
    out, i = [], 0
    while i < len(body):
        cp, i = _decode_escape(body, i)
        if cp is not None:
            out.append(cp)
    return out


def class_items(tok):
    """(negated, [(lo, hi)]) read as llama.cpp reads a class."""
    body = tok.text[1:-1] if tok.text.endswith("]") and len(tok.text) > 1 else tok.text[1:]
    negated = body.startswith("^")
    if negated:
        body = body[1:]
    items, i = [], 0
    while i < len(body):
        lo, i = _decode_escape(body, i)
        hi = lo
        if i + 1 < len(body) and body[i] == "-":
            hi, i = _decode_escape(body, i + 1)
        if lo is not None and hi is not None:
            items.append((lo, hi))
    return negated, items


def valid_char(cp):
    return 0 <= cp <= 0x10FFFF and not 0xD800 <= cp <= 0xDFFF


def mentioned_chars(src, rng, extra=3):
    """Characters the grammar mentions: literal characters, class ends, a character inside
    each range and just outside it (boundaries are where off-by-ones live)."""
    chars = set()
    for tok in tokenize(src):
        if tok.kind == "lit":
            chars.update(literal_code_points(tok))
        elif tok.kind == "cls":
            _, items = class_items(tok)
            for lo, hi in items:
                chars.update((lo, hi, lo - 1, hi + 1))
                if hi > lo + 1:
                    chars.add(rng.randint(lo, hi))
                    if hi - lo < 5000:
                        chars.add(rng.randint(lo, hi))
    return sorted(chr(c) for c in chars if valid_char(c))


# ---------------------------------------------------------------------------
# Structure for the minimizer


def rule_starts(toks):
    """Indices of tokens that start a rule (`name ::=` at nesting depth 0)."""
    starts, depth, line_start = [], 0, True
    for i, tok in enumerate(toks):
        if tok.kind == "lp":
            depth += 1
        elif tok.kind == "rp":
            depth = max(0, depth - 1)
        if tok.kind == "name" and line_start:
            j = i + 1
            while j < len(toks) and toks[j].kind == "ws":
                j += 1
            if j < len(toks) and toks[j].kind == "def":
                starts.append(i)
                depth = 0
        if tok.kind == "nl" and depth == 0:
            line_start = True
        elif tok.kind not in ("ws", "comment", "nl"):
            line_start = False
    return starts


def _cut(src, spans):
    out, last = [], 0
    for start, end in sorted(spans):
        if start < last:
            continue
        out.append(src[last:start])
        last = end
    out.append(src[last:])
    return "".join(out)


def candidates(src):
    """Smaller variants of `src`, biggest cuts first: drop a rule, an alternative, an item, a
    quantifier, a comment; unwrap a group; shrink a repetition bound; shorten a rule name."""
    toks = tokenize(src)
    out = []
    starts = rule_starts(toks)
    heads = set(starts)
    # whole rules
    bounds = [toks[i].start for i in starts] + [len(src)]
    for a, b in zip(bounds, bounds[1:]):
        out.append(_cut(src, [(a, b)]))
    # matching parentheses
    match, stack = {}, []
    for i, tok in enumerate(toks):
        if tok.kind == "lp":
            stack.append(i)
        elif tok.kind == "rp" and stack:
            j = stack.pop()
            match[j], match[i] = i, j
    # alternatives: split each body / group at its own bars
    def alternatives(lo, hi):  # token index range (exclusive) of one alternates list
        bars, depth = [], 0
        for k in range(lo, hi):
            kind = toks[k].kind
            if kind == "lp":
                depth += 1
            elif kind == "rp":
                depth -= 1
            elif kind == "bar" and depth == 0:
                bars.append(k)
        if not bars:
            return
        edges = [lo - 1] + bars + [hi]
        for n in range(len(edges) - 1):
            a, b = edges[n], edges[n + 1]
            if n == 0:  # first alternative and the bar after it
                start, end = toks[a + 1].start if a + 1 < hi else toks[b].start, toks[b].end
            else:  # the bar before and the alternative
                start, end = toks[a].start, toks[b - 1].end if b - 1 > a else toks[a].end
            out.append(_cut(src, [(start, end)]))
    for n, i in enumerate(starts):
        j = i + 1
        while toks[j].kind != "def":
            j += 1
        end = starts[n + 1] if n + 1 < len(starts) else len(toks)
        while end - 1 > j and toks[end - 1].kind in ("ws", "nl", "comment"):
            end -= 1
        alternatives(j + 1, end)
    for i, j in match.items():
        if i < j:
            alternatives(i + 1, j)
    # items with their quantifiers, quantifiers alone, group unwrapping
    for i, tok in enumerate(toks):
        if tok.kind in ("lit", "cls", "dot", "lp") or (tok.kind == "name" and i not in heads):
            last = match.get(i, i) if tok.kind == "lp" else i
            k = last + 1
            while k < len(toks) and toks[k].kind in ("quant", "ws"):
                if toks[k].kind == "quant":
                    last = k
                k += 1
            out.append(_cut(src, [(tok.start, toks[last].end)]))
            if tok.kind == "lp" and i in match:
                out.append(_cut(src, [(tok.start, tok.end), (toks[match[i]].start,
                                                            toks[match[i]].end)]))
        if tok.kind in ("quant", "comment"):
            out.append(_cut(src, [(tok.start, tok.end)]))
        if tok.kind == "quant" and tok.text.startswith("{"):
            found = BRACE.fullmatch(tok.text)
            if found:
                for group in (2, 6):
                    digits = found.group(group)
                    if not digits:
                        continue
                    n = int(digits)
                    rounded = {n - n % 10 ** k for k in range(1, len(digits))}
                    near = {n - 1} if n <= 20 else set()
                    for smaller in sorted({0, 1, 2, n // 2, n // 10} | rounded | near):
                        if 0 <= smaller < n:
                            new = (tok.text[:found.start(group)] + str(smaller)
                                   + tok.text[found.end(group):])
                            out.append(src[:tok.start] + new + src[tok.end:])
    # shorter rule names (all occurrences)
    names = {}
    for tok in toks:
        if tok.kind == "name":
            names.setdefault(tok.text, []).append(tok)
    free = [c for c in "abcdefghijklmnopqrstuvwxyz" if c not in names]
    for name, occurrences in names.items():
        if name == "root" or len(name) <= 1 or not free:
            continue
        new = free[0]
        pieces, last = [], 0
        for tok in occurrences:
            pieces.append(src[last:tok.start])
            pieces.append(new)
            last = tok.end
        pieces.append(src[last:])
        out.append("".join(pieces))
    seen, unique = set(), []
    for cand in out:
        if cand != src and cand not in seen:
            seen.add(cand)
            unique.append(cand)
    unique.sort(key=len)
    return unique


# ---------------------------------------------------------------------------
# Repetition bounds


def big_maxima(src):
    """`{m,n}` quantifiers with n > 2000 (llama.cpp reads them as `{m,}`)."""
    found = []
    for tok in tokenize(src):
        if tok.kind == "quant" and tok.text.startswith("{"):
            m = BRACE.fullmatch(tok.text)
            if m and m.group(4) and m.group(6) and int(m.group(6)) > 2000:
                found.append(tok)
    return found


def unbound_big_maxima(src):
    """`src` with every `{m,n}`, n > 2000, written `{m,}`: llama.cpp's reading."""
    toks = big_maxima(src)
    pieces, last = [], 0
    for tok in toks:
        m = BRACE.fullmatch(tok.text)
        pieces.append(src[last:tok.start])
        pieces.append("{" + m.group(2) + ",}")
        last = tok.end
    pieces.append(src[last:])
    return "".join(pieces)
