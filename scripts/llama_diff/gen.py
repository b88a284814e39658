"""Seeded random grammars across llama.cpp's GBNF dialect, and test strings for them.

`grammar(rng)` picks, per grammar, one of: a small random grammar (a few rules, depth <= 4,
a small alphabet, random layout), a targeted shape (bounds around llama.cpp's 2000 limits,
recursion, duplicate rules, `{0}`, escapes, ...), or a deliberately broken grammar.
`strings(...)` makes the texts to match.
"""
from . import gbnf

ASCII = "abc"
UNICODE = ["é", "日", "本", "😀", "ß", "\u0080", "\u07ff", "\u0800", "\uffff", "\U00010000",
           "\U0010ffff", "ω"]
ODD = [" ", "\n", "\t", "\r", "-", "[", "]", '"', "\\", "^", "#", "|", "(", ")", "x", "y",
       "z", "A", "0", "9", "{", "}", ".", "*", "\x00", "\x7f"]
NAMES = ["a", "b", "x", "y", "item", "42", "a-1", "-x", "Ab", "r2d2", "list-item", "x-", "0",
         "B", "val", "e", "f", "ws", "ROOT", "a1b2", "--"]
QUANTS = ["*", "+", "?", "{0}", "{1}", "{2}", "{3}", "{0,}", "{1,}", "{2,}", "{0,1}", "{0,2}",
          "{1,3}", "{2,2}", "{0,0}", "{ 1 , 2 }", "{1,1}", "{3,}", "{ 0 }", "{2, 4}"]
WORD = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")


class Layout:
    """Per-grammar formatting choices: line ends, line breaks where allowed, comments."""

    def __init__(self, rng):
        self.rng = rng
        self.nl = rng.choices(["\n", "\r\n", "\r"], [80, 17, 3])[0]
        self.p_break = rng.choice([0, 0, 0.15, 0.4])   # line breaks inside parentheses
        self.p_comment = rng.choice([0, 0, 0.1, 0.3])
        self.p_tight = rng.choice([0, 0.2, 0.5])       # no space where none is needed
        self.p_tab = rng.choice([0, 0.1])

    def comment(self):
        return "#" + self.rng.choice(["", " c", " note: ( | ) [ ] \" ::=", " é 日", "#", " x ::= y"])

    def space(self):
        r = self.rng.random()
        if r < self.p_tab:
            return "\t"
        return "  " if r < self.p_tab + 0.05 else " "

    def brk(self, depth):
        """A gap where a line break is allowed (inside parentheses, after `::=` or `|`)."""
        r = self.rng.random()
        if r < self.p_break:
            pre = (" " + self.comment()) if self.rng.random() < self.p_comment else ""
            return pre + self.nl + "  " * (depth + 1)
        return self.space()

    def gap(self, depth, left, right):
        """The gap between two items of a sequence."""
        if depth > 0 and self.rng.random() < self.p_break:
            return self.brk(depth)
        if self.rng.random() < self.p_tight and not (left[-1:] in WORD and right[:1] in WORD):
            return ""
        return self.space()


