"""Write the published JSON Schema of `analyze --format json` from the output's types.

    python tools/json_schema.py           # (re)writes ncclscope/schemas/analyze.schema.json
    python tools/json_schema.py --check   # exit 1 when the shipped file differs from the generated one

The schema is `msgspec.json.schema(AnalyzeJson)` (`ncclscope.report.json_report.generated_schema`); edit the
types in `ncclscope/report/` (their docstrings and `Meta` descriptions), never the file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ncclscope.report.json_report import SCHEMA_FILE, schema_text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare only; exit 1 when the file differs")
    args = ap.parse_args(argv)
    path = ROOT / "ncclscope" / Path(*SCHEMA_FILE)
    text = schema_text()
    if args.check:
        same = path.read_text(encoding="utf-8") == text
        print(
            f"{path.relative_to(ROOT)}: {'up to date' if same else 'differs: run python tools/json_schema.py'}"
        )
        return 0 if same else 1
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
