"""Capture stage, pre-flight: the launcher refuses an NCCL job this machine cannot run, before
torchrun starts, with exit 2 and one line; device counts are faked through `GpuProbe`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ncclscope.capture import CaptureOptions, run_capture
from ncclscope.capture import launcher as launcher_mod
from ncclscope.capture.preflight import GpuProbe, PreflightError, preflight
from ncclscope.cli import main


def gpus(n: int, *, nccl: bool = True, version: tuple[int, ...] | None = (2, 27, 3)) -> GpuProbe:
    return GpuProbe(
        torch_version="2.13.0+cu128",
        nccl_available=nccl,
        cuda_available=n > 0,
        device_count=n,
        nccl_version=version,
    )


CPU_WHEEL = GpuProbe(torch_version="2.13.0+cpu", nccl_available=False, cuda_available=False, device_count=0)


def check(
    probe: GpuProbe,
    nproc: int,
    *,
    shared: bool = False,
    env: dict[str, str] | None = None,
    backend: str = "nccl",
) -> tuple[str, ...]:
    return preflight(
        probe, backend=backend, nproc_per_node=nproc, allow_shared_gpu=shared, extra_env=env or {}
    )


def test_enough_gpus_pass_silently() -> None:
    assert check(gpus(8), 8) == () and check(gpus(8), 2) == ()


@pytest.mark.parametrize(
    ("probe", "message"),
    [
        (
            CPU_WHEEL,
            "this PyTorch (2.13.0+cpu) is built without NCCL and sees no CUDA GPU; use --backend gloo",
        ),
        (gpus(0), "sees no CUDA GPU (torch.cuda.is_available() is False"),
        (gpus(2, nccl=False), "is built without NCCL; use --backend gloo"),
        (gpus(1), "--nproc-per-node 2: only 1 GPU(s) visible, and NCCL refuses two ranks on one GPU"),
    ],
)
def test_refusals_are_one_line(probe: GpuProbe, message: str) -> None:
    with pytest.raises(PreflightError) as e:
        check(probe, 2)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_fewer_gpus_than_ranks_suggests_both_ways_out() -> None:
    with pytest.raises(PreflightError, match=r"use --nproc-per-node 3, or --allow-shared-gpu"):
        check(gpus(3), 4)


def test_shared_gpu_on_purpose_says_what_nccl_will_do() -> None:
    (note,) = check(gpus(1, version=(2, 27, 3)), 2, shared=True)
    assert "2 ranks share 1 GPU(s) on purpose" in note and "NCCL 2.27.3 should refuse it" in note
    assert "NCCL_MULTI_RANK_GPU_ENABLE=1 allows it on NCCL >= 2.30" in note
    (old,) = check(gpus(1, version=(2, 27, 3)), 2, shared=True, env={"NCCL_MULTI_RANK_GPU_ENABLE": "1"})
    assert "predates NCCL_MULTI_RANK_GPU_ENABLE (2.30)" in old
    (new,) = check(gpus(1, version=(2, 30, 3)), 2, shared=True, env={"NCCL_MULTI_RANK_GPU_ENABLE": "1"})
    assert "NCCL >= 2.30 runs it" in new


def test_gloo_needs_no_gpu() -> None:
    assert check(CPU_WHEEL, 4, backend="gloo") == ()


def test_run_capture_refuses_before_writing_anything(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    calls: list[int] = []

    def probe() -> GpuProbe:
        calls.append(1)
        return gpus(1)

    with pytest.raises(PreflightError):
        run_capture(CaptureOptions(out_dir=tmp_path / "o", backend="nccl", nproc_per_node=2), probe=probe)
    assert calls == [1] and not (tmp_path / "o").exists()


def test_cli_with_faked_devices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    monkeypatch.setattr(launcher_mod, "probe_gpus", lambda: gpus(1))
    assert main(["capture", "--backend", "nccl", "--nproc-per-node", "2", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--allow-shared-gpu" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_nccl_on_this_cpu_box_is_one_line_exit_2(tmp_path: Path) -> None:
    """The acceptance check, as a user runs it: no fake, the real probe, a fresh process."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available() and torch.distributed.is_nccl_available():
        pytest.skip("this machine can run NCCL")
    p = subprocess.run(
        [sys.executable, "-m", "ncclscope", "capture", "--backend", "nccl"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert p.returncode == 2, p.stderr
    assert p.stdout == "" and len(p.stderr.splitlines()) == 1 and "Traceback" not in p.stderr
    assert p.stderr.startswith("ncclscope: error: --backend nccl:")
    assert list(tmp_path.iterdir()) == []  # no output directory left behind


def test_nccl_version_codes_decode_as_nccl_h_builds_them() -> None:
    from ncclscope.run.nccl import decode_nccl_version

    assert decode_nccl_version(23203) == (2, 32, 3)  # 2.9 on: X*10000 + Y*100 + Z
    assert decode_nccl_version(22809) == (2, 28, 9)
    assert decode_nccl_version(2708) == (2, 7, 8)  # before 2.9: X*1000 + Y*100 + Z


def test_no_loaded_nccl_is_none_not_an_error() -> None:
    from ncclscope.run.nccl import loaded_nccl_version

    v = loaded_nccl_version()  # a CPU box has no libnccl loaded; a GPU box gives a release
    assert v is None or (len(v) == 3 and v[0] >= 2)


def test_manifest_names_the_loaded_nccl_and_the_one_torch_was_built_with(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # samples/gpu/nccl232: torch 2.11 built with 2.28.9 ran NCCL 2.32.3 under LD_PRELOAD
    from types import SimpleNamespace

    from ncclscope.capture import evidence

    fake = SimpleNamespace(
        __version__="2.11.0",
        version=SimpleNamespace(cuda="13.0"),
        cuda=SimpleNamespace(is_available=lambda: True, nccl=SimpleNamespace(version=lambda: (2, 28, 9))),
    )
    monkeypatch.setattr(evidence, "loaded_nccl_version", lambda: (2, 32, 3))
    assert evidence.torch_versions(fake, "nccl") == {
        "torch": "2.11.0",
        "cuda": "13.0",
        "nccl": "2.32.3",
        "nccl_built": "2.28.9",
    }
    monkeypatch.setattr(evidence, "loaded_nccl_version", lambda: None)
    assert evidence.torch_versions(fake, "nccl")["nccl"] == "2.28.9"
