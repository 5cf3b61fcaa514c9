"""Report stage, JSON: the stable machine-readable output, a typed projection of the report document.

`document.json_data` builds it as an `AnalyzeJson`; its JSON Schema is generated from that type
(`generated_schema`: msgspec's schema with this file's `$schema`/`$id`/title, the field docs as
descriptions) and published as `ncclscope/schemas/analyze.schema.json` (shipped in the wheel; `schema()`
reads it; `python tools/json_schema.py` writes it, and a test fails when the two differ). Both carry
`schema_version` (`report.schema_version`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import msgspec

from ncclscope.report import document as D
from ncclscope.report.schema_version import SCHEMA_VERSION

if TYPE_CHECKING:
    from ncclscope.session import Session

SCHEMA_FILE = ("schemas", "analyze.schema.json")  # under the ncclscope package
SCHEMA_HEAD = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://github.com/ncclscope/ncclscope/blob/main/ncclscope/schemas/analyze.schema.json",
    "title": "ncclscope analyze --format json",
}


def to_dict(s: Session) -> dict[str, Any]:
    """The JSON document: version, inputs, ranks, findings, coverage (plus notes)."""
    return D.json_view(D.build(s))


def schema() -> dict[str, Any]:
    """The published JSON Schema of `analyze --format json` (draft 2020-12)."""
    from importlib.resources import files

    text = files("ncclscope").joinpath(*SCHEMA_FILE).read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


def generated_schema() -> dict[str, Any]:
    """The JSON Schema generated from `document.AnalyzeJson`: its own object at the root (with `$schema`,
    `$id` and a title), the types it uses under `$defs`, and `schema_version` pinned to this version."""
    gen = msgspec.json.schema(D.AnalyzeJson)
    defs: dict[str, Any] = gen["$defs"]
    root = dict(defs.pop("AnalyzeJson"))
    root.pop("title", None)
    props = dict(root["properties"])
    props["schema_version"] = {**props["schema_version"], "const": SCHEMA_VERSION}
    tidy: dict[str, Any] = _tidy({**SCHEMA_HEAD, **root, "properties": props, "$defs": defs})
    return tidy


def _tidy(node: Any) -> Any:
    """Descriptions (docstrings, indented where they wrap) on one line each."""
    if isinstance(node, dict):
        return {
            k: " ".join(v.split()) if k == "description" and isinstance(v, str) else _tidy(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_tidy(v) for v in node]
    return node


def schema_text() -> str:
    """`generated_schema()` as the published file's text."""
    return json.dumps(generated_schema(), indent=2, ensure_ascii=False) + "\n"


def render_doc(doc: D.Document) -> str:
    """`analyze --format json` / `report -o x.json`: the document's JSON view."""
    return json.dumps(D.json_view(doc), indent=2, sort_keys=False, default=str) + "\n"


def render(s: Session) -> str:
    return render_doc(D.build(s))
