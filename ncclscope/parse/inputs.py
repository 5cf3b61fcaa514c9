"""Parse stage, input discovery: expand globs and directories, sort paths into logs, traces and dumps.

Directories are walked recursively; gzip and zstd files are sniffed decompressed. Profiler traces
(`.json`, `.json.gz` holding `traceEvents`) go to `traces`, Flight Recorder pickles (first byte 0x80)
to `dumps`, text files to `logs`; anything else is skipped and counted in `notes`. `-` is standard
input. A missing path is an `InputError`.
"""

from __future__ import annotations

import glob
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ncclscope.errors import InputError

STDIN = "-"
_LOG_SUFFIXES = {".log", ".txt", ".out", ".err", ".stdout", ".stderr", ".nccl", ""}
_SKIP_SUFFIXES = {
    ".py",
    ".md",
    ".yaml",
    ".yml",
    ".toml",
    ".csv",
    ".ipynb",
    ".html",
    ".png",
    ".jpg",
    ".svg",
    ".so",
    ".whl",
    ".zip",
    ".tar",
    ".cfg",
    ".ini",
    ".sh",
}
_SNIFF = 64 * 1024


@dataclass(frozen=True)
class Inputs:
    logs: tuple[str, ...] = ()
    traces: tuple[str, ...] = ()
    dumps: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def _head(path: str, n: int = _SNIFF) -> bytes:
    """The first `n` bytes of a file, decompressed when it is gzip or zstd (by its first bytes)."""
    from ncclscope.parse.unpack import Prefixed, Unpacked, compression

    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
            kind = compression(head)
            if kind is None:
                return head + fh.read(n - len(head))
            try:
                return Unpacked(Prefixed(head, fh, closes=False), kind, path).read(n)
            except (InputError, EOFError, zlib.error):
                return b""
    except OSError:
        return b""


def _is_trace(path: str, head: bytes) -> bool:
    return b"traceEvents" in head or ".pt.trace" in path


def _is_flight_json(head: bytes) -> bool:
    """A Flight Recorder dump written as JSON: `pg_config` / `entries` keys and no `traceEvents`."""
    return b"traceEvents" not in head and (b'"pg_config"' in head or b'"entries"' in head)


def _is_pickle(head: bytes) -> bool:
    return head[:1] == b"\x80"


def _is_text(head: bytes) -> bool:
    if not head:
        return True
    sample = head[:8192]
    return sample.count(b"\x00") == 0 or sample.count(b"\x00") < len(sample) // 100


def _kind(path: str, explicit: bool) -> str | None:
    """'log' | 'trace' | 'dump' | None (skip) for one file."""
    name = path.removesuffix(".gz").removesuffix(".zst")
    suffix = Path(name).suffix.lower()
    head = _head(path)
    if _is_pickle(head):
        return "dump"
    if suffix == ".json":
        if _is_flight_json(head):
            return "dump"
        return "trace" if explicit or _is_trace(path, head) else None
    if suffix in (".pkl", ".pickle"):
        return "dump" if explicit else None
    if explicit:
        return "log"
    if suffix in _SKIP_SUFFIXES:
        return None
    if not _is_text(head):
        return None
    if suffix in _LOG_SUFFIXES or suffix[1:].isdigit() or b"NCCL" in head:
        return "log"
    return None


def _walk(root: str) -> Iterator[str]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for fn in sorted(filenames):
            if not fn.startswith("."):
                yield os.path.join(dirpath, fn)


def _expand(p: str) -> list[tuple[str, bool]]:
    """Files for one argument, each with `explicit` (named by the user rather than found in a walk)."""
    if p == STDIN:
        return [(p, True)]
    if os.path.isdir(p):
        return [(f, False) for f in _walk(p)]
    if os.path.exists(p):
        return [(p, True)]
    matches = sorted(glob.glob(p, recursive=True))
    if not matches:
        raise InputError(f"no such file or directory: {p}")
    out: list[tuple[str, bool]] = []
    for m in matches:
        out += [(f, False) for f in _walk(m)] if os.path.isdir(m) else [(m, True)]
    return out


def classify_inputs(paths: list[str]) -> Inputs:
    """Sort every path (file, glob, directory, `-`) into logs, traces and dumps; raise on a missing path."""
    logs: list[str] = []
    traces: list[str] = []
    dumps: list[str] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for p in paths:
        for path, explicit in _expand(p):
            if path in seen:
                continue
            seen.add(path)
            # A name that is not UTF-8 (undecodable bytes) cannot be a column value: skipped with the rest.
            kind = (
                STDIN if path == STDIN else _kind(path, explicit) if path.isascii() or _utf8(path) else None
            )
            {"log": logs, STDIN: logs, "trace": traces, "dump": dumps}.get(kind or "", skipped).append(path)
    notes: tuple[str, ...] = ()
    if skipped:
        shown = ", ".join(_shown(s) for s in skipped[:3]) + (", …" if len(skipped) > 3 else "")
        what = "are not logs, traces or dumps, or whose names are not UTF-8"
        notes = (f"skipped {len(skipped)} file(s) that {what} ({shown})",)
    if not (logs or traces or dumps):
        raise InputError("no log, trace or dump files found in: " + ", ".join(map(_shown, paths)))
    return Inputs(tuple(logs), tuple(traces), tuple(dumps), notes)


def _utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(path: str) -> str:
    return os.path.basename(path).encode("utf-8", "replace").decode("utf-8")
