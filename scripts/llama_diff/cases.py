"""`--verify-cases DIR`: rerun llama.cpp on the edge-case corpus (testdata/llama-cpp/*.case)
and check that every recorded verdict is still what llama.cpp says.

The corpus records llama.cpp's answers; `cargo test` checks Grail against them
(crates/grail-engine/tests/llama_cpp_cases.rs, which documents the format). This keeps the
recorded answers true as llama.cpp moves: a mismatch here means llama.cpp changed, so the
case (and perhaps Grail) must follow.
"""
import glob
import json
import os

from . import sides


def read_case(path):
    """(grammar bytes, [(directive, argument)]) of one .case file."""
    with open(path, "rb") as handle:
        data = handle.read()
    grammar, separator, rest = data.partition(b"\n---\n")
    if not separator:
        raise ValueError(f"{path}: no `---` line")
    directives = []
    for line in rest.decode("utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, argument = line.partition(" ")
        directives.append((keyword, argument))
    return grammar + b"\n", directives


def llama_answer(llama, workspace, text):
    """llama.cpp's answer on `text`: accepts/refuses/hangs for the grammar, and
    match/prefix/reject for the text when it loads."""
    workspace.write_text(text)
    result = llama.run(workspace.grammar, workspace.text)
    status = result["status"]
    if status in ("hang", "crash"):
        return "hangs", None
    if status == "refused":
        return "refuses", None
    if result["matched"]:
        return "accepts", "match"
    return "accepts", "prefix" if result["viable"] else "reject"


def verify(directory, config):
    """Checks every case of `directory`; returns the number of mismatches."""
    llama = sides.Llama(config["validator"], config["timeout"], config["mem_mib"])
    workspace = sides.Workspace(config["tmp"])
    paths = sorted(glob.glob(os.path.join(directory, "*.case")))
    if not paths:
        print(f"no .case files in {directory}")
        return 1
    mismatches = checked = 0
    for path in paths:
        grammar, directives = read_case(path)
        with open(workspace.grammar, "wb") as handle:
            handle.write(grammar)
        name = os.path.basename(path)
        for keyword, argument in directives:
            if keyword == "llama":
                verdict, _, text = argument.partition(" ")
                got, _ = llama_answer(llama, workspace, json.loads(text) if text else "")
                expected = verdict
            elif keyword in ("match", "prefix", "reject"):
                _, got = llama_answer(llama, workspace, json.loads(argument))
                expected = keyword
            else:
                continue
            checked += 1
            if got != expected:
                mismatches += 1
                print(f"MISMATCH {name}: `{keyword} {argument}`: llama.cpp now says {got}")
    print(f"{len(paths)} cases, {checked} verdicts checked against llama.cpp, "
          f"{mismatches} mismatches")
    return mismatches
