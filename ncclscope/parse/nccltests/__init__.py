"""Parse stage, nccl-tests output: the per-size result table, its header and footer, and `-J` JSON.

`read_nccltests(paths)` returns an `NcclTestsFrames`; `has_nccltests(path)` is the cheap test the
session runs on every text input before reading it a second time.
"""

from __future__ import annotations

from ncclscope.parse.nccltests.read import NcclTestsFrames, has_nccltests, read_nccltests

__all__ = ["NcclTestsFrames", "has_nccltests", "read_nccltests"]
