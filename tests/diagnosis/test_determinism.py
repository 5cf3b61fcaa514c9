"""The same input gives the same bytes: analyze five times, with 1 and 4 analysis threads, on every bundled
sample (logs, Flight Recorder dumps, capture directories), and compare the JSON and Markdown reports."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import ncclscope
from ncclscope.report import document_for, json_report, markdown
from ncclscope.tuning import DEFAULT

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _inputs() -> list[Path]:
    logs = sorted(SAMPLES.glob("logs/*.log")) + sorted(SAMPLES.glob("nccltests/*.log"))
    logs += sorted(SAMPLES.glob("complete/*.log.gz"))
    dumps = {p.parent for p in SAMPLES.glob("**/nccl_trace_rank_*")}
    dirs = {d.parent if d.name == "flight" else d for d in dumps}  # a capture directory, or a folder of dumps
    dirs |= {p.parent for p in SAMPLES.glob("hang/*/rank*.log")} | {
        d.parent for d in SAMPLES.glob("capture/*/logs")
    }
    return logs + sorted(set(dirs) - set(logs))


@pytest.mark.slow
@pytest.mark.parametrize("sample", _inputs(), ids=lambda p: str(p.relative_to(SAMPLES)))
def test_same_bytes_five_times_any_thread_count(sample: Path) -> None:
    outs = set()
    for threads in (1, 4, 1, 4, 1):
        s = ncclscope.analyze([str(sample)], tuning=replace(DEFAULT, analysis_threads=threads))
        doc = document_for(s)
        outs.add((json_report.render_doc(doc), markdown.render_doc(doc)))
    assert len(outs) == 1, sample


def test_the_samples_include_dumps() -> None:
    assert any((d / "flight").is_dir() or any(d.glob("nccl_trace_rank_*")) for d in _inputs())
