"""Findings stage, meaning in context: when the rest of the evidence changes what one WARN means.

A meaning family (findings.meanings) reads a line by its own words. A few lines mean something else
when the job's other lines are known: `ncclSocketInit: connecting to address with family 59936 is
neither AF_INET nor AF_INET6` is an incompatible peer in general, but with NCCL_SOCKET_IFNAME (or the
bootstrap interface setting) set and no `Bootstrap : Using` / `NET/Socket : Using` line naming an
interface, the address was never filled in: the interface setting matched no interface
(NVIDIA/nccl#1837, 2.27.7: NCCL found no interface, went on, and connected to an uninitialised
address). `Attempt to use communicator before the previous operation returned ncclSuccess` is a usage
error from NCCL 2.26 (printed only while a non-blocking operation is still in progress), but from 2.14 to
2.25 ncclCommEnsureReady printed it for any error the communicator already held: after an earlier WARN of
the same process it is that failure's echo. `Could not find a path for pattern %d, falling back to simple
order` (src/graph/search.cc ncclTopoCompute) means the ring/tree search found no graph within the path
types allowed and NCCL runs one channel in rank order: with a setting that forbids the direct paths
between GPUs (P2P or SHM off, a P2P level) that fallback is what the setting asks for (information), not a
topology fault. Each case is data with the reason it holds; rules ask
`in_context` for the first that fits.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from ncclscope.findings.registry import Context

# Settings that choose the interface NCCL's bootstrap and socket transport use (src/misc/socket.cc,
# src/bootstrap.cc: NCCL_SOCKET_IFNAME; NCCL_OOB_NET_IFNAME for the out-of-band network, 2.23+).
IFACE_SETTINGS = ("NCCL_SOCKET_IFNAME", "NCCL_OOB_NET_IFNAME")
# Lines that show an interface was found (the NETWORK table kinds of `Bootstrap : Using` and
# `NET/Socket : Using`).
IFACE_FOUND_KINDS = ("bootstrap", "socket_iface")
# Linux address families run 0..45 (AF_MAX 46); a number outside them, or AF_UNSPEC (0), is an address
# structure nobody filled in. A real family (1 AF_UNIX from 2.29's `address  with family 1`) is a peer's.
AF_MAX = 46
_FAMILY = re.compile(r"with family (\d+)")


@dataclass(frozen=True)
class InContext:
    """A meaning the context gives one line: title words, why/try and cause class, with the lines
    (env settings) that show the context."""

    label: str
    why: str
    fix: str
    cause: str
    cite: pl.DataFrame
    severity: str | None = (
        None  # when the context changes how much the line matters (echo: warning; expected: info)
    )
    repeats: str | None = (
        None  # the earlier line this one reports again (metrics.repeats, read by the diagnosis)
    )

    def evidence(self) -> list[str]:
        """`path:line: text` of the context lines (kept beside the finding, not among its own lines, so
        the hosts and ranks a finding names stay those of the failing line)."""
        return [f"{p}:{n}: {t}" for p, n, t in self.cite.select("path", "line", "text").iter_rows()]


def _garbage_family(message: str) -> bool:
    m = _FAMILY.search(message)
    return m is not None and (int(m.group(1)) == 0 or int(m.group(1)) >= AF_MAX)


def _iface_unmatched(ctx: Context, message: str) -> InContext | None:
    if not _garbage_family(message):
        return None
    env = ctx.logs.env.filter(pl.col("name").is_in(IFACE_SETTINGS))
    found = ctx.logs.network.filter(pl.col("kind").is_in(IFACE_FOUND_KINDS) & pl.col("iface").is_not_null())
    if env.is_empty() or not found.is_empty():
        return None
    values = ", ".join(
        f"{n}={v}"
        for n, v in env.unique(["name", "value"], maintain_order=True).select("name", "value").iter_rows()
    )
    return InContext(
        label=f"The interface setting matched no interface ({values})",
        why=(
            f"{values} is set and no `Bootstrap : Using` / `NET/Socket : Using` line shows an interface it "
            "matched: NCCL found no interface by that name, went on with an address it never filled in, and "
            "tried to connect to it (an address family no system has). The peer is not at fault."
        ),
        fix=(
            "Check `ip addr` on the failing host: set the interface variable to a name (or prefix) that exists "
            "there with an address, or unset it to let NCCL choose; names differ between node types."
        ),
        cause="configuration",
        cite=env.unique(["host", "pid", "name"], keep="first", maintain_order=True).head(4),
    )


# NCCL releases whose ncclCommEnsureReady prints `Attempt to use communicator before …` for any error the
# communicator holds (`if (ret != ncclSuccess)`, src/init.cc v2.14.3-1..v2.25.1-1); from v2.26.2-1 it is
# printed only for ncclInProgress (`if (ret == ncclInProgress)`): a non-blocking operation not yet done.
ENSURE_READY_ANY_ERROR = ((2, 14), (2, 25))
_ENSURE_READY = "Attempt to use communicator before the previous operation"
_VERSION = re.compile(r"(\d+)\.(\d+)")


def _releases(ctx: Context) -> list[tuple[int, int]]:
    """(major, minor) of every NCCL version the evidence names (banners, PyTorch's error lines)."""
    texts = ctx.logs.versions.filter(pl.col("kind") == "nccl")["value"].to_list()
    if "nccl_version" in ctx.logs.torch.columns:
        texts += ctx.logs.torch["nccl_version"].drop_nulls().to_list()
    found = (_VERSION.match(str(t)) for t in texts)
    return [(int(m.group(1)), int(m.group(2))) for m in found if m is not None]


def _earlier_failure(ctx: Context, message: str) -> InContext | None:
    """The ensure-ready WARN after an earlier, different WARN of the same input (and process, where the
    lines name one), under a release that prints it for any stored error (or none named)."""
    if _ENSURE_READY not in message:
        return None
    lo, hi = ENSURE_READY_ANY_ERROR
    if any(not (lo <= v <= hi) for v in _releases(ctx)):
        return None
    w = ctx.logs.warnings.filter((pl.col("level") == "WARN") & ~pl.col("benign").fill_null(False))
    mine = w.filter(pl.col("message").fill_null("").str.contains(_ENSURE_READY, literal=True)).head(1)
    if mine.is_empty():
        return None
    at = mine.row(0, named=True)
    same = (pl.col("path") == at["path"]) & (pl.col("line") < at["line"])
    if at["pid"] is not None:
        same &= pl.col("pid").is_null() | (pl.col("pid") == at["pid"])
    before = w.filter(same & ~pl.col("message").fill_null("").str.contains(_ENSURE_READY, literal=True))
    if before.is_empty():
        return None
    first = str(before["message"][0])
    return InContext(
        label="The communicator's earlier failure, reported again",
        why=(
            "From NCCL 2.14 to 2.25 every call on a communicator that already holds an error prints this WARN "
            "and returns that error (ncclCommEnsureReady); it is not a usage error. The failure it repeats is "
            f"the earlier WARN of this process: {first}"
        ),
        fix="Diagnose the earlier WARN cited beside this one; this line only says the communicator was used again.",
        cause="peer-failure",
        cite=before.head(1),
        severity="warning",
        repeats=first,
    )


# Settings that take paths between a node's GPUs away from the graph search (src/graph/paths.cc: P2P and SHM
# allowed or not, how far apart P2P may reach), so its falling back to rank order is their effect.
PATH_LIMITS = ("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_SHM_DISABLE", "NCCL_P2P_NVL_DISABLE")
_SEARCH_FALLBACK = "falling back to simple order"


def _search_limited(ctx: Context, message: str) -> InContext | None:
    if _SEARCH_FALLBACK not in message:
        return None
    env = ctx.logs.env.filter(pl.col("name").is_in(PATH_LIMITS))
    if env.is_empty():
        return None
    values = ", ".join(
        f"{n}={v}"
        for n, v in env.unique(["name", "value"], maintain_order=True).select("name", "value").iter_rows()
    )
    return InContext(
        label=f"The graph search fell back to rank order under {values}",
        why=(
            f"{values} takes the direct paths between this node's GPUs away from NCCL's ring/tree search, "
            "which then found no graph within the allowed path types and runs one channel in rank order "
            "(bandwidth 0.1 GB/s in its model). The run works; it is slower because of the setting."
        ),
        fix=f"Nothing is broken. For bandwidth, unset {values} unless P2P is known to fail on this machine.",
        cause="configuration",
        cite=env.unique(["host", "pid", "name"], keep="first", maintain_order=True).head(4),
        severity="info",
    )


# (meaning family, check, reason): the first whose family is the line's and whose check answers wins.
CASES: tuple[tuple[str, Callable[[Context, str], InContext | None], str], ...] = (
    (
        "incompatible-peer",
        _iface_unmatched,
        (
            "a garbage address family with an interface setting that matched nothing is an unset address "
            "(NVIDIA/nccl#1837), not an incompatible peer"
        ),
    ),
    (
        "invalid-argument",
        _earlier_failure,
        (
            "NCCL 2.14-2.25 print `Attempt to use communicator before the previous operation returned "
            "ncclSuccess` for any error the communicator holds: after an earlier WARN it is that WARN's echo"
        ),
    ),
    (
        "topology-detect",
        _search_limited,
        "the graph search's fallback to rank order is the expected effect of a setting that forbids GPU paths",
    ),
)


def in_context(family_id: str, message: str, ctx: Context) -> InContext | None:
    """The meaning the job's other lines give a line of `family_id`, or None (its own meaning holds)."""
    for fid, check, _reason in CASES:
        if fid == family_id:
            found = check(ctx, message)
            if found is not None:
                return found
    return None
