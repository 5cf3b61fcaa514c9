"""NCCL reports are told by their bytes where inputs are classified, whatever their names; damage is a note."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from ncclscope.parse.inputs import classify_inputs
from ncclscope.session import analyze

SAMPLES = Path(__file__).resolve().parents[3] / "samples"


def test_a_directory_of_mixed_reports(tmp_path: Path) -> None:
    shutil.copy(SAMPLES / "ras" / "ray_2_28_9_missing_rank_bad_comma.json", tmp_path / "ras.json")
    shutil.copy(SAMPLES / "ras" / "nccl1911_mismatch_2_26_2.txt", tmp_path / "ras_query.out")
    shutil.copy(SAMPLES / "inspector" / "straggler" / "node-b-pid52011.log", tmp_path / "node-b-pid52011.log")
    with gzip.open(tmp_path / "params.txt.gz", "wb") as fh:
        fh.write((SAMPLES / "ncclparam" / "ncclparam_l_2_30_7_built.txt").read_bytes())
    got = classify_inputs([str(tmp_path)])
    kinds = {Path(p).name: k for p, k in got.reports}
    assert kinds == {
        "ras.json": "ras_json",
        "ras_query.out": "ras_text",
        "node-b-pid52011.log": "inspector",
        "params.txt.gz": "ncclparam",
    }
    logs = {Path(p).name for p in got.logs}
    assert logs == {"ras_query.out", "params.txt.gz"}  # Inspector and RAS JSON are not logs
    assert not got.traces and not got.dumps


def test_damaged_reports_are_notes_not_tracebacks(tmp_path: Path) -> None:
    ras = (SAMPLES / "ras" / "nccl_docs_2_29_1_missing_rank.json").read_bytes()
    (tmp_path / "cut.json").write_bytes(ras[:300])
    (tmp_path / "bin.json").write_bytes(
        b'{"nccl_version": "2.28.9", "communicators": [' + bytes(range(256)) * 10
    )
    (tmp_path / "h-pid1.log").write_bytes(b'{"header":{"id":"0x1"},"coll_perf":{' + b"\xff\xfe" * 50 + b"\n")
    s = analyze([str(tmp_path)])
    assert not s.reports.ras
    assert sum("does not decode" in n for n in s.notes) == 2
    assert any("not JSON" in n for n in s.notes)
