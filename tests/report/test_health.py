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


GPU_CLEAN = ROOT / "samples" / "gpu" / "clean" / "logs"


def _comms(paths: list[str]) -> list[dict[str, object]]:
    return D.build(analyze(paths))["health"]["data_path"]["communicators"]  # type: ignore[no-any-return]


def test_each_communicator_has_its_data_path_algorithms_and_ring_plan() -> None:
    """The real NCCL 2.28.9 capture (4 ranks as 4 nodes over NET/Socket, TUNING and GRAPH lines on)."""
    [c] = _comms([str(GPU_CLEAN)])
    assert c["comm"] == "0xeaf538c168be01c0"
    assert c["transports"] == [{"transport": "NET/Socket", "channels": 64}]
    assert (
        c["coll_channels"] == [2] and c["pxn"] == [0] and c["gdr_flag"] == [0] and c["nics"] == ["Socket/0"]
    )
    algos = {a["algorithm"]: a["lines"] for a in c["algorithms"]}  # type: ignore[attr-defined]
    assert set(algos) == {"RING/SIMPLE", "RING/LL"} and sum(algos.values()) == 83
    assert str(c["ring_plan"]).startswith("1 ring channel(s) × 1.2 GB/s over the network")
    md = markdown.render_doc(D.build(analyze([str(GPU_CLEAN)])))
    assert "communicator 0xeaf538c168be01c0 data path: NET/Socket ×64" in md


def test_communicators_of_one_job_get_their_own_paths() -> None:
    """MLPerf BERT 2×8 H200: the two 16-rank world-like communicators go over IBext with GDR on 8 NICs, the
    two 8-rank intra-node ones over P2P/IPC only, with 24 channels."""
    comms = _comms([BERT])
    net = [c for c in comms if any("IBext" in t["transport"] for t in c["transports"])]  # type: ignore[attr-defined]
    local = [c for c in comms if c not in net]
    assert len(net) == 2 and len(local) == 2
    assert all(c["coll_channels"] == [16] and len(c["nics"]) == 8 for c in net)  # type: ignore[arg-type]
    assert all(c["transports"] == [{"transport": "P2P/IPC", "channels": 360}] for c in local)
    assert all(c["coll_channels"] == [24] and c["nics"] == [] for c in local)


def test_numbered_algorithms_are_named(tmp_path: Path) -> None:
    """NCCL 2.20-2.23 print `-> Algo 1 proto 0 time …` (composed from the capture's lines in 2.23.4's format)."""
    src = (GPU_CLEAN / "nccl_rank0.log").read_text()
    out = src.replace("-> Algo RING proto LL channel{Lo..Hi}={0..0}", "-> Algo 1 proto 0 time 12.500000")
    out = out.replace("-> Algo RING proto SIMPLE channel{Lo..Hi}={0..0}", "-> Algo 1 proto 2 time 80.000000")
    (tmp_path / "r0.log").write_text(out)
    [c] = _comms([str(tmp_path / "r0.log")])
    assert {a["algorithm"] for a in c["algorithms"]} == {"RING/LL", "RING/SIMPLE"}  # type: ignore[attr-defined]
