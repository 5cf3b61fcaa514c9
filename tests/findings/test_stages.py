"""The stage outputs are listed once (`findings.stages.StageOutputs`): the rules' `Context` and the analysis'
`Session` are that record plus their own fields, nothing declares or copies the list again, and the job's
facts have one way in."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest
from logframes_builder import init, logs, proc

from ncclscope import schema as S
from ncclscope.align import identify
from ncclscope.align.facts import JobFacts, derive
from ncclscope.align.rankmap import init_rows
from ncclscope.findings import Context, StageOutputs
from ncclscope.session import Session, analyze

ROOT = Path(__file__).resolve().parents[2]
STAGE = frozenset(f.name for f in fields(StageOutputs))
SAMPLE = ROOT / "samples" / "logs" / "nccl687_2node_ib_gdrdma_p2p_read_healthy.log"
# A class body annotating this many of the eleven stage outputs is a second list of them; a call passing this
# many as `name=other.name` copies the record field by field. Fewer is a consumer's own choice of inputs
# (the diagnosis reads `logs`, `hang` and `flight`).
MOST = 4


@pytest.mark.parametrize(
    ("record", "own"), [(Context, {"prior"}), (Session, {"findings", "diagnosis", "notes"})]
)
def test_each_record_is_the_stage_outputs_plus_its_own(record: type[StageOutputs], own: set[str]) -> None:
    assert issubclass(record, StageOutputs)
    assert {f.name for f in fields(record)} == STAGE | own
    assert not STAGE & set(vars(record).get("__annotations__", {})), "a stage output declared again"


def _stage_names_declared(tree: ast.AST) -> list[tuple[str, int, set[str]]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name != "StageOutputs":
            names = {
                b.target.id
                for b in node.body
                if isinstance(b, ast.AnnAssign) and isinstance(b.target, ast.Name) and b.target.id in STAGE
            }
            if len(names) >= MOST:
                out.append((node.name, node.lineno, names))
    return out


def _stage_names_copied(tree: ast.AST) -> list[tuple[str, int, set[str]]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            names = {
                k.arg
                for k in node.keywords
                if k.arg in STAGE and isinstance(k.value, ast.Attribute) and k.value.attr == k.arg
            }
            if len(names) >= MOST:
                out.append((ast.unparse(node.func), node.lineno, names))
    return out


def test_nothing_lists_the_stage_outputs_again() -> None:
    """No class in the package, the tests, tools or bench declares the stage outputs again, and no call
    copies them one by one (`Session(logs=ctx.logs, ranks=ctx.ranks, …)`: `stage_outputs()` does)."""
    found = []
    for folder in ("ncclscope", "tests", "tools", "bench"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            found += [(str(path.relative_to(ROOT)), *hit) for hit in _stage_names_declared(tree)]
            found += [(str(path.relative_to(ROOT)), *hit) for hit in _stage_names_copied(tree)]
    assert not found, found


def test_the_check_sees_a_second_list_and_a_copy() -> None:
    declared = ast.parse("class Run:\n    logs: int\n    ranks: int\n    comms: int\n    hang: int\n")
    copied = ast.parse("Run(logs=s.logs, ranks=s.ranks, comms=s.comms, flight=s.flight, x=s.y)")
    assert [n for n, _, _ in _stage_names_declared(declared)] == ["Run"]
    assert [n for n, _, _ in _stage_names_copied(copied)] == ["Run"]
    fewer = ast.parse("Run(logs=s.logs, ranks=s.ranks, comms=s.comms, flight=flight)")
    assert not _stage_names_copied(fewer)


def _two_hosts() -> Context:
    lf = logs(inits=[init(proc("node-a", 11, 0), 0, 2), init(proc("node-b", 22, 0), 1, 2)])
    ranks, comms = identify(lf)
    return Context(logs=lf, ranks=ranks, comms=comms)


def test_facts_are_derived_from_the_records_own_tables() -> None:
    """One way of getting the job's facts: a record built without them derives them from its tables, as
    `align.facts.derive` does, and holds them (never None, never a second property)."""
    ctx = _two_hosts()
    assert ctx.facts == derive(ctx.logs, ctx.ranks, ctx.comms, init_rows(ctx.logs.inits))
    assert ctx.facts.hosts == ("node-a", "node-b") and ctx.facts.world_size.value == 2
    assert [f.name for f in fields(StageOutputs) if f.type in (JobFacts, "JobFacts")] == ["facts"]
    assert not hasattr(ctx, "job")
    empty = Context(logs=logs(), ranks=S.empty(S.RANKS), comms=S.empty(S.COMMS))
    assert empty.facts.hosts == () and empty.facts.world_size.value is None


def test_a_record_built_on_another_keeps_its_outputs_and_facts() -> None:
    ctx = _two_hosts()
    s = Session(**ctx.stage_outputs(), findings=())
    assert all(getattr(s, n) is getattr(ctx, n) for n in STAGE)  # facts included: not derived again
    given = JobFacts(hosts=("given",))
    assert Context(**{**ctx.stage_outputs(), "facts": given}).facts is given


def test_the_session_holds_the_facts_of_its_tables() -> None:
    s = analyze([str(SAMPLE)])
    assert s.facts == derive(s.logs, s.ranks, s.comms, init_rows(s.logs.inits))
    assert len(s.facts.hosts) == 2
