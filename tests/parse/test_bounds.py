"""Issue 30: what the reader keeps is bounded by bytes read, not by lines, and nothing is dropped uncounted.

- every unknown line is kept only within `Tuning.full_unknown_max_lines` and `full_frames_max_bytes` READ
  (a `.gz` small on disk, stdin); past them the evidence is kept, the rest counted, with a note;
- a per-line table keeps its first and last rows per input and in all (`bounded.py`); the rows left out
  are counted per input and table in a note, kept + counted = every line;
- the `Last error` successors are pruned once looked at, and the line after each is still kept.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import replace
from pathlib import Path

import polars as pl

from ncclscope.parse.logs import reduce
from ncclscope.parse.logs.keep.bounded import Caps, Trimmed, bound
from ncclscope.parse.logs.read import read_logs
from ncclscope.session import keep_policy
from ncclscope.tuning import Tuning

XID = "[Mon Nov 23 10:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."
WARN = "node-00:4242:4250 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12"
INIT = "node-00:4242:4250 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>"


def _counted(notes: tuple[str, ...], table: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in notes:
        m = re.match(rf"(.*): (\d+) {table} line\(s\) were counted, not kept", n)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0) + int(m.group(2))
    return out


def test_unknown_lines_past_the_budget_of_a_small_gz_are_counted_not_kept(tmp_path: Path) -> None:
    p = tmp_path / "short.log.gz"
    body = [INIT] + ["x"] * 3000 + [XID] + ["y"] * 3000
    p.write_bytes(gzip.compress(("\n".join(body) + "\n").encode()))
    t = Tuning(full_unknown_max_lines=1000, batch_lines=500)
    lf = read_logs([str(p)], tuning=t, policy=keep_policy())
    assert lf.unknown_count == 6001  # every unknown line counted…
    texts = lf.unknown["text"].to_list()
    assert XID in " ".join(texts)  # …the evidence the consumers search for kept (`Xid`), and the last line
    bare = read_logs([str(p)], tuning=t)  # no consumer's search: only the positional evidence
    assert XID not in " ".join(bare.unknown["text"].to_list())
    assert lf.unknown.height < 10 and lf.unknown["line"].max() == len(body)
    assert any("6001 unrecognised line(s) were counted, not kept" in n for n in lf.notes), lf.notes
    whole = read_logs([str(p)], tuning=replace(t, full_unknown_max_lines=10_000))
    assert whole.unknown_count is None and whole.unknown.height == 6001  # within the budget: every line
    assert not any("counted, not kept" in n for n in whole.notes)


def test_the_budget_is_on_bytes_read_not_bytes_on_disk(tmp_path: Path) -> None:
    p = tmp_path / "short.log.gz"
    p.write_bytes(gzip.compress(("\n".join([INIT] + ["z" * 99] * 2000) + "\n").encode()))
    assert p.stat().st_size < 2000  # 200 KB read
    lf = read_logs([str(p)], tuning=Tuning(full_frames_max_bytes=50_000, batch_lines=500))
    assert lf.unknown_count == 2000 and lf.unknown.height <= 4


def test_evidence_lines_keep_first_and_last_and_count_the_rest(tmp_path: Path) -> None:
    p = tmp_path / "xid.log"
    p.write_text("\n".join([INIT] + [f"{XID} #{i}" for i in range(1000)]) + "\n")
    t = Tuning(full_frames_max_bytes=0, batch_lines=128, max_kept_rows_per_input=100, max_kept_rows=1000)
    lf = read_logs([str(p)], tuning=t, policy=keep_policy())
    ids = [int(s.rsplit("#", 1)[1]) for s in lf.unknown["text"].to_list()]
    assert ids == list(range(50)) + list(range(950, 1000))
    assert _counted(lf.notes, "unknown") == {str(p): 900}


def test_many_inputs_are_bounded_in_all_and_every_row_is_counted(tmp_path: Path) -> None:
    paths = []
    for k in range(30):
        p = tmp_path / f"rank_{k:02d}.log"
        p.write_text("\n".join([INIT] + [f"{WARN} #{i}" for i in range(20)]) + "\n")
        paths.append(str(p))
    t = Tuning(batch_lines=64, max_kept_rows_per_input=10, max_kept_rows=200)
    lf = read_logs(paths, tuning=t)
    assert lf.warnings.height <= 200
    per = lf.warnings.group_by("path").len()
    assert per["len"].max() <= 10
    counted = _counted(lf.notes, "warnings")
    kept = dict(per.iter_rows())
    assert all(kept.get(p, 0) + counted.get(p, 0) == 20 for p in paths), (kept, counted)


def test_bound_keeps_order_and_counts() -> None:
    df = pl.DataFrame({"path": ["a"] * 10 + ["b"] * 3, "line": list(range(10)) + list(range(3))})
    tr = Trimmed()
    out = bound(df, "t", Caps(4, 6), tr)
    assert out.rows() == [("a", 0), ("a", 1), ("a", 8), ("b", 0), ("b", 1), ("b", 2)]
    assert tr.counts == {("t", "a"): 7}  # 6 past 4 per input, then a9 past 6 in all
    assert bound(df, "t", Caps(0, 0), Trimmed()).height == 13  # 0: no bound


def test_last_error_successors_are_pruned_and_still_kept(tmp_path: Path) -> None:
    p = tmp_path / "le.log"
    lines = [INIT]
    for i in range(400):
        lines += ["Last error:", f"plain text {i}"]
    p.write_text("\n".join(lines) + "\n")
    t = Tuning(full_frames_max_bytes=0, batch_lines=50, pending_lines=60)
    lf = read_logs([str(p)], tuning=t)
    kept = lf.unknown.filter(pl.col("text").str.starts_with("plain text"))
    assert kept.height == 400  # the line after each `Last error:` line
    acc = reduce._Acc(reduce.Keep(), t)
    from ncclscope.parse.logs.engine.pieces import Segment, read_segment
    from ncclscope.parse.logs.engine.reader import ReadStats

    for chunk in read_segment(Segment(str(p)), ReadStats(), t):
        acc.batch(chunk)
    acc.flush()
    assert sum(a.height for a in acc.after) <= 2 * t.pending_lines  # not one row per `Last error:` line


def test_held_rows_stay_within_twice_the_bound() -> None:
    from ncclscope.parse.logs.keep.bounded import Held

    held, tr = Held("t", Caps(100, 1000)), Trimmed()
    peak = 0
    for k in range(1000):
        held.append(pl.DataFrame({"path": ["a"] * 10, "line": list(range(10 * k, 10 * k + 10))}), tr)
        peak = max(peak, held.rows)
    assert peak <= 2 * 100 + 10  # one input: cut at twice its bound, not at 1.5x the total
    out = held.frame(tr)
    assert out["line"].to_list() == list(range(50)) + list(range(9950, 10000))
    assert tr.counts == {("t", "a"): 9900}
