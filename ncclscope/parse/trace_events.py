"""Parse stage, torch.profiler traces: the decoded events a later stage reads, as column lists.

One Python pass routes each complete event by `cat`; the columns are then filled kind by kind,
mostly by C-level `map`s. `args` are decoded only for the events that prove relevant (NCCL kernels,
kernel launches, communication ops), in one msgspec call per kind and chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter
from typing import Any, Protocol

import msgspec

Loose = int | float | str | list[Any] | None
SKIP = "\0skipped"  # the class-level `cat` of every event that is not a complete ("X") event


class Event(Protocol):
    """A decoded complete event (either path's Struct)."""

    cat: str
    name: str
    tid: int | str
    ts: float
    dur: float
    args: msgspec.Raw


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


_ARGS = msgspec.json.Decoder(_Args)
_MANY_ARGS = msgspec.json.Decoder(list[_Args])
_NO_ARGS = _Args()


def _args(e: Event) -> _Args:
    if not e.args:
        return _NO_ARGS
    try:
        return _ARGS.decode(e.args)
    except msgspec.DecodeError:  # a relevant event whose args are not what any Kineto version wrote
        return _NO_ARGS


def _args_of(events: list[Any]) -> list[_Args]:
    """`_args` of each event, decoded in one call (one by one when some event's args are odd)."""
    if not events:
        return []
    try:
        return _MANY_ARGS.decode(b"".join((b"[", b",".join([e.args or b"{}" for e in events]), b"]")))
    except msgspec.DecodeError:
        return [_args(e) for e in events]


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


def _new(*names: str) -> dict[str, list[Any]]:
    return {n: [] for n in names}


def collect(events: list[Any], out: DecodedTrace) -> None:
    """Append the complete events that a later stage reads to `out`'s columns (created on first use)."""
    if not out.gpu:
        out.gpu = _new("stream", "ts", "dur", "is_comm")
        out.nccl = _new("stream", "ts", "dur", "name", "external_id", "correlation", *_COMM_FIELDS)
        out.launches = _new("tid", "ts", "external_id", "correlation")
        out.ops = _new("tid", "ts", "dur", "name", "external_id", "input_dims", "input_type", *_COMM_FIELDS)
        out.steps = _new("ts", "dur", "name")
    # One Python pass routes each event by `cat` (one dict look-up, one C call); the columns are then
    # filled kind by kind, mostly by C-level `map`s.
    cpu: list[Any] = []
    gpu: list[Any] = []
    runtime: list[Any] = []
    dropped: list[Any] = []
    route = {**dict.fromkeys(_GPU_CATS, gpu.append), **dict.fromkeys(_RUNTIME_CATS, runtime.append),
             **dict.fromkeys(_IGNORED_CATS, dropped.append)}.get
    other = cpu.append  # any other category is a CPU op (cpu_op, user_annotation, python_function…)
    for e in events:
        route(e.cat, other)(e)
    if gpu:
        _gpu(gpu, out)
    if runtime:
        _launches([e for e in runtime if "aunch" in e.name], out)
    if cpu:
        _cpu_ops([e for e in cpu if e.name[:1] in _OP_INITIALS], out)


_GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
_RUNTIME_CATS = ("cuda_runtime", "cuda_driver")
_IGNORED_CATS = ("gpu_user_annotation", SKIP)
_OP_INITIALS = "rngcP"  # first letters of record_param_comms, nccl:, gloo:, c10d::, ProfilerStep#
_TID, _TS, _DUR = attrgetter("tid"), attrgetter("ts"), attrgetter("dur")


def _gpu(gpu: list[Any], out: DecodedTrace) -> None:
    """Every GPU activity; NCCL kernels (both naming eras) also with their args."""
    cols = out.gpu
    cols["stream"].extend(map(_TID, gpu))
    cols["ts"].extend(map(_TS, gpu))
    cols["dur"].extend(map(_DUR, gpu))
    comm = [e.cat == "kernel" and e.name.startswith("nccl") and "Kernel_" in e.name[:16] for e in gpu]
    cols["is_comm"].extend(comm)
    nccl = list(compress(gpu, comm))
    appends = [c.append for c in out.nccl.values()]
    for e, a in zip(nccl, _args_of(nccl), strict=True):
        _put(appends, (e.tid, e.ts, e.dur, e.name, a.external_id, a.correlation, *_comm(a)))


def _launches(launches: list[Any], out: DecodedTrace) -> None:
    """Kernel launches that carry a correlation id (the link from a kernel back to its CPU thread)."""
    cols = out.launches
    kept = [(e, a) for e, a in zip(launches, _args_of(launches), strict=True) if a.correlation is not None]
    cols["tid"].extend(e.tid for e, _ in kept)
    cols["ts"].extend(e.ts for e, _ in kept)
    cols["external_id"].extend(a.external_id for _, a in kept)
    cols["correlation"].extend(a.correlation for _, a in kept)


def _cpu_ops(cands: list[Any], out: DecodedTrace) -> None:
    """Communication ops with their args, and ProfilerStep#N spans."""
    ops = [e for e in cands if e.name == "record_param_comms" or e.name.startswith(_OP_PREFIXES)]
    appends = [c.append for c in out.ops.values()]
    for e, a in zip(ops, _args_of(ops), strict=True):
        _put(appends, (e.tid, e.ts, e.dur, e.name, a.external_id, _raw(a.input_dims), _raw(a.input_type),
                       *_comm(a)))
    steps = [e for e in cands if e.name.startswith("ProfilerStep#")]
    if steps:
        cols = out.steps
        cols["ts"].extend(map(_TS, steps))
        cols["dur"].extend(map(_DUR, steps))
        cols["name"].extend(e.name for e in steps)


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
