"""Findings stage, nccl-tests rules: wrong results, and bus bandwidth far below what the links carry.

They read the nccl-tests frames (`ctx.nccltests`, parse.nccltests) and, for the links, the NCCL INFO
lines printed in the same file as the table (channel transports, NIC speeds, GPU model).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import polars as pl

from ncclscope.align.facts_bw import ring_plans
from ncclscope.findings.busbw_bound import FIX, PLAN_SHARE, Shortfall, forced, judge, limiting_link
from ncclscope.findings.registry import Context, rule
from ncclscope.records import Evidence, Finding

WRONG_ROWS_CITED = 6
LARGE_BYTES = 64 * 2**20  # busbw is judged on messages this big or bigger (bandwidth-bound)
_PLACE = {"out": "out-of-place", "in": "in-place"}


def _ev(path: str, line: int, text: str) -> Evidence:
    return Evidence(path=path, line=line, text=text.strip())


def _hosts(ctx: Context, path: str, run: int) -> tuple[str, ...]:
    d = ctx.nccltests.devices.filter((pl.col("path") == path) & (pl.col("run") == run))
    return tuple(sorted({h for h in d["host"].drop_nulls().to_list() if h}))


def _label(path: str, run: int, runs: int) -> str:
    return Path(path).name + (f" (run {run})" if runs > 1 else "")


@rule("nccltests-wrong", "error", "nccl-tests found wrong results", group="errors")
def nccltests_wrong(ctx: Context) -> Iterable[Finding]:
    """Error when an nccl-tests run reports data errors: any `#wrong` count > 0 (out-of-place or in-place,
    any size), or `# Out of bounds values : N` with N > 0 (nccl-tests' own verdict, which also covers
    the `error` column of releases before 2.13). No threshold: one wrong element is wrong data. `N/A`
    (validation off, `-c 0`) is no evidence either way. Cites the out-of-bounds line and the first rows
    with wrong elements, smallest size first."""
    nt = ctx.nccltests
    bad = nt.results.filter(pl.col("wrong") > 0)
    oob = nt.summary.filter(pl.col("oob_values") > 0)
    keys = pl.concat([bad.select("path", "run"), oob.select("path", "run")]).unique().sort("path", "run")
    out = []
    for path, run in keys.iter_rows():
        rows = bad.filter((pl.col("path") == path) & (pl.col("run") == run)).sort("line")
        o = oob.filter((pl.col("path") == path) & (pl.col("run") == run))
        n_oob = o.select(pl.col("oob_values").max()).item() if o.height else None
        max_wrong = rows.select(pl.col("wrong").max()).item() if rows.height else None
        ev = [_ev(path, int(r["oob_line"]), r["oob_text"]) for r in o.iter_rows(named=True)]
        firsts = rows.unique("line", keep="first", maintain_order=True).head(WRONG_ROWS_CITED)
        ev += [_ev(path, int(r["line"]), r["text"]) for r in firsts.iter_rows(named=True)]
        sizes = rows["size_bytes"].drop_nulls().unique().sort().to_list()  # (a size beyond 64 bits: null)
        what = (
            f"{len(sizes)} message size(s) from {sizes[0]:,} B with wrong elements (up to {max_wrong or 0:,})"
            if sizes
            else "no per-size count (the table has no `#wrong` column)"
        )
        oob_txt = f"`Out of bounds values : {n_oob}`" if n_oob is not None else "no out-of-bounds line"
        out.append(
            Finding(
                id="nccltests-wrong",
                severity="error",
                title="nccl-tests found wrong results",
                why=(
                    f"{_label(path, run, nt.runs.filter(pl.col('path') == path).height)}: {oob_txt}; {what}. "
                    "nccl-tests checks every element of the result against the expected values; wrong data means "
                    "a GPU, link, NIC or switch feature (in-network reduction) corrupts it, or NCCL/plugin "
                    "versions disagree, and a training job on these nodes would silently learn from bad gradients."
                ),
                fix=(
                    "Bisect: rerun with `-c 1` on pairs of nodes / single GPUs; check `nvidia-smi -q -d ECC` and "
                    "`dmesg` for Xid errors; turn off in-network features (NCCL_COLLNET_ENABLE=0, SHARP/INC) and "
                    "try NCCL_ALGO=Ring NCCL_PROTO=Simple; make NCCL and plugin versions identical on every node."
                ),
                hosts=_hosts(ctx, path, run),
                evidence=tuple(ev),
                metrics={
                    "oob_values": n_oob,
                    "sizes_with_wrong": len(sizes),
                    "max_wrong": max_wrong,
                    "run": run,
                },
            )
        )
    return out


def _measured(ctx: Context) -> list[dict[str, object]]:
    """Per (path, run): the best busbw at >= LARGE_BYTES (either placement), else the footer's average
    when every size of the run is that large (`minBytes` >= LARGE_BYTES: the average is then over
    bandwidth-bound sizes only; with smaller ones it says nothing of the peak)."""
    nt = ctx.nccltests
    big = nt.results.filter((pl.col("size_bytes") >= LARGE_BYTES) & pl.col("busbw_gbps").is_not_null())
    best = big.sort("busbw_gbps", descending=True).unique(["path", "run"], keep="first")
    rows: list[dict[str, object]] = [{**r, "source": "row"} for r in best.to_dicts()]
    seen = {(r["path"], r["run"]) for r in rows}
    large = nt.runs.filter(pl.col("min_bytes") >= LARGE_BYTES).select("path", "run")
    foot = nt.summary.filter(pl.col("avg_busbw_gbps").is_not_null()).join(large, on=["path", "run"])
    for r in foot.to_dicts():
        if (r["path"], r["run"]) not in seen:
            rows.append({**r, "busbw_gbps": r["avg_busbw_gbps"], "source": "footer", "op": None})
    return sorted(rows, key=lambda r: (str(r["path"]), int(r["run"] or 0)))  # type: ignore[call-overload]


def _what(r: dict[str, object]) -> str:
    if r["source"] == "footer":
        return f"the footer's average bus bandwidth (every size >= {LARGE_BYTES >> 20} MiB) is {r['busbw_gbps']:g} GB/s"
    return (
        f"the best bus bandwidth at >= {LARGE_BYTES >> 20} MiB is {r['busbw_gbps']:g} GB/s ({r['op'] or 'collective'}, "
        f"{r['size_bytes']:,} B, {_PLACE[str(r['placement'])]})"
    )


def _why(label: str, r: dict[str, object], sf: Shortfall, clause: str) -> tuple[str, str]:
    """(title, why) naming the limiting link, NCCL's plan and the setting that forced it."""
    m = float(r["busbw_gbps"])  # type: ignore[arg-type]
    parts, link, plan = [f"{label}: {_what(r)}."], sf.link, sf.plan
    if link is not None:
        share = f" ({100 * m / link.bound_gbps:.0f}% of it)" if link.bound_gbps else ""
        parts.append(
            f"The slowest link its channels use is {link.name}: {link.basis}{share}"
            + (f" should give at least {link.floor_gbps:.2f} GB/s." if "floor" in sf.reasons else ".")
        )
    if plan is not None:
        below = f", {100 * m / plan.busbw:.0f}% of it reached" if plan.busbw else ""
        parts.append(f"NCCL planned its rings as {plan.describe()}{below}.")
    if "forced" in sf.reasons and link is not None and link.bound_gbps:
        parts.append(
            f"That plan is {100 * plan.busbw / link.bound_gbps:.0f}% of what one {link.name} link carries: "  # type: ignore[union-attr]
            f"{', '.join(sf.settings)} made NCCL plan for less than the hardware has."
        )
    if "forced" in sf.reasons:
        title = (
            f"nccl-tests bandwidth is capped by {sf.settings[0]}: NCCL planned far less than the links carry"
        )
    elif "floor" in sf.reasons and link is not None:
        title = f"nccl-tests busbw is far below what {link.name} carries"
    else:
        title = "nccl-tests busbw is far below NCCL's own plan for its links"
    if clause:
        parts.append(f"In this file {clause[2:]}.")
    return title, " ".join(parts)


