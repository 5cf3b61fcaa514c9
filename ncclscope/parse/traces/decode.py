"""Parse stage, torch.profiler traces: decode one Chrome trace's events (msgspec, only needed fields).

Fast path, one pass over the bytes: the `traceEvents` array is found by its key and cut at `},{`
separators into ~1 MB chunks, each decoded in place (two separator bytes swapped for brackets) with
events tagged on `ph`: only complete events ("X") get fields; flows, instants and metadata (~40% of
a trace) are empty Structs. A cut inside a string or a nested value leaves an unterminated string or
unbalanced brackets, so it cannot decode and the next separator is tried. The array ends at the last
`}]` before which the events decode, and the rest of the file, with a random marker in the array's
place, must decode with that marker as its `traceEvents`. Any other failure, a `ph` outside the
Trace Event Format or a field of another type falls back to the general path (every event a raw
slice, then decoded untagged). `trace_events` turns the events into columns.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
import sys
import zlib
from collections.abc import Iterable
from itertools import islice
from typing import Any, Union

import msgspec

from ncclscope.errors import LimitError, TraceError
from ncclscope.parse.archive import open_input
from ncclscope.parse.decoding import text_encoding
from ncclscope.parse.traces.events import SKIP, DecodedTrace, collect
from ncclscope.parse.traces.header import header
from ncclscope.parse.traces.lenient import events_one_by_one, without_nonfinite
from ncclscope.parse.unpack import HEAD, compression, read_all
from ncclscope.tuning import DEFAULT, Tuning


class _Fields(msgspec.Struct, gc=False):
    cat: str = ""
    name: str = ""
    tid: int | str = 0
    ts: float = 0.0
    dur: float = 0.0
    args: msgspec.Raw = msgspec.Raw()  # decoded only once the event proves relevant


class _Event(_Fields, gc=False):
    """Any event (general path): the phase is a field."""

    ph: str = ""


class _Complete(_Fields, tag_field="ph", tag="X", gc=False):
    """A complete ("X") event (fast path): the only phase that holds kernels, launches, ops and steps."""


# Every other phase of the Trace Event Format, as an empty Struct (decoded without a single field);
# their class-level `cat` routes them to the discarded events.
_PHASES = (
    "B",
    "E",
    "i",
    "I",
    "C",
    "b",
    "n",
    "e",
    "s",
    "t",
    "f",
    "P",
    "O",
    "N",
    "D",
    "M",
    "V",
    "v",
    "R",
    "c",
    "(",
    ")",
)
_Skipped = tuple(
    msgspec.defstruct(f"_Phase{i}", [], tag_field="ph", tag=p, gc=False, namespace={"cat": SKIP})
    for i, p in enumerate(_PHASES)
)
_Tagged = Union[(_Complete, *_Skipped)]  # type: ignore[valid-type]  # built at run time


class _Trace(msgspec.Struct):
    # General path: raw slices of the input bytes, decoded into `_Event`s chunk by chunk. The header
    # values are taken as they come and checked by `traces.header` (a wrong type is a note, not an error).
    traceEvents: list[msgspec.Raw] | None = None
    distributedInfo: Any = None
    deviceProperties: Any = None
    baseTimeNanoseconds: Any = None
    host_name: Any = None


_DECODER = msgspec.json.Decoder(_Trace | list[msgspec.Raw])
_EVENTS = msgspec.json.Decoder(list[_Event])
_TAGGED = msgspec.json.Decoder(list[_Tagged])
_CHUNK = 16384  # general path: events decoded at once (a few MB of Structs)

_KEY = re.compile(rb'"traceEvents"[ \t\r\n]*:[ \t\r\n]*\[')
_CUT = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")  # between two objects; top level only if both halves decode
# Spliced in place of the event array to decode the rest of the file; random, so no trace holds it.
_MARK = b'"ncclscope:' + os.urandom(8).hex().encode() + b'"'
_END = re.compile(rb"\}[ \t\r\n]*\]")  # the last event and the array's closing bracket, or a nested `}]`
_TRIES = 4  # candidate cuts (or ends) tried, each a longer chunk, before giving up on the fast path


Buffer = bytes | bytearray | mmap.mmap


class Scratch:
    """Where each file's bytes live while it is decoded. A plain file is mapped copy-on-write: no copy
    out of the page cache, which maps its pages 16 at a time (read into fresh memory, a 54 MB trace
    page-faults 13k pages in, ~0.05 s of system time); the fast path's byte swaps copy one page each.
    A compressed file (gzip, zstd) is decompressed within the caps of `Tuning` (`parse.unpack`).
    (A file truncated by another process while mapped would fault; traces are finished files, and one
    still being written only grows.)"""

    def __init__(self) -> None:
        self._map: mmap.mmap | None = None

    def read(self, path: str, tuning: Tuning = DEFAULT) -> tuple[Buffer, int, list[str]]:
        """(buffer, size, notes): the file's bytes (decompressed) are `buffer[:size]`."""
        self.close()
        try:
            with open_input(path) as fh:
                head = fh.read(HEAD)
                plain = compression(head) is None and text_encoding(head) is None  # (else: a BOM, UTF-16)
                if plain and os.fstat(fh.fileno()).st_size > len(head):
                    with contextlib.suppress(OSError, ValueError):  # not mappable (a pipe): read it
                        self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
                        return self._map, len(self._map), []
                fh.seek(0)
                data, notes = read_all(path, fh, tuning)
        except OSError as e:
            raise TraceError(f"{path}: cannot read trace ({e.strerror or e})") from None
        except LimitError as e:
            raise TraceError(str(e)) from None
        except (EOFError, zlib.error) as e:
            raise TraceError(f"{path}: broken or truncated compressed data ({e})") from None
        return data, len(data), notes

    def close(self) -> None:
        """Unmap the last file (at once, or when the last decoded Raw pointing into it goes)."""
        if self._map is not None:
            with contextlib.suppress(BufferError):
                self._map.close()
            self._map = None


