"""Hang stage, verdict: every stuck collective the evidence shows, with class and culprits.

Sources, most specific first: the desync report, Flight Recorder dumps, the Flight Recorder analyzer's
output (fr_trace), PyTorch watchdog/status lines, the NCCL RAS report, NCCL COLL opCounts. `build_hang_view` is pure: frames in, view out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import polars as pl

from ncclscope.align.facts_inputs import inputs_of
from ncclscope.frames import LogFrames
from ncclscope.hang import app as A
from ncclscope.hang import exits as X
from ncclscope.hang import progress as H
from ncclscope.hang.classify import Ctx, HangVerdict, classify_group, ev
from ncclscope.hang.frtrace import frtrace_verdicts
from ncclscope.hang.ras_report import globalize, merge_ras, ras_report_verdicts
from ncclscope.hang.sources import coll_verdicts, desync_verdicts, ras_verdicts
from ncclscope.parse.flight.read import FlightFrames
from ncclscope.parse.ncclreports.ras_model import RasReport
from ncclscope.records import Evidence

# Warnings that point at the network layer under a stuck collective. Not `proxy`: the proxy thread only
# relays what failed under it or that its local rank went away (`Failed to execute operation Close`,
# `Could not receive type from localRank` during an abort); a real network fault shows its own line.
NET_FAMILIES = ["socket", "ib_completion", "ib_async", "bootstrap", "net", "connection"]
_WAITED = [
    "watchdog_timeout",
    "pg_status",
    "taking_down",
    "dump_signal",
    "dump_observed",
    "terminate",
    "gloo_timeout",
    "gloo_peer_lost",
]
_TIMEOUTS = ["watchdog_timeout", "gloo_timeout"]


@dataclass(frozen=True)
class HangView:
    """The hang stage's output: verdicts plus the per-rank tables they were drawn from.

    Built once per analysis (`build_hang_view`); the rules, the reports and the notebook read it.
    """

    verdicts: tuple[HangVerdict, ...] = ()
    progress: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=H.PROGRESS))
    coll: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=H.COLL_PROGRESS))
    timeouts: pl.DataFrame | None = None  # watchdog_timeout rows, wrapped lines joined
    ends: pl.DataFrame | None = None  # per (file, rank): last line, crashed, ends mid-line
    facts: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=H.RANK_FACTS))  # per (comm, rank)
    exited: tuple[tuple[int, Evidence], ...] = ()  # ranks whose log ends with a crash (not a consequence)
    causes: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema=A.CAUSES)
    )  # per rank: its fatal exception
    echoes: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema=A.ECHOES)
    )  # the others' reactions to it
    exits: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema=X.EXITS)
    )  # torchrun's per-rank failure records

    @property
    def mismatches(self) -> tuple[HangVerdict, ...]:
        return tuple(v for v in self.verdicts if v.klass == "c")


def build_hang_view(
    logs: LogFrames, flight: FlightFrames | None = None, ras: Sequence[RasReport] = ()
) -> HangView:
    """Every stuck collective and dead rank the evidence shows (pure: frames in, view out). `ras`: NCCL
    RAS reports read as files (`parse.ncclreports`); their verdicts replace the log grammar's reading of
    the same communicator."""
    return _view(logs, flight if flight is not None else FlightFrames(), ras)


def _view(logs: LogFrames, flight: FlightFrames, ras: Sequence[RasReport] = ()) -> HangView:
    franks = X.file_ranks(logs)
    torch = X.with_file_rank(H.torch_rows(logs), franks)
    progress = pl.concat([H.torch_progress(logs), H.flight_progress(flight)], how="vertical_relaxed")
    ends = X.rank_ends(logs, franks)
    exits = X.launcher_exits(torch)
    failed = set(exits.filter(pl.col("exit_code").fill_null(0) != 0)["rank"].drop_nulls().to_list())
    causes = A.app_causes(logs, franks, ends, failed)
    ctx = _context(logs, torch, progress, ends, flight, causes)
    verdicts: list[HangVerdict] = desync_verdicts(torch) + frtrace_verdicts(torch)
    for (key, src), rows in progress.group_by("group", "source", maintain_order=True):
        verdicts.append(classify_group(str(key), str(src), rows, ctx))
    gloo = X.gloo_facts(torch)
    if not verdicts:
        known = set(franks["frank"].to_list()) | set(exits["rank"].drop_nulls().to_list()) | ctx.waiters
        v = X.gloo_verdict(ctx, gloo, known)
        verdicts.extend([v] if v is not None else [])
    verdicts.extend(ras_verdicts(torch))
    verdicts = merge_ras(verdicts, globalize(ras_report_verdicts(ras), logs.inits))
    hang_seen = bool(verdicts) or bool(ctx.died) or _timeout_anywhere(torch)
    coll = H.coll_progress(logs)
    comm_pg = {c: str(pg) for pg, c, _n in pg_comms(logs, torch).iter_rows() if c}
    if "0" not in comm_pg.values():
        world = _default_pg_comm(logs, ctx.sizes.get("0"))
        comm_pg.update({world: "0"} if world is not None else {})
    verdicts = _merge_nccl(verdicts, coll_verdicts(coll, H.coll_mismatches(logs), hang_seen), comm_pg)
    verdicts = [_with_last_activity(v, ends) for v in _dedupe(verdicts)]
    return HangView(
        verdicts=tuple(verdicts),
        progress=progress,
        coll=coll,
        ends=ends,
        facts=H.rank_facts(logs, coll),
        timeouts=torch.filter(pl.col("kind").is_in(_TIMEOUTS)),
        exited=tuple(sorted(ctx.died.items())),
        causes=causes,
        echoes=A.echo_lines(torch, causes, set(ctx.died)),
        exits=exits,
    )


def _timeout_anywhere(torch: pl.DataFrame) -> bool:
    return bool(torch.filter(pl.col("kind").is_in(_WAITED)).height)


def _context(
    logs: LogFrames,
    torch: pl.DataFrame,
    progress: pl.DataFrame,
    ends: pl.DataFrame,
    flight: FlightFrames,
    causes: pl.DataFrame,
) -> Ctx:
    w = logs.warnings.filter(pl.col("family").is_in(NET_FAMILIES) & ~pl.col("benign").fill_null(False))
    remote = pl.concat(
        [
            torch.filter(
                (pl.col("kind") == "backend_error")
                & pl.col("detail").str.contains(
                    "(?i)remote process exited|ncclRemoteError|unhandled cuda error|ncclUnhandledCudaError"
                )
            ).select("path", "line", "text"),
            _last_errors(logs, torch),
        ],
        how="vertical_relaxed",
    ).sort("path", "line")
    echoed = set(
        causes.filter(pl.col("echo"))["rank"].to_list()
    )  # its fatal exception only says a peer went away
    waited = set(torch.filter(pl.col("kind").is_in(_WAITED))["grank"].drop_nulls().to_list()) | echoed
    # A rank's own fatal exception first (it names the cause), then a crash-like last line.
    died = {
        int(r["rank"]): ev(r["path"], r["line"], r["text"])
        for r in causes.filter(~pl.col("echo")).iter_rows(named=True)
    }
    died.update(
        {
            int(r["rank"]): ev(r["path"], r["crash_line"], r["crash_text"])
            for r in ends.filter(pl.col("crashed") & pl.col("rank").is_not_null()).iter_rows(named=True)
            if r["rank"] not in waited and r["rank"] not in died
        }
    )  # a crash after its own timeout is a consequence
    waiters = X.waiting_ranks(torch) | echoed
    logged = set(ends["rank"].drop_nulls().to_list())
    died.update(
        {r: e for r, e in X.died_ranks(X.launcher_exits(torch), waiters, logged).items() if r not in died}
    )
    mid = {
        int(r["rank"]): ev(r["path"], r["last_line"], r["last_text"])
        for r in ends.filter(pl.col("mid_line") & pl.col("rank").is_not_null()).iter_rows(named=True)
    }
    detectors = set(progress.filter(pl.col("detector"))["rank"].drop_nulls().to_list())
    detectors |= set(progress["named_detector"].drop_nulls().to_list())
    has_flight = not flight.entries.is_empty()
    hosts = [
        h for h in pl.concat([w["host"], w["peer"]]).drop_nulls().unique(maintain_order=True).to_list() if h
    ]
    return Ctx(
        net_warnings=[ev(r["path"], r["line"], r["text"]) for r in w.head(6).iter_rows(named=True)],
        net_hosts=tuple(hosts[:8]),
        died=died,
        remote_exit=[ev(r["path"], r["line"], r["text"]) for r in remote.head(3).iter_rows(named=True)],
        detectors=detectors,
        sizes=_group_sizes(logs, torch, flight),
        labels={**_flight_labels(flight), **_labels(logs, torch)},
        mid_line=mid,
        flight_ops=H.flight_ops(flight),
        have_flight=has_flight,
        untracked=(untracked := H.untracked_groups(flight)),
        newest=H.newest_groups(flight, untracked),
        waiters=waiters,
        size_mismatch=X.size_mismatches(X.gloo_facts(torch)),
        excerpt=not has_flight and _all_excerpts(logs),
    )


def _all_excerpts(logs: LogFrames) -> bool:
    """Every log input is an excerpt (`align.facts_inputs.inputs_of`: neither start nor end in it)."""
    inputs = inputs_of(logs)
    return bool(inputs) and all(i.whole is False for i in inputs)


def pg_comms(logs: LogFrames, torch: pl.DataFrame) -> pl.DataFrame:
    """(pg_id, comm_id, nranks): `ProcessGroupNCCL created ncclComm_ 0x…` joined with the NCCL Init line
    printing the same pointer in the same file (torch lines carry no host:pid prefix)."""
    created = torch.filter((pl.col("kind") == "created_comm") & pl.col("pg_id").is_not_null())
    ini = (
        logs.inits.filter(pl.col("comm_ptr").is_not_null())
        .group_by("path", "comm_ptr")
        .agg(pl.col("comm_id").drop_nulls().first(), pl.col("nranks").max())
    )
    return (
        created.select("path", "comm_ptr", "pg_id")
        .join(ini, on=["path", "comm_ptr"], how="inner")
        .group_by("pg_id")
        .agg(pl.col("comm_id").drop_nulls().first(), pl.col("nranks").max())
    )


def _last_errors(logs: LogFrames, torch: pl.DataFrame) -> pl.DataFrame:
    """`Last error:` lines of DistBackendError texts, with the NCCL WARN text that torch prints on
    the next line (it has no NCCL prefix, so the reader keeps it as an unknown or WARN-family row)."""
    le = torch.filter(pl.col("kind") == "last_error").select("path", "line", "text", "detail")
    if le.is_empty():
        return pl.DataFrame(schema={"path": pl.Utf8, "line": pl.Int64, "text": pl.Utf8})
    nxt = pl.concat(
        [logs.unknown.select("path", "line", "text"), logs.warnings.select("path", "line", "text")],
        how="vertical_relaxed",
    ).with_columns((pl.col("line") - 1).alias("line"))
    # One chunk: Polars 2.1 panics (`i < self.len()`) filtering then formatting a two-chunk join output here
    # (4,096 `Last error:` lines, bench/bench_memory.py `kept`).
    le = le.join(nxt.rename({"text": "_next"}), on=["path", "line"], how="left").rechunk()
    body = pl.coalesce(pl.col("detail"), pl.col("_next").str.strip_chars())
    return le.filter(body.is_not_null()).select(
        "path", "line", pl.format("Last error: {}", body).alias("text")
    )


def _default_pg_comm(logs: LogFrames, size: int | None) -> str | None:
    """The default process group's NCCL communicator when no torch line names it (torch 2.11 prints no
    `created ncclComm_` line, and NCCL_DEBUG_FILE puts NCCL's lines in files of their own): the one
    commId whose Init lines say nranks == the default group's size. None when several could be it."""
    if size is None:
        return None
    ids = logs.inits.filter((pl.col("nranks") == size) & pl.col("comm_id").is_not_null())["comm_id"].unique()
    return str(ids[0]) if ids.len() == 1 else None