class RandomGrammar:
    """A small random grammar: a few rules over a small alphabet."""

    def __init__(self, rng):
        self.rng = rng
        self.layout = Layout(rng)
        self.alphabet = list(ASCII)
        if rng.random() < 0.3:
            self.alphabet += rng.sample(UNICODE, 2)
        if rng.random() < 0.2:
            self.alphabet += rng.sample(ODD, 2)
        n_rules = rng.choice([1, 1, 2, 2, 3, 3, 4])
        others = rng.sample([n for n in NAMES if n != "root"], n_rules - 1)
        self.names = ["root"] + others
        self.undefined = rng.random() < 0.04
        self.p_quant = rng.choice([0.15, 0.3, 0.45])

    def char(self):
        if self.rng.random() < 0.85:
            return self.rng.choice(self.alphabet)
        return self.rng.choice(UNICODE + ODD)

    def char_repr(self, c, in_class):
        rng, cp = self.rng, ord(c)
        must = {'"': '\\"', "\\": "\\\\"} if not in_class else {"]": "\\]", "\\": "\\\\"}
        r = rng.random()
        if c in must and r < 0.85:
            return must[c]
        if c in "\n\t\r" and r < 0.5:
            return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}[c]
        if c in "[]-\"" and r < 0.2:
            return "\\" + c
        if r < 0.8 and c not in "\r\x00" and (c not in must):
            return c
        hexd = (lambda v, w: format(v, "0%dx" % w) if rng.random() < 0.5
                else format(v, "0%dX" % w))
        if cp < 0x100 and rng.random() < 0.6:
            return "\\x" + hexd(cp, 2)
        if cp < 0x10000 and rng.random() < 0.6:
            return "\\u" + hexd(cp, 4)
        return "\\U" + hexd(cp, 8)

    def literal(self):
        n = self.rng.choices([0, 1, 2, 3], [1, 57, 27, 15])[0]
        return '"' + "".join(self.char_repr(self.char(), False) for _ in range(n)) + '"'

    def cls(self):
        rng = self.rng
        special = rng.random()
        if special < 0.04:
            return rng.choice(["[]", "[^]", "[a-]", "[-a]", "[a-b-c]", "[z-a]", "[^a-]",
                               "[\\--\\-]", "[\\x00-\\U0010FFFF]", "[^\\n]", "[a\\-c]"])
        body = "^" if rng.random() < 0.2 else ""
        for k in range(rng.choice([1, 1, 2, 3])):
            a, b = self.char(), self.char()
            if rng.random() < 0.45:
                lo, hi = sorted((a, b)) if rng.random() < 0.93 else (max(a, b), min(a, b))
                body += self.class_char(lo, first=not body) + "-" + self.class_char(hi)
            else:
                body += self.class_char(a, first=not body)
        return "[" + body + "]"

    def class_char(self, c, first=False):
        out = self.char_repr(c, True)
        if first and out == "^":
            out = "\\x5E"
        if out == "-" and self.rng.random() < 0.7:
            out = "\\-"
        return out

    def quants(self):
        rng, out = self.rng, ""
        while rng.random() < (self.p_quant if not out else 0.12):
            q = rng.choice(QUANTS)
            out += (" " if rng.random() < 0.15 else "") + q
        return out

    def atom(self, depth, rule, first=False):
        rng = self.rng
        kinds = ["lit", "cls", "dot", "ref"] + (["group"] if depth < 4 else [])
        kind = rng.choices(kinds, [34, 16, 4, 22, 16][:len(kinds)])[0]
        if kind == "lit":
            return self.literal()
        if kind == "cls":
            return self.cls()
        if kind == "dot":
            return "."
        if kind == "ref":
            if rng.random() < 0.03:  # an undefined rule repeated zero times (llama.cpp's rule
                # ids decide whether that is refused: compatibility notes in check)
                return rng.choice(["nope{0}", "(nope){0}", "nope{0,0}", "nope{ 0 }"])
            if self.undefined and rng.random() < 0.3:
                return rng.choice(["undefined", "foo", "zz-top"])
            others = [n for n in self.names if n != rule]
            # a self reference first in a sequence is left recursion: llama.cpp refuses it
            if first and rng.random() < 0.85 or rng.random() < 0.5:
                return rng.choice(others) if others else self.literal()
            return rng.choice(self.names)
        return self.group(depth + 1, rule)

    def group(self, depth, rule):
        layout = self.layout
        inner = self.alternatives(depth, rule)
        open_gap = layout.brk(depth) if self.rng.random() < 0.3 else ""
        close_gap = layout.brk(depth - 1) if self.rng.random() < 0.2 else ""
        return "(" + open_gap + inner + close_gap + ")"

    def sequence(self, depth, rule, allow_empty):
        rng = self.rng
        n = rng.choices([0, 1, 2, 3, 4], [4 if allow_empty else 0, 35, 35, 18, 8])[0]
        items = [self.atom(depth, rule, k == 0) + self.quants() for k in range(n)]
        out = ""
        for item in items:
            if out:
                out += self.layout.gap(depth, out, item)
            out += item
        return out

    def alternatives(self, depth, rule):
        rng, layout = self.rng, self.layout
        n = rng.choices([1, 2, 3], [55, 32, 13])[0]
        out = ""
        for k in range(n):
            # an empty alternative last at the top level swallows the next line: rare
            empty_ok = depth > 0 or k < n - 1 or rng.random() < 0.1
            seq = self.sequence(depth, rule, empty_ok)
            if k:
                before = layout.brk(depth - 1) if depth > 0 and rng.random() < 0.3 \
                    else layout.space()
                out += before + "|" + (layout.brk(depth) if seq or rng.random() < 0.5 else "")
            out += seq
        return out

    def rule(self, name):
        layout, rng = self.layout, self.rng
        body = self.alternatives(0, name)
        sep = rng.choice([" ", " ", "\t", ""])
        after = layout.brk(0) if rng.random() < 0.8 or not body else ""
        end = (" " + layout.comment()) if rng.random() < layout.p_comment else ""
        return name + sep + "::=" + after + body + end

    def grammar(self):
        rng, layout = self.rng, self.layout
        order = list(self.names)
        if rng.random() < 0.2:
            rng.shuffle(order)
        lines = []
        if rng.random() < layout.p_comment:
            lines.append(layout.comment())
        if rng.random() < 0.1:  # a rule defined twice: llama.cpp keeps the last definition
            order.insert(rng.randrange(len(order) + 1), rng.choice(self.names))
        for name in order:
            lines.append(self.rule(name))
            if rng.random() < 0.1:
                lines.append(rng.choice(["", layout.comment()]))
        text = layout.nl.join(lines)
        if rng.random() < 0.9:
            text += layout.nl
        return text


