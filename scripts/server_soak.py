#!/usr/bin/env python3
"""A soak run of `grail serve`: good clients and hostile ones at once for some minutes,
in front of a stand-in llama-server (standard library only, loopback only).

    python3 scripts/server_soak.py [--grail target/release/grail] [--seconds 180]

- The stand-in backend (this script) answers `/v1/chat/completions` as llama-server
  streams: "hello world" in pieces. One request in eight it ignores `max_tokens` and
  streams without end (the server must cut it at `max_tokens`).
- Good clients (4 threads): unconstrained answers, a grammar (`"ok" | "hello world"`),
  streaming; every answer must be 200.
- Hostile clients, one thread each: half-sent headers held open (the server must close
  them), streams dropped after their first chunk, 10 MB bodies (413), bad JSON (400),
  text/plain bodies and foreign `Host`s (415, 403), grammars over the size limit (400),
  and distinct grammars just under it (planned, so they cost memory).
- Then SIGTERM with half-sent headers still open: the process must exit 0, promptly.

It prints the server's resident memory before, at its peak and after, the status counts
per kind of client, the good clients' latencies, and how long the shutdown took. Exit
status 1 when a good request failed, a hostile one got an unexpected status, a half-sent
header was not closed, or the shutdown failed.
"""
import argparse
import http.client
import itertools
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
HOST = "127.0.0.1"