def _group_sizes(logs: LogFrames, torch: pl.DataFrame, flight: FlightFrames) -> dict[str, int]:
    """Group size when something printed it: FR pg_config, or nranks of the NCCL communicator a PG
    created; the default PG (0) falls back to the largest nranks any Init line printed."""
    sizes: dict[str, int] = {}
    groups = flight.groups
    if not groups.is_empty():
        for r in groups.group_by("pg_name").agg(pl.col("size").max()).iter_rows(named=True):
            if r["size"]:
                sizes[str(r["pg_name"])] = int(r["size"])
        names = flight.entries["pg_name"].unique().to_list()
        if "" in sizes and len(names) == 1:  # unnamed pg_config entry (gloo): the only group in the entries
            sizes.setdefault(str(names[0]), sizes[""])
    for pg, _cid, n in pg_comms(logs, torch).iter_rows():
        if n:
            sizes.setdefault(str(pg), int(n))
    world = logs.inits["nranks"].max()
    if isinstance(world, int) and "0" not in sizes:
        sizes["0"] = world
    return sizes


def _labels(logs: LogFrames, torch: pl.DataFrame) -> dict[str, str]:
    """`PG 0 (default_pg), commId 0x…` for each process-group key."""
    named = (
        torch.filter(pl.col("pg_id").is_not_null())
        .group_by("pg_id")
        .agg(pl.col("pg_desc").drop_nulls().first(), pl.col("pg_name").drop_nulls().first())
    )
    cid = {pg: c for pg, c, _n in pg_comms(logs, torch).iter_rows() if c}
    out = {"_logs": "1" if logs.streams.height or logs.torch.height else ""}
    for pg, desc, _name in named.iter_rows():
        out[str(pg)] = (
            f"PG {pg}" + (f" ({desc})" if desc else "") + (f", commId {cid[pg]}" if pg in cid else "")
        )
    out["?"] = "an unnamed process group (WorkNCCL lines only)"
    return out


