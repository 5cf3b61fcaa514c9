"""Parse stage, nccl-tests: read text outputs and `-J` JSON reports into `NcclTestsFrames`.

A text file is read only when it holds one of nccl-tests' markers (`markers.py`): the log reader notes
which inputs do as it reads them (`LogFrames.nccltests_marked`), so the analysis reads no file twice to
look; called on its own, this reader searches each file's bytes for them.
"""

from __future__ import annotations

import gzip
import json
import mmap
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import polars as pl

from ncclscope import schema as S
from ncclscope.errors import InputError
from ncclscope.parse.logs.engine.reader import ReadStats, read_chunks
from ncclscope.parse.nccltests.json_doc import frames_from_json, looks_like_json_report
from ncclscope.parse.nccltests.markers import MARKERS
from ncclscope.parse.nccltests.text import parse_lines, relevant, with_body
from ncclscope.tuning import DEFAULT, Tuning

_MARKERS = tuple(m.encode() for m in MARKERS)
_GZ_SCAN = 8 << 20  # bytes of a .gz file decompressed to look for a marker


@dataclass(frozen=True)
class NcclTestsFrames:
    """nccl-tests evidence: `results` (schema NCCLTESTS_RESULTS), `devices`, `summary`, `runs`."""

    results: pl.DataFrame = field(default_factory=lambda: S.empty(S.NCCLTESTS_RESULTS))
    devices: pl.DataFrame = field(default_factory=lambda: S.empty(S.NCCLTESTS_DEVICES))
    summary: pl.DataFrame = field(default_factory=lambda: S.empty(S.NCCLTESTS_SUMMARY))
    runs: pl.DataFrame = field(default_factory=lambda: S.empty(S.NCCLTESTS_RUNS))
    paths: tuple[str, ...] = ()  # inputs that held nccl-tests output
    notes: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        return self.results.is_empty() and self.summary.is_empty()


def _contains_marker(path: str) -> bool:
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                head = fh.read(_GZ_SCAN)
            return any(m in head for m in _MARKERS)
        with open(path, "rb") as fh:
            if fh.seek(0, 2) == 0:
                return False
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                return any(mm.find(m) >= 0 for m in _MARKERS)
    except (OSError, EOFError, ValueError):
        return False


def has_nccltests(path: str) -> bool:
    """Does this file hold nccl-tests output (a text table/header, or a `-J` JSON report)?"""
    return looks_like_json_report(path) or _contains_marker(path)


def _relevant_lines(path: str, tuning: Tuning) -> pl.DataFrame:
    """The lines nccl-tests' reader uses, streamed (a big log with one marker is never held whole)."""
    parts = [
        relevant(with_body(chunk.select("line", "raw")))
        for chunk in read_chunks(path, ReadStats(), tuning)  # .gz/.zst within the decompression caps
    ]
    return pl.concat(parts) if parts else with_body(pl.DataFrame(schema={"line": pl.Int64, "raw": pl.Utf8}))


def read_nccltests(
    paths: Sequence[str], marked: Collection[str] | None = None, tuning: Tuning = DEFAULT
) -> NcclTestsFrames:
    """nccl-tests frames of every path that holds nccl-tests output; other paths are skipped silently.

    `marked`: the text inputs known to hold a marker line (the log reader's `LogFrames.nccltests_marked`);
    a text input outside it is skipped without being read again. None: each text input is searched."""
    parts: list[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]] = []
    used: list[str] = []
    notes: list[str] = []
    for path in dict.fromkeys(paths):
        try:
            if looks_like_json_report(path):
                with open(path, "rb") as fh:
                    if os.fstat(fh.fileno()).st_size > tuning.max_json_report_bytes:
                        cap = tuning.max_json_report_bytes >> 20
                        raise InputError(f"a -J report larger than {cap} MiB (Tuning.max_json_report_bytes)")
                    doc = json.loads(fh.read())
                f = frames_from_json(path, doc)
            elif path in marked if marked is not None else _contains_marker(path):
                f = parse_lines(path, _relevant_lines(path, tuning))
            else:
                continue
        except (OSError, ValueError, EOFError, InputError, RecursionError) as e:  # (InputError: a cap)
            notes.append(f"{path}: nccl-tests output not read ({e})")
            continue
        if f.results.height or f.summary.height or f.devices.height:  # a device list alone says the nodes
            parts.append((f.results, f.devices, f.summary, f.runs))
            used.append(path)
    if not parts:
        return NcclTestsFrames(notes=tuple(notes))
    res, dev, summ, runs = (pl.concat([p[i] for p in parts]) for i in range(4))
    return NcclTestsFrames(
        results=res, devices=dev, summary=summ, runs=runs, paths=tuple(used), notes=tuple(notes)
    )
