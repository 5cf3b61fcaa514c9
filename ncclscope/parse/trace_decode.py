"""Parse stage, torch.profiler traces: decode one Chrome trace into plain columns.

msgspec decodes only the fields ncclscope needs (typed Structs; every other key is skipped in C).
A first pass splits the event array into raw slices, only to cut it into chunks of `_CHUNK` events;
each chunk is then decoded straight from the file's bytes with events tagged on `ph`, so only
complete events ("X") get fields and the other phases (flows, instants, metadata: ~40% of a trace)
are empty Structs; `args` stay raw until an event proves relevant. A chunk never outlives its turn,
and the file is read into one buffer reused for every file. A `ph` outside the Trace Event Format,
a field of another type, or a bad cut falls back to the general path (the raw slices, joined).
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Union

import msgspec

from ncclscope.errors import TraceError

Loose = int | float | str | list[Any] | None


class _Args(msgspec.Struct, gc=False):
    external_id: int | None = msgspec.field(name="External id", default=None)
    correlation: int | None = None
    coll: Loose = msgspec.field(name="Collective name", default=None)
    in_nelems: Loose = msgspec.field(name="In msg nelems", default=None)
    out_nelems: Loose = msgspec.field(name="Out msg nelems", default=None)
    group_size: Loose = msgspec.field(name="Group size", default=None)
    dtype: Loose = None
    pg_name: Loose = msgspec.field(name="Process Group Name", default=None)
    pg_desc: Loose = msgspec.field(name="Process Group Description", default=None)
    pg_ranks: Loose = msgspec.field(name="Process Group Ranks", default=None)
    seq: Loose = msgspec.field(name="Seq", default=None)
    comms_id: Loose = msgspec.field(name="Comms Id", default=None)
    # Shapes are on every cpu_op when record_shapes is on: keep them raw, decode only for nccl:* ops.
    input_dims: msgspec.Raw = msgspec.field(name="Input Dims", default=msgspec.Raw())
    input_type: msgspec.Raw = msgspec.field(name="Input type", default=msgspec.Raw())


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


# Every other phase of the Trace Event Format, as an empty Struct (decoded without a single field).
_PHASES = ("B", "E", "i", "I", "C", "b", "n", "e", "s", "t", "f", "P", "O", "N", "D", "M", "V", "v",
           "R", "c", "(", ")")
_Skipped = tuple(msgspec.defstruct(f"_Phase{i}", [], tag_field="ph", tag=p, gc=False) for i, p in enumerate(_PHASES))
_Tagged = Union[(_Complete, *_Skipped)]  # type: ignore[valid-type]  # built at run time


class _Trace(msgspec.Struct):
    # General path: raw slices of the input bytes, decoded into `_Event`s chunk by chunk.
    traceEvents: list[msgspec.Raw] | None = None
    distributedInfo: dict[str, Any] | None = None
    deviceProperties: list[dict[str, Any]] | None = None
    baseTimeNanoseconds: int | None = None
    host_name: str | None = None


_DECODER = msgspec.json.Decoder(_Trace | list[msgspec.Raw])
_EVENTS = msgspec.json.Decoder(list[_Event])
_TAGGED = msgspec.json.Decoder(list[_Tagged])
_CHUNK = 16384  # events decoded at once (a few MB of Structs)
_ARGS = msgspec.json.Decoder(_Args)
_NO_ARGS = _Args()


def _args(e: _Complete | _Event) -> _Args:
    if not e.args:
        return _NO_ARGS
    try:
        return _ARGS.decode(e.args)
    except msgspec.DecodeError:  # a relevant event whose args are not what any Kineto version wrote
        return _NO_ARGS


_COMM_FIELDS = ("coll", "in_nelems", "out_nelems", "group_size", "dtype", "pg_name", "pg_desc",
                "pg_ranks", "seq", "comms_id")
_OP_PREFIXES = ("nccl:", "gloo:", "c10d::")


@dataclass
class DecodedTrace:
    """One file's header facts plus column lists of the events that matter (times as in the file)."""

    path: str
    distributed: dict[str, Any]
    devices: list[dict[str, Any]]
    base_ns: int | None
    host: str | None
    n_events: int
    gpu: dict[str, list[Any]] = field(default_factory=dict)  # every GPU activity
    nccl: dict[str, list[Any]] = field(default_factory=dict)  # NCCL kernels with their args
    launches: dict[str, list[Any]] = field(default_factory=dict)  # cuda_runtime / cuda_driver launches
    ops: dict[str, list[Any]] = field(default_factory=dict)  # record_param_comms, nccl:*, gloo:*, c10d::*
    steps: dict[str, list[Any]] = field(default_factory=dict)  # ProfilerStep#N