def _flight_labels(flight: FlightFrames) -> dict[str, str]:
    e = flight.entries
    if e.is_empty():
        return {}
    g = e.group_by("pg_name").agg(pl.col("pg_desc").drop_nulls().first())
    return {str(n): f"PG {n}" + (f" ({d})" if d and d != "undefined" else "") for n, d in g.iter_rows()}


def _merge_nccl(vs: list[HangVerdict], nccl: list[HangVerdict], comm_pg: dict[str, str]) -> list[HangVerdict]:
    """Fold a COLL-line verdict into the PyTorch verdict of the process group that created its
    communicator: its evidence always, its class and culprits when the torch lines could not tell."""
    out = list(vs)
    for n in nccl:
        i = next(
            (i for i, v in enumerate(out) if v.source in ("torch", "flight") and v.key == comm_pg.get(n.key)),
            None,
        )
        if i is None:
            out.append(n)
            continue
        v = out[i]
        v = replace(v, evidence=v.evidence + n.evidence[:4])
        if v.klass in ("undetermined", "b") and n.klass in ("a", "c") and n.culprits:
            v = replace(
                v,
                klass=n.klass,
                culprits=n.culprits,
                confidence="medium",
                reason=f"NCCL COLL lines: {n.reason}",
            )
        out[i] = v
    return out


