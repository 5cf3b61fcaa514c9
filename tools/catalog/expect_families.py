"""Pin where each catalog format lands: `tests/parse/catalog_families.json` (id -> grammar family or "catalog").

Run after regenerating the catalog or changing grammars/nccl.lark, read the diff, and commit it: a format
that moves between families, or from a family to the catalog, is a change the reviewer should see.
    python tools/catalog/expect_families.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tools" / "catalog")]

from ncclscope import grammar as G
from ncclscope.parse.logs.lines import catalog as C
from ncclscope.parse.logs.lines.match import first_family
from samples import fill


def main() -> None:
    rules = {n.split("_", 1)[1] for n in G.catalog_table()["rules"]}
    fams = G.families()
    out: dict[str, str] = {}
    for e in sorted(C.entries().values(), key=lambda e: e.id):
        if e.id in rules:
            i = first_family(fill(e.format))
            out[e.id] = fams[i] if i is not None else "catalog"
    path = ROOT / "tests" / "parse" / "catalog_families.json"
    path.write_text(json.dumps(out, indent=0, sort_keys=True) + "\n")
    print(
        f"{len(out)} formats: {sum(v != 'catalog' for v in out.values())} in a family, rest named by the catalog"
    )


if __name__ == "__main__":
    main()