class Scratch:
    """One read buffer for all files of a run: a 54 MB trace read into fresh memory page-faults ~13k
    pages in anew (~0.05 s of system time each file). Holds the largest file read so far."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def read(self, path: str) -> tuple[bytes | bytearray, int]:
        """(buffer, size): the file's bytes (gunzipped) are `buffer[:size]`."""
        try:
            with open(path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if len(self._buf) < size:  # a new one: the old may still be referenced by a decoded Raw
                    self._buf = bytearray(size)
                size = fh.readinto(memoryview(self._buf)[:size])
        except OSError as e:
            raise TraceError(f"{path}: cannot read trace ({e.strerror or e})") from None
        if self._buf[:2] != b"\x1f\x8b" or size < 2:
            return self._buf, size
        try:
            data = gzip.decompress(memoryview(self._buf)[:size])
        except (OSError, EOFError, zlib.error) as e:
            raise TraceError(f"{path}: broken or truncated gzip ({e})") from None
        return data, len(data)


def decode(path: str, scratch: Scratch | None = None) -> DecodedTrace:
    """Decode one trace file; any file that is not a Chrome trace raises a one-line TraceError."""
    data, size = (scratch or Scratch()).read(path)
    body = memoryview(data)[:size]
    try:
        top = _DECODER.decode(body)
    except msgspec.ValidationError as e:
        raise TraceError(f"{path}: not a torch.profiler Chrome trace ({e})") from None
    except msgspec.DecodeError as e:
        raise TraceError(f"{path}: not valid JSON ({e})") from None
    if isinstance(top, list):
        top = _Trace(traceEvents=top)
    if top.traceEvents is None:
        raise TraceError(f"{path}: JSON without `traceEvents`: not a torch.profiler Chrome trace")
    if not top.traceEvents:
        raise TraceError(f"{path}: the trace holds no events")
    out = DecodedTrace(path=path, distributed=top.distributedInfo or {}, devices=top.deviceProperties or [],
                       base_ns=top.baseTimeNanoseconds, host=top.host_name, n_events=len(top.traceEvents))
    spans = _spans(data, size, top.traceEvents)
    del top  # the slices' 16 bytes per event; the general path decodes them again if it must
    if spans is None or not _decode_tagged(data, spans, out):
        out.gpu = {}
        raw = _DECODER.decode(body)
        _decode_general(path, raw if isinstance(raw, list) else raw.traceEvents or [], out)
    return out


def _spans(data: bytes | bytearray, size: int, raw: list[msgspec.Raw]) -> list[tuple[int, int]] | None:
    """Byte ranges of `data` holding `_CHUNK` consecutive events each (the last one ends at the last event).

    A chunk starts at the first occurrence of its first event's bytes after the previous chunk's events;
    anything but the true boundary (a byte-identical earlier event, or a nested object) makes a chunk
    that is not a JSON array of events or a wrong event count, and the caller then takes the general path.
    """
    starts: list[int] = []
    pos = 0
    for i in range(0, len(raw), _CHUNK):
        start = data.find(bytes(raw[i]), pos, size)
        if start < 0:
            return None
        starts.append(start)
        pos = start + sum(map(len, raw[i:i + _CHUNK]))
    last = bytes(raw[-1])
    end = data.rfind(last, 0, size)
    if end < starts[-1]:
        return None
    return list(zip(starts, [*starts[1:], end + len(last)], strict=True))


def _decode_tagged(data: bytes | bytearray, spans: list[tuple[int, int]], out: DecodedTrace) -> bool:
    """Fast path: each span decoded straight from the file's bytes as tagged events; False to fall back."""
    view, n = memoryview(data), 0
    try:
        for start, end in spans:
            while end > start and data[end - 1] in _BETWEEN:  # the separator before the next chunk
                end -= 1
            events = _TAGGED.decode(b"".join((b"[", view[start:end], b"]")))
            n += len(events)
            _collect([e for e in events if type(e) is _Complete], out)
    except msgspec.DecodeError:  # ValidationError included: an odd phase or field type
        return False
    return n == out.n_events


_BETWEEN = b" \t\r\n,"


def _decode_general(path: str, raw: list[msgspec.Raw], out: DecodedTrace) -> None:
    """General path: raw event slices joined and decoded `_CHUNK` at a time as untagged events."""
    try:
        for i in range(0, len(raw), _CHUNK):
            _collect([e for e in _EVENTS.decode(b"[" + b",".join(raw[i:i + _CHUNK]) + b"]") if e.ph == "X"], out)
    except msgspec.ValidationError as e:
        raise TraceError(f"{path}: not a torch.profiler Chrome trace ({e})") from None


def _new(*names: str) -> dict[str, list[Any]]:
    return {n: [] for n in names}


def _collect(events: list[_Complete] | list[_Event], out: DecodedTrace) -> None:
    """Append the complete events that a later stage reads to `out`'s columns (created on first use)."""
    if not out.gpu:
        out.gpu = _new("stream", "ts", "dur", "is_comm")
        out.nccl = _new("stream", "ts", "dur", "name", "external_id", "correlation", *_COMM_FIELDS)
        out.launches = _new("tid", "ts", "external_id", "correlation")
        out.ops = _new("tid", "ts", "dur", "name", "external_id", "input_dims", "input_type", *_COMM_FIELDS)
        out.steps = _new("ts", "dur", "name")
    # Bound `append`s, in column order: one event costs a few C calls, no dict look-ups.
    gpu, launches, nccl, ops, steps = ([c.append for c in cols.values()]
                                       for cols in (out.gpu, out.launches, out.nccl, out.ops, out.steps))
    g_stream, g_ts, g_dur, g_comm = gpu
    l_tid, l_ts, l_ext, l_corr = launches
    kind_of = _KIND.get
    for e in events:
        kind = kind_of(e.cat, _CPU)
        if kind == _CPU:  # most events: CPU ops, kept only for a few names
            name = e.name
            if name[:1] not in _OP_INITIALS:
                continue
            if name == "record_param_comms" or name.startswith(_OP_PREFIXES):
                a = _args(e)
                _put(ops, (e.tid, e.ts, e.dur, name, a.external_id, _raw(a.input_dims), _raw(a.input_type),
                           *_comm(a)))
            elif name.startswith("ProfilerStep#"):
                _put(steps, (e.ts, e.dur, name))
        elif kind == _RUNTIME:
            if "aunch" in e.name and (a := _args(e)).correlation is not None:
                l_tid(e.tid)
                l_ts(e.ts)
                l_ext(a.external_id)
                l_corr(a.correlation)
        elif kind != _IGNORED:  # GPU activity
            name = e.name
            is_nccl = kind == _KERNEL and name.startswith("nccl") and "Kernel_" in name[:16]
            g_stream(e.tid)
            g_ts(e.ts)
            g_dur(e.dur)
            g_comm(is_nccl)
            if is_nccl:
                a = _args(e)
                _put(nccl, (e.tid, e.ts, e.dur, name, a.external_id, a.correlation, *_comm(a)))


# Event kinds by `cat`; any other category is a CPU op (cpu_op, user_annotation, python_function…).
_CPU, _KERNEL, _COPY, _RUNTIME, _IGNORED = range(5)
_KIND = {"kernel": _KERNEL, "gpu_memcpy": _COPY, "gpu_memset": _COPY, "cuda_runtime": _RUNTIME,
         "cuda_driver": _RUNTIME, "gpu_user_annotation": _IGNORED}
_OP_INITIALS = "rngcP"  # first letters of record_param_comms, nccl:, gloo:, c10d::, ProfilerStep#


def _put(appends: list[Callable[[Any], None]], values: tuple[Any, ...]) -> None:
    for append, v in zip(appends, values, strict=True):
        append(v)


# `_Args`' communication fields, in `_COMM_FIELDS` order, as one slice of `msgspec.structs.astuple`.
_COMM_AT = slice(_Args.__struct_fields__.index("coll"), _Args.__struct_fields__.index("coll") + len(_COMM_FIELDS))


def _comm(a: _Args) -> list[Any]:
    return [v if v is None or type(v) is str else _scalar(v) for v in msgspec.structs.astuple(a)[_COMM_AT]]


def _raw(r: msgspec.Raw | None) -> str | None:
    return bytes(r).decode() if r else None


def _scalar(v: Any) -> Any:
    # Args change type between torch versions ("[0, 1]" string vs real list); keep one text form.
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, list):
        return "[" + ", ".join(str(x) for x in v) + "]"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)
