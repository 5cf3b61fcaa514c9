"""Report stage, writing a report file safely: never over an input, never half-written.

`-o` onto a file the analysis reads is refused (naming it), a directory is refused, and a regular file
is written to a temporary file beside it and renamed over it (a reader never sees half a report, a
failed write leaves the old file). A device or pipe (`/dev/stdout`, `/dev/full`) is written in place.
Every failure is an `InputError` (exit 2, one line), never a traceback.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ncclscope.errors import InputError


def _same(a: Path, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_target(path: Path, inputs: Iterable[str] = ()) -> None:
    """InputError if `path` is a directory or one of `inputs` (the files an analysis reads)."""
    if path.is_dir():
        raise InputError(f"{path}: is a directory; give the report a file name")
    if path.exists():
        clash = next((p for p in inputs if p != "-" and _same(path, p)), None)
        if clash is not None:
            raise InputError(f"{path}: is an input of this analysis ({clash}); refusing to overwrite it")


def write_text(path: Path, text: str, inputs: Iterable[str] = ()) -> Path:
    """Write `text` (UTF-8, `\\n` line ends) to `path` atomically, after `check_target`."""
    check_target(path, inputs)
    data = text.encode("utf-8", errors="surrogateescape")
    try:
        if path.exists() and not path.is_file():  # a device or a pipe: no rename possible
            with open(path, "wb") as fh:
                fh.write(data)
            return path
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        raise InputError(f"{path}: cannot write the report ({e.strerror or e})") from None
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
