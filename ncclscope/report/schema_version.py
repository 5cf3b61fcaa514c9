"""Report stage: the version of every JSON output's schema (`analyze`, `report -o x.json`, `rules`,
`coverage`).

The major number is bumped when a field is removed, renamed or retyped, the minor number when a field is
added (the published schema is strict: it rejects fields it does not list, so a document validates against
the schema of its own version). The published JSON Schema (`ncclscope/schemas/analyze.schema.json`) states the same
number, and a test checks that they agree.
"""

from __future__ import annotations

SCHEMA_VERSION = "1.0"