def decode(path: str, scratch: Scratch | None = None, tuning: Tuning = DEFAULT) -> DecodedTrace:
    """Decode one trace file; any file that is not a Chrome trace raises a one-line TraceError.

    Invalid UTF-8 in a string is decoded again with the bad bytes replaced (U+FFFD), with a note;
    nesting deeper than the decoder's recursion allows is a TraceError.
    """
    data, size, notes = (scratch or Scratch()).read(path, tuning)
    try:
        try:
            out = _decode_fast(path, data, size, tuning) or _decode_general(path, data, size, tuning)
        except UnicodeDecodeError:
            fixed = bytes(memoryview(data)[:size]).decode("utf-8", "replace").encode()
            out = _decode_fast(path, fixed, len(fixed), tuning) or _decode_general(
                path, fixed, len(fixed), tuning
            )
            notes.append(f"{path}: invalid UTF-8 in strings, replaced by U+FFFD")
        except TraceError:
            # JSON may escape a lone UTF-16 surrogate (`\ud800`, valid to Python's json); msgspec refuses it
            if data.find(b"\\ud", 0, size) < 0 and data.find(b"\\uD", 0, size) < 0:
                raise
            fixed, lone = _without_lone_surrogates(bytes(memoryview(data)[:size]))
            if not lone:
                raise
            out = _decode_fast(path, fixed, len(fixed), tuning) or _decode_general(
                path, fixed, len(fixed), tuning
            )
            notes.append(f"{path}: {lone} lone UTF-16 surrogate escape(s) in strings, replaced by U+FFFD")
    except RecursionError:
        raise TraceError(
            f"{path}: JSON nested deeper than the decoder allows (about "
            f"{sys.getrecursionlimit()} levels): not a torch.profiler trace"
        ) from None
    out.notes = notes + out.notes
    return out


# An escaped backslash, a surrogate pair, or a lone surrogate escape (in that order of preference).
_SURROGATE = re.compile(
    rb"(\\\\)|(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)


def _without_lone_surrogates(data: bytes) -> tuple[bytes, int]:
    """`data` with each lone surrogate escape written as `\\ufffd`, and how many there were."""
    lone = 0

    def one(m: re.Match[bytes]) -> bytes:
        nonlocal lone
        if m.group(1) or m.group(2):
            return m.group(0)
        lone += 1
        return b"\\ufffd"

    return _SURROGATE.sub(one, data), lone


def _decoded(path: str, top: _Trace, n_events: int, tuning: Tuning) -> DecodedTrace:
    h = header(
        path,
        top.distributedInfo,
        top.deviceProperties,
        top.baseTimeNanoseconds,
        top.host_name,
        tuning.max_json_depth,
    )
    return DecodedTrace(
        path=path,
        distributed=h.distributed,
        devices=h.devices,
        base_ns=h.base_ns,
        host=h.host,
        n_events=n_events,
        notes=h.notes,
    )


def _decode_fast(path: str, data: Buffer, size: int, tuning: Tuning) -> DecodedTrace | None:
    """The event array cut at top-level separators, each chunk decoded tagged; None to fall back."""
    key = _KEY.search(data, 0, size)
    if key is None:
        return None
    out, a, stop = _decoded(path, _Trace(), 0, tuning), key.end(), size
    while (first := _CUT.search(data, a + tuning.trace_chunk_bytes, size)) is not None:
        if (cut := _upto(data, a, _CUT.finditer(data, first.start(), size), out)) is None:
            stop = first.end()  # no cut decodes: the array may end before the first (keys after it)
            break
        a = cut.end() - 1
        _release(data, a - 1)
    # The array's end: the last `}]` before which the rest decodes (Kineto writes logs, names after it).
    last = _upto(data, a, reversed(list(_END.finditer(data, a, stop))), out)
    top = _header(data, key.end(), last.end() - 1, size) if last is not None else None
    if top is None or not out.n_events:
        return None
    head = _decoded(path, top, out.n_events, tuning)
    out.distributed, out.devices, out.base_ns, out.host = (
        head.distributed,
        head.devices,
        head.base_ns,
        head.host,
    )
    out.notes = head.notes
    return out


def _release(data: Buffer, end: int) -> None:
    """Give back the mapped pages before `end` (decoded): the mapping stays, they fault in again from
    the file if the general path needs them. Keeps a 54 MB file's pages out of the peak RSS."""
    if isinstance(data, mmap.mmap) and _DONTNEED is not None and end >= mmap.PAGESIZE:
        data.madvise(_DONTNEED, 0, end - end % mmap.PAGESIZE)


_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)