# ---------------------------------------------------------------------------
# Targeted shapes


def _atom(rng):
    return rng.choice(['"a"', "[ab]", '("a" | "b")', '"ab"', "x", ".", "[^a]", '("a")'])


def _x_rule(rng):
    return rng.choice(['x ::= "b"', 'x ::= "b" | "c"', "x ::= [bc]", 'x ::= "bb"'])


def _bound_around(rng, limit=2000):
    return rng.choice([limit - 1, limit, limit + 1, limit, limit + 1])


def t_dead_stack(rng):
    return rng.choice([
        'root ::= "a" [z-a]\n',
        'root ::= "a" loop | "b"\nloop ::= "x" loop\n',
        'root ::= "a" ([z-a] | "b")\n',
        'root ::= ("a" [b-a])* "c"\n',
        'root ::= "ab" []{1} "c" | "abd"\n',
        'root ::= "a" x | "ab"\nx ::= "b" x\n',
        'root ::= [z-a]\n',
        'root ::= "a" "b"? [c-b]\n',
        'root ::= x "c"\nx ::= "a" x | "b" [z-a]\n',
    ])


def t_bounds(rng):
    atom = _atom(rng)
    n = _bound_around(rng)
    form = rng.choice(["{%d}", "{0,%d}", "{1,%d}", "{%d,}", "{%d,%d}", "{0,%d}"])
    q = form % ((n, n + rng.choice([0, 1, 5])) if form.count("%d") == 2 else n)
    text = f"root ::= {atom}{q}\n"
    if "x" in atom:
        text += _x_rule(rng) + "\n"
    return text


