"""Parse stage, value checks shared by every reader: integer ranges of the declared schemas.

A value from outside (a log field, a trace's JSON, a dump) is cast only after these checks; one out
of range becomes null with a note, never an exception deeper in.
"""

from __future__ import annotations

import math

INT64_MAX = (1 << 63) - 1
RANK_MAX = (1 << 31) - 1  # torch keeps ranks and group sizes in int32
MAX_LINE = 64 << 10  # characters of one log line that are parsed; the rest is cut


def int_in(v: object, lo: int = -INT64_MAX, hi: int = INT64_MAX) -> int | None:
    """`v` if it is an int (not a bool) in [lo, hi], else None."""
    return v if type(v) is int and lo <= v <= hi else None


def as_int64(v: object) -> int | None:
    """An integer in Int64 range from an int, an integral finite float or a decimal string; else None."""
    if type(v) is float:
        return int(v) if math.isfinite(v) and v.is_integer() and abs(v) < 2.0**63 else None
    if type(v) is str:
        s = v.strip()
        if not (0 < len(s) <= 20 and (s.isascii() and s.lstrip("-").isdigit())):
            return None
        v = int(s)
    return int_in(v)
