"""Report stage, JSON: the stable machine-readable schema, a projection of the report document.

The schema is published as `ncclscope/schemas/analyze.schema.json` (shipped in the wheel; `schema()`
reads it) and carries `schema_version` (`report.schema_version`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ncclscope.report import document as D

if TYPE_CHECKING:
    from ncclscope.session import Session


def to_dict(s: Session) -> dict[str, Any]:
    """The JSON document: version, inputs, ranks, findings, coverage (plus notes)."""
    return D.json_view(D.build(s))


def schema() -> dict[str, Any]:
    """The published JSON Schema of `analyze --format json` (draft 2020-12)."""
    from importlib.resources import files

    text = files("ncclscope").joinpath("schemas", "analyze.schema.json").read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


def render_doc(doc: D.Document) -> str:
    """`analyze --format json` / `report -o x.json`: the document's JSON view."""
    return json.dumps(D.json_view(doc), indent=2, sort_keys=False, default=str) + "\n"


def render(s: Session) -> str:
    return render_doc(D.build(s))
