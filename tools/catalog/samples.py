"""Realistic sample lines for catalog formats: one message per format, one prefix per release.

Shared by tools/catalog/expect_families.py and tests/parse/test_catalog.py. Values are what NCCL
prints in the wild: ranks and counts small ints, bus ids bare hex, pointers 0x…, strings an interface.
"""

from __future__ import annotations

import re

CONV = re.compile(
    r"%(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d+))?(?P<len>hh|h|ll|l|L|z|j|t|q)?"
    r"(?P<conv>[diouxXeEfgGcspn%])"
)
_VALUES = {
    "d": "3",
    "i": "3",
    "u": "3",
    "o": "3",
    "x": "1b000",
    "X": "1B000",
    "e": "1.5e+01",
    "E": "1.5E+01",
    "f": "12.500000",
    "g": "12.5",
    "G": "12.5",
    "c": "x",
    "s": "eth0",
    "p": "0x7f12ab34cd00",
    "n": "",
}


def fill(fmt: str) -> str:
    """The first line of `fmt` with every conversion replaced by a typical value."""
    first = fmt.split("\n", 1)[0] if not fmt.startswith("\n") else fmt.lstrip("\n").split("\n", 1)[0]

    def one(m: re.Match[str]) -> str:
        c = m["conv"]
        if c == "%":
            return "%"
        v = "0x1b000" if c in "xX" and "#" in m["flags"] else _VALUES[c]
        w = m["width"]
        if w and w != "*" and len(v) < int(w):
            v = (
                v.ljust(int(w))
                if "-" in m["flags"]
                else v.rjust(int(w), "0" if "0" in m["flags"] and c != "s" else " ")
            )
        return v

    return CONV.sub(one, first).rstrip()


def prefix(desc: dict[str, object], level: str) -> str:
    """The line prefix a release prints for `level` (from the catalog's per-release descriptor)."""
    host = "node-01:12345:12399"
    ts = "[2025-05-01 12:34:56] " if level in (desc.get("timestamp_levels_default") or []) else ""
    if level == "WARN":
        loc = "transport/net.cc:123 (ncclFunc) " if desc.get("warn_func") else "transport/net.cc:123 "
        return f"{ts}{host} [0] {loc}NCCL WARN "
    if level == "TRACE":
        return f"{ts}{host} [0] 12.345678 ncclFunc:123 NCCL TRACE "
    if level == "CALL":
        return f"{ts}{host} NCCL CALL "
    if level == "VERSION" and desc.get("version_level"):
        return ts
    return f"{ts}{host} [0] NCCL INFO "
