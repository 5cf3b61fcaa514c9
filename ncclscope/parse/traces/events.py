"""Parse stage, torch.profiler traces: the decoded events a later stage reads, as column lists.

One Python pass routes each complete event by `cat`; the columns are then filled kind by kind,
mostly by C-level `map`s. `args` are decoded only for the events that prove relevant (NCCL kernels,
kernel launches, communication ops), in one msgspec call per kind and chunk.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import attrgetter, contains, is_not
from typing import Any, Protocol

import msgspec

# A flat list at most: deeper nesting in these args is no Kineto's, and the event's args are dropped.
Loose = int | float | str | list[int | float | str | None] | None
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
    raws = list(map(_ARGS_RAW, events))
    try:
        return _MANY_ARGS.decode(
            b"".join((b"[", b",".join(raws if all(raws) else [r or b"{}" for r in raws]), b"]"))
        )
    except msgspec.DecodeError:
        return [_args(e) for e in events]


COMM_FIELDS = (  # the communication args of a trace event, as the link stage reads them
    "coll",
    "in_nelems",
    "out_nelems",
    "group_size",
    "dtype",
    "pg_name",
    "pg_desc",
    "pg_ranks",
    "seq",
    "comms_id",
)
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
    notes: list[str] = field(default_factory=list)  # header values dropped, bytes replaced, caps met


def _new(*names: str) -> dict[str, list[Any]]:
    return {n: [] for n in names}


def collect(events: list[Any], out: DecodedTrace) -> None:
    """Append the complete events that a later stage reads to `out`'s columns (created on first use).

    Every per-event step is a C-level `map`/`compress` (categories, name prefixes); Python-level code
    only runs per relevant event (NCCL kernels, communication ops) and per kind.
    """
    if not out.gpu:
        out.gpu = _new("stream", "ts", "dur", "is_comm")
        out.nccl = _new("stream", "ts", "dur", "name", "external_id", "correlation", *COMM_FIELDS)
        out.launches = _new("tid", "ts", "external_id", "correlation")
        out.ops = _new("tid", "ts", "dur", "name", "external_id", "input_dims", "input_type", *COMM_FIELDS)
        out.steps = _new("ts", "dur", "name")
    cats = list(map(_CAT, events))
    if gpu := list(compress(events, map(_GPU_CATS.__contains__, cats))):
        _gpu(gpu, out)
    if runtime := list(compress(events, map(_RUNTIME_CATS.__contains__, cats))):
        _launches(list(compress(runtime, map(contains, map(_NAME, runtime), repeat("aunch")))), out)
    # Any other category is a CPU op (cpu_op, user_annotation, python_function…).
    if cpu := list(compress(events, map(_NOT_CPU.get, cats, repeat(True)))):
        _cpu_ops(list(compress(cpu, map(str.startswith, map(_NAME, cpu), repeat(_CPU_PREFIXES)))), out)


_GPU_CATS = frozenset(("kernel", "gpu_memcpy", "gpu_memset"))
_RUNTIME_CATS = frozenset(("cuda_runtime", "cuda_driver"))
_NOT_CPU = dict.fromkeys((*_GPU_CATS, *_RUNTIME_CATS, "gpu_user_annotation", SKIP), False)
_CPU_PREFIXES = ("record_param_comms", *_OP_PREFIXES, "ProfilerStep#")
_CAT, _NAME, _ARGS_RAW = attrgetter("cat"), attrgetter("name"), attrgetter("args")
_TID, _TS, _DUR = attrgetter("tid"), attrgetter("ts"), attrgetter("dur")
_EXT, _CORR = attrgetter("external_id"), attrgetter("correlation")


def _gpu(gpu: list[Any], out: DecodedTrace) -> None:
    """Every GPU activity; NCCL kernels (both naming eras) also with their args."""
    cols = out.gpu
    cols["stream"].extend(map(_TID, gpu))
    cols["ts"].extend(map(_TS, gpu))
    cols["dur"].extend(map(_DUR, gpu))
    comm = [False] * len(gpu)
    for i in compress(range(len(gpu)), map(str.startswith, map(_NAME, gpu), repeat("nccl"))):
        e = gpu[i]
        comm[i] = e.cat == "kernel" and "Kernel_" in e.name[:16]
    cols["is_comm"].extend(comm)
    nccl = list(compress(gpu, comm))
    args = _args_of(nccl)
    _extend(
        out.nccl,
        (
            map(_TID, nccl),
            map(_TS, nccl),
            map(_DUR, nccl),
            map(_NAME, nccl),
            map(_EXT, args),
            map(_CORR, args),
            *_comm(args),
        ),
    )


def _launches(launches: list[Any], out: DecodedTrace) -> None:
    """Kernel launches that carry a correlation id (the link from a kernel back to its CPU thread)."""
    args = _args_of(launches)
    corr = list(map(_CORR, args))
    keep = list(map(is_not, corr, repeat(None)))
    _extend(
        out.launches,
        (
            compress(map(_TID, launches), keep),
            compress(map(_TS, launches), keep),
            compress(map(_EXT, args), keep),
            compress(corr, keep),
        ),
    )


def _cpu_ops(cands: list[Any], out: DecodedTrace) -> None:
    """Communication ops with their args, and ProfilerStep#N spans."""
    ops = [e for e in cands if e.name == "record_param_comms" or e.name.startswith(_OP_PREFIXES)]
    args = _args_of(ops)
    _extend(
        out.ops,
        (
            map(_TID, ops),
            map(_TS, ops),
            map(_DUR, ops),
            map(_NAME, ops),
            map(_EXT, args),
            map(_raw, map(_DIMS, args)),
            map(_raw, map(_TYPES, args)),
            *_comm(args),
        ),
    )
    if steps := [e for e in cands if e.name.startswith("ProfilerStep#")]:
        _extend(out.steps, (map(_TS, steps), map(_DUR, steps), map(_NAME, steps)))


def _extend(cols: dict[str, list[Any]], values: tuple[Iterable[Any], ...]) -> None:
    for col, vals in zip(cols.values(), values, strict=True):
        col.extend(vals)


_DIMS, _TYPES = attrgetter("input_dims"), attrgetter("input_type")
_COMM_GET = tuple(attrgetter(f) for f in COMM_FIELDS)
_TEXT_TYPES = frozenset((type(None), str))


def _comm(args: list[_Args]) -> list[list[Any]]:
    """The communication fields of `args`, column by column, in one text form."""
    out = []
    for get in _COMM_GET:
        vals = list(map(get, args))
        out.append(vals if _TEXT_TYPES.issuperset(map(type, vals)) else list(map(_scalar, vals)))
    return out


def _raw(r: msgspec.Raw | None) -> str | None:
    return bytes(r).decode() if r else None


def _scalar(v: Any) -> Any:
    # Args change type between torch versions ("[0, 1]" string vs real list); keep one text form.
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, list):
        return "[" + ", ".join(str(_scalar(x)) for x in v) + "]"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, int) and v.bit_length() > 1000:  # printing a 5,000-digit int raises; out of range anyway
        return "-inf" if v < 0 else "inf"
    return str(v)
