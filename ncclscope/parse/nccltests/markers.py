"""Parse stage, nccl-tests markers: text one of which every nccl-tests text output holds.

Every nccl-tests table header names the `busbw` column, every run header starts with `nThread `, and
the summary prints `Avg bus bandwidth` (nccl-tests v2.0 to 2.19, `src/common.cu`); the footer's
`# Out of bounds values` line (every version) marks a table pasted without its header. The log reader
notes which inputs hold one (it sees every line anyway), so nccl-tests' own reader opens only those.
"""

from __future__ import annotations

MARKERS = ("busbw", "nThread ", "Avg bus bandwidth", "# Out of bounds values")
MARKERS_RX = "|".join(m.replace(" ", "[ ]") for m in MARKERS)  # for a Polars `str.contains`
