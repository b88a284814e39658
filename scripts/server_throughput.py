#!/usr/bin/env python3
"""Server throughput: `grail serve` against llama-server with the same model and the same
tool-call grammar, at 1, 4 and 16 concurrent tool-call requests, in one sitting.

    python3 scripts/server_throughput.py [--requests 32] [--levels 1,4,16] [--parallel 16] [--json OUT]

Three servers answer the same stream of tool-call requests (the seeds' eight tools of
examples/agent-tools.json, `tool_choice: required`, one user query each from
examples/agent-queries.jsonl, greedy, at most 200 tokens):

- grail (embedded): `grail serve --parallel N` with SmolLM2; the request carries `tools`.
- llama-server: the same model, sent what Grail would build itself: the tools' system
  prompt and the tool-call grammar (`grail tools --format json`) in `grammar`;
  `--parallel N` slots (continuous batching), flash attention off, its other defaults.
- grail → llama-server: `grail serve --backend llama-server=URL` in front of that
  llama-server (the request carries `tools`; Grail checks every piece).

For each level: requests/s and aggregate completion tokens/s over the wall time, the
median latency, and how many answers were valid calls (arguments checked against the
tool's schema). Then prefix reuse: on each server just started, the time to the first
token (an answer cut to one token) of a first request and of a second one with the same
tools (another query), and the prompt tokens the second reports cached. Needs target/release/grail (built here) and llama-server (as
scripts/llama_server_test.py finds or installs it).
"""
import argparse
import concurrent.futures
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import llama_server_test  # noqa: E402

