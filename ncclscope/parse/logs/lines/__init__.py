"""Parse stage, log lines: pure functions from a batch of numbered lines to typed rows.

What a line means lives here and only here: NCCL's prefix and launcher wrappers (`peel`, `prepare`), the
grammar's families (`families`, `match`, `transform`), COLL lines field by field (`collfast`, `collfacts`),
PyTorch/gloo/torchrun lines (`runtime_*`), the message catalog (`catalog`), wrapped pastes (`rejoin`), the
regex runner (`rx`) and the literal text a pattern needs (`needles`, `rxtree`). Nothing here reads a file,
starts a process or decides what a big input keeps: a module here never imports `engine/` (a test pins it).

The reader reaches it through one seam, `parse_batch(raw, carry, ctx) -> Batch` (`batch`): numbered lines
in, typed rows and the carry for the next batch out. The names below are the package's public face; a
module outside `lines/` imports only these (`tests/parse/test_log_layout.py`).
"""

from __future__ import annotations

from ncclscope.parse.logs.lines.app_output import exceptions
from ncclscope.parse.logs.lines.batch import (
    TABLES,
    Batch,
    Carry,
    Context,
    RawBatch,
    Screen,
    compact,
    parse_batch,
)
from ncclscope.parse.logs.lines.catalog import identify_one
from ncclscope.parse.logs.lines.families import BENIGN_WARNS
from ncclscope.parse.logs.lines.general import CollPart, General
from ncclscope.parse.logs.lines.streams import SHIFTED as STREAM_LINE_COLUMNS
from ncclscope.parse.logs.lines.streams import final as final_streams
from ncclscope.parse.logs.lines.streams import merge as merge_streams
from ncclscope.parse.logs.lines.timestamps import distrust_subseconds

__all__ = [
    "BENIGN_WARNS",
    "STREAM_LINE_COLUMNS",
    "TABLES",
    "Batch",
    "Carry",
    "CollPart",
    "Context",
    "General",
    "RawBatch",
    "Screen",
    "compact",
    "distrust_subseconds",
    "exceptions",
    "final_streams",
    "identify_one",
    "merge_streams",
    "parse_batch",
]
