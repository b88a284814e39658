"""Grail's engine inside vLLM: a logits processor (vLLM's v1 `LogitsProcessor` interface)
that keeps each request of the batch inside the grammar it names.

Installing `grail-gbnf` registers it through the entry-point group
`vllm.logits_processors`, so a vLLM in the same environment loads it by itself; it can
also be named: `LLM(model, logits_processors=[GrailLogitsProcessor])`, or
`--logits-processors grail_gbnf.vllm:GrailLogitsProcessor` on the server.

A request names its constraint under the key `grail` of its extra arguments
(`SamplingParams(extra_args={"grail": {...}})`, or `"vllm_xargs": {"grail": "<JSON>"}` in
an HTTP body, where vLLM takes only strings and numbers, so the object goes as JSON text):

    {"grammar": GBNF, "root": "root"}
    {"json_schema": SCHEMA, "lenient": false}
    {"tools": [...], "tool_choice": "required", "wire": "openai", "parallel": false, "think": "off"}

Requests without `grail` are untouched. A constraint that cannot be compiled (a grammar
error, a schema keyword Grail cannot enforce in strict mode, an unknown key) is refused by
`validate_params`, so vLLM answers 400 with Grail's message before the request runs.

In the batch, every constrained row's matcher follows the tokens vLLM sampled; the masks
of the step are filled in one call (`fill_next_token_bitmasks`: threads, the GIL
released) and applied to the logits in place (on the CPU by native code, rows on threads;
on an accelerator with tensor operations on the device). End of sequence is allowed
exactly where the grammar may end; after the grammar's end, only end tokens are allowed
(as when a request sets `ignore_eos`). Compiled grammars are kept (least recently used,
`GRAIL_VLLM_GRAMMAR_CACHE` entries, 256 when unset) and the matchers of one grammar share
what the engine learns.
"""

import json
import logging
import os
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ._native import Grammar, Matcher, Vocabulary, fill_next_token_bitmasks, mask_logits
from .hf import vocabulary_from_hf

try:
    import torch
    from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality
except ImportError as error:  # pragma: no cover - the module is for vLLM's environment
    raise ImportError("grail_gbnf.vllm needs vLLM (the v1 engine) and torch installed") from error

_LOG = logging.getLogger("grail_gbnf.vllm")

# The keys a `grail` argument may hold, by the kind of constraint it names.
_KINDS = {
    "grammar": {"grammar", "root"},
    "json_schema": {"json_schema", "lenient"},
    "tools": {"tools", "tool_choice", "wire", "parallel", "think"},
}


class ConstraintError(ValueError):
    """A request's `grail` argument that names no valid constraint (vLLM answers 400)."""


def constraint_of(extra_args: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The request's `grail` argument as a dict (decoded from JSON text when it came over
    HTTP), or None when the request has none."""
    if not extra_args or extra_args.get("grail") is None:
        return None
    value = extra_args["grail"]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as error:
            raise ConstraintError(f"grail: the argument is not valid JSON ({error})") from None
        except RecursionError:
            raise ConstraintError("grail: the argument is nested too deeply to read") from None
    if not isinstance(value, dict):
        raise ConstraintError("grail: the argument must be an object with grammar, json_schema or tools")
    kinds = [kind for kind in _KINDS if kind in value]
    if len(kinds) != 1:
        raise ConstraintError(
            "grail: name exactly one of grammar, json_schema or tools"
            + (f" (got {', '.join(kinds)})" if kinds else "")
        )
    unknown = sorted(set(value) - _KINDS[kinds[0]])
    if unknown:
        allowed = ", ".join(sorted(_KINDS[kinds[0]]))
        raise ConstraintError(f"grail: unknown key {unknown[0]!r} beside {kinds[0]} (allowed: {allowed})")
    return value


def _tool_choice(value: Any) -> str:
    """OpenAI's `tool_choice` (a string, or {"type": "function", "function": {"name"}})
    as Grail's choice string."""
    if value is None:
        return "auto"
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("function"), dict) and "name" in value["function"]:
        return str(value["function"]["name"])
    raise ConstraintError('grail: tool_choice must be "auto", "required", "none" or {"type": "function", '
                          '"function": {"name": ...}}')


