"""The rule registry: every rules module listed once, every rule run on every bundled sample."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ncclscope
from ncclscope.findings import registry

PKG = Path(registry.__file__).parent
SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_every_rules_module_is_listed() -> None:
    with_rules = {p.stem for p in PKG.glob("rules_*.py") if "@rule(" in p.read_text(encoding="utf-8")}
    assert with_rules == set(registry.RULE_MODULES)


def test_each_rule_id_is_written_once() -> None:
    ids = [
        m for p in PKG.glob("rules_*.py") for m in re.findall(r'@rule\(\s*"([^"]+)"', p.read_text("utf-8"))
    ]
    assert len(ids) == len(set(ids)) == len(registry.all_rules())


def _sample_inputs() -> list[Path]:
    logs = sorted(SAMPLES.glob("logs/*.log")) + sorted(SAMPLES.glob("complete/*.log.gz"))
    dirs = [d for d in sorted(SAMPLES.glob("hang/*")) + sorted(SAMPLES.glob("capture/*")) if d.is_dir()]
    return logs + dirs


@pytest.mark.parametrize("sample", _sample_inputs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_rule_runs_on_every_sample(sample: Path) -> None:
    """Each rule alone, on each sample: no rule raises, and each finding is well formed."""
    s = ncclscope.analyze([str(sample)])
    ctx = registry.Context(**s.stage_outputs(), prior=s.findings)
    known = {r.id for r in registry.all_rules()}
    for r in registry.all_rules():
        for f in r.fn(ctx):
            assert f.id in known and f.severity in ("error", "warning", "info"), (r.id, f)
            assert f.title.strip(), r.id
    assert {f.id for f in s.findings} <= known


@pytest.mark.parametrize("threads", [4])
def test_threads_do_not_change_the_report(threads: int) -> None:
    """The rules (and the hang view beside rank identity) on several threads give the same report, findings
    in the same order, as one after another, on every bundled sample."""
    from dataclasses import replace

    from ncclscope.report import document_for, json_report
    from ncclscope.tuning import DEFAULT

    checked = 0
    for sample in _sample_inputs():
        one = ncclscope.analyze([str(sample)], tuning=replace(DEFAULT, analysis_threads=1))
        many = ncclscope.analyze([str(sample)], tuning=replace(DEFAULT, analysis_threads=threads))
        assert [f.id for f in many.findings] == [f.id for f in one.findings], sample
        assert json_report.render_doc(document_for(many)) == json_report.render_doc(document_for(one)), sample
        checked += bool(one.findings)
    assert checked >= 10  # samples with findings: the comparison has something to compare
