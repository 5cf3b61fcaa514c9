"""Parse stage, traces read leniently: the JSON dialect profilers write, and events of an odd shape.

Python's `json.dumps` (and so many profiler exporters) writes `NaN`, `Infinity` and `-Infinity` as bare
tokens, which strict JSON decoders refuse: they become `null` here, strings left alone. One event of
another shape (a string `ts`, a bool `tid`, a numeric `name`, a number where an object should be) is
skipped and counted by the caller instead of rejecting the whole trace.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypeVar

import msgspec

# A JSON string (left as it is), or a non-finite number token outside strings.
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|-?Infinity|NaN')

T = TypeVar("T")


def without_nonfinite(data: bytes) -> tuple[bytes, int]:
    """`data` with each bare NaN / Infinity / -Infinity written as `null`, and how many there were."""
    n = 0

    def one(m: re.Match[bytes]) -> bytes:
        nonlocal n
        if m.group(0)[:1] == b'"':
            return m.group(0)
        n += 1
        return b"null"

    if b"NaN" not in data and b"Infinity" not in data:
        return data, 0
    return _TOKENS.sub(one, data), n


def events_one_by_one(raw: Sequence[msgspec.Raw], kind: type[T]) -> tuple[list[T], int]:
    """The events of `raw` that decode as `kind`, and how many did not."""
    decoder = msgspec.json.Decoder(kind)
    out: list[T] = []
    bad = 0
    for r in raw:
        try:
            out.append(decoder.decode(r))
        except msgspec.DecodeError:  # (ValidationError included)
            bad += 1
    return out, bad
