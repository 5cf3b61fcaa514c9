"""Torch line grammar: every known shape yields its TORCH fields; other lines are left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope import schema as S
from ncclscope.parse.logs.lines import runtime_lines

from .torch_line_cases import CASES, NOT_TORCH


@pytest.mark.parametrize(("line", "expected"), CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_shape(line: str, expected: dict[str, object]) -> None:
    row = runtime_lines.match(line)
    assert row is not None, line
    assert {k: row.get(k) for k in expected} == expected


def test_row_has_exactly_the_torch_columns() -> None:
    row = runtime_lines.match(CASES[0][0])
    assert row is not None
    assert set(row) == set(S.TORCH) - set(S.ORIGIN)


@pytest.mark.parametrize("line", NOT_TORCH)
def test_not_torch(line: str) -> None:
    assert runtime_lines.match(line) is None


def test_anchor_never_hides_a_grammar_line() -> None:
    # The prefilter is an optimisation only: it must pass every line the grammar accepts.
    for line, _ in CASES:
        assert runtime_lines._ANCHOR.search(line), line


def test_parser_is_built_once() -> None:
    assert runtime_lines.parser() is runtime_lines.parser()


def test_huge_and_binary_lines_are_not_errors() -> None:
    assert runtime_lines.match("NCCL " + "x" * 200_000) is None
    assert runtime_lines.match("\x00\x01NCCL\xff watchdog") is None


@pytest.mark.corpus
def test_corpus_torch_lines_parse(corpus_dir: Path) -> None:
    """Every ProcessGroupNCCL line with a c10 header in the corpus is recognised."""
    seen = 0
    for log in sorted(corpus_dir.glob("*.log")):
        for raw in log.read_text(errors="replace").splitlines():
            if "ProcessGroupNCCL.cpp:" in raw and "Exception raised from" not in raw:
                seen += 1
                assert runtime_lines.match(raw) is not None, f"{log.name}: {raw[:160]}"
    assert seen >= 50
