"""Parse stage, input discovery: expand globs, directories and archives, sort paths into logs, traces and dumps.

Directories are walked recursively; compressed files (gzip, zstd, xz, bzip2, zlib) are sniffed
decompressed, and an archive (`.tar*`, `.zip`, told by its bytes) is a directory whose members are
inputs named `archive!member` (`archive`). Profiler traces (`.json`, `.json.gz` holding `traceEvents`)
go to `traces`, Flight Recorder pickles (first byte 0x80) and JSON dumps (by their keys, any name) to
`dumps`, text files to `logs`, NCCL's own reports (RAS text/JSON, Inspector JSON lines, `ncclparam -l`;
`parse.ncclreports.report_kind`) to `reports` (RAS text and ncclparam output stay logs too); anything
else is skipped and counted in `notes`. A walk never opens a FIFO, socket or device, and never follows
a symlink (out of the tree, or back into it: `up -> ..`); each is a note, as is a file it cannot read.
A named FIFO (`<(zcat x.gz)`) is read as a stream; a named device is skipped. `-` is standard input.
A missing path is an `InputError`.
"""

from __future__ import annotations

import glob
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

from ncclscope.errors import InputError
from ncclscope.parse.archive import archive_kind, expand, locate, open_input, shown_name
from ncclscope.parse.ncclreports.sniff import report_kind
from ncclscope.parse.unpack import open_stream
from ncclscope.parse.walk import Found, walk
from ncclscope.tuning import DEFAULT, Tuning

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
    ".jar",
    ".docx",
    ".xlsx",
    ".pptx",
    ".odt",
    ".pdf",
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
    reports: tuple[tuple[str, str], ...] = ()  # (path, kind): NCCL's own reports (parse.ncclreports)


def _head(path: str, n: int = _SNIFF) -> bytes:
    """The first `n` bytes of a file (an archive member too), decompressed when its first bytes say so."""
    with open_input(path) as fh:  # (OSError: the caller's note)
        try:
            stream = open_stream(fh, path, closes=False)
            out = b""
            while len(out) < n and (more := stream.read(n - len(out))):
                out += more
            return out
        except (OSError, InputError, EOFError, zlib.error):
            return b""


def _is_trace(path: str, head: bytes) -> bool:
    return b"traceEvents" in head or ".pt.trace" in path


def _is_flight_json(head: bytes, loose: bool = False) -> bool:
    """A Flight Recorder dump written as JSON (torch's `_dump_fr_trace_json`, torchcomms' `dump_json`): one
    object with a `pg_config` key, or an `entries` key and no `traceEvents`. Told by its bytes whatever the
    name (torchcomms names a rank's dump `<prefix><rank>`, no suffix); without the `.json` suffix (`loose`)
    `entries` must hold a `profiling_name` too (the writers sort the keys, so `entries` comes first), so a
    JSON-lines log is not taken for a dump."""
    if head.lstrip()[:1] != b"{" or b"traceEvents" in head:
        return False
    return b'"pg_config"' in head or (b'"entries"' in head and (loose or b'"profiling_name"' in head))


def _is_pickle(head: bytes) -> bool:
    return head[:1] == b"\x80"


def _is_text(head: bytes) -> bool:
    """Text in some encoding: UTF-8 with a few NULs, UTF-16/32 (`decoding`), or NULs then text (a file hole
    left by a crash: a log's first 8 KB may be nothing else)."""
    from ncclscope.parse.decoding import utf_width

    if not head or utf_width(head) > 1:
        return True
    sample = head.lstrip(b"\x00")[:8192]
    return sample.count(b"\x00") == 0 or sample.count(b"\x00") < len(sample) // 100


_COMPRESSED = (".gz", ".zst", ".xz", ".bz2", ".zz", ".z")


def _kind(path: str, explicit: bool) -> str | None:
    """'log' | 'trace' | 'dump' | 'zip' | 'tar' | None (skip) for one file; 'report:K' for an NCCL report
    read only as one, 'log+report:K' for one that is a log too (K: `parse.ncclreports.report_kind`)."""
    name = path
    for ext in _COMPRESSED:
        name = name.removesuffix(ext)
    suffix = Path(name).suffix.lower()
    head = _head(path)
    if _is_pickle(head) or _is_flight_json(head, loose=suffix == ".json"):
        return "dump"
    report = report_kind(head)
    if report in ("inspector", "ras_json", "ras_events"):  # JSON whatever its name (Inspector writes `*.log`)
        return "report:" + report
    archive = archive_kind(head)
    if archive is not None:  # (a walk leaves wheels, jars and office files alone: zips, not logs)
        return archive if explicit or suffix not in _SKIP_SUFFIXES else None
    if suffix == ".json":
        return "trace" if explicit or _is_trace(path, head) else None
    if suffix in (".pkl", ".pickle"):
        return "dump" if explicit else None
    if explicit:
        return "log+report:" + report if report is not None else "log"
    if suffix in _SKIP_SUFFIXES:
        return None
    if not _is_text(head):
        return None
    if report is not None:  # RAS text, ncclparam: a report, and a log the grammar reads too
        return "log+report:" + report
    if suffix in _LOG_SUFFIXES or suffix[1:].isdigit() or b"NCCL" in head:
        return "log"
    return None


