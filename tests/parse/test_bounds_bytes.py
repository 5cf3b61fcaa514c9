"""Issue 30 item 2: what one process holds while it reads is bounded by bytes, whatever the lines' length.

- a line longer than `Tuning.max_line_chars` is cut when read, its text copied out of the block (a slice
  would keep the whole block alive), and counted once in the note;
- a batch of lines and the lines gathered for the general path are bounded by bytes as well as lines;
- the general path runs `Tuning.flush_lines` lines at a time, and slicing changes no row: a wrapped run
  cut by a slice's end is still rejoined.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from ncclscope.parse.logs.engine.reader import ReadStats, read_chunks
from ncclscope.parse.logs.lines import general
from ncclscope.parse.logs.read import read_logs
from ncclscope.session import keep_policy
from ncclscope.tuning import Tuning

INIT = "node-00:4242:4250 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>"
WARN = "node-00:4242:4250 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error {}"
XID = "[Mon Nov 23 10:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid={}, GPU has fallen off the bus."
# A wrapped NCCL line (the device list re-flowed one per line) that `rejoin` folds back into one.
WRAPPED = ["node-00:4242:4250 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB", "[2]mlx5_2:1/IB"]


def test_long_lines_are_cut_when_read_and_counted_once(tmp_path: Path) -> None:
    p = tmp_path / "wide.log"
    p.write_bytes((INIT + "\n" + ("b" * 300_000 + "\n") * 5 + "tail\n").encode())
    st = ReadStats()
    t = Tuning(max_line_chars=1000, read_block_bytes=1 << 20)
    chunks = list(read_chunks(str(p), st, t))
    raw = pl.concat(chunks)["raw"]
    assert raw.to_list() == [INIT, *(["b" * 1000] * 5), "tail"]
    assert st.long_lines == 5 and st.widest == 300_000  # the width seen (rejoin), the count once per line
    # The kept text owns its bytes: the frames hold ~the cut lines, not the 1.5 MB read.
    assert sum(c.estimated_size() for c in chunks) < 64 << 10


def test_a_line_longer_than_a_block_is_counted_once(tmp_path: Path) -> None:
    p = tmp_path / "one.log"
    p.write_bytes((INIT + "\n" + "a" * 50_000 + "\nend\n").encode())
    st = ReadStats()
    got = pl.concat(list(read_chunks(str(p), st, Tuning(max_line_chars=1000, read_block_bytes=4096))))
    assert got["raw"].to_list() == [INIT, "a" * 1000, "end"] and st.long_lines == 1


def _rows(lf: object) -> dict[str, list[tuple[object, ...]]]:
    return {
        n: sorted(map(tuple, getattr(lf, n).select("path", "line", "text").rows()))
        for n in ("warnings", "unknown", "torch", "network")
    }


@pytest.mark.parametrize("knob", ["flush_lines", "batch_bytes", "pending_bytes"])
def test_bounding_by_bytes_or_slices_changes_no_row(tmp_path: Path, knob: str) -> None:
    p = tmp_path / "mixed.log"
    body = [INIT]
    for i in range(300):
        body += [WARN.format(i), XID.format(i), "app " + "z" * (i % 7) * 100, *WRAPPED]
    p.write_text("\n".join(body) + "\n")
    base = Tuning(batch_lines=997, pending_lines=1500)
    small = {"flush_lines": 37, "batch_bytes": 20_000, "pending_bytes": 30_000}[knob]
    a = read_logs([str(p)], tuning=base, policy=keep_policy())
    b = read_logs([str(p)], tuning=replace(base, **{knob: small}), policy=keep_policy())
    assert _rows(a) == _rows(b)
    folded = a.network.filter(pl.col("text").str.ends_with("[2]mlx5_2:1/IB"))  # one row per device listed
    assert folded["line"].n_unique() == 300  # every wrapped line rejoined, slices or not
    assert a.coverage == b.coverage


def test_flush_runs_the_general_path_in_slices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "warns.log"
    p.write_text("\n".join([INIT] + [WARN.format(i) for i in range(1000)]) + "\n")
    seen: list[int] = []
    real = general.prepare

    def spy(raw: pl.DataFrame, tuning: Tuning) -> pl.DataFrame:
        seen.append(raw.height)
        return real(raw, tuning)

    monkeypatch.setattr(general, "prepare", spy)
    read_logs([str(p)], tuning=Tuning(flush_lines=100))
    assert seen and max(seen) <= 100 and sum(seen) >= 1001
