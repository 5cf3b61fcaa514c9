"""Diff stage: two analysed runs (Sessions) in, a ranked list of what differs (`RunDiff`) out.

`diff_sessions(a, b)` is pure; `render` lays a `RunDiff` out for the terminal, JSON and Markdown.
"""

from __future__ import annotations

from ncclscope.diff.compare import diff_sessions
from ncclscope.diff.model import Difference, RunDiff

__all__ = ["Difference", "RunDiff", "diff_sessions"]
