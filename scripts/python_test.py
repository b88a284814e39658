#!/usr/bin/env python3
"""The Python package's tests: installs `grail-gbnf` from crates/grail-py (maturin builds
the extension) into ~/.cache/grail/py-venv with pytest, then runs crates/grail-py/tests.

    python3 scripts/python_test.py [pytest arguments]

Exit status: pytest's; 0 with a "skipped:" line when no venv can be made or PyPI cannot be
reached for the build tools (maturin) and pytest. torch and transformers are installed
too where they can be (the logits processor's tests skip without them).
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "grail")
VENV = os.path.join(CACHE, "py-venv")


def skip(message):
    print(f"skipped: the Python package tests: {message}", flush=True)
    sys.exit(0)


def main():
    python = os.path.join(VENV, "bin", "python")
    if not os.path.exists(python):
        if subprocess.run([sys.executable, "-m", "venv", VENV]).returncode != 0:
            skip("cannot create a Python venv (python3-venv missing?)")
    if subprocess.run([python, "-m", "pip", "install", "--quiet", "pytest>=7"]).returncode != 0:
        skip("cannot install pytest from PyPI")
    # The README's install step (maturin builds the extension in release mode into the
    # workspace's target directory, so later installs rebuild only what changed).
    print("pip install ./crates/grail-py", flush=True)
    built = subprocess.run([python, "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps",
                            os.path.join(REPO, "crates", "grail-py")], cwd=REPO)
    if built.returncode != 0:
        print("error: pip install ./crates/grail-py failed (see above)", flush=True)
        sys.exit(1)
    # Its one dependency, numpy, from PyPI.
    if subprocess.run([python, "-m", "pip", "install", "--quiet", "numpy>=1.22"]).returncode != 0:
        skip("cannot install numpy from PyPI")
    # For the transformers processor's tests (a tiny model built from a config): torch
    # from PyPI brings its CUDA libraries (about 5 GB, two minutes here); where it cannot
    # be installed, those tests skip with a message.
    print("pip install torch transformers (for the logits processor's tests)", flush=True)
    if subprocess.run([python, "-m", "pip", "install", "--quiet", "torch", "transformers"]).returncode != 0:
        print("skipped: the transformers processor's tests: torch and transformers could not be installed", flush=True)
    tests = os.path.join(REPO, "crates", "grail-py", "tests")
    sys.exit(subprocess.run([python, "-m", "pytest", "-q", tests, *sys.argv[1:]], cwd=tests).returncode)


if __name__ == "__main__":
    main()
