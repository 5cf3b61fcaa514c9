"""grammars/nccltests.lark read two ways agree: Lark (Earley) on one line per rule, and the compiled regexes
the reader runs in Polars, field for field, on every line of every real sample."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from lark import Lark, Tree

from ncclscope.grammar import grammar_text
from ncclscope.parse.nccltests import patterns
from ncclscope.parse.nccltests.text import lines_frame

NT = Path(__file__).resolve().parents[2] / "samples" / "nccltests"
RULES = ("version_line", "test_start", "test_end", "params", "device", "result", "oob", "avg_bw")


@functools.cache
def _lark() -> Lark:
    return Lark(
        grammar_text("nccltests.lark"),
        start=list(RULES),
        parser="earley",
        lexer="dynamic_complete",
        keep_all_tokens=True,
    )


def _lark_fields(rule: str, body: str) -> dict[str, str]:
    tree = _lark().parse(body, start=rule)
    return {
        str(c.data): "".join(str(x) for x in c.scan_values(lambda _: True))
        for c in tree.children
        if isinstance(c, Tree)
    }


@pytest.mark.parametrize("sample", sorted(NT.glob("*.log")), ids=lambda p: p.name)
def test_lark_and_regex_agree(sample: Path) -> None:
    bodies = lines_frame(sample.read_text())["body"].to_list()
    seen = 0
    for rule in RULES:
        rx = re.compile(patterns.anchored(rule))
        for body in bodies:
            m = rx.match(body)
            if m is None:
                continue
            seen += 1
            want = {k: v for k, v in m.groupdict().items() if v is not None}
            got = _lark_fields(rule, body)
            assert got == want, (rule, body)
    assert seen >= 8  # every sample has a header, device lines, rows and a footer
