"""Diff stage, results: nccl-tests bus bandwidth per operation and size, and collective timings from traces.

Each side's best busbw per (operation, size) is compared size by size; one `Difference` per operation
carries the per-size table and is relevant when the bandwidth-bound sizes moved by `REL_CHANGE` or more.
nccl-tests' `# Avg bus bandwidth` footers are compared too: with NCCL INFO lines interleaved, they are often
all that survives of the table.
"""

from __future__ import annotations

import polars as pl

from ncclscope.diff.model import Difference
from ncclscope.records import Evidence
from ncclscope.session import Session

REL_CHANGE = 0.20  # |b - a| / max(a, b) at the compared sizes
BIG_BYTES = 64 * 2**20  # headline sizes (bandwidth-bound); the largest common size when none is this big
MIN_TRACE_SAMPLES = 2  # collectives of one (op, size) per side before trace timings are compared
MIN_SPREAD_US = 100.0  # an arrival-spread change smaller than this is noise, whatever its ratio
RANK = 70


def _best_nccltests(s: Session) -> pl.DataFrame:
    """op, size_bytes → best busbw (either placement, any run) and the line that printed it."""
    r = s.nccltests.results.filter(
        pl.col("busbw_gbps").is_not_null() & pl.col("size_bytes").is_not_null()
    ).with_columns(pl.col("op").fill_null("collective"))
    return (
        r.sort("busbw_gbps", descending=True)
        .unique(["op", "size_bytes"], keep="first")
        .select("op", "size_bytes", bw="busbw_gbps", path="path", line="line", text="text")
    )


def _trace_busbw(s: Session) -> pl.DataFrame:
    a = s.aligned_traces
    if a is None or a.collectives.is_empty():
        return pl.DataFrame(
            schema={
                "op": pl.Utf8,
                "size_bytes": pl.Int64,
                "bw": pl.Float64,
                "path": pl.Utf8,
                "line": pl.Int64,
                "text": pl.Utf8,
            }
        )
    c = a.collectives.filter(
        pl.col("busbw_gbps").is_not_null() & pl.col("msg_bytes").is_not_null() & pl.col("complete")
    )
    g = c.group_by("op", "msg_bytes").agg(
        bw=pl.col("busbw_gbps").median(), n=pl.len(), t=pl.col("transfer_us").median()
    )
    g = g.filter(pl.col("n") >= MIN_TRACE_SAMPLES)
    return g.select(
        "op",
        size_bytes="msg_bytes",
        bw="bw",
        path=pl.lit("trace"),
        line=pl.lit(0, pl.Int64),
        text=pl.format(
            "{} {} B: median busbw {} GB/s over {} collectives", "op", "msg_bytes", pl.col("bw").round(2), "n"
        ),
    )


def _gbps(v: float | None) -> str | None:
    return None if v is None else f"{v:g} GB/s"


def _compare(a: pl.DataFrame, b: pl.DataFrame, what: str) -> list[Difference]:
    j = a.join(b, on=["op", "size_bytes"], how="full", coalesce=True, suffix="_b").sort("op", "size_bytes")
    out = []
    for (op,), g in j.group_by("op", maintain_order=True):
        both = g.filter(pl.col("bw").is_not_null() & pl.col("bw_b").is_not_null())
        details = tuple(
            (f"{size:,} B", _gbps(x), _gbps(y)) for size, x, y in g.select("size_bytes", "bw", "bw_b").rows()
        )
        if all(x == y for _, x, y in details):
            continue
        if both.is_empty():  # one side only ran this operation
            side = "a" if g["bw"].drop_nulls().len() else "b"
            out.append(
                Difference(
                    "results",
                    f"{what} {op} busbw",
                    "ran" if side == "a" else None,
                    "ran" if side == "b" else None,
                    "job",
                    rank=RANK,
                    details=details,
                )
            )
            continue
        big = both.filter(pl.col("size_bytes") >= BIG_BYTES)
        head = big if big.height else both.tail(1)
        x, y = float(head["bw"].mean()), float(head["bw_b"].mean())  # type: ignore[arg-type]
        change = abs(y - x) / max(x, y) if max(x, y) > 0 else 0.0
        sizes = f">= {BIG_BYTES >> 20} MiB" if big.height else f"{int(head['size_bytes'][0]):,} B"
        last = head.tail(1).row(0, named=True)
        out.append(
            Difference(
                "results",
                f"{what} {op} busbw ({sizes})",
                f"{x:.2f} GB/s",
                f"{y:.2f} GB/s",
                "job",
                evidence_a=(Evidence(last["path"], last["line"], (last["text"] or "").strip()),),
                evidence_b=(Evidence(last["path_b"], last["line_b"], (last["text_b"] or "").strip()),),
                rank=RANK,
                relevant=change >= REL_CHANGE,
                details=details,
            )
        )
    return out


