"""Parse stage, stdin's spool: what is piped in is copied to a private temporary file as it is read once.

Stdin cannot be read twice, so before this every COLL row of a piped log was held in memory for the hang
stage's second look (`LogFrames.coll_lines_at`) and every unknown line for `unknown_lines`: memory grew
with the lines piped in. With the bytes in a file, stdin is read by the same bounded policy as a file of
its size: facts and evidence kept, the rest read again from the spool when asked. The spool is written
with the user's permissions only (`tempfile`), holds at most `Tuning.max_decompressed_bytes` (the cap a
compressed input has; a note says when it stopped there) and is removed when the frames that read it go.
"""

from __future__ import annotations

import sys
import tempfile
from typing import IO, BinaryIO

from ncclscope.tuning import DEFAULT, Tuning

_CHUNK = 1 << 20


class Spool:
    """A temporary file holding stdin's bytes (`name`); removed when closed or garbage-collected."""

    def __init__(self, src: BinaryIO | None = None, tuning: Tuning = DEFAULT) -> None:
        src = sys.stdin.buffer if src is None else src
        self._file: IO[bytes] = tempfile.NamedTemporaryFile(prefix="ncclscope-stdin-", suffix=".log")  # noqa: SIM115
        self.name = self._file.name
        self.notes: tuple[str, ...] = ()
        left = tuning.max_decompressed_bytes
        while left > 0:
            b = src.read(min(_CHUNK, left))
            if not b:
                break
            self._file.write(b)
            left -= len(b)
        else:
            if src.read(1):
                cap = tuning.max_decompressed_bytes
                note = f"-: stdin passed {cap} bytes; the rest was not read (cap max_decompressed_bytes: "
                self.notes = (note + "--max-decompressed-bytes raises it)",)
        self._file.flush()

    def close(self) -> None:
        self._file.close()