def _with_last_activity(v: HangVerdict, ends: pl.DataFrame) -> HangVerdict:
    """Issue 3 (a)/(d): name the culprits *and their last activity* — the last line each one wrote."""
    if v.klass not in ("a", "d") or not v.culprits or ends.is_empty():
        return v
    last = (
        ends.filter(pl.col("rank").is_in(list(v.culprits[:4])))
        .sort("rank", "last_line")
        .group_by("rank", maintain_order=True)
        .last()
    )
    extra = tuple(ev(r["path"], r["last_line"], r["last_text"]) for r in last.iter_rows(named=True))
    return replace(v, evidence=v.evidence + tuple(e for e in extra if e not in v.evidence))


def _dedupe(vs: list[HangVerdict]) -> list[HangVerdict]:
    # The desync report is the authority for its group; Flight Recorder beats log lines for the same
    # group and sequence; COLL-line verdicts stand on their own (they key by commId).
    # The fr_trace analyzer's record is read from the same dumps: the dumps themselves (when given) win.
    order = {"desync": 0, "flight": 1, "fr_trace": 1.5, "torch": 2, "ras": 3, "nccl": 4}
    seen: set[tuple[str, int | None]] = set()
    out = []
    for v in sorted(vs, key=lambda v: order.get(v.source, 9)):
        k = (v.key, v.seq)
        if k in seen:
            continue
        seen.add(k)
        out.append(v)
    return out
