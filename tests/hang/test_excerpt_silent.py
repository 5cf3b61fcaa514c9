"""Hang classes: ranks absent from an excerpt are not blamed for being silent (issue 29, excerpt boundaries).

The progress rows are the real samples/gpu/hang watchdog lines of ranks 0, 2 and 3 (NCCL 2.28.9, torch 2.11:
all three timed out in ALLREDUCE SeqNum 71; rank 1, the injected hang, printed none). Pasted alone they are an
excerpt. The group size (4) is given to the classifier as an Init line would give it: these torch lines name no
process group, so no real excerpt in the corpus reaches this path on its own (checked on all 290 issue excerpts).
"""

from __future__ import annotations

from pathlib import Path

from ncclscope.hang.classify import Ctx, classify_group
from ncclscope.session import analyze

LOGS = Path(__file__).resolve().parents[2] / "samples" / "gpu" / "hang" / "logs"


def _progress(tmp_path: Path):  # type: ignore[no-untyped-def]
    lines = [
        ln
        for r in (0, 2, 3)
        for ln in (LOGS / f"rank{r}.log").read_text().splitlines(keepends=True)
        if "Watchdog caught collective operation timeout" in ln
    ]
    log = tmp_path / "excerpt.log"
    log.write_text("".join(lines))
    s = analyze([str(log)])
    assert [i.whole for i in s.facts.inputs] == [False]
    return s.hang.progress


def test_whole_logs_blame_the_silent_rank(tmp_path: Path) -> None:
    v = classify_group("?", "torch", _progress(tmp_path), Ctx(sizes={"?": 4}))
    assert (v.klass, v.culprits, v.confidence) == ("a", (1,), "low")


def test_an_excerpt_names_the_absent_rank_without_blaming_it(tmp_path: Path) -> None:
    v = classify_group("?", "torch", _progress(tmp_path), Ctx(sizes={"?": 4}, excerpt=True))
    assert (v.klass, v.culprits) == ("undetermined", ())
    assert "the input is an excerpt: rank(s) 1 are not in it" in v.reason


def test_the_hang_stage_knows_an_excerpt(tmp_path: Path) -> None:
    """Built from the excerpt alone (no size known), the verdict still says the input is an excerpt."""
    _progress(tmp_path)
    [v] = analyze([str(tmp_path / "excerpt.log")]).hang.verdicts
    assert v.klass == "undetermined" and "the input is an excerpt" in v.reason
