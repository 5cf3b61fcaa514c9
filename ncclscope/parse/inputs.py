"""Parse stage, input discovery: expand globs/dirs, sort each path into logs, traces or dumps.

PLACEHOLDER owned by the log-parsing work; it only splits by suffix for now.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Inputs:
    logs: tuple[str, ...] = ()
    traces: tuple[str, ...] = ()
    dumps: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def classify_inputs(paths: list[str]) -> Inputs:
    logs = tuple(p for p in paths if not p.endswith((".json", ".json.gz")))
    traces = tuple(p for p in paths if p.endswith((".json", ".json.gz")))
    return Inputs(logs=logs, traces=traces)
