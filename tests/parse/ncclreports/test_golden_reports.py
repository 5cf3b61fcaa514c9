"""Golden files per NCCL report sample (RAS, Inspector, ncclparam): sample -> what the analysis says.

Each `samples/{ras,inspector,ncclparam}` entry is analysed on its own; `tests/golden/ncclreports/<name>.json`
holds the report facts read, the hang verdicts and the findings (id, severity, title, ranks, hosts).
Regenerate with `NCCLSCOPE_REGEN_GOLDEN=1 pytest tests/parse/ncclreports/test_golden_reports.py`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ncclscope.session import analyze

REPO = Path(__file__).resolve().parents[3]
GOLDEN = REPO / "tests" / "golden" / "ncclreports"
REGEN = os.environ.get("NCCLSCOPE_REGEN_GOLDEN") == "1"
CASES = sorted(
    [
        *(p for p in (REPO / "samples" / "ras").iterdir() if p.suffix in (".txt", ".json")),
        REPO / "samples" / "inspector" / "straggler",
        REPO / "samples" / "inspector" / "healthy",
        REPO / "samples" / "inspector" / "real_datadog_record.log",
        *sorted((REPO / "samples" / "ncclparam").glob("*.txt")),
    ]
)


def _summary(path: Path) -> dict[str, object]:
    s = analyze([str(path)])
    rel = lambda p: os.path.relpath(p, REPO)
    return {
        "ras": [
            r.split("\t")
            for r in sorted("\t".join(map(str, row)) for row in s.reports.ras_frame.drop("path").rows())
        ],
        "inspector_rows": s.reports.inspector.height,
        "params": s.reports.params.select("name", "value", "set_by").rows(),
        "verdicts": [v.sentence for v in s.hang.verdicts],
        "findings": [
            {
                "id": f.id,
                "severity": f.severity,
                "title": f.title,
                "ranks": list(f.ranks),
                "hosts": list(f.hosts),
                "evidence": [f"{rel(e.path)}:{e.line}" for e in f.evidence],
            }
            for f in s.findings
        ],
        "notes": [n.replace(str(REPO) + "/", "") for n in s.notes if "NCCL" in n],
    }


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_report_golden(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    got = json.loads(json.dumps(_summary(path.relative_to(REPO))))
    gold = GOLDEN / f"{path.name}.json"
    if REGEN:
        gold.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    assert gold.exists(), f"no golden for {path.name}: run with NCCLSCOPE_REGEN_GOLDEN=1"
    assert got == json.loads(gold.read_text())
