"""Golden files per grammar family: example lines -> the rows they give in each frame.

`tests/golden/families/<family>.log` holds real corpus lines (several wrappers and NCCL versions) and
synthetic ones for shapes the corpus lacks; `<family>.json` is what the reader makes of them.
Regenerate with `NCCLSCOPE_REGEN_GOLDEN=1 pytest tests/parse/test_golden.py`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest

from ncclscope import grammar as G
from ncclscope.parse import read_logs
from ncclscope.parse.logs.lines import match, peel
from ncclscope.parse.logs.lines.reference import parse_line
from ncclscope.parse.logs.lines.transform import TABLES as FAMILY_TABLES

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "families"
REGEN = os.environ.get("NCCLSCOPE_REGEN_GOLDEN") == "1"
_TABLES = (*FAMILY_TABLES, "unknown")  # the frames a family may fill, and the lines none claims


def _rows(path: Path) -> dict[str, list[dict[str, object]]]:
    lf = read_logs([str(path)])
    out: dict[str, list[dict[str, object]]] = {}
    for name in _TABLES:
        df: pl.DataFrame = getattr(lf, name).drop("path")
        if df.height:
            out[name] = [{k: v for k, v in r.items() if v is not None} for r in df.to_dicts()]
    return out


@pytest.mark.parametrize("family", G.families())
def test_family_golden(family: str) -> None:
    src = GOLDEN / f"{family}.log"
    expected = GOLDEN / f"{family}.json"
    got = _rows(src)
    assert "unknown" not in got, f"{family}: lines matched no family: {got.get('unknown')}"
    if REGEN:
        expected.write_text(json.dumps(got, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    # A missing golden file fails (it is not written and passed): regenerate on purpose with
    # NCCLSCOPE_REGEN_GOLDEN=1 and review the diff.
    assert expected.exists(), f"{expected} is missing; run with NCCLSCOPE_REGEN_GOLDEN=1 and review it"
    assert got == json.loads(expected.read_text())


@pytest.mark.parametrize("family", G.families())
def test_examples_belong_to_their_family(family: str) -> None:
    lines = (GOLDEN / f"{family}.log").read_text().splitlines()
    df = pl.DataFrame({"raw": lines, "_row": range(len(lines))})
    msgs = peel.split(peel.clean(df)).sort("_row")["msg"].to_list()
    for line, msg in zip(lines, msgs, strict=True):
        idx = match.first_family(msg)
        assert idx is not None and match.family_patterns()[idx][0] == family, line


@pytest.mark.parametrize("family", G.families())
def test_lark_records_equal_fast_rows(family: str) -> None:
    """The Lark path (parse_line) gives the same typed rows as the vectorised reader."""
    src = GOLDEN / f"{family}.log"
    fast = _rows(src)
    lark: dict[str, list[dict[str, object]]] = {}
    for i, line in enumerate(src.read_text().splitlines(), 1):
        for rec in parse_line(line, path=str(src), lineno=i):
            table = type(rec).__name__.removesuffix("Record").lower()
            row = {k: getattr(rec, k) for k in rec.__dataclass_fields__ if k != "path"}
            lark.setdefault(table, []).append({k: v for k, v in row.items() if v is not None})
    warn_extra = {k: v for k, v in fast.items() if k != "warnings" or family in _WARN_TABLE_FAMILIES}
    lark_cmp = {k: v for k, v in lark.items() if k != "warnings" or family in _WARN_TABLE_FAMILIES}
    assert lark_cmp == warn_extra


_WARN_TABLE_FAMILIES = frozenset(
    f
    for f in G.families()
    if f.startswith(("ws_", "ib_", "shm_", "cuda_"))
    or f
    in (
        "duplicate_gpu",
        "version_mismatch",
        "coll_mismatch",
        "nvls_bind",
        "ring_error",
        "bootstrap_root",
        "msg_truncated",
        "collnet_unsupported",
        "p2p_disabled",
        "nccl_error_misc",
    )
)
