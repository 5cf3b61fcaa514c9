"""Parse stage, catalog: every message NCCL 2.4 → 2.30, RCCL and the net plugins print is recognised.

One realistic line per format per release, with that release's prefix (the catalog's descriptor of its
debug.cc: WARN's file:line, 2.26+ timestamps, 2.30.7's `(func)`, CALL, VERSION), goes through the
reader: every line must be recognised by a grammar family or by the catalog, and each format must land
where `catalog_families.json` pins it (regenerate with tools/catalog/expect_families.py and review).
"""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path

import polars as pl
import pytest

from ncclscope import grammar as G
from ncclscope.parse import read_logs
from ncclscope.parse.logs.lines import catalog as C
from ncclscope.parse.logs.lines.match import first_family

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "catalog"))
from samples import fill, prefix

PINNED = json.loads((Path(__file__).parent / "catalog_families.json").read_text())
PLUGIN_HOST = "nccl:v2.18.5-1"  # plugin formats are printed through some NCCL release's logger


@cache
def _doc() -> dict[str, object]:
    return json.loads((ROOT / "grammars" / "catalog" / "nccl_messages.json").read_text())


def _ruled() -> set[str]:
    return {n.split("_", 1)[1] for n in G.catalog_table()["rules"]}


def _release_lines() -> list[tuple[str, str, str]]:
    """(release key, catalog id, line) for every format with a rule, in every release it appears in."""
    doc = _doc()
    prefixes: dict[str, dict[str, object]] = {k: v["descriptor"] for k, v in doc["prefixes"].items()}  # type: ignore[attr-defined,index]
    ruled = _ruled()
    out = []
    for m in doc["messages"]:  # type: ignore[attr-defined]
        if m["id"] not in ruled:
            continue
        msg = fill(m["format"])
        for repo, spans in m["releases"].items():
            tags = _expand(repo, spans)
            keys = [f"{repo}:{t}" for t in tags] if repo in ("nccl", "rccl") else [PLUGIN_HOST]
            for key in keys:
                out.append((key, m["id"], prefix(prefixes[key], m["level"]) + msg))
    return out


def _expand(repo: str, spans: list[str]) -> list[str]:
    """`v2.13.4-1..v2.21.5-1` ranges (the catalog's compact form) -> every tag of the repo in between."""
    order: list[str] = _doc()["sources"][repo]["tags"]  # type: ignore[index]
    out: list[str] = []
    for span in spans:
        first, _, last = span.partition("..")
        i, j = order.index(first), order.index(last or first)
        out += order[i : j + 1]
    return out


def test_catalog_covers_every_release_from_2_4() -> None:
    tags = {k.split(":", 1)[1] for k in _doc()["prefixes"] if k.startswith("nccl:")}  # type: ignore[union-attr]
    minors = {int(t.split(".")[1]) for t in tags}
    assert set(range(4, 31)) <= minors and "v2.30.7-1" in tags


def test_every_format_of_every_release_is_recognised(tmp_path: Path) -> None:
    rows = _release_lines()
    log = tmp_path / "catalog.log"
    log.write_text("\n".join(line for _, _, line in rows) + "\n")
    lf = read_logs([str(log)])
    unknown = lf.unknown.filter(pl.col("is_nccl"))
    bad = [(rows[n - 1][0], rows[n - 1][2]) for n in unknown["line"].to_list()[:10]]
    assert lf.coverage.nccl_lines == len(rows), "every generated line carries an NCCL prefix"
    assert unknown.height == 0, f"{unknown.height} of {len(rows)} lines not recognised, e.g. {bad}"


def test_each_format_lands_where_pinned() -> None:
    fams = G.families()
    wrong = []
    for e in C.entries().values():
        if e.id in PINNED:
            i = first_family(fill(e.format))
            got = fams[i] if i is not None else ("catalog" if C.identify_one(fill(e.format)) else None)
            if got != PINNED[e.id]:
                wrong.append((e.id, e.format[:60], PINNED[e.id], got))
    assert set(PINNED) == _ruled()
    assert wrong == []


@pytest.mark.parametrize(
    ("line", "family"),
    [
        ("node-01:1:2 [0] NCCL INFO [Service thread] Connection closed by localRank 3", "ws_service"),
        (
            (
                "node-01:1:2 [0] NCCL INFO AllReduce: opCount 1a sendbuff 0x7f00 recvbuff 0x7f00 count 1024 datatype 7 op 0 "
                "root 0 comm 0x55aa [nranks=8] stream 0x11"
            ),
            "coll",
        ),
        ("node-01:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read", "conn"),
        (
            "node-01:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:10.0.0.1<0>",
            "ib_devices",
        ),
    ],
)
def test_rule_relevant_formats_keep_their_family(line: str, family: str) -> None:
    lf = read_logs_text(line)
    assert lf.unknown.height == 0 and lf.known.height == 0, family
    idx = first_family(line.split("NCCL INFO ", 1)[1])
    assert idx is not None and G.families()[idx] == family


def read_logs_text(text: str, tmp: Path | None = None) -> object:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.log"
        p.write_text(text + "\n")
        return read_logs([str(p)])


def test_a_catalog_line_is_a_typed_record() -> None:
    lf = read_logs_text("node-01:1:2 [0] NCCL INFO DMA-BUF is available on GPU device 0")
    [row] = lf.known.to_dicts()  # type: ignore[attr-defined]
    assert row["catalog_id"] == "mc33d1a29" and row["level"] == "INFO" and row["subsys"] == "INIT"
    assert row["line"] == 1 and row["host"] == "node-01"


def test_a_pytorch_message_without_a_family_is_named_by_the_torch_catalog() -> None:
    lf = read_logs_text(
        "master_addr is only used for static rdzv_backend and when rdzv_endpoint is not specified."
    )
    [row] = lf.known.to_dicts()  # type: ignore[attr-defined]
    assert row["catalog_id"].startswith("t") and row["subsys"] == "torch"
    assert lf.unknown.height == 0  # type: ignore[attr-defined]
    assert read_logs_text("epoch 3 loss 0.25").known.height == 0  # type: ignore[attr-defined]
