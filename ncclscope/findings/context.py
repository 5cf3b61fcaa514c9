"""Findings stage, meaning in context: when the rest of the evidence changes what one WARN means.

A meaning family (findings.meanings) reads a line by its own words. A few lines mean something else
when the job's other lines are known: `ncclSocketInit: connecting to address with family 59936 is
neither AF_INET nor AF_INET6` is an incompatible peer in general, but with NCCL_SOCKET_IFNAME (or the
bootstrap interface setting) set and no `Bootstrap : Using` / `NET/Socket : Using` line naming an
interface, the address was never filled in: the interface setting matched no interface
(NVIDIA/nccl#1837, 2.27.7: NCCL found no interface, went on, and connected to an uninitialised
address). Each case is data with the reason it holds; rules ask `in_context` for the first that fits.
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
)


def in_context(family_id: str, message: str, ctx: Context) -> InContext | None:
    """The meaning the job's other lines give a line of `family_id`, or None (its own meaning holds)."""
    for fid, check, _reason in CASES:
        if fid == family_id:
            found = check(ctx, message)
            if found is not None:
                return found
    return None
