"""Parse stage, nccl-tests: the line rules of `grammars/nccltests.lark` compiled to regexes.

The grammar is the source of truth; grammar.py's compiler turns each rule into a regex whose named
groups are the rule's fields, cached on disk by grammar hash like the NCCL grammar.
"""

from __future__ import annotations

import functools
from typing import Any

from ncclscope import grammar

GRAMMAR = "nccltests.lark"
LINE_RULES = (
    "version_line",
    "test_start",
    "test_end",
    "params",
    "device",
    "table_head",
    "result",
    "oob",
    "avg_bw",
)
SEARCH_RULES = ("lead", "program_mention", "error_wrong", "error_max")


def _build() -> dict[str, Any]:
    defs = grammar._defs(GRAMMAR)
    return {name: grammar._Compiler(defs, True).rule(name) for name in (*LINE_RULES, *SEARCH_RULES)}


@functools.cache
def _table() -> dict[str, str]:
    return {str(k): str(v) for k, v in grammar._cached(GRAMMAR, _build).items()}


def anchored(rule: str) -> str:
    """The rule as a whole-line regex (Rust/Python syntax alike), its fields as named groups."""
    return f"^(?:{_table()[rule]})$"


def unanchored(rule: str) -> str:
    return _table()[rule]


def fields(rule: str) -> tuple[str, ...]:
    """The named groups of a rule's regex, in order (`name__1` for a field used twice)."""
    import re

    return tuple(re.compile(_table()[rule]).groupindex)
