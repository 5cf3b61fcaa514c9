"""Parse stage, Flight Recorder dumps: the restricted unpickler (plain containers and scalars only).

PyTorch writes each rank's ring buffer with `torch::jit::Pickler` (tag_aggregates off), so a real
dump holds only dicts, lists, tuples, strings, numbers, booleans and None. Before the C unpickler
sees a byte, `scan` walks the opcodes: one that imports or calls something, a memo index beyond
what the pickle has stored (a 9-byte pickle can ask for a memo of 2^32 slots), a length past the
end or more objects than `Tuning.max_pickle_objects` stop it. After loading, `check_plain` walks
the result once: only plain types, no container larger than `max_pickle_items`, no nesting deeper
than `max_json_depth`, no reference cycle, and no more objects than the cap once shared references
are counted each time they are met. Nothing in a dump is ever executed.
"""

from __future__ import annotations

import io
import pickle
import pickletools
from typing import Any

from ncclscope.errors import LimitError, UnsafePickleError
from ncclscope.tuning import DEFAULT, Tuning

_PLAIN = (dict, list, tuple, set, frozenset, str, bytes, bytearray, int, float, bool, type(None))
_CONTAINERS = (dict, list, tuple, set, frozenset)
# Opcodes that import, call or reach outside the stream: refused (the C unpickler would also stop at
# find_class/persistent_load, which refuse too; this names the opcode first).
_REFUSED = frozenset(
    {
        "GLOBAL",
        "STACK_GLOBAL",
        "INST",
        "OBJ",
        "REDUCE",
        "NEWOBJ",
        "NEWOBJ_EX",
        "BUILD",
        "EXT1",
        "EXT2",
        "EXT4",
        "PERSID",
        "BINPERSID",
        "NEXT_BUFFER",
        "READONLY_BUFFER",
    }
)
_PUTS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_GETS = frozenset({"GET", "BINGET", "LONG_BINGET"})
_NO_OBJECT = frozenset(
    {
        "MARK",
        "STOP",
        "POP",
        "POP_MARK",
        "PROTO",
        "FRAME",
        "APPEND",
        "APPENDS",
        "SETITEM",
        "SETITEMS",
        "ADDITEMS",
        "MEMOIZE",
        *_PUTS,
    }
)
# code byte -> (name, argument bytes: >= 0 fixed, -1 up to a newline, -N: the length in the next N bytes)
_LENGTH_BYTES = {
    pickletools.TAKEN_FROM_ARGUMENT1: -1,
    pickletools.TAKEN_FROM_ARGUMENT4: -4,
    pickletools.TAKEN_FROM_ARGUMENT4U: -4,
    pickletools.TAKEN_FROM_ARGUMENT8U: -8,
}
_OPS: dict[int, tuple[str, int]] = {
    ord(op.code): (
        op.name,
        0
        if op.arg is None
        else op.arg.n
        if op.arg.n >= 0
        else -100
        if op.arg.n == pickletools.UP_TO_NEWLINE
        else _LENGTH_BYTES[op.arg.n] - 100,
    )
    for op in pickletools.opcodes
}


class _PlainUnpickler(pickle.Unpickler):
    """Refuses GLOBAL/STACK_GLOBAL/INST/OBJ/EXT*/REDUCE targets and persistent ids."""

    def __init__(self, data: bytes, path: str) -> None:
        super().__init__(io.BytesIO(data))
        self._path = path

    def find_class(self, module: str, name: str) -> Any:
        raise UnsafePickleError(
            f"{self._path}: refused to load a Flight Recorder dump that references {module}.{name} "
            "(only plain containers and scalars are accepted; nothing was executed)"
        )

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError(f"{self._path}: refused a pickle with persistent ids (nothing was executed)")


def load_plain_pickle(data: bytes, path: str, tuning: Tuning = DEFAULT) -> Any:
    """Unpickle `data` admitting only plain containers and scalars, within the caps of `tuning`.

    UnsafePickleError for anything that would import or call; LimitError for a cap; ValueError for
    any other unreadable pickle.
    """
    scan(data, path, tuning)
    try:
        obj = _PlainUnpickler(data, path).load()
    except UnsafePickleError:
        raise
    except Exception as e:  # noqa: BLE001 - any other failure is an unreadable dump, reported by caller
        raise ValueError(f"{type(e).__name__}: {str(e)[:200]}") from None
    check_plain(obj, path, tuning)
    return obj


