"""Grail: GBNF grammars exactly as llama.cpp reads them, grammars from JSON Schemas and
tool registries, and fast token masks.

    import grail_gbnf as grail
    g = grail.Grammar.from_gbnf('root ::= "yes" | "no"')
    v = grail.Vocabulary.from_file("tokenizer.json")
    m = grail.Matcher(g, v)
    bitmask = grail.allocate_token_bitmask(1, v.size)
    m.fill_next_token_bitmask(bitmask, 0)
    grail.apply_token_bitmask_inplace(logits, bitmask)

The names follow xgrammar's (`allocate_token_bitmask`, `fill_next_token_bitmask`,
`apply_token_bitmask_inplace`, `accept_token`, `rollback`, `is_terminated`, `reset`) and
the bitmask layout is the one xgrammar and llguidance share, so switching is a change of
import and constructor (docs/python.md).
"""

from ._native import (
    GrailError,
    Grammar,
    GrammarError,
    Matcher,
    SchemaError,
    ToolsError,
    Vocabulary,
    VocabularyError,
    __version__,
    fill_next_token_bitmasks,
    validate_call,
)
from .bitmask import allocate_token_bitmask, apply_token_bitmask_inplace, bitmask_to_token_ids
from .hf import GrailLogitsProcessor, vocabulary_from_hf

__all__ = [
    "GrailError",
    "GrailLogitsProcessor",
    "Grammar",
    "GrammarError",
    "Matcher",
    "SchemaError",
    "ToolsError",
    "Vocabulary",
    "VocabularyError",
    "__version__",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "bitmask_to_token_ids",
    "fill_next_token_bitmasks",
    "validate_call",
    "vocabulary_from_hf",
]
