"""Parse stage, torch.profiler traces: decode one Chrome trace into plain columns.

msgspec decodes only the fields ncclscope needs (typed Structs; every other key is skipped in C).
The event array is first split into raw slices of the file's bytes (no per-event object but a
slice), then decoded `_CHUNK` events at a time; each chunk's few relevant events go to column lists
and the chunk is dropped before the next, so a file never has all its events decoded at once.
"""

from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float = 0.0
    dur: float = 0.0
    # Raw until the event proves relevant: most events' args are never looked at.
    args: msgspec.Raw = msgspec.Raw()


class _Trace(msgspec.Struct):
    # Raw slices of the input bytes; decoded into `_Event`s chunk by chunk (see `_columnarise`).
    traceEvents: list[msgspec.Raw] | None = None
    distributedInfo: dict[str, Any] | None = None
    deviceProperties: list[dict[str, Any]] | None = None
    baseTimeNanoseconds: int | None = None
    host_name: str | None = None


_DECODER = msgspec.json.Decoder(_Trace | list[msgspec.Raw])
_EVENTS = msgspec.json.Decoder(list[_Event])
_CHUNK = 16384  # events decoded at once (a few MB of Structs)
_ARGS = msgspec.json.Decoder(_Args)
_NO_ARGS = _Args()


def _args(e: _Event) -> _Args:
    if not e.args:
        return _NO_ARGS
    try:
        return _ARGS.decode(e.args)
    except msgspec.DecodeError:  # a relevant event whose args are not what any Kineto version wrote
        return _NO_ARGS
_COMM_FIELDS = ("coll", "in_nelems", "out_nelems", "group_size", "dtype", "pg_name", "pg_desc",
                "pg_ranks", "seq", "comms_id")
_OP_PREFIXES = ("nccl:", "gloo:", "c10d::")
_GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


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


def _read_bytes(path: str) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise TraceError(f"{path}: cannot read trace ({e.strerror or e})") from None
    if data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise TraceError(f"{path}: broken or truncated gzip ({e})") from None
    return data


def decode(path: str) -> DecodedTrace:
    """Decode one trace file; any file that is not a Chrome trace raises a one-line TraceError."""
    data = _read_bytes(path)
    try:
        top = _DECODER.decode(data)
    except msgspec.ValidationError as e:
        raise TraceError(f"{path}: not a torch.profiler Chrome trace ({e})") from None
    except msgspec.DecodeError as e:
        raise TraceError(f"{path}: not valid JSON ({e})") from None
    del data
    if isinstance(top, list):
        top = _Trace(traceEvents=top)
    if top.traceEvents is None:
        raise TraceError(f"{path}: JSON without `traceEvents`: not a torch.profiler Chrome trace")
    if not top.traceEvents:
        raise TraceError(f"{path}: the trace holds no events")
    out = DecodedTrace(path=path, distributed=top.distributedInfo or {}, devices=top.deviceProperties or [],
                       base_ns=top.baseTimeNanoseconds, host=top.host_name, n_events=len(top.traceEvents))
    try:
        _columnarise(top.traceEvents, out)
    except msgspec.ValidationError as e:
        raise TraceError(f"{path}: not a torch.profiler Chrome trace ({e})") from None
    return out


def _new(*names: str) -> dict[str, list[Any]]:
    return {n: [] for n in names}


def _columnarise(raw: list[msgspec.Raw], out: DecodedTrace) -> None:
    # Chunk by chunk, keeping only what a later stage reads; everything else is dropped with the chunk.
    gpu = _new("stream", "ts", "dur", "is_comm")
    nccl = _new("stream", "ts", "dur", "name", "external_id", "correlation", *_COMM_FIELDS)
    launches = _new("tid", "ts", "external_id", "correlation")
    ops = _new("tid", "ts", "dur", "name", "external_id", "input_dims", "input_type", *_COMM_FIELDS)
    steps = _new("ts", "dur", "name")
    for i in range(0, len(raw), _CHUNK):
        for e in _EVENTS.decode(b"[" + b",".join(raw[i:i + _CHUNK]) + b"]"):
            if e.ph != "X":
                continue
            cat, name = e.cat, e.name
            if cat in _GPU_CATS:
                is_nccl = cat == "kernel" and name.startswith("nccl") and "Kernel_" in name[:16]
                _add(gpu, stream=e.tid, ts=e.ts, dur=e.dur, is_comm=is_nccl)
                if is_nccl:
                    _add_with_args(nccl, _args(e), stream=e.tid, ts=e.ts, dur=e.dur, name=name)
            elif cat == "cuda_runtime" or cat == "cuda_driver":
                if "aunch" in name and (a := _args(e)).correlation is not None:
                    _add(launches, tid=e.tid, ts=e.ts, external_id=a.external_id, correlation=a.correlation)
            elif cat == "gpu_user_annotation":
                continue
            elif name == "record_param_comms" or name.startswith(_OP_PREFIXES):
                a = _args(e)
                _add_with_args(ops, a, tid=e.tid, ts=e.ts, dur=e.dur, name=name,
                               input_dims=_raw(a.input_dims), input_type=_raw(a.input_type))
            elif name.startswith("ProfilerStep#"):
                _add(steps, ts=e.ts, dur=e.dur, name=name)
    out.gpu, out.nccl, out.launches, out.ops, out.steps = gpu, nccl, launches, ops, steps


def _add(cols: dict[str, list[Any]], **values: Any) -> None:
    for k, v in values.items():
        cols[k].append(v)


def _add_with_args(cols: dict[str, list[Any]], a: _Args, **values: Any) -> None:
    _add(cols, **values)
    cols["external_id"].append(a.external_id)
    if "correlation" in cols:
        cols["correlation"].append(a.correlation)
    for f in _COMM_FIELDS:
        cols[f].append(_scalar(getattr(a, f)))


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
