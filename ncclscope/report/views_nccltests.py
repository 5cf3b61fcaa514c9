"""Report stage, nccl-tests section: each nccl-tests run of the inputs as a table of sizes and bus bandwidth.

`section(s)` builds the document's `nccltests` entry (pure data, typed as `NcclTests` in the document's
section list and read back typed by the layouts with `of(doc)`); `markdown`, `html` and `terminal` lay it
out. Every string in it comes from the inputs and is escaped by the renderer that shows it.
"""

from __future__ import annotations

from html import escape as html_escape
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

import msgspec
import polars as pl

from ncclscope.report.section import Section

if TYPE_CHECKING:
    from rich.console import Console

    from ncclscope.session import Session

MAX_ROWS = 40  # sizes per run shown (the largest ones when a sweep has more)


def section(s: Session) -> dict[str, Any]:
    """{"runs": [{path, run, op, peak/avg busbw, out-of-bounds, rows: [{size_bytes, busbw out/in, wrong}]}]}."""
    nt = s.nccltests
    if nt.results.is_empty():
        return {"runs": []}
    side = nt.results.pivot(
        on="placement",
        index=["path", "run", "op", "size_bytes", "line"],
        values=["busbw_gbps", "wrong", "time_us"],
        aggregate_function="first",
    )
    cols = {c: c for c in side.columns}
    wrong = pl.sum_horizontal([pl.col(c) for c in cols if c.startswith("wrong")])
    has_wrong = pl.any_horizontal([pl.col(c).is_not_null() for c in cols if c.startswith("wrong")])
    rows = side.select(
        "path",
        "run",
        "op",
        "size_bytes",
        pl.col("time_us_out") if "time_us_out" in cols else pl.lit(None, pl.Float64).alias("time_us_out"),
        *(
            pl.col(f"busbw_gbps_{p}")
            if f"busbw_gbps_{p}" in cols
            else pl.lit(None, pl.Float64).alias(f"busbw_gbps_{p}")
            for p in ("out", "in")
        ),
        wrong=pl.when(has_wrong).then(wrong),
    ).sort("path", "run", "size_bytes")
    summ = nt.summary.select("path", "run", "avg_busbw_gbps", "oob_values")
    runs = []
    for (path, run), g in rows.group_by("path", "run", maintain_order=True):
        sm = summ.filter((pl.col("path") == path) & (pl.col("run") == run))
        peak = g.select(pl.max_horizontal("busbw_gbps_out", "busbw_gbps_in").max()).item()
        runs.append(
            {
                "path": path,
                "run": run,
                "op": g["op"][0],
                "peak_busbw_gbps": peak,
                "avg_busbw_gbps": sm["avg_busbw_gbps"][0] if sm.height else None,
                "oob_values": sm["oob_values"][0] if sm.height else None,
                "rows": g.tail(MAX_ROWS).drop("path", "run", "op").to_dicts(),
                "sizes": g.height,
            }
        )
    return {"runs": runs}


class Row(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One message size of a run: time and bus bandwidth out of place and in place, wrong elements."""

    size_bytes: int | None
    time_us_out: float | None
    busbw_gbps_out: float | None
    busbw_gbps_in: float | None
    wrong: int | None


class Run(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One nccl-tests run (a `# nThread …` table of one file): its peak, average and largest sizes."""

    path: str
    run: int | None
    op: str | None
    peak_busbw_gbps: float | None
    avg_busbw_gbps: float | None
    oob_values: int | None
    rows: tuple[Row, ...]
    sizes: int


class NcclTests(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    runs: tuple[Run, ...]


def of(doc: dict[str, Any]) -> NcclTests:
    """The section's data, typed, from a (possibly redacted) document (no runs when it has none)."""
    return msgspec.convert(doc.get("nccltests") or {"runs": []}, NcclTests)


def _f(v: object) -> str:
    return "" if v is None else f"{v:g}" if isinstance(v, float) else str(v)


def _title(r: Run) -> str:
    bits = [r.op or "collective", f"peak busbw {_f(r.peak_busbw_gbps)} GB/s"]
    if r.avg_busbw_gbps is not None:
        bits.append(f"avg {_f(r.avg_busbw_gbps)} GB/s")
    if r.oob_values is not None:
        bits.append(f"out-of-bounds values {r.oob_values}")
    return f"{PurePath(r.path).name} (run {r.run}): " + ", ".join(bits)


_HEAD = ["size (B)", "time out (µs)", "busbw out (GB/s)", "busbw in (GB/s)", "#wrong"]


def _cells(row: Row) -> list[str]:
    return [
        f"{row.size_bytes:,}" if row.size_bytes is not None else "?",
        _f(row.time_us_out),
        _f(row.busbw_gbps_out),
        _f(row.busbw_gbps_in),
        _f(row.wrong),
    ]


def markdown(doc: dict[str, Any]) -> list[str]:
    from ncclscope.report.md_text import text

    runs = of(doc).runs
    out = ["## nccl-tests", ""] if runs else []
    for r in runs:
        out += [f"**{text(_title(r))}**", "", "| " + " | ".join(_HEAD) + " |", "|" + "---|" * len(_HEAD)]
        out += ["| " + " | ".join(text(c) for c in _cells(row)) + " |" for row in r.rows]
        out.append("")
    return out


def html(doc: dict[str, Any]) -> str:
    parts = []
    for r in of(doc).runs:
        head = "".join(f"<th>{html_escape(h)}</th>" for h in _HEAD)
        body = "".join(
            "<tr>" + "".join(f"<td>{html_escape(c)}</td>" for c in _cells(row)) + "</tr>" for row in r.rows
        )
        parts.append(f"<h3>{html_escape(_title(r))}</h3><table><tr>{head}</tr>{body}</table>")
    return "".join(parts)


TERMINAL_ROWS = 8  # the largest sizes of each run in the terminal (bandwidth-bound; the reports show more)


def terminal(doc: dict[str, Any], con: Console) -> None:
    from rich.markup import escape as rich_escape  # Rich: only the terminal renderer imports it
    from rich.table import Table

    for r in of(doc).runs:
        t = Table(title=rich_escape(_title(r)), header_style="bold")
        for h in _HEAD:
            t.add_column(h, justify="right")
        for row in r.rows[-TERMINAL_ROWS:]:
            t.add_row(*(rich_escape(c) for c in _cells(row)))
        con.print(t)


def _html(doc: dict[str, Any], _figures: dict[str, str]) -> str:
    return html(doc)


SECTION = Section(
    "nccltests",
    lambda s, _p: msgspec.convert(section(s), NcclTests),
    "nccl-tests runs: bus bandwidth per size",
    title="nccl-tests",
    menu="nccl-tests",
    markdown=markdown,
    html=_html,
    terminal=terminal,
    schema=NcclTests,
)