GRAIL = os.environ.get("GRAIL_BIN") or os.path.join(ROOT, "target", "release", "grail")
TOOLS_FILE = os.path.join(ROOT, "examples", "agent-tools.json")
QUERIES_FILE = os.path.join(ROOT, "examples", "agent-queries.jsonl")
MAX_TOKENS = 200


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_healthy(url, process, seconds=180):
    started = time.time()
    while time.time() - started < seconds:
        if process.poll() is not None:
            sys.exit(f"error: a server exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.25)
    sys.exit("error: a server did not become healthy in time")


def post(url, body):
    request = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    started = time.time()
    try:
        with urllib.request.urlopen(request, timeout=600) as answer:
            return json.load(answer), time.time() - started
    except urllib.error.HTTPError as error:
        return {"error": error.read().decode(errors="replace")}, time.time() - started


def valid_call(answer, schemas):
    """The first call of an answer (OpenAI tool_calls, or a JSON call in the content)
    checked against its tool's schema with Grail's validator."""
    try:
        message = answer["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        return False
    calls = message.get("tool_calls") or []
    if calls:
        name = calls[0]["function"]["name"]
        arguments = json.loads(calls[0]["function"]["arguments"])
        text = json.dumps({"name": name, "arguments": arguments})
    else:
        text = message.get("content") or ""
    done = subprocess.run([GRAIL, "validate-call", TOOLS_FILE, "--choice", "required", "-"], input=text,
                          capture_output=True, text=True)
    return done.returncode == 0


def time_to_first_token(url, body):
    """Seconds to answer `body` cut to one token (the prompt read and one token drawn: the
    time to the first token, measured alike on every server, since Grail holds a streamed
    call back until it is whole), and the answer's usage."""
    answer, seconds = post(url, dict(body, max_tokens=1))
    return seconds, answer.get("usage")


def run_level(url, bodies, concurrency, schemas):
    started = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(lambda body: post(url, body), bodies))
    wall = time.time() - started
    tokens = sum((answer.get("usage") or {}).get("completion_tokens", 0) for answer, _ in results)
    valid = sum(valid_call(answer, schemas) for answer, _ in results)
    return {
        "concurrency": concurrency,
        "requests": len(bodies),
        "wall_s": round(wall, 2),
        "requests_per_s": round(len(bodies) / wall, 3),
        "tokens_per_s": round(tokens / wall, 1),
        "completion_tokens": tokens,
        "median_latency_s": round(statistics.median(latency for _, latency in results), 2),
        "valid_calls": valid,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=32, help="requests per level")
    parser.add_argument("--levels", default="1,4,16")
    parser.add_argument("--parallel", type=int, default=16, help="sequences of both servers")
    parser.add_argument("--split-cache", action="store_true", help="grail serve --split-cache")
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    levels = [int(level) for level in args.levels.split(",")]
    subprocess.run(["cargo", "build", "--release", "-j2", "-p", "grail-cli"], cwd=ROOT, check=True)
    model = subprocess.run([GRAIL, "model", "path"], capture_output=True, text=True).stdout.strip()
    if not os.path.exists(model):
        subprocess.run([GRAIL, "model", "fetch"], check=True)
    binary, libraries = llama_server_test.find_server(install=True)
    if not binary:
        sys.exit("error: no llama-server (scripts/llama_server_test.py --install)")

    with open(TOOLS_FILE, encoding="utf-8") as handle:
        tools = json.load(handle)
    schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools}
    with open(QUERIES_FILE, encoding="utf-8") as handle:
        queries = [json.loads(line)["query"] for line in handle if line.strip()]
    made = json.loads(subprocess.run([GRAIL, "tools", TOOLS_FILE, "--choice", "required", "--format", "json"],
                                     capture_output=True, text=True, check=True).stdout)
    grammar, system_prompt = made["grammar"], made["system_prompt"]
    picked = [queries[index % len(queries)] for index in range(args.requests)]
    grail_bodies = [{"messages": [{"role": "user", "content": query}], "tools": tools, "tool_choice": "required",
                     "max_tokens": MAX_TOKENS, "temperature": 0} for query in picked]
    llama_bodies = [{"messages": [{"role": "system", "content": system_prompt}, {"role": "user", "content": query}],
                     "grammar": grammar, "max_tokens": MAX_TOKENS, "temperature": 0, "repeat_penalty": 1.2}
                    for query in picked]

    llama_port = free_port()
    llama = subprocess.Popen([binary, "-m", model, "--port", str(llama_port), "--host", "127.0.0.1",
                              "-c", str(args.parallel * 2048), "--parallel", str(args.parallel), "-t", "2",
                              "-fa", "off", "--no-webui"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=dict(os.environ, LD_LIBRARY_PATH=libraries or ""))
    llama_url = f"http://127.0.0.1:{llama_port}"
    servers = []
    try:
        wait_healthy(llama_url, llama)
        grail_port = free_port()
        grail = subprocess.Popen([GRAIL, "serve", "--addr", f"127.0.0.1:{grail_port}", "--model", model, "--quiet",
                                  "--parallel", str(args.parallel)] + (["--split-cache"] if args.split_cache else []))
        servers.append(grail)
        wait_healthy(f"http://127.0.0.1:{grail_port}", grail)
        front_port = free_port()
        front = subprocess.Popen([GRAIL, "serve", "--addr", f"127.0.0.1:{front_port}", "--quiet",
                                  "--backend", f"llama-server={llama_url}"])
        servers.append(front)
        wait_healthy(f"http://127.0.0.1:{front_port}", front)
        sides = [("grail (embedded)", f"http://127.0.0.1:{grail_port}", grail_bodies),
                 ("llama-server", llama_url, llama_bodies),
                 ("grail -> llama-server", f"http://127.0.0.1:{front_port}", grail_bodies)]
        results = []
        # Prefix reuse, on servers that have answered nothing yet (the first request also
        # pays first-use costs; that is what a new server's first request pays too).
        for name, url, bodies in sides[:2]:
            first, _ = time_to_first_token(url, bodies[0])
            second, usage = time_to_first_token(url, bodies[1])
            cached = ((usage or {}).get("prompt_tokens_details") or {}).get("cached_tokens")
            row = {"server": name, "first_ttft_s": round(first, 3), "second_ttft_s": round(second, 3),
                   "ratio": round(second / first, 3), "second_cached_tokens": cached}
            results.append(row)
            print(f"{name:24} time to first token: first {first:.3f} s, second {second:.3f} s "
                  f"({second / first:.2f}x; {cached} prompt tokens cached)", flush=True)
        # A warm-up request each (first-use costs: page faults, caches).
        for _, url, bodies in sides:
            post(url, bodies[0])
        for level in levels:
            for name, url, bodies in sides:
                row = run_level(url, bodies, level, schemas)
                row["server"] = name
                results.append(row)
                print(f"{name:24} c={level:<3} {row['requests_per_s']:7.2f} req/s {row['tokens_per_s']:8.1f} tok/s "
                      f"median {row['median_latency_s']:6.2f} s  valid {row['valid_calls']}/{row['requests']}",
                      flush=True)
    finally:
        for process in servers:
            process.terminate()
            process.wait(30)
        llama.terminate()
        llama.wait(30)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"model": os.path.basename(model), "max_tokens": MAX_TOKENS, "results": results}, handle, indent=2)


if __name__ == "__main__":
    main()
