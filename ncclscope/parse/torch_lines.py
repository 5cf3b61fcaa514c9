"""Parse stage, PyTorch ProcessGroupNCCL lines: PLACEHOLDER until the torch grammar lands.

Interface used by the log reader: `match(message) -> dict | None` returns the TORCH columns
(schema.TORCH minus ORIGIN) for a line whose launcher wrappers were already peeled.
"""

from __future__ import annotations


def match(message: str) -> dict[str, object] | None:
    return None