def t_budget(rng):
    """llama.cpp's rule budget: items generated by a group times the repetition > 2000."""
    choice = rng.randrange(8)
    if choice == 0:
        n = rng.choice([999, 1000, 1001])
        x_first = rng.random() < 0.5
        body = f'root ::= ("a" x){{{n}}}'
        return (_x_rule(rng) + "\n" + body + "\n") if x_first else (body + "\n" + _x_rule(rng) + "\n")
    if choice == 1:
        a, b = rng.choice([(50, 40), (50, 38), (49, 40), (44, 44), (40, 48), (10, 181),
                           (10, 182), (1, 1000), (1, 999), (0, 2000)])
        return f'root ::= (("a"){{0,{a}}}){{0,{b}}}\n'
    if choice == 2:
        a = rng.choice([2, 3, 4])
        b = 2000 // a + rng.choice([-1, 0, 1])
        return f'root ::= "a"{{{a}}}{{{b}}}\n'
    if choice == 3:
        k = rng.choice([1, 2, 3, 5])
        inner = " ".join(rng.choice(['"a"', '("b")', "[c]", "(x)", "x"]) for _ in range(k))
        n = rng.choice([400, 500, 666, 667, 1000, 1001, 2000])
        return f"root ::= ({inner}){{{rng.choice(['', '0,'])}{n}}}\n" + _x_rule(rng) + "\n"
    if choice == 4:
        n = rng.choice([1999, 2000, 2001])
        return f'root ::= ("a"){{{n}}}\n'
    if choice == 5:
        n = rng.choice([1000, 1001, 2000])
        return f'root ::= ("a" | "b"){{0,{n}}} "c"\n'
    if choice == 6:
        a = rng.choice([20, 44, 45, 63])
        return f'root ::= (("a" "b"?){{{a}}}){{{a}}}\n'
    return f'root ::= ((("a"){{0,3}}){{0,3}}){{0,{rng.choice([100, 150, 200, 250])}}}\n'


def t_huge_numbers(rng):
    n = rng.choice(["18446744073709551615", "18446744073709551616", "99999999999999999999",
                    "4294967295", "4294967296", "2001", "100000", "0"])
    form = rng.choice(["{0,%s}", "{%s}", "{%s,}", "{1,%s}", "{0, %s }"])
    atom = rng.choice(['"a"', "[ab]", '("a")', '"a"?'])
    tail = rng.choice(["", ' "b"'])
    return f"root ::= {atom}{form % n}{tail}\n"


def t_reversed_bounds(rng):
    q = rng.choice(["{3,1}", "{2,0}", "{1,0}", "{5,4}", "{2000,1999}"])
    return rng.choice([
        f'root ::= "a"{q}\n',
        f'root ::= ("a" | "b"){q} "c"\n',
        f'root ::= "a" | (x{q})\nroot ::= "b"\nx ::= "c"\n',
        f'root ::= x{q}\nroot ::= "b"\n',
        f'x ::= "a"{q}\nroot ::= "b"\n',
    ])


def t_recursion(rng):
    return rng.choice([
        'root ::= "a" root | "b"\n',
        'root ::= root "a" | "b"\n',
        'root ::= "a"? root "c" | "b"\n',
        'root ::= ("a"?) root | "b"\n',
        'root ::= ("a"?) root "c" | "b"\n',
        'root ::= "a"? root | "b"\n',
        'root ::= "a"\nx ::= x "b" | "c"\n',
        'root ::= "a" | x\nx ::= x "b" | "c"\n',
        'root ::= e root "x" | "y"\ne ::= f\nf ::= | "z"\n',
        'root ::= e root | "y"\ne ::= f\nf ::= | "z"\n',
        'root ::= a\na ::= b "x"\nb ::= a "y" | "z"\n',
        'root ::= x root | "b"\nx ::= | "a"\n',
        'root ::= x root "c" | "b"\nx ::= | "a"\n',
        'root ::= x* root | "b"\nx ::= "a"\n',
        'root ::= ("a" |)* "b"\n',
        'root ::= ("a" | "")* "b"\n',
        'root ::= ()* "b"\n',
        'root ::= ()? "b"\n',
        'root ::= (){3} "b"\n',
        'root ::= "a"?* "b"\n',
        'root ::= ("a"?)* "b"\n',
        'root ::= ("a"?)+ "b"\n',
        'root ::= "a"** "b"\n',
        'root ::= ("a"*)* "b"\n',
        'root ::= (x)* "b"\nx ::= "a"?\n',
        'root ::= x* "b"\nx ::= "a"?\n',
        'root ::= "(" root ")" root |\n',
        'root ::= "a" root "b" | "a" root |\n',
        'root ::= x\nx ::= "a" x | "a"\n',
        'root ::= "a" (root)? "b"\n',
        'root ::= (root "a" | "b")\n',
        'root ::= ("b" | root "a")\n',
        'root ::= ("a" | "b" root)+\n',
        'root ::= "a" x\nx ::= e x "b" | "y"\ne ::= f\nf ::= | "z"\n',
        'root ::= "a" x\nx ::= e x | "y"\ne ::= f\nf ::= | "z"\n',
        'root ::= "a"\nx ::= e x "b" | "y"\ne ::= f\nf ::= | "z"\n',
        'root ::= x\nx ::= e x "b" | "y"\ne ::= "z"*\n',
        'root ::= "a" x\nx ::= e y "b" | "c"\ny ::= x "d" | "e"\ne ::= "z"?\n',
        'root ::= "a" x\nx ::= e y | "c"\ny ::= x | "e"\ne ::= "z"?\n',
        'root ::= "a" x\nx ::= (e x) "b" | "c"\ne ::= ("z"?)\n',
        'root ::= "a" x\nx ::= (e x "b") | "c"\ne ::= ("z"?)\n',
        'root ::= "a" x\nx ::= e{2} x "b" | "c"\ne ::= "z"{0,1}\n',
        'root ::= "a" x\nx ::= e* x "b" | "c"\ne ::= "z"\n',
        'root ::= "a" x\nx ::= [z-a]? x "b" | "c"\n',
        'root ::= "a" x\nx ::= (""|"q") x "b" | "c"\n',
        'root ::= "a" x\nx ::= ("q"|"") x "b" | "c"\n',
        'root ::= "a" x\nx ::= ("q"|) x "b" | "c"\n',
        'root ::= "a" x\nx ::= "q"{0} x "b" | "c"\n',
        'root ::= x "b"\nx ::= y x | "c"\ny ::= "q"?\n',
    ])