@rule(
    "nccltests-low-busbw",
    "warning",
    "nccl-tests bus bandwidth is far below what the links carry",
    group="config",
)
def nccltests_low_busbw(ctx: Context) -> Iterable[Finding]:
    """Per nccl-tests run: the best busbw over messages >= 64 MiB (either placement; smaller ones are
    latency-bound), or the `# Avg bus bandwidth` footer when every size is that large (rows cut by
    interleaved lines), against two references computed from the NCCL lines of its file. (1) The slowest
    transport its channels use (NET/Socket < other NET < SHM < P2P): fires below 35% of one NIC port's
    line rate when NCCL printed the speed (`NET/IB: [0] mlx5_0:… speed=200000`; healthy runs reach
    70-95%), below 25% of the NVLink bandwidth of a known SXM GPU model for P2P on one host, else below a
    floor of ~40% of the slowest link of that kind in use: NET/Socket 0.05 GB/s (1 GbE), other NET 1.1 GB/s
    (25 Gb/s RoCE), SHM 1.0 GB/s, P2P 2.0 GB/s (PCIe Gen3 x8). (2) NCCL's own ring plan, nChannels × bw of
    the GRAPH `Pattern 4 …` line (its Ring/Simple model, no derating): fires below 50% of it. (3) A plan
    under 50% of the hardware link's line rate while a setting that can only lower bandwidth is set
    (NCCL_TOPO_FILE, NCCL_GRAPH_FILE, NCCL_P2P_LEVEL, NCCL_MAX_NCHANNELS, …): fires and names that setting
    as the cause, even when the run reaches its plan. busbw already has the collective's factor applied, so
    one bound serves every operation. Cites the measured row, speed, channel and Pattern lines and the
    settings with the coll channel count NCCL chose."""
    nt = ctx.nccltests
    plans = ring_plans(ctx.logs)
    out = []
    for r in _measured(ctx):
        path, run = str(r["path"]), int(r["run"] or 0)  # type: ignore[call-overload]
        link, plan = limiting_link(ctx, path), plans.get(path)
        clause, names, forced_ev = forced(ctx, path)
        sf = judge(float(r["busbw_gbps"]), link, plan, names)  # type: ignore[arg-type]
        if not sf.reasons:
            continue
        title, why = _why(_label(path, run, nt.runs.filter(pl.col("path") == path).height), r, sf, clause)
        ev = [_ev(path, int(r["line"]), str(r["text"] or ""))]  # type: ignore[call-overload]
        ev += list(link.evidence) if link is not None else []
        ev += [_ev(path, plan.line, plan.text)] if plan is not None else []
        out.append(
            Finding(
                id="nccltests-low-busbw",
                severity="warning",
                title=title,
                why=why,
                fix=(FIX["forced"] if "forced" in sf.reasons else FIX[link.kind if link else "plan"]),
                hosts=_hosts(ctx, path, run),
                evidence=(*ev, *forced_ev),
                metrics={
                    "busbw_gbps": r["busbw_gbps"],
                    "size_bytes": r.get("size_bytes"),
                    "measured_from": r["source"],
                    "link": link.name if link else None,
                    "floor_gbps": round(link.floor_gbps, 3) if link else None,
                    "bound_gbps": link.bound_gbps if link else None,
                    "plan_gbps": round(plan.busbw, 3) if plan else None,
                    "plan_channels": plan.nchannels if plan else None,
                    "plan_link": plan.link if plan else None,
                    "plan_share": PLAN_SHARE,
                    "forced_by": list(sf.settings) if "forced" in sf.reasons else [],
                    "run": run,
                },
            )
        )
    return out
