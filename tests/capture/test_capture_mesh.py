"""Capture stage, `--layout`: parsing and validation, the process groups of a layout (pure: no torch),
the new faults (oom, cuda-error, gil) and when they fire, and the CLI's answer to a bad layout."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ncclscope.capture import CaptureConfig, CaptureOptions, parse_faults
from ncclscope.capture.faults import Fault, parse_fault
from ncclscope.capture.inject import Plan
from ncclscope.capture.launcher import check_options
from ncclscope.capture.mesh import DESC, LayoutSpecError, Mesh, MeshGroup, parse_mesh
from ncclscope.cli import main
from ncclscope.errors import EXIT_BAD_INPUT


def _ranks(mesh: Mesh, kind: str) -> list[tuple[int, ...]]:
    return [g.ranks for g in mesh.groups() if g.kind == kind]


def test_tp2_dp2_groups_are_megatrons() -> None:
    mesh = parse_mesh("tp=2,dp=2")
    assert mesh.world_size == 4
    # Megatron's order: tensor-parallel ranks adjacent, data-parallel ranks a TP group apart.
    assert _ranks(mesh, "tp") == [(0, 1), (2, 3)]
    assert _ranks(mesh, "dp") == [(0, 2), (1, 3)]
    assert [g.name for g in mesh.groups()] == ["tp0", "tp1", "dp0", "dp1"]
    assert mesh.groups()[0].desc == "TENSOR_MODEL_PARALLEL_GROUP"
    assert [g.name for g in mesh.groups_of(1)] == ["tp0", "dp1"]


def test_tp2_dp2_ep2_with_expert_tp() -> None:
    mesh = parse_mesh("dp=2, EP=2 ,tp=2,etp=yes")  # any order, any case, spaces
    assert mesh.world_size == 8 and mesh.sizes == (2, 1, 2, 2)
    assert _ranks(mesh, "tp") == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert _ranks(mesh, "ep") == [(0, 2), (1, 3), (4, 6), (5, 7)]
    assert _ranks(mesh, "dp") == [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert _ranks(mesh, "etp") == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert _ranks(mesh, "cp") == []  # a size-1 axis makes no group
    assert {g.kind for g in mesh.groups_of(3)} == {"tp", "ep", "dp", "etp"}


def test_cp_sits_between_tp_and_ep() -> None:
    mesh = parse_mesh("tp=2,cp=2")
    assert _ranks(mesh, "tp") == [(0, 1), (2, 3)] and _ranks(mesh, "cp") == [(0, 2), (1, 3)]
    assert DESC["cp"] == "CONTEXT_PARALLEL_GROUP"


@given(
    st.lists(st.integers(1, 3), min_size=4, max_size=4).filter(lambda s: 2 <= s[0] * s[1] * s[2] * s[3] <= 64)
)
def test_every_rank_is_in_one_group_of_each_kind(sizes: list[int]) -> None:
    mesh = Mesh(*sizes)
    for rank in range(mesh.world_size):
        assert mesh.rank_of(mesh.coords(rank)) == rank
    for kind, size in zip(("tp", "cp", "ep", "dp"), sizes, strict=True):
        groups = _ranks(mesh, kind)
        if size == 1:
            assert groups == []
            continue
        flat = sorted(r for g in groups for r in g)
        assert flat == list(range(mesh.world_size)) and all(len(g) == size for g in groups)
        # Members differ only along their own axis.
        for g in groups:
            others = {tuple(v for a, v in mesh.coords(r).items() if a != kind) for r in g}
            assert len(others) == 1


def test_mesh_json_round_trip_through_the_worker_config(tmp_path: Path) -> None:
    mesh = parse_mesh("tp=2,dp=2,ep=2,etp=yes")
    cfg = CaptureConfig(out_dir=str(tmp_path), mesh=mesh)
    back = CaptureConfig.from_json(cfg.to_json())
    assert back.mesh == mesh and back.mesh.groups() == mesh.groups()
    assert CaptureConfig.from_json(CaptureConfig(out_dir=str(tmp_path)).to_json()).mesh is None
    assert MeshGroup("dp", 1, (1, 3)).name == "dp1"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "no axis given"),
        ("tp2", "expected axis=size"),
        ("tp=", "expected axis=size"),
        ("pp=2", "unknown axis 'pp'"),
        ("tp=0", "whole number >= 1"),
        ("tp=two", "whole number >= 1"),
        ("tp=2,tp=2", "tp given twice"),
        ("tp=1", "one rank"),
        ("tp=8,dp=16", "128 ranks"),
        ("tp=2,dp=2,etp=maybe", "etp must be yes or no"),
        ("tp=2,dp=2,etp=yes", "etp=yes needs tp and ep"),
    ],
)
def test_bad_layouts_are_refused_with_the_reason(spec: str, message: str) -> None:
    with pytest.raises(LayoutSpecError, match=message):
        parse_mesh(spec)


def test_layout_and_rank_count_must_agree(tmp_path: Path) -> None:
    mesh = parse_mesh("tp=2,dp=2")
    with pytest.raises(LayoutSpecError, match="4 ranks, but the job has 2"):
        check_options(CaptureOptions(out_dir=tmp_path / "a", nproc_per_node=2, mesh=mesh))
    check_options(CaptureOptions(out_dir=tmp_path / "b", nproc_per_node=4, mesh=mesh))
    with pytest.raises(Exception, match="outside the job"):
        check_options(
            CaptureOptions(
                out_dir=tmp_path / "c", nproc_per_node=4, mesh=mesh, faults=parse_faults(["gil:rank=4"])
            )
        )


@pytest.mark.parametrize("layout", ["tp=2,pp=2", "tp=0", "tp=2,dp=2,etp=yes"])
def test_cli_bad_layout_exits_2_with_a_message(
    layout: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["capture", "--backend", "gloo", "--layout", layout, "--out", str(tmp_path / "o")])
    assert code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "--layout" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_cli_layout_with_the_wrong_rank_count_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")  # the count is checked where the job would start
    code = main(
        [
            "capture",
            "--backend",
            "gloo",
            "--layout",
            "tp=2,dp=2",
            "--nproc-per-node",
            "2",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert code == EXIT_BAD_INPUT
    assert "4 ranks, but the job has 2" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("oom:rank=0", Fault("oom", (0,))),
        ("oom:rank=0,extra=yes,at=5", Fault("oom", (0,), at=5, extra=True)),
        ("cuda-error:rank=2", Fault("cuda-error", (2,))),
        ("cuda-error:rank=1+3,extra=no", Fault("cuda-error", (1, 3))),
        ("gil:rank=3,at=4", Fault("gil", (3,), at=4)),
    ],
)
def test_parse_the_stopping_faults(spec: str, expected: Fault) -> None:
    f = parse_fault(spec)
    assert f == expected and Fault.from_json(f.to_json()) == f


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("oom:rank=0,extra=maybe", "extra must be yes or no"),
        ("gil:rank=1,extra=yes", "unknown key"),
        ("cuda-error:at=3", "needs rank"),
    ],
)
def test_stopping_fault_errors(spec: str, message: str) -> None:
    with pytest.raises(Exception, match=message):
        parse_fault(spec)


def test_stopping_faults_fire_at_the_start_of_their_step_only() -> None:
    faults = parse_faults(["oom:rank=0", "gil:rank=1,at=6", "hang:rank=1"])
    p0 = Plan.for_rank(faults, rank=0, default_step=4)
    assert p0.at_start(3) is None and p0.at_start(4) == faults[0]
    # Not at a collective: the peers must go on into the step's collectives without it.
    assert p0.action(4, "all_reduce", True) == ("", None)
    p1 = Plan.for_rank(faults, rank=1, default_step=4)
    assert p1.at_start(4) is None and p1.at_start(6) == faults[1]
    assert p1.action(4, "all_reduce", True)[0] == "hang"
