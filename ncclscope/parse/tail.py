"""Parse stage, tail: whether a log's last character is a line end (a writer killed mid-line leaves none).

Apart from the decoders (`parse.decoding`) because it opens the input itself: plain files, UTF-16/32 text
and archive members (`parse.archive.locate`); compressed inputs are not decompressed for it.
"""

from __future__ import annotations

import os

from ncclscope.parse.archive import locate
from ncclscope.parse.decoding import unit_codec, utf_width
from ncclscope.parse.unpack import HEAD, compression, spliced


def ends_mid_line(path: str) -> bool:
    """True when a log's last character is not a line end (its writer was killed mid-line); False when it
    is, or cannot be told without decompressing it. UTF-16/32 files and archive members are read as text."""
    real = locate(path)
    if not os.path.isfile(real):  # (a FIFO read once as a stream must not be opened again: it would block)
        return False
    try:
        with open(real, "rb") as fh:
            head = fh.read(HEAD)
            if not head or compression(head) is not None or spliced(real, fh) is not None:
                return False
            codec = unit_codec(head)
            width = utf_width(head)
            if fh.seek(0, 2) < width:
                return False
            fh.seek(-width, 2)
            last = fh.read(width)
    except OSError:
        return False
    return last.decode(codec, "replace") not in ("\n", "\r")
