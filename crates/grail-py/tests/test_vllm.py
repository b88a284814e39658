"""Grail's logits processor inside a real vLLM (the CPU build), on SmolLM2-135M as a
Hugging Face folder: offline `LLM` batches mixing grammars, schemas, tool registries and
unconstrained requests, validation errors, and vLLM's OpenAI server with `vllm_xargs`.

scripts/vllm_test.py installs vLLM into ~/.cache/grail/vllm-venv, converts the model and
runs this file there with GRAIL_VLLM_MODEL set; elsewhere it skips with the reason.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed here (scripts/vllm_test.py installs it)")
MODEL = os.environ.get("GRAIL_VLLM_MODEL")
if not MODEL or not os.path.isdir(MODEL):
    pytest.skip("GRAIL_VLLM_MODEL names no model folder (scripts/vllm_test.py converts SmolLM2)",
                allow_module_level=True)

import grail_gbnf as grail  # noqa: E402

# Strings have a maxLength: without a system prompt SmolLM2 may repeat itself inside a
# free string until the token limit, which is the model's doing, not the processor's.
FILE_TOOLS = [
    {"type": "function", "function": {"name": "read_file", "description": "Read a file",
                                      "parameters": {"type": "object", "properties": {
                                          "path": {"type": "string", "maxLength": 24}},
                                          "required": ["path"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "list_directory", "description": "List a directory",
                                      "parameters": {"type": "object", "properties": {
                                          "path": {"type": "string", "maxLength": 24},
                                          "recursive": {"type": "boolean"}},
                                          "required": ["path"], "additionalProperties": False}}},
]
WEATHER_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
                                      "parameters": {"type": "object", "properties": {
                                          "city": {"type": "string", "maxLength": 40},
                                          "unit": {"enum": ["celsius", "fahrenheit"]}},
                                          "required": ["city", "unit"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "get_time", "description": "Local time in a city",
                                      "parameters": {"type": "object", "properties": {
                                          "city": {"type": "string", "maxLength": 40}},
                                          "required": ["city"], "additionalProperties": False}}},
]
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 30},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 120}},
          "required": ["name", "age"], "additionalProperties": False}
COLOURS = {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "minItems": 1, "maxItems": 3}

# (constraint, prompt): eight constrained requests of different kinds, two free ones.
BATCH = [
    ({"grammar": 'root ::= "yes" | "no"'}, "Is Paris in France? Answer yes or no:"),
    ({"grammar": 'root ::= "[" num ("," num)* "]"\nnum ::= [1-9] [0-9]{0,2}'}, "Three prime numbers as a list:"),
    ({"grammar": 'root ::= "The answer is " [A-Z] [a-z]+ "."'}, "The capital of Italy?"),
    ({"json_schema": PERSON}, "Invent a person as JSON:"),
    ({"json_schema": COLOURS}, "Name some colours of the flag of France as a JSON list:"),
    ({"tools": FILE_TOOLS, "tool_choice": "required"}, "Read the file README.md."),
    ({"tools": WEATHER_TOOLS, "tool_choice": {"type": "function", "function": {"name": "get_time"}}},
     "What time is it in Tokyo?"),
    ({"tools": WEATHER_TOOLS, "tool_choice": "required", "wire": "hermes"}, "Weather in Oslo, in celsius?"),
    (None, "The capital of France is"),
    (None, "Write a haiku about the sea."),
]
MAX_TOKENS = 160


def chat_prompt(tokenizer, text):
    return tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                         add_generation_prompt=True)


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(MODEL)


@pytest.fixture(scope="module")
def vocabulary(tokenizer):
    return grail.vocabulary_from_hf(tokenizer)


@pytest.fixture(scope="module")
def prompts(tokenizer):
    return [chat_prompt(tokenizer, text) for _, text in BATCH]


BASELINE = """
import json, sys
import vllm.v1.sample.logits_processor as loader
loader._load_logitsprocs_plugins = lambda: []  # no plug-in processors: vLLM as it comes
from vllm import LLM, SamplingParams
if __name__ == "__main__":
    model, prompts, max_tokens = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
    llm = LLM(model=model, enforce_eager=True, kv_cache_memory_bytes=256 << 20, seed=0)
    outputs = llm.generate(prompts, SamplingParams(max_tokens=max_tokens, temperature=0))
    print("GRAIL-BASELINE " + json.dumps([output.outputs[0].text for output in outputs]))