class Backend(BaseHTTPRequestHandler):
    """The stand-in llama-server."""

    protocol_version = "HTTP/1.1"
    served = Counter()
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        request = json.loads(self.rfile.read(length))
        with Backend.lock:
            Backend.served["requests"] += 1
            endless = Backend.served["requests"] % 8 == 0 and "grammar" not in request
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()

        def event(value):
            self.wfile.write(f"data: {json.dumps(value)}\n\n".encode())

        if request["messages"][-1]["content"] == "giant line":
            # One event line of 200 MB: the server must give up at its line limit.
            try:
                self.wfile.write(b'data: {"choices": [{"delta": {"content": "')
                chunk = b"z" * (1 << 20)
                for _ in range(200):
                    self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
            return
        try:
            pieces = ["hello", " world"]
            if endless:
                with Backend.lock:
                    Backend.served["endless"] += 1
                pieces = itertools.repeat("word ", 10_000_000)  # far past any max_tokens
            written = 0
            for piece in pieces:
                event({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
                written += 1
                if not endless:
                    time.sleep(0.002)
            event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            event({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": written}})
            self.wfile.write(b"data: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class Soak:
    def __init__(self, port, seconds):
        self.port = port
        self.until = time.monotonic() + seconds
        self.lock = threading.Lock()
        self.counts = {}
        self.latencies = []
        self.failures = []
        self.slow_closed = []

    def running(self):
        return time.monotonic() < self.until

    def count(self, kind, outcome):
        with self.lock:
            self.counts.setdefault(kind, Counter())[outcome] += 1

    def fail(self, message):
        with self.lock:
            if len(self.failures) < 20:
                self.failures.append(message)

    def post(self, body, headers=None, timeout=60, read=True):
        connection = http.client.HTTPConnection(HOST, self.port, timeout=timeout)
        try:
            sent = {"Content-Type": "application/json"}
            sent.update(headers or {})
            connection.request("POST", "/v1/chat/completions", body=body, headers=sent)
            response = connection.getresponse()
            text = response.read() if read else b""
            return response.status, text, response
        finally:
            connection.close()

    # Good clients.

    def good(self, seed):
        rng = random.Random(seed)
        while self.running():
            shape = rng.choice(["plain", "grammar", "stream"])
            body = {"messages": [{"role": "user", "content": "Say hello"}], "max_tokens": 64}
            if shape == "grammar":
                body["grammar"] = 'root ::= "ok" | "hello world"'
            if shape == "stream":
                body["stream"] = True
            started = time.monotonic()
            try:
                status, text, _ = self.post(json.dumps(body))
            except OSError as error:
                self.count("good", f"error {type(error).__name__}")
                self.fail(f"good {shape}: {error}")
                continue
            with self.lock:
                self.latencies.append(time.monotonic() - started)
            self.count("good", status)
            if status != 200:
                self.fail(f"good {shape}: {status} {text[:200]!r}")
            elif shape == "stream" and b"[DONE]" not in text:
                self.fail(f"good stream without [DONE]: {text[-200:]!r}")

    # Hostile clients.

    def slow_headers(self):
        """Opens half-sent heads in bursts; each must be closed by the server."""
        while self.running():
            sockets = []
            for _ in range(20):
                s = socket.create_connection((HOST, self.port), timeout=60)
                s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
                sockets.append((s, time.monotonic()))
            for s, opened in sockets:
                try:
                    closed = s.recv(1) == b""
                except (ConnectionResetError, socket.timeout):
                    closed = False
                except OSError:
                    closed = True
                if closed:
                    with self.lock:
                        self.slow_closed.append(time.monotonic() - opened)
                    self.count("slow header", "closed by server")
                else:
                    self.count("slow header", "left open")
                    self.fail("a half-sent header was not closed within 60 s")
                s.close()

    def disconnect_mid_stream(self):
        while self.running():
            body = json.dumps({"messages": [{"role": "user", "content": "x"}], "stream": True, "max_tokens": 4000})
            s = socket.create_connection((HOST, self.port), timeout=30)
            s.sendall(
                f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}".encode()
            )
            first = s.recv(4096)
            s.close()
            self.count("disconnect mid-stream", first.split(b" ")[1].decode() if first else "no answer")

    def huge_body(self):
        payload = b'{"messages": [{"role": "user", "content": "' + b"x" * (10 * 1024 * 1024) + b'"}]}'
        while self.running():
            try:
                status, _, _ = self.post(payload)
            except OSError as error:
                status = f"error {type(error).__name__}"
            self.count("10 MB body", status)
            if status != 413:
                self.fail(f"10 MB body: {status}")
            time.sleep(0.2)

    def bad_requests(self):
        while self.running():
            for kind, body, headers, expected in [
                ("bad JSON", '{"messages": [', {}, 400),
                ("text/plain", json.dumps({"messages": [{"role": "user", "content": "x"}]}), {"Content-Type": "text/plain"}, 415),
                ("foreign Host", json.dumps({"messages": [{"role": "user", "content": "x"}]}), {"Host": "evil.example"}, 403),
                ("foreign Origin", json.dumps({"messages": [{"role": "user", "content": "x"}]}), {"Origin": "https://evil.example"}, 403),
            ]:
                try:
                    status, text, _ = self.post(body, headers)
                except OSError as error:
                    status, text = f"error {type(error).__name__}", b""
                self.count(kind, status)
                if status != expected:
                    self.fail(f"{kind}: {status} {text[:200]!r}")
            time.sleep(0.05)

    def huge_grammars(self, seed):
        rng = random.Random(seed)
        while self.running():
            over = rng.random() < 0.5
            rules = 7000 if over else 5500  # about 265 KB and 205 KB of GBNF
            tag = rng.randrange(1 << 30)
            lines = ["root ::= r0"]
            for rule in range(rules):
                lines.append(f'r{rule} ::= "t{tag}x{rule}" [a-z]{{1,3}} | r{rule + 1}')
            lines.append(f'r{rules} ::= "hello world"')
            body = json.dumps({"messages": [{"role": "user", "content": "x"}], "grammar": "\n".join(lines), "max_tokens": 16})
            kind = "grammar over the limit" if over else "distinct grammar under the limit"
            try:
                status, text, _ = self.post(body, timeout=120)
            except OSError as error:
                status, text = f"error {type(error).__name__}", b""
            self.count(kind, status)
            expected = (400,) if over else (200, 503)
            if status not in expected:
                self.fail(f"{kind}: {status} {text[:200]!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grail", default=os.path.join(REPO, "target", "release", "grail"))
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--log", default="/tmp/grail-soak.log", help="where the server's standard error goes")
    parser.add_argument("--serve-arg", action="append", default=[], help="one more argument for grail serve (repeatable)")
    args = parser.parse_args()

    backend = ThreadingHTTPServer((HOST, 0), Backend)
    backend.daemon_threads = True
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    backend_url = f"http://{HOST}:{backend.server_address[1]}"

    server = subprocess.Popen(
        [args.grail, "serve", "--addr", f"{HOST}:0", "--backend", f"llama-server={backend_url}", "--quiet",
         "--header-timeout", "5", "--request-timeout", "60", *args.serve_arg],
        stderr=subprocess.PIPE, text=True,
    )
    port = None
    for line in server.stderr:
        match = re.search(r"listening on http://[0-9.]+:(\d+)", line)
        if match:
            port = int(match.group(1))
            break
    if port is None:
        print("grail serve did not start", file=sys.stderr)
        return 1
    def keep_log():
        with open(args.log, "w") as log:
            for line in server.stderr:
                log.write(line)
                log.flush()

    threading.Thread(target=keep_log, daemon=True).start()

    soak = Soak(port, args.seconds)
    # One good request first, so "before" is a server that has answered.
    soak.post(json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}))
    before = rss_kib(server.pid)
    peak = [before]

    series = []

    def sample():
        last = 0.0
        while soak.running():
            value = rss_kib(server.pid)
            if value:
                peak[0] = max(peak[0], value)
                elapsed = time.monotonic() - started
                if elapsed - last >= 30:
                    series.append((elapsed, value))
                    last = elapsed
            time.sleep(0.5)

    threads = [threading.Thread(target=soak.good, args=(seed,)) for seed in range(4)]
    threads += [threading.Thread(target=target) for target in (soak.slow_headers, soak.disconnect_mid_stream, soak.huge_body, soak.bad_requests)]
    threads += [threading.Thread(target=soak.huge_grammars, args=(seed,)) for seed in range(2)]
    started = time.monotonic()
    threads.append(threading.Thread(target=sample))
    for thread in threads:
        thread.daemon = True
        thread.start()
    for thread in threads:
        thread.join(timeout=args.seconds + 300)
    elapsed = time.monotonic() - started
    time.sleep(5)
    after = rss_kib(server.pid)
    status, _, _ = soak.post(json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}))
    if status != 200:
        soak.fail(f"a good request after the soak: {status}")

    # A 200 MB event line from the backend.
    line_before = rss_kib(server.pid)
    status, text, _ = soak.post(json.dumps({"messages": [{"role": "user", "content": "giant line"}]}))
    line_after = rss_kib(server.pid)
    if status != 502 or len(text) > 2000:
        soak.fail(f"a 200 MB event line: {status}, {len(text)} bytes of answer")

    # 1,100 half-sent heads at once (over the 512-connection cap), then a good request.
    flood = []
    for _ in range(1100):
        try:
            s = socket.create_connection((HOST, port), timeout=10)
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
            flood.append(s)
        except OSError:
            break
    time.sleep(1.5)
    flood_started = time.monotonic()
    try:
        flood_status, _, _ = soak.post(json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}), timeout=30)
    except OSError as error:
        flood_status = f"error {type(error).__name__}"
    flood_ms = (time.monotonic() - flood_started) * 1e3
    if flood_status != 200:
        soak.fail(f"a good request with {len(flood)} half-sent heads open: {flood_status}")
    for s in flood:
        s.close()

    # SIGTERM with half-sent heads open.
    held = []
    for _ in range(10):
        s = socket.create_connection((HOST, port))
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
        held.append(s)
    signalled = time.monotonic()
    server.send_signal(signal.SIGTERM)
    try:
        code = server.wait(timeout=120)
    except subprocess.TimeoutExpired:
        server.kill()
        code = "still running after 120 s (killed)"
        soak.fail("SIGTERM did not stop the server")
    shutdown = time.monotonic() - signalled
    if code != 0:
        soak.fail(f"exit status after SIGTERM: {code}")
    for s in held:
        s.close()

    latencies = sorted(soak.latencies)
    quantile = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1e3 if latencies else 0
    print(f"soak: {elapsed:.0f} s against {args.grail} (stand-in llama-server at {backend_url}; "
          f"{Backend.served['requests']} upstream requests, {Backend.served['endless']} of them endless)")
    print(f"resident memory: before {before / 1024:.1f} MiB, peak {peak[0] / 1024:.1f} MiB, after {after / 1024:.1f} MiB")
    if series:
        print("resident memory every 30 s: " + ", ".join(f"{at:.0f} s {value / 1024:.0f}" for at, value in series) + " MiB")
    for kind in sorted(soak.counts):
        print(f"  {kind}: " + ", ".join(f"{status}: {count}" for status, count in sorted(soak.counts[kind].items(), key=str)))
    print(f"good requests: {len(latencies)}, latency p50 {quantile(0.5):.1f} ms, p99 {quantile(0.99):.1f} ms")
    print(f"a 200 MB event line from the backend: HTTP {status}, {len(text)} bytes of answer; "
          f"resident memory {line_before / 1024:.1f} -> {line_after / 1024:.1f} MiB")
    print(f"with {len(flood)} half-sent heads open (cap 512): a good request got {flood_status} in {flood_ms:.0f} ms")
    if soak.slow_closed:
        closed = sorted(soak.slow_closed)
        print(f"half-sent headers closed after {closed[0]:.1f}-{closed[-1]:.1f} s (header timeout 5 s)")
    print(f"SIGTERM with 10 half-sent headers open: exit {code} after {shutdown:.1f} s")
    for failure in soak.failures:
        print(f"FAILED: {failure}")
    return 1 if soak.failures else 0


if __name__ == "__main__":
    sys.exit(main())