def t_duplicates(rng):
    return rng.choice([
        'root ::= "a" | (foo)\nroot ::= "b"\n',
        'root ::= foo\nroot ::= "b"\n',
        'root ::= foo\nroot ::= "b"\nx ::= "c"\n',
        'root ::= "a" (foo "b")*\nroot ::= "b"\n',
        'root ::= "a"\nroot ::= "b"\n',
        'root ::= (root "a")\nroot ::= "b"\n',
        'root ::= ("x" | root)* "y"\nroot ::= "b"\n',
        'x ::= "a"\nroot ::= x\nx ::= "b"\n',
        'root ::= x\nx ::= foo\nx ::= "c"\n',
        'root ::= x\nx ::= (foo)\nx ::= "c"\n',
        'root ::= "a" foo\nroot ::= "b" bar\nbar ::= "c"\n',
        'root ::= foo bar\nroot ::= "b"\nbar ::= "c"\n',
        'root ::= ("a"{3,1})\nroot ::= "b"\n',
        'root ::= "a"\nroot ::= root "b"\n',
        'root ::= root "b"\nroot ::= "a"\n',
        'root ::= (x "a")\nroot ::= "b"\nx ::= x "c" | "d"\n',
    ])


def t_zero(rng):
    return rng.choice([
        "root ::= foo{0}\n",
        'root ::= "a" foo{0} "b"\n',
        "root ::= (foo){0}\n",
        "root ::= foo{0,0}\n",
        'root ::= foo{0} ("a")\n',
        'root ::= foo{0}\nx ::= "c"\n',
        'x ::= "c"\nroot ::= foo{0}\n',
        'root ::= "a"\nx ::= foo{0}\n',
        "root ::= foo{0}*\n",
        'root ::= "b" foo{0}?\n',
        'root ::= "a"{0} | "b"\n',
        'root ::= ("a" foo){0} "b"\n',
        'root ::= foo{0} bar{0} "c"\n',
        'root ::= "a" foo{ 0 }\n',
        'root ::= root{0} "a"\n',
        'root ::= x{0} "a"\nx ::= x "b"\n',
        'root ::= x{0}{2} "a"\nx ::= "b"\n',
        'root ::= ""* "a"\n',
        'root ::= []+ "a"\n',
        'root ::= [^]? "a"\n',
        'root ::= "a" | *\n',
        'root ::= "a" ( | "b")\n',
        'root ::= ("a" |) "b"\n',
        "root ::= | \"a\"\n",
        'root ::= "a" x\nx ::=',
        'root ::= "a" x\nx ::=\n',
        'root ::=\n',
        'root ::= x\nx ::= \ny ::= "a"\n',
    ])