def _spread(s: Session) -> pl.DataFrame:
    """op → median arrival spread (first to last rank, clock-corrected) over complete collectives."""
    a = s.aligned_traces
    if a is None or a.collectives.is_empty():
        return pl.DataFrame(schema={"op": pl.Utf8, "spread_us": pl.Float64, "n": pl.UInt32})
    c = a.collectives.filter(pl.col("complete") & pl.col("arrival_spread_us").is_not_null())
    return c.group_by("op").agg(spread_us=pl.col("arrival_spread_us").median(), n=pl.len())


def _compare_spread(a: pl.DataFrame, b: pl.DataFrame) -> list[Difference]:
    """Per operation: how long the first rank waits for the last (a straggler, a skewed input pipeline)."""
    out = []
    for op, x, na, y, nb in a.join(b, on="op", how="inner", suffix="_b").sort("op").rows():
        if x == y:
            continue
        change = abs(y - x) / max(x, y) if max(x, y) > 0 else 0.0
        out.append(
            Difference(
                "results",
                f"trace {op} arrival spread (median)",
                f"{x:,.0f} µs ({na} collectives)",
                f"{y:,.0f} µs ({nb} collectives)",
                "job",
                rank=RANK,
                relevant=change >= REL_CHANGE and abs(y - x) >= MIN_SPREAD_US,
            )
        )
    return out


def _footer(s: Session) -> tuple[float, Evidence] | None:
    """nccl-tests' `# Avg bus bandwidth` (the mean over all runs' footers): it survives when NCCL INFO lines
    interleave with the table and cut its rows."""
    sm = s.nccltests.summary.filter(pl.col("avg_busbw_gbps").is_not_null())
    if sm.is_empty():
        return None
    r = sm.sort("path", "line").row(0, named=True)
    return float(sm["avg_busbw_gbps"].mean()), Evidence(r["path"], r["line"], (r["text"] or "").strip())  # type: ignore[arg-type]


def _compare_footer(a: Session, b: Session, *, sizes: bool) -> list[Difference]:
    """The footers' change; relevant only when no size was compared (`sizes`: the tables gave a comparison)."""
    fa, fb = _footer(a), _footer(b)
    if fa is None or fb is None or fa[0] == fb[0]:
        return []
    x, y = fa[0], fb[0]
    change = abs(y - x) / max(x, y) if max(x, y) > 0 else 0.0
    return [
        Difference(
            "results",
            "nccl-tests # Avg bus bandwidth",
            f"{x:.2f} GB/s",
            f"{y:.2f} GB/s" + (f" ({100 * (y - x) / x:+.0f}%)" if x > 0 else ""),
            "job",
            evidence_a=(fa[1],),
            evidence_b=(fb[1],),
            rank=RANK,
            relevant=change >= REL_CHANGE and not sizes,
        )
    ]


def compare_results(a: Session, b: Session) -> list[Difference]:
    """nccl-tests busbw per operation (when both runs have nccl-tests output), then trace timings:
    busbw per operation and size, and how far apart the ranks arrive."""
    out: list[Difference] = []
    na, nb = _best_nccltests(a), _best_nccltests(b)
    table: list[Difference] = _compare(na, nb, "nccl-tests") if (na.height or nb.height) else []
    out += table
    out += _compare_footer(a, b, sizes=any(d.a is not None and d.b is not None for d in table))
    ta, tb = _trace_busbw(a), _trace_busbw(b)
    if ta.height and tb.height:
        out += _compare(ta, tb, "trace")
    out += _compare_spread(_spread(a), _spread(b))
    return out
