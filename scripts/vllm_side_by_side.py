#!/usr/bin/env python3
"""vLLM's throughput with Grail's logits processor against vLLM's own structured outputs
(the xgrammar and guidance backends), on the same requests, in one sitting:

    python3 scripts/vllm_side_by_side.py [--batches 1,8,32] [--max-tokens 128] [--json OUT]
        [--model HF_FOLDER] [--engines grail,xgrammar,guidance]

- vLLM: the CPU build in ~/.cache/grail/vllm-venv with SmolLM2-135M (scripts/vllm_env.py
  installs both), or --model for another Hugging Face folder (on a GPU machine, see
  scripts/vllm_gpu_check.sh). One offline `LLM` per engine, each in its own process; the
  engine core and the worker run in that process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`,
  executor "uni") so that the grammar work can be timed.
- Grammars: json.gbnf and the tool-call grammar of ../shared/bench/inputs (as GBNF to
  every engine; an empty first alternative, `ws ::= | " "`, written `ws ::= "" | " "`,
  which xgrammar's parser needs), and a MaskBench schema (Github_medium o10517: $ref, enum, pattern,
  minimum), sent as a JSON Schema to each (Grail's `json_schema`, vLLM's `json`: each
  engine's own converter, so the grammars and the outputs differ), and the same schema as
  the GBNF Grail makes of it, sent to every engine (one grammar, comparable outputs).
- Requests: chat prompts asking for the kind of output, greedy, `max_tokens` each; a
  batch of B is B requests given to `LLM.generate` at once. A first untimed batch of 2
  warms each engine's caches (grammar compilation included), as a server that has seen
  the grammar before.
- Rounds: each engine runs every measurement once per round, in an order turned each
  round (a drift of the machine's speed falls on all alike); reported per engine, grammar
  and batch is the median round by tokens/s (an engine that refuses a grammar is reported
  so): output tokens/s (all requests' output tokens
  over the wall time of the generate call), and the share of that time spent in grammar
  work: Grail's processor (`update_state` + `apply`: reading tokens, compiling new
  grammars, filling and applying masks); vLLM's structured-output manager
  (`grammar_bitmask`, `accept_tokens`, compiling grammars) and the worker's
  `apply_grammar_bitmask`. Also: how many requests' outputs equal Grail's (GBNF: the
  same grammar, so greedy outputs should agree).
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BENCH = os.path.join(REPO, "..", "shared", "bench", "inputs")
MASKBENCH = os.path.join(REPO, "..", "shared", "corpora", "maskbench", "Github_medium.jsonl.gz")
SCHEMA_FILE = "Github_medium---o10517.json"
PROMPTS = {
    "json.gbnf": "Describe {topic} as a JSON object with a few fields.",
    "tool-call": "Use one of the tools to look into {topic}.",
    "maskbench-schema": "Fill in the JSON for {topic}.",
    "maskbench-schema-as-gbnf": "Fill in the JSON for {topic}.",
}
TOPICS = ["a city", "a book", "a river", "a planet", "a song", "a film", "a bird", "a car", "a chair", "a cloud",
          "a poem", "a forest", "a bridge", "a tower", "a lake", "a storm", "a garden", "a museum", "a train",
          "a ship", "a castle", "a market", "a school", "a harbour", "a mountain", "a desert", "an island",
          "a festival", "a library", "a village", "a volcano", "a comet"]


def readable_by_every_engine(gbnf):
    """xgrammar's parser refuses an empty first alternative (`ws ::= | " "`): the same
    language written `ws ::= "" | " "`, for every engine."""
    import re
    return re.sub(r"::=(\s*)\|", r'::=\1"" |', gbnf)


def grammars():
    """(name, Grail's argument, vLLM's StructuredOutputsParams keywords)."""
    import gzip
    with open(os.path.join(BENCH, "json.gbnf"), encoding="utf-8") as handle:
        json_gbnf = readable_by_every_engine(handle.read())
    with open(os.path.join(BENCH, "toolcall.llamacpp.gbnf"), encoding="utf-8") as handle:
        tool_gbnf = readable_by_every_engine(handle.read())
    schema = None
    with gzip.open(MASKBENCH, "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row.get("file") == SCHEMA_FILE:
                schema = row["schema"]
                break
    if schema is None:
        sys.exit(f"{SCHEMA_FILE} is not in {MASKBENCH}")
    from grail_gbnf import Grammar
    schema_gbnf = readable_by_every_engine(Grammar.from_json_schema(schema).gbnf)
    return [
        ("json.gbnf", {"grammar": json_gbnf}, {"grammar": json_gbnf}),
        ("tool-call", {"grammar": tool_gbnf}, {"grammar": tool_gbnf}),
        ("maskbench-schema", {"json_schema": schema}, {"json": schema}),
        ("maskbench-schema-as-gbnf", {"grammar": schema_gbnf}, {"grammar": schema_gbnf}),
    ]


class Timer:
    """Wall time spent inside wrapped functions (not counting nested wrapped calls twice)."""

    def __init__(self):
        self.seconds = 0.0
        self.depth = 0

    def wrap(self, owner, name):
        original = getattr(owner, name)
        timer = self

        def timed(*args, **kwargs):
            timer.depth += 1
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                timer.depth -= 1
                if timer.depth == 0:
                    timer.seconds += time.perf_counter() - started
        setattr(owner, name, timed)


def child(engine, model, batches, max_tokens):
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    timer = Timer()
    import vllm.v1.sample.logits_processor as loader
    if engine == "grail":
        from grail_gbnf.vllm import GrailLogitsProcessor
        timer.wrap(GrailLogitsProcessor, "apply")
        timer.wrap(GrailLogitsProcessor, "update_state")
    else:
        loader._load_logitsprocs_plugins = lambda: []  # vLLM as it comes, no plug-ins
        import vllm.v1.structured_output as manager
        import vllm.v1.worker.gpu_model_runner as runner
        for name in ("grammar_bitmask", "accept_tokens", "_create_grammar"):
            timer.wrap(manager.StructuredOutputManager, name)
        timer.wrap(runner, "apply_grammar_bitmask")
    from transformers import AutoTokenizer
    from vllm import LLM, SamplingParams
    from vllm.sampling_params import StructuredOutputsParams
    tokenizer = AutoTokenizer.from_pretrained(model)
    import torch
    options = {} if engine == "grail" else {"structured_outputs_config": {"backend": engine}}
    if torch.cuda.is_available():  # CUDA graphs and vLLM's own share of GPU memory
        options["enforce_eager"] = False
    else:  # vLLM's CPU build: eager, a fixed cache
        options.update(enforce_eager=True, kv_cache_memory_bytes=1 << 30)
    llm = LLM(model=model, seed=0, distributed_executor_backend="uni", max_num_seqs=max(batches), **options)

    def params(grail_argument, vllm_argument):
        if engine == "grail":
            return SamplingParams(max_tokens=max_tokens, temperature=0, extra_args={"grail": grail_argument})
        return SamplingParams(max_tokens=max_tokens, temperature=0,
                              structured_outputs=StructuredOutputsParams(**vllm_argument))

    results = []
    for name, grail_argument, vllm_argument in grammars():
        prompts = [tokenizer.apply_chat_template([{"role": "user", "content": PROMPTS[name].format(topic=topic)}],
                                                 tokenize=False, add_generation_prompt=True) for topic in TOPICS]
        try:
            llm.generate(prompts[:2], [params(grail_argument, vllm_argument)] * 2, use_tqdm=False)
        except Exception as error:  # noqa: BLE001 - an engine that refuses the grammar
            message = str(error).splitlines()[0][:300]
            print(f"  {engine:9} {name:17} refused: {message}", file=sys.stderr, flush=True)
            results += [{"engine": engine, "grammar": name, "batch": batch, "refused": message} for batch in batches]
            continue
        for batch in batches:
            timer.seconds = 0.0
            started = time.perf_counter()
            outputs = llm.generate(prompts[:batch], [params(grail_argument, vllm_argument)] * batch, use_tqdm=False)
            wall = time.perf_counter() - started
            tokens = sum(len(output.outputs[0].token_ids) for output in outputs)
            results.append({"engine": engine, "grammar": name, "batch": batch, "seconds": wall,
                            "output_tokens": tokens, "tokens_per_second": tokens / wall,
                            "grammar_seconds": timer.seconds, "grammar_share": timer.seconds / wall,
                            "texts": [output.outputs[0].text for output in outputs],
                            "finish": [output.outputs[0].finish_reason for output in outputs]})
            print(f"  {engine:9} {name:24} batch {batch:3}: {tokens / wall:7.1f} tok/s, grammar "
                  f"{100 * timer.seconds / wall:5.1f}% of {wall:.2f} s", file=sys.stderr, flush=True)
    print("GRAIL-RESULTS " + json.dumps(results), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="1,8,32")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--runs", type=int, default=3, help="rounds over the engines; the median is reported")
    parser.add_argument("--engines", default="grail,xgrammar,guidance")
    parser.add_argument("--model", help="a Hugging Face model folder (default: SmolLM2 converted by vllm_env.py)")
    parser.add_argument("--python", help="a Python with vLLM and grail-gbnf (default: vllm_env.py's venv)")
    parser.add_argument("--json", help="write every measurement here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    batches = [int(batch) for batch in args.batches.split(",")]
    if args.child:
        child(args.child, args.model, batches, args.max_tokens)
        return
    if args.python:
        python, model = args.python, args.model
        if not model:
            sys.exit("--python needs --model")
    else:
        sys.path.insert(0, HERE)
        from vllm_env import ensure
        python, model = ensure()
        if python is None:
            sys.exit(f"the vLLM environment cannot be had: {model}")
        model = args.model or model
    # Rounds: every engine once per round, the order turned each round, so that a drift of
    # the machine's speed falls on every engine alike; the median round is reported.
    engines = args.engines.split(",")
    rounds = []
    for number in range(args.runs):
        for engine in engines[number % len(engines):] + engines[:number % len(engines)]:
            print(f"round {number + 1}: {engine}: loading vLLM with {model}", file=sys.stderr, flush=True)
            done = subprocess.run([python, os.path.abspath(__file__), "--child", engine, "--model", model,
                                   "--batches", args.batches, "--max-tokens", str(args.max_tokens)],
                                  stdout=subprocess.PIPE, text=True)
            lines = [line for line in done.stdout.splitlines() if line.startswith("GRAIL-RESULTS ")]
            if done.returncode != 0 or not lines:
                sys.exit(f"the {engine} run failed (status {done.returncode})")
            rounds += json.loads(lines[-1][len("GRAIL-RESULTS "):])
    results = []
    for engine in engines:
        for name in dict.fromkeys(row["grammar"] for row in rounds):
            for batch in batches:
                runs = [row for row in rounds
                        if (row["engine"], row["grammar"], row["batch"]) == (engine, name, batch)]
                measured = sorted((row for row in runs if "refused" not in row),
                                  key=lambda row: row["tokens_per_second"])
                if not measured:
                    results.append(runs[0])
                    continue
                median = dict(measured[len(measured) // 2])
                median["runs_tokens_per_second"] = [row["tokens_per_second"] for row in runs if "refused" not in row]
                results.append(median)
    report(results)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=1)


def report(results):
    grail = {(row["grammar"], row["batch"]): row for row in results if row["engine"] == "grail" and "refused" not in row}
    print("\n| grammar | batch | engine | output tok/s | vs Grail | grammar share | outputs equal to Grail's |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for row in results:
        if "refused" in row:
            print(f"| {row['grammar']} | {row['batch']} | {row['engine']} | refused: {row['refused'][:80]} | | | |")
            continue
        mine = grail.get((row["grammar"], row["batch"]))
        ratio = f"{row['tokens_per_second'] / mine['tokens_per_second']:.2f}×" if mine else "-"
        same = (f"{sum(a == b for a, b in zip(row['texts'], mine['texts']))}/{len(row['texts'])}"
                if mine and row["engine"] != "grail" else "-")
        print(f"| {row['grammar']} | {row['batch']} | {row['engine']} | {row['tokens_per_second']:.1f} | {ratio} | "
              f"{100 * row['grammar_share']:.1f}% | {same} |")


if __name__ == "__main__":
    main()
