"""Fuzzing on every CI run, bounded (100 inputs per kind, 50 differential; a fixed seed: the same inputs each run;
NCCLSCOPE_FUZZ_SEED picks others). The long run is `python -m tests.fuzz.run --n 100000` (README.md).
Plus property tests (Hypothesis) of the small parsers at the CLI boundary and of the terminal filter."""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ncclscope.cli.options import RANK_MAX, parse_rank_map, parse_size
from ncclscope.errors import InputError
from ncclscope.report.safe_text import one_line, printable

from .run import KINDS, run

SEED = int(os.environ.get("NCCLSCOPE_FUZZ_SEED", "0"))


@pytest.mark.parametrize("kind", KINDS)
def test_fuzzed_inputs_end_in_a_documented_way(kind: str) -> None:
    n = 50 if kind == "differential" else 100  # (each differential input is read twice)
    res = run(n, SEED, (kind,))
    assert sum(res.inputs.values()) >= n
    assert res.failures == [], "\n".join(res.failures)
    assert set(res.exit_codes) <= {0, 1, 2}


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_rank_map_parses_or_says_why(spec: str) -> None:
    try:
        got = parse_rank_map(spec)
    except InputError as e:
        assert "--rank-map" in str(e)
        return
    assert got is None or all(0 <= r <= RANK_MAX for r in got.values())


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30))
def test_sizes_parse_or_say_why(text: str) -> None:
    try:
        assert parse_size(text, "--max-decompressed-bytes") >= 0
    except InputError as e:
        assert "--max-decompressed-bytes" in str(e)


@settings(max_examples=500, deadline=None)
@given(st.text())
def test_printable_leaves_no_control_character(text: str) -> None:
    out = printable(text)
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]", out)
    assert "\n" not in one_line(text)
    if text.isprintable():
        assert out == text
