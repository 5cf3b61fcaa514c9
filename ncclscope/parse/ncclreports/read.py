"""Parse stage, NCCL's own reports: RAS (`ncclras`, text and JSON), Inspector JSON lines, `ncclparam -l`.

`sniff.report_kind` tells them by their first bytes (the input classifier calls it); `read_nccl_reports`
reads each file once, streaming, with a byte cap per file and a row cap for Inspector records, and
returns one typed `NcclReports`. Text RAS reports and `ncclparam` output stay logs as well (the log
grammar reads RAS count lines pasted into a log); Inspector files are reports only. A file that does
not read as what its first bytes promised is a note, never an exception.
"""

from __future__ import annotations

import codecs
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import polars as pl

from ncclscope import schema as S
from ncclscope.errors import InputError
from ncclscope.parse.archive import open_input
from ncclscope.parse.ncclreports.inspector import INSPECTOR, InspectorReader
from ncclscope.parse.ncclreports.ncclparam import PARAMS, env_rows, read_ncclparam
from ncclscope.parse.ncclreports.ras_json import read_ras_events, read_ras_json
from ncclscope.parse.ncclreports.ras_model import RAS_ROWS, RasReport, ras_rows
from ncclscope.parse.ncclreports.ras_text import read_ras_text
from ncclscope.parse.unpack import open_stream
from ncclscope.tuning import DEFAULT, Tuning

MAX_REPORT_BYTES = 64 << 20  # a RAS report or ncclparam dump (real: a few KB to a few MB)
MAX_INSPECTOR_RECORDS = 500_000  # operation rows kept over all Inspector files (~100 MB of frame at most)


@dataclass(frozen=True)
class NcclReports:
    ras: tuple[RasReport, ...] = ()
    inspector: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=INSPECTOR))
    params: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=PARAMS))
    notes: tuple[str, ...] = ()

    @property
    def ras_frame(self) -> pl.DataFrame:
        """The RAS reports' facts, one row each (`ras_model.RAS_ROWS`)."""
        schema = {k: getattr(pl, v) for k, v in RAS_ROWS.items()}
        return pl.DataFrame(ras_rows(self.ras), schema=schema, orient="row")

    @property
    def env(self) -> pl.DataFrame:
        """`ncclparam` settings set by anything but the default, as `schema.ENV` rows."""
        return env_rows(self.params) if self.params.height else S.empty(S.ENV)


def _text(path: str, cap: int) -> tuple[str, bool]:
    """The file's text, decoded (UTF-8, bad bytes replaced), at most `cap` bytes; and whether it was cut."""
    with open_input(path) as fh:
        stream = open_stream(fh, path, closes=False)
        data = b""
        while len(data) <= cap and (more := stream.read(cap + 1 - len(data))):
            data += more
    return data[:cap].decode("utf-8", errors="replace"), len(data) > cap


def _lines(path: str, cap: int) -> Iterator[tuple[int, str]]:
    """(1-based number, text) of each line, streamed: at most `cap` bytes are read, a line at most 1 MiB."""
    dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
    n, rest, left = 0, "", cap
    with open_input(path) as fh:
        stream = open_stream(fh, path, closes=False)
        while left > 0 and (chunk := stream.read(min(left, 1 << 20))):
            left -= len(chunk)
            parts = (rest + dec.decode(chunk)).split("\n")
            rest = parts.pop()[-(1 << 20) :]
            for line in parts:
                n += 1
                yield n, line
    if rest:
        yield n + 1, rest


def read_nccl_reports(paths: Sequence[tuple[str, str]], tuning: Tuning = DEFAULT) -> NcclReports:
    """Read `(path, kind)` pairs as `report_kind` named them."""
    ras: list[RasReport] = []
    params: list[pl.DataFrame] = []
    notes: list[str] = []
    insp = InspectorReader(MAX_INSPECTOR_RECORDS)
    cap = min(MAX_REPORT_BYTES, tuning.max_decompressed_bytes)
    for path, kind in paths:
        try:
            if kind == "ras_json":
                text, cut = _text(path, cap)
                rep, why = read_ras_json(path, text)
                notes += [f"{path}: cut at {cap} bytes"] if cut else []
                notes += [why] if why else []
                notes += [f"{path}: {rep.repaired}"] if rep is not None and rep.repaired else []
                ras += [rep] if rep is not None else []
            elif kind == "ras_events":
                text, _cut = _text(path, cap)
                got, why = read_ras_events(path, text)
                notes += [why] if why else []
                ras += [got] if got is not None else []
            elif kind == "ras_text":
                got = read_ras_text(path, _lines(path, cap))
                ras += [got] if got is not None else []
            elif kind == "ncclparam":
                params.append(read_ncclparam(path, _lines(path, cap)))
            elif kind == "inspector":
                insp.add(path, _lines(path, tuning.max_decompressed_bytes))
        except (OSError, InputError, EOFError, zlib.error, UnicodeError) as e:
            notes.append(f"{path}: cannot be read as an NCCL {kind} report ({e}); skipped")
    frame = pl.concat(params) if params else pl.DataFrame(schema=PARAMS)
    return NcclReports(tuple(ras), insp.frame(), frame, tuple(notes) + insp.notes())
