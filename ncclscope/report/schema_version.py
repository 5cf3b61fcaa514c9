"""Report stage: the version of every JSON output's schema (`analyze`, `report -o x.json`, `rules`,
`coverage`).

Bumped on a change a reader could trip on: a field removed, renamed or retyped (a new optional field
is not a change). The published JSON Schema (`ncclscope/schemas/analyze.schema.json`) states the same
number, and a test checks that they agree.
"""

from __future__ import annotations

SCHEMA_VERSION = "1.0"
