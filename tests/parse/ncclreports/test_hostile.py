"""Hostile or damaged NCCL reports: any text gives a report or None and notes, never an exception."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ncclscope.hang.ras_report import ras_report_verdicts
from ncclscope.parse.ncclreports.inspector import InspectorReader
from ncclscope.parse.ncclreports.ncclparam import read_ncclparam
from ncclscope.parse.ncclreports.ras_json import read_ras_json
from ncclscope.parse.ncclreports.ras_text import read_ras_text

RAS = Path(__file__).resolve().parents[3] / "samples" / "ras"
LINES = [line for p in sorted(RAS.glob("*.txt")) for line in p.read_text().splitlines() if line.strip()] + [
    "  Rank 99999999999999999999 -- GPU x managed by process 1 on node n",
    "#9-9 (ffffffffffffffff) ERROR",
]
NUMS = st.sampled_from(["0", "-1", "7", "1048576", "99999999999999999999999", "1e309", "nan"])


@given(st.lists(st.sampled_from(LINES) | st.text(max_size=80), max_size=40))
def test_ras_text_of_any_lines(lines: list[str]) -> None:
    rep = read_ras_text("x", enumerate(lines, start=1))
    if rep is not None:
        ras_report_verdicts([rep])


JSON = (RAS / "ray_2_28_9_missing_rank_bad_comma.json").read_text()


@given(st.integers(0, len(JSON)), st.integers(0, 40), st.text(max_size=20), NUMS)
def test_ras_json_cut_or_spliced(at: int, cut: int, junk: str, num: str) -> None:
    text = (JSON[:at] + junk + JSON[at + cut :]).replace('"pid": 10018', f'"pid": {num}')
    rep, why = read_ras_json("x.json", text)
    assert (rep is None) != (why is None)
    if rep is not None:
        ras_report_verdicts([rep])


@given(st.lists(st.text(max_size=120), max_size=20))
def test_inspector_and_ncclparam_of_any_lines(lines: list[str]) -> None:
    r = InspectorReader(10)
    r.add("x", enumerate(["{" + x for x in lines] + lines, start=1))
    r.frame()
    r.notes()
    read_ncclparam(
        "p", enumerate([f"NCCL_X (int) [] d\n    Current value={x} set_by=Y default=" for x in lines])
    )