def compile_constraint(constraint: Dict[str, Any]) -> Grammar:
    """The grammar a constraint names; ConstraintError with Grail's message when it
    cannot be compiled."""
    try:
        if "grammar" in constraint:
            if not isinstance(constraint["grammar"], str):
                raise ConstraintError("grail: grammar must be GBNF text")
            return Grammar.from_gbnf(constraint["grammar"], root=str(constraint.get("root", "root")))
        if "json_schema" in constraint:
            return Grammar.from_json_schema(constraint["json_schema"], lenient=bool(constraint.get("lenient", False)))
        return Grammar.from_tools(
            constraint["tools"],
            wire=str(constraint.get("wire", "openai")),
            choice=_tool_choice(constraint.get("tool_choice")),
            parallel=constraint.get("parallel"),
            think=constraint.get("think"),
        )
    except ConstraintError:
        raise
    except ValueError as error:
        raise ConstraintError(f"grail: {error}") from None
    except RecursionError:  # Python's own walk of a deeply nested object, before Grail's limits
        raise ConstraintError("grail: the constraint is nested too deeply") from None


class _GrammarCache:
    """Compiled grammars by constraint (canonical JSON), least recently used first out,
    each with a first matcher that new requests fork (so they share its caches)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self.entries: "OrderedDict[str, Tuple[Grammar, Optional[Matcher]]]" = OrderedDict()

    @staticmethod
    def key(constraint: Dict[str, Any]) -> str:
        return json.dumps(constraint, sort_keys=True, separators=(",", ":"))

    def grammar(self, constraint: Dict[str, Any]) -> Tuple[str, Grammar]:
        key = self.key(constraint)
        if key in self.entries:
            self.entries.move_to_end(key)
            return key, self.entries[key][0]
        grammar = compile_constraint(constraint)
        self.entries[key] = (grammar, None)
        while len(self.entries) > self.capacity:
            self.entries.popitem(last=False)
        return key, grammar

    def matcher(self, constraint: Dict[str, Any], vocabulary: Vocabulary) -> Matcher:
        key, grammar = self.grammar(constraint)
        first = self.entries[key][1]
        if first is None:
            first = Matcher(grammar, vocabulary)
            self.entries[key] = (grammar, first)
        return first.fork()


def _cache_capacity() -> int:
    text = os.environ.get("GRAIL_VLLM_GRAMMAR_CACHE", "256")
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"GRAIL_VLLM_GRAMMAR_CACHE must be a number of grammars, not {text!r}") from None


# validate_params runs in vLLM's front end: its compiled grammars are kept there, so a
# client repeating a constraint does not pay for compiling it twice.
_VALIDATED = _GrammarCache(_cache_capacity())


class _Row:
    """One constrained request of the batch: its matcher and how far it has read the
    request's output tokens (vLLM's own list, which grows as tokens are sampled)."""

    __slots__ = ("matcher", "output", "read", "ended")

    def __init__(self, matcher: Optional[Matcher], output: List[int]) -> None:
        self.matcher = matcher
        self.output = output
        self.read = 0
        self.ended = False


class GrailLogitsProcessor(LogitsProcessor):
    """vLLM logits processor: each request with a `grail` extra argument keeps to the
    grammar, schema or tool registry it names (see the module's documentation)."""

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        """Refuses a request whose `grail` argument names no valid constraint (400)."""
        constraint = constraint_of(getattr(sampling_params, "extra_args", None))
        if constraint is not None:
            _VALIDATED.grammar(constraint)

    def __init__(self, vllm_config: Any, device: Any, is_pin_memory: bool) -> None:
        model_config = vllm_config.model_config
        self.vocabulary = _vocabulary_of(model_config)
        self.end_tokens = list(self.vocabulary.eos_token_ids)
        self.grammars = _GrammarCache(_cache_capacity())
        self.rows: Dict[int, _Row] = {}
        width = int(model_config.get_vocab_size())
        self.words = (max(width, self.vocabulary.size) + 31) // 32
        self.bitmask = np.full((vllm_config.scheduler_config.max_num_seqs, self.words), -1, dtype=np.int32)
        end_mask = np.zeros(self.words, dtype=np.int32)
        for token in self.end_tokens:
            end_mask.view(np.uint32)[token // 32] |= np.uint32(1 << (token % 32))
        self.end_mask = end_mask
        self.shifts = torch.arange(32, dtype=torch.int32)

    def is_argmax_invariant(self) -> bool:
        """A grammar changes which token is likeliest, so greedy requests need it too."""
        return False

    def update_state(self, batch_update: Optional["BatchUpdate"]) -> None:
        """Follows the batch's changes: removed, then added, then moved rows (vLLM's
        order). New tokens are read in `apply`, where vLLM has written them."""
        if not batch_update:
            return
        for index in batch_update.removed:
            self.rows.pop(index, None)
        for index, params, _prompt, output in batch_update.added:
            constraint = constraint_of(getattr(params, "extra_args", None))
            if constraint is None:
                self.rows.pop(index, None)
            else:
                self.rows[index] = self._row_for(constraint, output)
        for first, second, direction in batch_update.moved:
            moved = self.rows.pop(first, None)
            displaced = self.rows.pop(second, None)
            if moved is not None:
                self.rows[second] = moved
            if displaced is not None and direction == MoveDirectionality.SWAP:
                self.rows[first] = displaced

    def _row_for(self, constraint: Dict[str, Any], output: List[int]) -> _Row:
        try:
            return _Row(self.grammars.matcher(constraint, self.vocabulary), output)
        except ConstraintError as error:
            # validate_params compiled it in the front end; a worker that cannot (another
            # Grail version, say) ends the request at once rather than stop the engine.
            _LOG.error("%s; the request is ended", error)
            row = _Row(None, output)
            row.ended = True
            return row

    def _advance(self, row: _Row) -> None:
        """Feeds the matcher the tokens vLLM sampled since the last step."""
        output = row.output
        while row.read < len(output):
            token = output[row.read]
            if token < 0:  # a placeholder of asynchronous scheduling, not yet sampled
                break
            row.read += 1
            if row.ended:
                continue
            # A refused token comes only from outside the mask (another processor's
            # change, a rewritten output): the row ends rather than guess.
            if not row.matcher.accept_token(token):
                _LOG.warning("grail: token %d at output position %d is outside the grammar; the request is "
                             "ended (did another logits processor change the logits?)", token, row.read - 1)
                row.ended = True
            elif row.matcher.is_terminated():
                row.ended = True

    def apply(self, logits: "torch.Tensor") -> "torch.Tensor":
        """Masks every constrained row of `logits` (batch × vocabulary) in place."""
        if not self.rows:
            return logits
        live: List[Matcher] = []
        live_rows: List[int] = []
        ended_rows: List[int] = []
        for index, row in self.rows.items():
            if index >= logits.shape[0]:
                continue
            self._advance(row)
            (ended_rows if row.ended else live_rows).append(index)
            if not row.ended:
                live.append(row.matcher)
        order = live_rows + ended_rows
        if not order:
            return logits
        bitmask = self.bitmask[: len(order)]
        if live:
            fill_next_token_bitmasks(live, bitmask, list(range(len(live))))
        bitmask[len(live):] = self.end_mask
        if logits.device.type == "cpu" and logits.dtype == torch.float32 and logits.stride(-1) == 1:
            mask_logits(logits, bitmask, order)  # -inf written in place, rows on threads
            return logits
        # Elsewhere the packed rows go to the logits' device (32 times smaller than the
        # unpacked mask), are unpacked there, and the disallowed logits set to -inf.
        mask = torch.from_numpy(bitmask).to(logits.device)
        rows = torch.tensor(order, dtype=torch.long).to(logits.device)
        shifts = self._shifts_on(logits.device)
        allowed = ((mask.unsqueeze(-1) >> shifts) & 1).bool().flatten(-2)[:, : logits.shape[-1]]
        logits[rows] = logits[rows].masked_fill(~allowed, float("-inf"))
        return logits

    def _shifts_on(self, device: "torch.device") -> "torch.Tensor":
        if self.shifts.device != device:
            self.shifts = self.shifts.to(device)
        return self.shifts


def _vocabulary_of(model_config: Any) -> Vocabulary:
    """The model's vocabulary from its Hugging Face tokenizer, with every token vLLM
    stops at (the tokenizer's end token and the generation config's) as end tokens."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(
        model_config.tokenizer,
        revision=getattr(model_config, "tokenizer_revision", None),
        trust_remote_code=bool(getattr(model_config, "trust_remote_code", False)),
    )
    vocabulary = vocabulary_from_hf(tokenizer)
    ends = set(vocabulary.eos_token_ids)
    generation = {}
    try:
        generation = model_config.try_get_generation_config() or {}
    except Exception:  # noqa: BLE001 - a model without a generation config
        generation = {}
    extra = generation.get("eos_token_id")
    for token in [extra] if isinstance(extra, int) else list(extra or []):
        ends.add(int(token))
    if ends == set(vocabulary.eos_token_ids):
        return vocabulary
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    return Vocabulary.from_tokenizer_json(backend.to_str(), eos_token_ids=sorted(ends),
                                          name=str(model_config.tokenizer))
