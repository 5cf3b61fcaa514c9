"""diff names the hang: a hung run against a clean one leads with the diagnosis of the hung run."""

from __future__ import annotations

from pathlib import Path

import ncclscope
from ncclscope.diff.compare import diff_sessions

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "capture"


def test_hung_run_against_clean_names_the_hang_first() -> None:
    clean, hung = ncclscope.analyze([str(SAMPLES / "clean")]), ncclscope.analyze([str(SAMPLES / "hang")])
    d = diff_sessions(clean, hung)
    first = d.relevant[0]
    assert (first.category, first.key, first.a) == ("diagnosis", "verdict", "no failure diagnosed")
    assert first.b is not None and "Hang in all_reduce" in first.b
    assert hung.diagnosis.verdict is not None and str(hung.diagnosis.verdict.ranks[0]) in first.b


def test_same_run_twice_has_no_verdict_difference() -> None:
    hung = ncclscope.analyze([str(SAMPLES / "hang")])
    assert not [x for x in diff_sessions(hung, hung).differences if x.category == "diagnosis"]
