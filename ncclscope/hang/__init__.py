"""Hang stage: after align, before findings. Which collective is stuck, which ranks hold it up,
which rank died and why; one typed `HangView` that the rules and the reports read.
"""

from __future__ import annotations

from ncclscope.hang.verdict import HangView, build_hang_view

__all__ = ["HangView", "build_hang_view"]