def t_nullable_bounds(rng):
    n = rng.choice(["99999", "2001", "2000", "50000", "3000"])
    m = rng.choice(["2", "3", "1", "0,2"])
    x = rng.choice(['x ::= "a" | "y"?', 'x ::= "a"?', 'x ::= ("a")?', "x ::= [ab]*",
                    'x ::= | "a"', 'x ::= "a" | y\ny ::= "b"?'])
    return rng.choice([
        f"root ::= x{{0,{n}}}{{{m}}}\n{x}\n",
        f"root ::= x{{0,{n}}}\n{x}\n",
        f'root ::= (x "b"?){{0,{n}}}\n{x}\n',
        f"root ::= x{{1,{n}}} \"c\"\n{x}\n",
        f"root ::= (x{{0,{n}}}){{{m}}}\n{x}\n",
    ])


def t_escapes(rng):
    return rng.choice([
        'root ::= "\\n\\t\\r\\\\\\"\\[\\]\\-"\n',
        'root ::= "\\x41\\x7a\\u00e9\\u65E5\\U0001F600"\n',
        'root ::= [\\x00-\\x1F]+\n',
        'root ::= "\\uD800" | "a"\n',
        'root ::= "\\U00110000" | "a"\n',
        'root ::= [\\uD7FF-\\uE000]\n',
        'root ::= [\\U0010FFFF-\\UFFFFFFFF] | "a"\n',
        'root ::= [^\\x00-\\U0010FFFF] | "b"\n',
        'root ::= [α-ω]+ "日本"\n',
        'root ::= [😀-😂]* "é"\n',
        'root ::= "日本" | "é" [^é]\n',
        'root ::= [\\]\\[\\-\\\\]+\n',
        'root ::= "a\nb"\n',
        'root ::= [\n]\n',
        'root ::= "a\tb"\n',
        'root ::= "\\x4"\n',
        'root ::= "\\q"\n',
        'root ::= "\\u12"\n',
        'root ::= [\\x4]\n',
        'root ::= "\\"\n',
        'root ::= [a\\]\n',
        'root ::= "#" [#] # "x"\n',
        'root ::= "\\x00" "a"\n',
        'root ::= .{2} [^a]\n',
        'root ::= [\\^a] | [^^]\n',
        'root ::= "\\U0000004a\\u004A\\x4A"\n',
    ])


def t_layout(rng):
    nl = rng.choice(["\n", "\r\n", "\r"])
    return rng.choice([
        'root ::= (\n  "a" # one\n  | "b" # two\n)\n',
        '# header\n\nroot ::= x # end\n# own line\nx ::= "a"\n',
        'root ::=\n  "a"\n',
        'root ::= "a" |\n  "b"\n',
        'root ::= "a"\n  | "b"\n',
        'root ::= ( "a"\n  "b" )\n',
        'root ::= "a"\n  "b"\n',
        'root ::= "a" |\n',
        'root ::= "a" |\nx ::= "b"\n',
        'root ::= "a" # c ( \n',
        'root ::= ("a" # c )\n)\n',
        'root ::= "a"{ 2 , 3 }\n',
        'root ::= ("a"{\n2})\n',
        'root ::= "a" {2}\n',
        'root\t::=\t"a"\t|\t"b"\n',
        'root ::= "a"\r\n\r\nx ::= "b"\r\n',
        'root ::= "a"\rx ::= "b"\r',
        'root::="a"|"b"\n',
        'root ::= "a"x\nx ::= "b"\n',
        '42 ::= "a"\nroot ::= 42 a-1\na-1 ::= "b"\n',
        'root ::= -x\n-x ::= "a"\n',
        'root ::= Root\nRoot ::= "a"\n',
        '\n\n  root ::= "a"\n',
        'root ::= "a" x\nx ::= "b"',
        'root ::= "a"\f\n',
        'root ::= "a"\v| "b"\n',
        'root ::= "a"\u00a0"b"\n',
        '\ufeffroot ::= "a"\n',
        'root ::= "a"{02}\n',
        'root ::= "a"{0,0002001}\n',
        'root ::= "a"{00000000000000000000000002}\n',
        'root ::= ("a"{ # c\n 2 })\n',
        'root ::= ("a" # c\n | # d\n "b")\n',
        'root ::= "a" # c\n  | "b"\n',
        'root ::= "a" |# c\n  "b"\n',
        'root ::= # c\n  "a"\n',
        'root # c\n ::= "a"\n',
        'root ::= ("a"\n)\n',
        'root ::= (\n)\n',
        'root ::= (\n"a"\n|\n"b"\n)*\n',
    ]).replace("\n", nl)


