"""Run stage, tee: copy the command's stdout and stderr to ours as they come (progress bars too) and
into console.log, one line at a time, each stamped with its UTC arrival time and its stream.

Bytes are copied as they are (log text is data); a line longer than `MAX_LINE` is cut into pieces so
memory stays bounded whatever the job prints.
"""

from __future__ import annotations

import os
import re
import threading
from datetime import datetime, timezone
from typing import IO

MAX_LINE = 64 * 1024
_CHUNK = 64 * 1024


# What `ConsoleLog.write_line` puts before each line: the arrival stamp and the stream.
_STAMPED = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+Z \[std(?:out|err)\] ", re.MULTILINE)


def utc_now() -> str:
    """`2026-11-27T20:20:21.123456Z`: the UTC time of the run's manifests and console stamps."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def stamp() -> bytes:
    """`2026-11-27T20:20:21.123456Z ` (the ISO form the log grammar peels as a collector's stamp)."""
    return utc_now().encode("ascii") + b" "


def unstamped(text: str) -> str:
    """console.log's text as the command printed it: each line's stamp and stream tag taken off."""
    return _STAMPED.sub("", text)


class ConsoleLog:
    """console.log, written by both streams' pumps under one lock, line by line."""

    def __init__(self, path: os.PathLike[str] | str) -> None:
        self._fh = open(path, "ab", buffering=0)  # noqa: SIM115 - closed by close()
        self._lock = threading.Lock()
        self.lines = 0

    def write_line(self, stream: bytes, line: bytes, at: bytes) -> None:
        with self._lock:
            if self._fh.closed:  # a daemon the command left still holds its pipe after the end
                return
            self._fh.write(at + b"[" + stream + b"] " + line + (b"" if line.endswith(b"\n") else b"\n"))
            self.lines += 1

    def close(self) -> None:
        with self._lock:
            self._fh.close()


def pump(src: IO[bytes], echo: IO[bytes] | None, log: ConsoleLog, stream: bytes) -> None:
    """Until EOF: every chunk to `echo` at once, every complete line to `log` with the stamp of the
    moment its first byte arrived."""
    fd = src.fileno()
    pending = b""
    started: bytes | None = None
    while True:
        try:
            chunk = os.read(fd, _CHUNK)
        except OSError:
            break
        if not chunk:
            break
        if echo is not None:
            try:
                echo.write(chunk)
                echo.flush()
            except (OSError, ValueError):  # our own stdout closed (`| head`): keep recording
                echo = None
        if started is None:
            started = stamp()
        pending += chunk
        while True:
            cut = pending.find(b"\n")
            if cut < 0 and len(pending) < MAX_LINE:
                break
            end = cut + 1 if 0 <= cut < MAX_LINE else MAX_LINE
            log.write_line(stream, pending[:end], started or stamp())
            pending = pending[end:]
            started = stamp() if pending else None
    if pending:
        log.write_line(stream, pending, started or stamp())


def start_pumps(
    out: IO[bytes], err: IO[bytes], echo_out: IO[bytes] | None, echo_err: IO[bytes] | None, log: ConsoleLog
) -> list[threading.Thread]:
    threads = [
        threading.Thread(
            target=pump, args=(out, echo_out, log, b"stdout"), daemon=True, name="ncclscope-out"
        ),
        threading.Thread(
            target=pump, args=(err, echo_err, log, b"stderr"), daemon=True, name="ncclscope-err"
        ),
    ]
    for t in threads:
        t.start()
    return threads
