"""Report stage, health section: a clean run reads as a positive statement with its evidence."""

from __future__ import annotations

import json
from pathlib import Path

from ncclscope.report import document as D
from ncclscope.report import json_report, markdown
from ncclscope.session import analyze

ROOT = Path(__file__).resolve().parents[2]
RCCL = str(ROOT / "tests" / "align" / "data" / "rccl1055_healthy_2gpu_2_18_3.log")
BERT = str(ROOT / "samples" / "complete" / "mlperf50dell_2x8_h200_bert.log.gz")


def test_healthy_rccl_run_says_what_was_checked() -> None:
    h = D.build(analyze([RCCL]))["health"]
    assert h["healthy"] is True
    assert h["statement"].startswith(
        "Healthy as far as the evidence goes: 1 of 1 communicator(s) completed init"
    )
    assert h["warns_before_teardown"]["count"] == 0
    assert h["data_path"]["transports"] == [{"transport": "P2P/IPC", "channels": 4}]
    assert h["data_path"]["network"] == ["Socket"]


def test_json_carries_facts_and_health() -> None:
    out = json.loads(json_report.render(analyze([BERT])))
    assert out["facts"]["world_size"]["value"] == 16
    assert out["facts"]["library"]["value"] == "NCCL 2.18.5"
    h = out["health"]
    assert h["success"]["text"].endswith('"status": "success"}}')
    assert [c["state"] for c in h["init"]] == ["complete"] * 4
    names = {st["name"] for st in h["settings"]}
    assert {"NCCL_NET_GDR_LEVEL", "NCCL_ALGO"} <= names
    assert any(t["transport"] == "NET/IBext/GDRDMA" for t in h["data_path"]["transports"])


def test_markdown_shows_health_section() -> None:
    md = markdown.render_doc(D.build(analyze([BERT])))
    assert "## Health" in md and "NCCL\\_ALGO=RING" in md


def test_known_benign_warns_are_counted_not_hidden() -> None:
    """RCCL's 56 `MSCCL++: Cannot enable MSCCL++` WARNs come before teardown: counted as known-benign."""
    mango = str(ROOT / "samples" / "complete" / "mlperf50mangoboost_mi300x_2node_lora.log.gz")
    h = D.build(analyze([mango]))["health"]
    assert h["warns_before_teardown"]["count"] == 0 and h["warns_before_teardown"]["benign"] == 56
    assert "no unexplained WARN before teardown (56 known-benign)" in h["statement"]
    assert h["facts"]["library"]["value"] == "RCCL 2.22.3-HEAD:271856d"
