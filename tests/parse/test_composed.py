"""Composed lines: NCCL text built in a buffer with sprintf/snprintf and logged as `"%s"` is recognised.

The extractor test reads NCCL's sources from the bare mirror (skipped where /work/.mirror is absent); the
others use the catalog and the real NCCL 2.28.9 captures under samples/gpu.
"""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path

import pytest

from ncclscope.parse import read_logs
from ncclscope.parse.logs.lines import catalog as C

ROOT = Path(__file__).resolve().parents[2]
MIRROR = Path("/work/.mirror/NVIDIA+nccl/repo")
sys.path.insert(0, str(ROOT / "tools" / "catalog"))


@cache
def _composed() -> dict[str, dict[str, object]]:
    doc = json.loads((ROOT / "grammars" / "catalog" / "nccl_messages.json").read_text())
    return {m["id"]: m for m in doc["messages"] if m.get("composed")}


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no NVIDIA/nccl mirror under /work/.mirror")
def test_extractor_finds_the_pieces_of_ncclTopoPrintRec_at_2_28_9() -> None:
    from clex import lex
    from composed import composed_in
    from gitsrc import Repo

    repo = Repo("nccl", "NVIDIA/nccl", str(MIRROR), ("src",), "nccl")
    files = dict(repo.tree("v2.28.9-1"))
    found = composed_in(lex(repo.blob(files["src/graph/topo.cc"]), "src/graph/topo.cc")[0])
    rec = {c.fmt for c in found if c.function == "ncclTopoPrintRec"}
    assert {
        "%s/%lx-%lx (%d)",
        "%s/%lx-%lx (%d/%d/%d)",
        "%s/%lx-%lx (%lx)",
        "+ %s[%2.1f] - %s/%lx-%lx",
        "+ %s[%2.1f] - ",
        "%s/%lx-%lx (%d/%lx/%d/%f)",
    } <= rec
    assert "%s/%lx-%lx" not in rec, "too little fixed text to start a line"
    assert all(
        c.lead and c.level == "INFO" and c.subsys == ("GRAPH",)
        for c in found
        if c.function == "ncclTopoPrintRec"
    )
    aff = [c for c in found if c.function == "ncclTopoGetCpuAffinity"]
    assert [c.fmt for c in aff] == ["ncclTopoGetCpuAffinity: Affinity for GPU %d is "]
    assert not aff[0].lead


def test_composed_entries_carry_level_subsys_sites_and_releases() -> None:
    by_fmt = {m["format"]: m for m in _composed().values()}
    m = by_fmt["+ %s[%2.1f] - "]
    assert m["level"] == "INFO" and m["subsys"] == ["GRAPH"] and m["indent"] is True
    assert m["functions"] == ["ncclTopoPrintRec"] and m["recognisable"] is True
    assert any(s["repo"] == "nccl" and s["file"] == "src/graph/topo.cc" for s in m["sites"])
    assert m["releases"]["nccl"][-1].endswith("v2.30.7-1")
    assert by_fmt["%13s |%8.1f/%6.1f |%8.1f/%6.1f |"]["subsys"] == ["TUNING"]


@pytest.mark.parametrize(
    "msg",
    [
        "CPU/0-ffffffffffffff (1/1/4)",
        "+ PCI[5000.0] - NIC/0-0",
        "                + NET[1.2] - NET/0-0 (0/0/0/1.250000)",
        "+ PCI[48.0] - GPU/0-60 (0)",
        "GPU/0-60 :GPU/0-60 (0/5000.0/LOC) CPU/0-ffffffffffffff (1/48.0/PHB) NET/0-0 (3/1.2/PHB)",
        "ncclTopoGetCpuAffinity: Affinity for GPU 0 is empty, ignoring. (GPU affinity =  ; CPU affinity = 0-15).",
        "  Algorithm   |                            Tree                  |                            Ring",
        "  Protocol    |             LL |          LL128 |         Simple |             LL |          LL128 |",
        " Max NThreads |            512 |            640 |            512 |            512 |            640 |",
        "    AllReduce |    26.8/   0.1 |    48.0/   0.0 |    64.4/   0.5 |    36.6/   0.4 |",
        "ReduceScatter |     0.0/   0.0 |     0.0/   0.0 |    27.2/   0.9 |",
    ],
)
def test_composed_lines_from_samples_are_named(msg: str) -> None:
    cid = C.identify_one(msg)
    assert cid in _composed(), (msg, cid)


@pytest.mark.parametrize(
    "msg",
    [
        "+ PCI 5000.0 - NIC/0-0",  # the piece's fixed text is not all there
        "some words then GPU/0-60 (0)",  # a leading %s is one word
        "AllReduce is 26.8/ 0.1",
    ],
)
def test_composed_rules_need_the_whole_piece_at_the_start(msg: str) -> None:
    assert C.identify_one(msg) not in _composed()


def test_the_gpu_captures_have_no_unknown_nccl_line() -> None:
    logs = sorted(str(p) for p in (ROOT / "samples" / "gpu").glob("*/logs/nccl_rank*.log"))
    assert logs
    lf = read_logs(logs)
    assert lf.coverage.nccl_lines > 0
    assert lf.unknown.filter(lf.unknown["is_nccl"]).height == 0