def _upto(data: Buffer, a: int, seps: Iterable[re.Match[bytes]], out: DecodedTrace) -> re.Match[bytes] | None:
    """Collect the events from `a` up to the first of `seps` before which they decode (None: none of the first few).

    A separator inside a string or a nested value cannot decode (unterminated string, unbalanced
    brackets), nor can one past the array's end (text after the closing bracket).
    """
    for m in islice(seps, _TRIES):
        try:
            _collect_chunk(data, a, m.start() + 1, out)
            return m
        except (
            msgspec.DecodeError
        ):  # ValidationError included (an odd phase or field type): nothing collected
            continue
    return None


def _collect_chunk(data: Buffer, a: int, b: int, out: DecodedTrace) -> None:
    """Decode the events in data[a:b] (the bytes at a-1 and b are separators or the array's brackets)."""
    if not isinstance(data, bytes):  # in place: `[` and `]` over the separators, then put back
        before, after = data[a - 1], data[b]
        data[a - 1], data[b] = 0x5B, 0x5D
        try:
            events = _TAGGED.decode(memoryview(data)[a - 1 : b + 1])
        finally:
            data[a - 1], data[b] = before, after
    else:
        events = _TAGGED.decode(b"".join((b"[", memoryview(data)[a:b], b"]")))
    out.n_events += len(events)
    collect(events, out)


def _header(data: Buffer, first: int, end: int, size: int) -> _Trace | None:
    """The file decoded with a marker in place of data[first-1:end+1], if the marker is its `traceEvents`."""
    view = memoryview(data)
    try:
        top = _DECODER.decode(b"".join((view[: first - 1], b"[", _MARK, b"]", view[end + 1 : size])))
    except msgspec.DecodeError:
        return None
    events = top.traceEvents if isinstance(top, _Trace) else None
    return top if events is not None and len(events) == 1 and bytes(events[0]) == _MARK else None


def _decode_general(path: str, data: Buffer, size: int, tuning: Tuning) -> DecodedTrace:
    """General path: every event a raw slice, joined and decoded `_CHUNK` at a time as untagged events."""
    notes: list[str] = []
    try:
        top = _DECODER.decode(memoryview(data)[:size])
    except msgspec.ValidationError as e:
        raise TraceError(f"{path}: not a torch.profiler Chrome trace ({e})") from None
    except msgspec.DecodeError as e:
        # The JSON dialect profilers write: NaN and Infinity as bare tokens (Python's json.dumps does)
        fixed, n = without_nonfinite(bytes(memoryview(data)[:size]))
        try:
            top = _DECODER.decode(fixed) if n else None
        except msgspec.DecodeError:
            top = None
        if top is None:
            raise TraceError(f"{path}: not valid JSON ({e})") from None
        notes.append(f"{path}: {n} NaN/Infinity value(s) read as null")
    if isinstance(top, list):
        top = _Trace(traceEvents=top)
    raw = top.traceEvents
    if raw is None:
        raise TraceError(f"{path}: JSON without `traceEvents`: not a torch.profiler Chrome trace")
    if not raw:
        raise TraceError(f"{path}: the trace holds no events")
    out = _decoded(path, top, len(raw), tuning)
    odd = 0
    for i in range(0, len(raw), _CHUNK):
        part = raw[i : i + _CHUNK]
        try:
            events = _EVENTS.decode(b"[" + b",".join(part) + b"]")
        except msgspec.ValidationError:  # an event of an odd shape: the others of the chunk one by one
            events, bad = events_one_by_one(part, _Event)
            odd += bad
        collect([e for e in events if e.ph == "X"], out)
    if odd == len(raw):
        raise TraceError(
            f"{path}: not a torch.profiler Chrome trace (no event has the Trace Event Format's shape)"
        )
    if odd:
        notes.append(
            f"{path}: skipped {odd} event(s) of an odd shape (a non-object event, a string ts/dur, a bool "
            "tid, a numeric name); read the other events"
        )
    out.notes = notes + out.notes
    return out
