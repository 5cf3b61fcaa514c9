"""The seam into `lines/`: `parse_batch(raw, carry, ctx)`. A piece read as any two batches gives the rows it
gives read as one: what crosses the cut (a wrapped run still open, the rejoin window of the inert screen,
the candidate lines waiting for the general path) travels in the `Carry`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pytest

from ncclscope.parse.logs import reduce
from ncclscope.parse.logs.engine.pieces import Segment, read_segment
from ncclscope.parse.logs.engine.reader import ReadStats
from ncclscope.parse.logs.lines import Batch, Carry, RawBatch, merge_streams, parse_batch
from ncclscope.tuning import Tuning

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "logs"


def _fold(text: str, width: int) -> str:
    """What a terminal of `width` columns makes of the text (like `fold -w`)."""
    out = []
    for line in text.splitlines():
        out += [line[i : i + width] for i in range(0, len(line), width)] or [""]
    return "\n".join(out) + "\n"


def _lines(path: Path) -> tuple[pl.DataFrame, dict[str, int]]:
    st = ReadStats()
    lines = pl.concat(list(read_segment(Segment(str(path)), st, Tuning())))
    return lines, {str(path): st.widest}


def _sorted(frames: Sequence[pl.DataFrame]) -> list[tuple[object, ...]]:
    parts = [f for f in frames if f.height]
    if not parts:
        return []
    return pl.concat(parts, how="vertical_relaxed").sort("path", "line", maintain_order=True).rows()


def _read(batches: Sequence[Batch]) -> dict[str, object]:
    """Everything the batches gave, in a form that does not depend on where the batches were cut."""
    tables: dict[str, list[pl.DataFrame]] = {}
    cov = [0, 0, 0, 0]
    rejoined: Counter[str] = Counter()
    streams, unknown, after, coll = [], [], [], 0
    for b in batches:
        cov = [a + n for a, n in zip(cov, b.cov, strict=True)]
        streams += b.streams
        unknown += [b.inert] if b.inert is not None else []
        after += [b.after] if b.after is not None else []
        coll += b.coll.lines if b.coll is not None else 0
        for g in b.passes:
            for name, df in g.tables:
                tables.setdefault(name, []).append(df)
            unknown.append(g.unknown)
            streams.append(g.streams)
            cov = [a + n for a, n in zip(cov, g.cov, strict=True)]
            rejoined.update(dict(g.rejoined))
            coll += g.coll.lines if g.coll is not None else 0
    return {
        "tables": {n: _sorted(t) for n, t in sorted(tables.items())},
        "unknown": _sorted(unknown),
        "streams": merge_streams(streams).sort("path", "first_line").rows(),
        "after": _sorted(after),
        "cov": cov,
        "rejoined": dict(rejoined),
        "coll": coll,
        "marked": sorted(set().union(*[b.marked for b in batches])),
    }


def _in_two(lines: pl.DataFrame, widest: dict[str, int], at: int, t: Tuning) -> list[Batch]:
    ctx = reduce.context(reduce.Keep(unknown=True), t)
    first = parse_batch(RawBatch(lines.slice(0, at), widest), Carry(), ctx)
    second = parse_batch(RawBatch(lines.slice(at), widest), first.carry, ctx)
    end = parse_batch(RawBatch(None, widest, last=True), second.carry, ctx)
    assert end.carry == Carry(end.carry.window, (), end.carry.known)  # nothing left waiting
    return [first, second, end]


def _in_one(lines: pl.DataFrame, widest: dict[str, int], t: Tuning) -> list[Batch]:
    return [
        parse_batch(RawBatch(lines, widest, last=True), Carry(), reduce.context(reduce.Keep(unknown=True), t))
    ]


# Real samples: NCCL 2.x init lines cut by a terminal (every run of cut lines is rejoined), PyTorch
# watchdog lines hard-wrapped after `timeout: ` (milabench#269), application output between NCCL lines
# (nccl#147), srun rank prefixes with inert application lines between PyTorch lines (lightning#4389).
CASES = [
    ("nccl687_2node_ib_gdrdma_p2p_read_healthy", 60),
    ("nccl687_2node_ib_gdrdma_p2p_read_healthy", 80),
    ("nccl952_ib_no_device_socket_fallback_16r", 60),
    ("nccl952_ib_no_device_socket_fallback_16r", 80),
    ("milabench269_stream_prefix_wrapped_watchdog_reduce", 0),
    ("nccl147_nccl_2_3_5_ib_init_app_interleaved", 0),
    ("lightning4389_duplicate_global_ranks_srun", 0),
]
# With a general-path pass run at the cut (`pending_lines` 1). Not the 80-column cuts: whether a file was
# cut by a terminal is judged per pass, from its lines as long as the file's longest (at least two, most
# of them followed by a continuation), so a pass holding only a file's first or last few lines can judge
# otherwise (nccl952 at 80 columns: fewer than its 15 lines rejoined when a pass ends before line 4, 5, 30 or 31;
# nccl687 at 80 columns, before line 20, 21 or 22).
# Batches never cut there: a pass gathers `Tuning.pending_lines` (250,000) candidate lines across batches.
PASS_CUTS = [c for c in CASES if c[1] != 80]


def _check_cuts(tmp_path: Path, name: str, width: int, t: Tuning) -> None:
    path = SAMPLES / f"{name}.log"
    if width:
        path = tmp_path / f"{name}.log"
        path.write_text(_fold((SAMPLES / f"{name}.log").read_text(), width))
    lines, widest = _lines(path)
    whole = _read(_in_one(lines, widest, t))
    if width:
        assert whole["rejoined"]  # the cut lines are there to be rejoined
    for at in range(1, lines.height):
        assert _read(_in_two(lines, widest, at, t)) == whole, f"cut before line {at + 1}"


@pytest.mark.parametrize(("name", "width"), CASES)
def test_any_batch_cut_reads_as_one_batch(tmp_path: Path, name: str, width: int) -> None:
    """Every split point of a real sample: two batches give the rows of one (the rejoin window and the
    candidate lines cross the cut in the carry; one general-path pass reads both batches)."""
    _check_cuts(tmp_path, name, width, Tuning())


@pytest.mark.parametrize(("name", "width"), PASS_CUTS)
def test_a_pass_at_the_cut_leaves_the_open_run_to_the_next(tmp_path: Path, name: str, width: int) -> None:
    """The same with a general-path pass run at the cut: a wrapped run open there waits in the carry."""
    _check_cuts(tmp_path, name, width, Tuning(pending_lines=1))


def test_the_carry_holds_an_open_run() -> None:
    """A wrapped NET/IB line at the end of a batch whose general pass runs waits in the carry, whole."""
    p = "node-00:12:34 [0] NCCL INFO "
    raw = pl.DataFrame(
        {
            "path": ["b.log"] * 5,
            "line": [1, 2, 3, 4, 5],
            "raw": [f"{p}Using network IB", f"{p}NET/IB : Using [0]mlx5_0:1/IB", "[1]mlx5_1:1/IB", "x", "y"],
        }
    )
    ctx = reduce.context(reduce.Keep(unknown=True), Tuning(pending_lines=1))
    b = parse_batch(RawBatch(raw.slice(0, 3)), Carry(), ctx)
    assert len(b.passes) == 1 and b.passes[0].waiting is not None
    assert [f["line"].to_list() for f in b.carry.pending] == [[2, 3]]
    b2 = parse_batch(RawBatch(raw.slice(3), last=True), b.carry, ctx)
    net = pl.concat([df for g in b2.passes for n, df in g.tables if n == "network"])
    assert net.filter(pl.col("kind") == "ib_dev")["hca"].drop_nulls().to_list() == ["mlx5_0", "mlx5_1"]
    assert dict(b2.passes[-1].rejoined) == {"b.log": 1}