def t_ambiguous(rng):
    return rng.choice([
        'root ::= "a" root "b" | "a" root |\n',
        'root ::= x x x\nx ::= "a"* \n',
        'root ::= ("a" | "aa")* "b"\n',
        'root ::= ([a]* [a]*)* "b"\n',
        'root ::= (x | y)* "c"\nx ::= "a" | "ab"\ny ::= "b" | "ba"\n',
    ])


def t_budget_random(rng):
    """Nested groups and stacked quantifiers whose rule counts hover around llama.cpp's
    budget: n_prev_rules (symbols a group creates, names first seen inside it included)
    times the repetition's maximum (or minimum when unbounded) must stay <= 2000."""
    numbers = [0, 1, 2, 3, 5, 9, 10, 20, 40, 44, 45, 50, 99, 100, 199, 200, 222, 399, 400,
               401, 499, 500, 666, 667, 999, 1000, 1001, 1999, 2000, 2001, 2002, 5000]

    def quant():
        a, b = sorted((rng.choice(numbers), rng.choice(numbers)))
        return rng.choice(["{%d}" % b, "{0,%d}" % b, "{%d,}" % a, "{%d,%d}" % (a, b), "*",
                           "+", "?", "{%d}" % a, "{1,%d}" % b])

    fresh = iter(["p", "q", "r", "s", "t", "u", "v", "w"])
    used = []

    def item(depth):
        r = rng.random()
        if depth < 3 and r < 0.45:
            inner = " ".join(item(depth + 1) for _ in range(rng.choice([1, 1, 2, 3])))
            if rng.random() < 0.2:
                inner += " | " + item(depth + 1)
            out = "(" + inner + ")"
        elif r < 0.65:
            name = next(fresh, "p") if rng.random() < 0.6 or not used else rng.choice(used)
            used.append(name)
            out = name
        else:
            out = rng.choice(['"a"', "[ab]", '"b"', "."])
        while rng.random() < 0.55:
            out += quant()
        return out

    body = " ".join(item(0) for _ in range(rng.choice([1, 1, 2])))
    defs = [f'{n} ::= "{n}"' for n in dict.fromkeys(used)]
    before = [d for d in defs if rng.random() < 0.4]
    after = [d for d in defs if d not in before]
    return "\n".join(before + [f"root ::= {body}"] + after) + "\n"


TEMPLATES = [t_dead_stack, t_bounds, t_budget, t_huge_numbers, t_reversed_bounds,
             t_recursion, t_duplicates, t_zero, t_nullable_bounds, t_escapes, t_layout,
             t_ambiguous, t_budget_random, t_budget_random]


def break_grammar(rng, text):
    """Make (usually) invalid grammar text out of valid text."""
    kind = rng.randrange(12)
    if kind == 0:
        return text.replace("root ::=", "my_rule ::= \"q\"\nroot ::=", 1)
    if kind == 1:
        return text.replace("root ::=", "root ::= undefined-rule", 1)
    if kind == 2 and text:
        i = rng.randrange(len(text))
        return text[:i] + text[i + 1:]
    if kind == 3:
        i = rng.randrange(len(text) + 1)
        return text[:i] + rng.choice('"[]()|:=*{}\\#_<!^.?+') + text[i:]
    if kind == 4:
        return text.replace("root", "Root")
    if kind == 5:
        return text.rstrip("\r\n") + ' "unterminated\n'
    if kind == 6:
        return text.rstrip("\r\n") + " " + rng.choice(['"\\q"', '"\\x4"', '"\\u12"', "[a", "(",
                                                     ")", "{,3}", "{3", "{a}", "<", "!"]) + "\n"
    if kind == 7:
        return text.replace("::= ", "::= * ", 1)
    if kind == 8:
        return text.replace("::=", "::", 1)
    if kind == 9:
        return text.replace("\n", " ", 1)
    if kind == 10:
        return text.replace("root ::=", "root_1 ::=", 1)
    return text + rng.choice(["root ::= (\n", "x ::= |\n", "::= \"a\"\n", "root\n"])