def _expand(p: str, notes: list[str]) -> list[tuple[str, bool]]:
    """Files for one argument, each with `explicit` (named by the user rather than found in a walk)."""
    if p == STDIN:
        return [(p, True)]
    if os.path.isdir(p):
        return _walked(p, notes)
    if os.path.lexists(p):
        return [(p, True)]
    matches = sorted(glob.glob(p, recursive=True))
    if not matches:
        raise InputError(f"no such file or directory: {p}")
    out: list[tuple[str, bool]] = []
    for m in matches:
        out += _walked(m, notes) if os.path.isdir(m) else [(m, True)]
    return out


def _walked(root: str, notes: list[str]) -> list[tuple[str, bool]]:
    found = Found()
    files = [(f, False) for f in walk(root, found)]
    notes.extend(found.notes(root))
    return files


def _named(path: str) -> str | None:
    """What a path the user named is, before any byte is read: 'stream' (a FIFO, a socket), 'device',
    'missing' (a dangling symlink) or None (a file to sniff)."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "missing"
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return "stream"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return None


class _Sorted:
    """The inputs found so far, by kind, with what was skipped."""

    def __init__(self, tuning: Tuning) -> None:
        self.tuning = tuning
        self.by_kind: dict[str, list[str]] = {"log": [], "trace": [], "dump": []}
        self.skipped: list[str] = []
        self.notes: list[str] = []
        self.reports: list[tuple[str, str]] = []

    def add(self, path: str, explicit: bool, depth: int = 0) -> None:
        named = None if path == STDIN or "!" in path and not os.path.lexists(path) else _named(locate(path))
        if named == "missing":
            self.notes.append(
                f"{_shown(path)}: cannot be read (a dangling symlink, or no permission); skipped"
            )
            return
        if named == "device":
            self.notes.append(f"{_shown(path)}: a device, not a log; skipped")
            return
        if path == STDIN or named == "stream":  # read once, as it comes: never sniffed first
            self.by_kind["log"].append(path)
            return
        try:
            kind = _kind(path, explicit)
        except OSError as e:
            self.notes.append(f"{_shown(path)}: cannot be read ({e.strerror or e}); skipped")
            return
        if kind in ("zip", "tar") and depth < 2:
            members, notes = expand(path, kind, self.tuning)
            self.notes.extend(notes)
            for m in members:
                self.add(m, False, depth + 1)
            if not members:
                self.notes.append(f"{_shown(path)}: an archive with no member to read")
            return
        if kind is not None and "report:" in kind:
            kind, report = kind.split(":", 1)
            self.reports.append((path, report))
            kind = "log" if kind == "log+report" else kind
        if kind == "report":
            return
        self.by_kind.get(kind or "", self.skipped).append(path)


def classify_inputs(paths: list[str], tuning: Tuning = DEFAULT) -> Inputs:
    """Sort every path (file, glob, directory, archive, `-`) into logs, traces and dumps; raise on a
    missing path or when nothing is left."""
    out = _Sorted(tuning)
    seen: set[str] = set()
    for p in paths:
        for path, explicit in _expand(p, out.notes):
            if path not in seen:
                seen.add(path)
                # A name that is not UTF-8 is shown (and cited) with its odd bytes as \xNN; found again by it.
                out.add(path if path == STDIN or _utf8(path) else shown_name(path), explicit)
    notes = list(out.notes)
    if out.skipped:
        s = out.skipped
        shown = ", ".join(_shown(x) for x in s[:3]) + (", …" if len(s) > 3 else "")
        what = "are not logs, traces or dumps"
        notes.insert(0, f"skipped {len(s)} file(s) that {what} ({shown})")
    logs, traces, dumps = (tuple(out.by_kind[k]) for k in ("log", "trace", "dump"))
    if not (logs or traces or dumps or out.reports):
        why = f" ({'; '.join(notes)})" if notes else ""
        raise InputError("no log, trace or dump files found in: " + ", ".join(map(_shown, paths)) + why)
    return Inputs(logs, traces, dumps, tuple(notes), tuple(out.reports))


def _utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(path: str) -> str:
    return shown_name(os.path.basename(path))