"""


@pytest.fixture(scope="module")
def baseline(prompts):
    """The free prompts' greedy outputs from a vLLM without Grail's processor (another
    process, where the plug-in loader finds nothing)."""
    free = [prompt for prompt, (constraint, _) in zip(prompts, BATCH) if constraint is None]
    done = subprocess.run([sys.executable, "-c", BASELINE, MODEL, json.dumps(free), str(MAX_TOKENS)],
                          capture_output=True, text=True, timeout=600)
    lines = [line for line in done.stdout.splitlines() if line.startswith("GRAIL-BASELINE ")]
    assert lines, f"the baseline run failed:\n{done.stderr[-3000:]}"
    return json.loads(lines[-1][len("GRAIL-BASELINE "):])


@pytest.fixture(scope="module")
def llm():
    from vllm import LLM
    # No `logits_processors=`: installing grail-gbnf registered the processor (entry point).
    engine = LLM(model=MODEL, enforce_eager=True, kv_cache_memory_bytes=256 << 20, seed=0)
    yield engine
    del engine


def grammar_of(constraint):
    if "grammar" in constraint:
        return grail.Grammar.from_gbnf(constraint["grammar"])
    if "json_schema" in constraint:
        return grail.Grammar.from_json_schema(constraint["json_schema"])
    choice = constraint.get("tool_choice", "auto")
    if isinstance(choice, dict):
        choice = choice["function"]["name"]
    return grail.Grammar.from_tools(constraint["tools"], wire=constraint.get("wire", "openai"), choice=choice)


def matches(constraint, text, vocabulary):
    matcher = grail.Matcher(grammar_of(constraint), vocabulary)
    return matcher.accept_text(text) and matcher.is_accepting()


def test_a_mixed_batch_keeps_every_constraint_and_leaves_free_requests_alone(llm, prompts, baseline, vocabulary):
    from vllm import SamplingParams
    params = [SamplingParams(max_tokens=MAX_TOKENS, temperature=0,
                             extra_args={"grail": constraint} if constraint else None)
              for constraint, _ in BATCH]
    outputs = llm.generate(prompts, params)
    free = iter(baseline)
    for (constraint, text), output in zip(BATCH, outputs):
        written = output.outputs[0].text
        if constraint is None:
            assert written == next(free), f"the free request {text!r} changed beside Grail's processor"
            continue
        assert output.outputs[0].finish_reason == "stop", f"{constraint} stopped on {output.outputs[0].finish_reason}"
        assert matches(constraint, written, vocabulary), f"{written!r} does not match {constraint}"
    calls = [output.outputs[0].text for (constraint, _), output in zip(BATCH, outputs)
             if constraint and "tools" in constraint]
    named = json.loads(calls[1])
    assert named["name"] == "get_time" and set(named["arguments"]) == {"city"}
    checked = grail.validate_call(WEATHER_TOOLS, calls[2], wire="hermes", choice="required")
    assert checked["valid"], checked


def test_sampled_requests_and_json_text_arguments_keep_their_constraint(llm, prompts, vocabulary):
    """Sampling at temperature 1 (any token the mask leaves may be drawn), and the
    argument as JSON text, as it arrives over HTTP."""
    from vllm import SamplingParams
    constrained = [(constraint, prompt) for (constraint, _), prompt in zip(BATCH, prompts) if constraint]
    params = [SamplingParams(max_tokens=MAX_TOKENS, temperature=1.0, seed=index,
                             extra_args={"grail": json.dumps(constraint)})
              for index, (constraint, _) in enumerate(constrained)]
    outputs = llm.generate([prompt for _, prompt in constrained], params)
    for (constraint, _), output in zip(constrained, outputs):
        written = output.outputs[0].text
        if output.outputs[0].finish_reason == "stop":
            assert matches(constraint, written, vocabulary), f"{written!r} does not match {constraint}"
        else:  # cut at max_tokens: what was written is a prefix of the grammar's language
            matcher = grail.Matcher(grammar_of(constraint), vocabulary)
            assert matcher.accept_text(written), f"{written!r} leaves {constraint}"


def test_after_the_grammar_ends_only_end_tokens_follow(llm, prompts, vocabulary):
    """With ignore_eos, vLLM goes on past the end token: the row allows only end tokens."""
    from vllm import SamplingParams
    output = llm.generate([prompts[0]], SamplingParams(max_tokens=6, temperature=0, ignore_eos=True,
                                                       extra_args={"grail": BATCH[0][0]}))[0].outputs[0]
    ends = set(vocabulary.eos_token_ids)
    tokens = list(output.token_ids)
    first_end = next(index for index, token in enumerate(tokens) if token in ends)
    assert grail.Matcher(grail.Grammar.from_gbnf(BATCH[0][0]["grammar"]), vocabulary).accept_tokens(
        tokens[:first_end]) and all(token in ends for token in tokens[first_end:]), tokens


@pytest.mark.parametrize("argument, message", [
    ({"grammar": "root ::= foo"}, "rule `foo` is not defined"),
    ({"json_schema": {"type": "string", "pattern": "(a)\\1"}}, "pattern"),
    ({"tools": [{"type": "function", "function": {"parameters": {}}}]}, "name"),
    ({"grammar": 'root ::= "a"', "json_schema": {}}, "exactly one of"),
    ({"grammar": 'root ::= "a"', "lenient": True}, "unknown key 'lenient'"),
    ("{not json", "not valid JSON"),
])
def test_a_bad_constraint_is_refused_before_it_runs(llm, argument, message):
    from vllm import SamplingParams
    with pytest.raises(Exception) as refused:  # vLLM's VLLMValidationError
        llm.generate(["x"], SamplingParams(max_tokens=4, extra_args={"grail": argument}))
    assert message in str(refused.value), str(refused.value)


def test_deeply_nested_arguments_are_refused_not_crashed_on():
    """Python's own recursion limit (reading JSON text, walking a dict) is a refusal with
    a message, never a RecursionError out of validate_params (a 500)."""
    from grail_gbnf.vllm import ConstraintError, compile_constraint, constraint_of
    text = '{"json_schema": ' + '{"type": "array", "items": ' * 3000 + "{}" + "}" * 3000 + "}"
    nested = {}
    for _ in range(3000):
        nested = {"type": "array", "items": nested}
    for argument in (text, {"json_schema": nested}):
        with pytest.raises(ConstraintError, match="nested too deeply"):
            compile_constraint(constraint_of({"grail": argument}))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def vllm_server():
    """vLLM's OpenAI server (`python -m vllm.entrypoints.openai.api_server`; `vllm serve`
    fails on the CPU package's name), with Grail's processor from its entry point."""
    port = free_port()
    log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"grail-vllm-server-{port}.log"), "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", MODEL, "--port", str(port),
         "--host", "127.0.0.1", "--enforce-eager", "--kv-cache-memory-bytes", str(256 << 20),
         "--served-model-name", "smollm2"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 300
    while time.time() < deadline:
        assert process.poll() is None, f"vLLM's server exited; see {log.name}"
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                break
        except OSError:
            time.sleep(0.5)
    else:
        process.kill()
        pytest.fail(f"vLLM's server did not start in 300 s; see {log.name}")
    yield url
    process.terminate()
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()


def post(url, body):
    request = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=300) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def test_the_openai_server_applies_grail_arguments_from_vllm_xargs(vllm_server, vocabulary):
    for constraint, text in BATCH[:8]:
        status, answer = post(vllm_server, {
            "model": "smollm2", "messages": [{"role": "user", "content": text}], "max_tokens": MAX_TOKENS,
            "temperature": 0, "vllm_xargs": {"grail": json.dumps(constraint)}})
        assert status == 200, answer
        written = answer["choices"][0]["message"]["content"]
        assert matches(constraint, written, vocabulary), f"{written!r} does not match {constraint}"


def test_the_openai_server_answers_400_to_a_bad_grammar(vllm_server):
    status, answer = post(vllm_server, {
        "model": "smollm2", "messages": [{"role": "user", "content": "x"}], "max_tokens": 4,
        "vllm_xargs": {"grail": json.dumps({"grammar": "root ::= [a-"})}})
    assert status == 400, answer
    assert "grail:" in json.dumps(answer), answer