SYNTAX = list('"[]()|:=*+?{},0129\\#-^.x_ a') + ["\n", "\r", "\t", "é", "::=", "{0}",
                                                   "{2000}", "\\x", "\\u00", "|\n", "(\n"]


def mutant(rng, text):
    """One to three character edits with GBNF's own punctuation: parser edge cases."""
    for _ in range(rng.choice([1, 1, 2, 3])):
        i = rng.randrange(len(text) + 1)
        op = rng.randrange(3)
        if op == 0 or not text:
            text = text[:i] + rng.choice(SYNTAX) + text[i:]
        elif op == 1:
            text = text[:i] + text[i + 1:]
        else:
            text = text[:i] + rng.choice(SYNTAX) + text[i + 1:]
    return text


def grammar(rng):
    """(text, kind) for one test grammar."""
    r = rng.random()
    if r < 0.45:
        text, kind = RandomGrammar(rng).grammar(), "random"
    elif r < 0.60:
        base = RandomGrammar(rng).grammar() if rng.random() < 0.5 else rng.choice(TEMPLATES)(rng)
        text, kind = mutant(rng, base), "mutant"
    elif r < 0.90:
        template = rng.choice(TEMPLATES)
        text, kind = template(rng), template.__name__[2:]
    else:
        base = RandomGrammar(rng).grammar() if rng.random() < 0.7 else rng.choice(TEMPLATES)(rng)
        text, kind = break_grammar(rng, base), "broken"
    return text, kind


# ---------------------------------------------------------------------------
# Test strings


def mutate(rng, s, chars):
    op = rng.randrange(6)
    i = rng.randrange(len(s) + 1)
    c = rng.choice(chars)
    if op == 0 or not s:
        return s[:i] + c + s[i:]
    i = min(i, len(s) - 1)
    if op == 1:
        return s[:i] + s[i + 1:]
    if op == 2:
        return s[:i] + c + s[i + 1:]
    if op == 3:
        return s[:i] + s[i] + s[i:]
    if op == 4:
        return s[:rng.randrange(len(s))]
    j = rng.randrange(i, len(s))
    return s[:i] + s[i:j + 1] * 2 + s[j + 1:]


def strings(rng, grammar_text, samples, n):
    """About n texts: the empty string, samples, their mutations and truncations, and short
    random strings over the characters the grammar mentions. Valid UTF-8 only."""
    chars = gbnf.mentioned_chars(grammar_text, rng) or ["a"]
    chars = chars + rng.sample(["a", "b", "c", "é", " ", "\n", "😀"], 2)
    out, seen = [], set()

    def add(s):
        if s not in seen and len(out) < n:
            seen.add(s)
            out.append(s)

    add("")
    samples = [s for s in samples if s]
    for s in samples[:max(2, n // 4)]:
        add(s)
    attempts = 0
    while len(out) < n and attempts < 20 * n:
        attempts += 1
        r = rng.random()
        if samples and r < 0.45:
            s = rng.choice(samples)
            for _ in range(rng.choice([1, 1, 1, 2])):
                s = mutate(rng, s, chars)
            add(s)
        elif samples and r < 0.6:
            s = rng.choice(samples)
            add(s[:rng.randrange(len(s) + 1)])
        elif samples and r < 0.65:  # longer than the sample: past repetition bounds
            s = rng.choice(samples)
            add((s * rng.choice([2, 3]))[:6000])
        else:
            add("".join(rng.choice(chars) for _ in range(rng.choice([1, 1, 2, 2, 3, 4, 6]))))
    return out
