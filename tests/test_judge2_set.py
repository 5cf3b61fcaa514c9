"""Blind judge set (samples/judge2): each excerpt carries its provenance meta, and nothing here analyses it.

The set is measured only at the end, with samples/judge2/measure.py, so that nobody tunes on it; this test
deliberately does not run ncclscope on the files. It checks that the set is complete: every log has a meta
with the fields the measurement table reads, and every meta has its log.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_meta import check_meta

JUDGE2 = Path(__file__).resolve().parent.parent / "samples" / "judge2"
LOGS = sorted(JUDGE2.glob("*.log"))


def test_the_set_is_there_with_its_readme_and_measure_script() -> None:
    assert 25 <= len(LOGS) <= 30
    assert (JUDGE2 / "README.md").is_file() and (JUDGE2 / "measure.py").is_file()


def test_every_meta_has_its_log() -> None:
    metas = {p.name.removesuffix(".meta.json") for p in JUDGE2.glob("*.meta.json")}
    assert metas == {p.stem for p in LOGS}


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_each_sample_has_its_meta(log: Path) -> None:
    check_meta(log)
