"""Issue 30 item 2: a flood of evidence lines keeps, per input and kind, its first and last lines and a count
of the rest (`keep/bounded.py`), and the rules that count lines count them all (`LogFrames.lines_of`).

A kind is one process's lines of one message with its numbers masked: a rare line in the middle of a
flood is a kind of its own and stays; benign-warn, unexplained-warn, nccl-warn and gpu-xid count the lines
a kept row stands for. On real logs the bound cuts nothing, and a bound made tiny on purpose gives the
same counts.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from ncclscope.parse.logs.keep.bounded import Caps, Trimmed, bound, kind
from ncclscope.parse.logs.read import read_logs
from ncclscope.session import analyze, keep_policy
from ncclscope.tuning import Tuning

XID = "[Mon Nov 23 10:00:{s:02d} 2026] NVRM: Xid (PCI:0000:3b:00): {code}, pid={pid}, {what}"
ACCEPT = "node-00:4242:4250 [0] NCCL WARN [Service thread] Accept failed Resource temporarily unavailable"
RARE = "node-00:4242:4250 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12"
INIT = "node-00:4242:4250 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>"


def test_bound_per_kind_keeps_first_and_last_of_each_kind_and_counts_the_rest() -> None:
    msgs = (
        [f"10:00:{i:02d} a" for i in range(10)] + ["10:00:10 b"] + [f"10:00:{i:02d} a" for i in range(11, 21)]
    )
    df = pl.DataFrame(
        {
            "path": ["p"] * len(msgs),
            "line": list(range(1, len(msgs) + 1)),
            "host": "h",
            "pid": 1,
            "text": msgs,
        }
    )
    tr = Trimmed()
    out = bound(df, "unknown", Caps(0, 0, per_kind=4), tr)
    texts = ["10:00:00 a", "10:00:01 a", "10:00:10 b", "10:00:19 a", "10:00:20 a"]
    assert out["text"].to_list() == texts  # `b` in the middle stays: a kind of its own
    assert tr.counts == {("unknown", "p"): 16} and list(tr.kinds.values()) == [16]
    rep = tr.repeats({"unknown": out})
    assert rep.rows() == [("unknown", "p", 1, 16)]  # carried by the kind's first kept row
    # Another process's lines of the same text are a kind of their own.
    other = df.with_columns(pid=pl.when(pl.col("line") > 11).then(2).otherwise(1))
    kept = bound(other, "unknown", Caps(0, 0, per_kind=4), Trimmed())
    assert kept.filter(pl.col("pid") == 2).height == 4 and kept.filter(pl.col("pid") == 1).height == 5
    # What tells two lines apart beyond time, pid and pointers (an Xid number, a PCI address) makes two kinds.
    xids = pl.DataFrame(
        {"path": "p", "line": [1, 2], "text": ["10:00:00 Xid 79 0000:01:00", "10:00:01 Xid 79 0000:02:00"]}
    )
    assert xids.select(kind(xids))["_kind"].n_unique() == 2


def _flood(tmp_path: Path, n: int) -> tuple[Path, Path]:
    p, k = tmp_path / "flood.log", tmp_path / "dmesg.log"
    lines = [INIT]
    for i in range(n):
        lines.append(ACCEPT)
        if i == n // 2:
            lines.append(RARE)
    p.write_text("\n".join(lines) + "\n")
    k.write_text(
        "\n".join(XID.format(s=i % 60, code=45 if i % 2 else 79, pid=1000 + i, what="x") for i in range(n))
    )
    return p, k


def test_a_flood_keeps_a_sample_and_the_rules_count_every_line(tmp_path: Path) -> None:
    p, k = _flood(tmp_path, 3000)
    t = replace(Tuning(), max_kept_rows_per_kind=16)
    lf = read_logs([str(p)], tuning=t, policy=keep_policy())
    assert lf.warnings.height == 16 + 1  # 16 of the flood, and the rare WARN from its middle
    assert RARE.split("WARN ")[1] in lf.warnings["message"].to_list()
    assert int(lf.lines_of("warnings", lf.warnings).sum()) == 3001
    assert any("warnings line(s) were counted, not kept" in n for n in lf.notes)
    small = analyze([str(p), str(k)], tuning=t)
    whole = analyze([str(p), str(k)])  # the default bound keeps every one of these lines
    rare = p.read_text().splitlines().index(RARE) + 1
    for s in (small, whole):
        by = {f.id: f for f in s.findings}
        assert by["benign-warn"].title.startswith(
            "3001 known-benign WARN line(s) of 2 kind(s): 3000 × [Service"
        )
        assert "Xid 79" in by["gpu-xid"].title and "1500 Xid 45 cleanup(s)" in by["gpu-xid"].title
        assert any(e.line == rare for f in s.findings for e in f.evidence)  # the rare WARN is read


@pytest.mark.corpus
def test_real_512_rank_log_counts_every_warn_even_under_a_tiny_bound(shared_dir: Path) -> None:
    log = shared_dir / "corpus" / "complete" / "mlperf41oracle_512node_lora.log"
    if not log.exists():
        pytest.skip("mlperf41oracle_512node_lora.log is not in ../shared")
    warns = sum(1 for ln in log.read_text(errors="replace").splitlines() if "NCCL WARN" in ln)
    assert warns == 5574
    runs = [analyze([str(log)]), analyze([str(log)], tuning=replace(Tuning(), max_kept_rows_per_kind=4))]
    got = []
    for s in runs:
        [f] = [f for f in s.findings if f.id == "benign-warn"]
        got.append(f.metrics["kinds"])  # type: ignore[index]
        assert f.title.startswith(f"{warns} known-benign WARN line(s) of 3 kind(s)")
    assert got[0] == got[1]  # the same counts (and hosts: the bound is per process) from a sample
    assert not any("counted, not kept" in n for n in runs[0].notes)  # the default bound cuts nothing here