def scan(data: bytes, path: str, tuning: Tuning = DEFAULT) -> None:
    """Walk the opcodes without building anything; raise before the C unpickler could over-allocate."""
    pos, end, puts, objects = 0, len(data), 0, 0
    while pos < end:
        name, n = _OPS.get(data[pos], ("", 0))
        if not name:
            raise ValueError(f"not a pickle (byte 0x{data[pos]:02x} at {pos} is no opcode)")
        if name in _REFUSED:
            _refuse(data, pos, name, path)
        pos += 1
        if n == -100:  # a decimal or text argument up to the newline (GLOBAL's two lines refused above)
            nl = data.find(b"\n", pos)
            if nl < 0:
                raise ValueError("pickle data was truncated")
            arg, pos = data[pos:nl], nl + 1
        elif n < 0:  # the argument's length comes first
            k = -n - 100
            size = int.from_bytes(data[pos : pos + k], "little", signed=name in ("BINSTRING", "LONG4"))
            if size < 0 or pos + k + size > end:
                raise ValueError(f"{name} at {pos - 1} claims {size} bytes past the end of the pickle")
            arg, pos = b"", pos + k + size
        else:
            arg, pos = data[pos : pos + n], pos + n
            if pos > end:
                raise ValueError("pickle data was truncated")
        if name in _PUTS or name in _GETS:
            if n == -100 and not arg.isdigit():
                raise ValueError(f"{name} at {pos} has no memo index")
            idx = int(arg) if n == -100 else int.from_bytes(arg, "little")
            if idx >= tuning.max_pickle_memo or (name in _PUTS and idx > puts):
                raise LimitError(
                    f"{path}: {name} asks for memo slot {idx} with {puts} stored "
                    f"(cap max_pickle_memo {tuning.max_pickle_memo}): refused"
                )
            puts += name in _PUTS
        elif name == "MEMOIZE":
            puts += 1
        elif name == "FRAME" and int.from_bytes(arg, "little") > end - pos:
            raise ValueError(f"FRAME at {pos - 9} claims more bytes than the pickle holds")
        elif name == "STOP":
            return
        if name not in _NO_OBJECT:
            objects += 1
            if objects > tuning.max_pickle_objects:
                raise LimitError(
                    f"{path}: more than {tuning.max_pickle_objects} objects (cap max_pickle_objects): refused"
                )
    raise ValueError("pickle data was truncated (no STOP)")


def _refuse(data: bytes, pos: int, name: str, path: str) -> None:
    if name == "GLOBAL":  # the only one whose target is in its argument: name it, as find_class would
        module, _, rest = data[pos + 1 : pos + 400].partition(b"\n")
        attr = rest.partition(b"\n")[0]
        target = f"{module.decode('ascii', 'replace')}.{attr.decode('ascii', 'replace')}"
        raise UnsafePickleError(
            f"{path}: refused to load a Flight Recorder dump that references {target} "
            "(only plain containers and scalars are accepted; nothing was executed)"
        )
    raise UnsafePickleError(
        f"{path}: refused a Flight Recorder dump with a {name} opcode at byte {pos} (only "
        "plain containers and scalars are accepted; nothing was executed)"
    )


def check_plain(obj: Any, path: str, tuning: Tuning = DEFAULT) -> None:
    """One iterative walk of the loaded graph: plain types, container sizes, depth, cycles, objects."""
    done: dict[int, tuple[int, int]] = {}  # id -> (depth, objects counted through shared references)
    busy: set[int] = set()
    stack: list[tuple[Any, bool]] = [(obj, False)]
    while stack:
        o, children_done = stack.pop()
        if type(o) not in _PLAIN:
            raise UnsafePickleError(f"{path}: refused a Flight Recorder dump holding a {type(o).__name__}")
        if not isinstance(o, _CONTAINERS):
            continue
        kids = list(o.keys()) + list(o.values()) if isinstance(o, dict) else list(o)
        if children_done:
            depth = 1 + max((done[id(k)][0] for k in kids if isinstance(k, _CONTAINERS)), default=0)
            count = 1 + sum(done[id(k)][1] if isinstance(k, _CONTAINERS) else 1 for k in kids)
            _caps(path, tuning, depth, count)
            done[id(o)] = depth, count
            busy.discard(id(o))
            continue
        if id(o) in done:
            continue
        if id(o) in busy:
            raise LimitError(f"{path}: a container holds itself (a reference cycle): refused")
        if len(kids) > tuning.max_pickle_items:
            raise LimitError(
                f"{path}: a container of {len(kids)} items (cap max_pickle_items "
                f"{tuning.max_pickle_items}): refused"
            )
        if len(busy) >= tuning.max_json_depth:
            _caps(path, tuning, len(busy) + 1, 0)
        busy.add(id(o))
        stack.append((o, True))
        stack.extend((k, False) for k in kids)


def _caps(path: str, tuning: Tuning, depth: int, count: int) -> None:
    if depth > tuning.max_json_depth:
        raise LimitError(
            f"{path}: nested more than {tuning.max_json_depth} levels deep (cap max_json_depth): refused"
        )
    if count > tuning.max_pickle_objects:
        raise LimitError(
            f"{path}: more than {tuning.max_pickle_objects} objects once shared references are "
            "counted (cap max_pickle_objects): refused"
        )
