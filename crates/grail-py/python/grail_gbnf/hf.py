"""Hugging Face integration: vocabularies from tokenizers, and a transformers logits
processor that keeps generation inside a grammar."""

from typing import Any, Dict, List, Optional

from ._native import Grammar, Matcher, Vocabulary


def vocabulary_from_hf(tokenizer: Any) -> Vocabulary:
    """The vocabulary of a Hugging Face fast tokenizer (`transformers`' `...TokenizerFast`
    or a `tokenizers.Tokenizer`), its end-of-sequence token included."""
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    if not hasattr(backend, "to_str"):
        raise TypeError("a Hugging Face fast tokenizer is needed (one with backend_tokenizer.to_str())")
    eos = getattr(tokenizer, "eos_token_id", None)
    eos_ids = [eos] if isinstance(eos, int) else list(eos or [])
    name = getattr(tokenizer, "name_or_path", None) or "tokenizer.json"
    return Vocabulary.from_tokenizer_json(backend.to_str(), eos_token_ids=eos_ids, name=str(name))


class GrailLogitsProcessor:
    """A `transformers` logits processor: every row of the batch keeps to `grammar`.

        processor = GrailLogitsProcessor(grammar, vocabulary)
        model.generate(**inputs, logits_processor=[processor])

    Each row's matcher follows the tokens generated after the prompt. Rows may be
    reordered between steps (beam search): a row continues from the matcher whose tokens
    are the longest prefix of its own (forked), so beams cost no replay. A row that has
    written an end-of-generation token is finished: what transformers appends after it
    (padding) is not checked, and its scores are left as they are. Use one processor per
    `generate` call.
    """

    def __init__(self, grammar: Grammar, vocabulary: Vocabulary) -> None:
        self.grammar = grammar
        self.vocabulary = vocabulary
        self._prompt_length: Optional[int] = None
        self._states: List[Dict[str, Any]] = []
        # New rows fork one matcher, so they share its mask cache.
        self._start = Matcher(grammar, vocabulary)
        self._bitmask = None
        self._end_tokens = frozenset(vocabulary.eos_token_ids)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        from .bitmask import allocate_token_bitmask, apply_token_bitmask_inplace

        batch = int(input_ids.shape[0])
        if self._prompt_length is None:
            self._prompt_length = int(input_ids.shape[1])
        rows = input_ids[:, self._prompt_length:].tolist()
        previous = self._states
        states: List[Dict[str, Any]] = []
        for tokens in rows:
            base = None
            for state in previous:
                done = state["tokens"]
                if len(done) <= len(tokens) and tokens[: len(done)] == done:
                    if base is None or len(done) > len(base["tokens"]):
                        base = state
            if base is None:
                matcher, done = self._start.fork(), []
            else:
                matcher, done = base["matcher"].fork(), list(base["tokens"])
            finished = base is not None and base["finished"]
            for token in tokens[len(done):]:
                if not finished:
                    if not matcher.accept_token(token):
                        raise ValueError(f"token {token} does not follow the grammar (was the processor reused?)")
                    finished = token in self._end_tokens
                done.append(token)
            states.append({"matcher": matcher, "tokens": done, "finished": finished})
        self._states = states
        width = int(scores.shape[-1])
        if self._bitmask is None or self._bitmask.shape[0] != batch:
            self._bitmask = allocate_token_bitmask(batch, width)
        for row, state in enumerate(states):
            if state["finished"]:
                self._bitmask[row] = -1
            else:
                state["matcher"].fill_next_token_bitmask(self._bitmask, row)
        apply_token_bitmask_inplace(scores, self._bitmask)
        return scores
