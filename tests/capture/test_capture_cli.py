"""Capture stage, launcher and CLI without running a job: the torchrun command, the environment,
option checks, and the errors a user sees (no torch needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ncclscope.capture import CaptureConfig, CaptureOptions, parse_faults, torchrun_argv
from ncclscope.capture.config import CONFIG_ENV, TORCHRUN_GRACE_S, job_env, rank_env
from ncclscope.capture.launcher import WORKER_MODULE, check_options, descendants, world_size
from ncclscope.cli import main
from ncclscope.errors import InputError


def test_torchrun_argv_is_a_list_with_the_worker_module(tmp_path: Path) -> None:
    argv = torchrun_argv(CaptureOptions(out_dir=tmp_path, nproc_per_node=3))
    assert argv[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert argv[-2:] == ["-m", WORKER_MODULE]
    assert "--standalone" in argv and argv[argv.index("--nproc-per-node") + 1] == "3"


def test_extra_torchrun_args_go_before_the_module(tmp_path: Path) -> None:
    extra = ("--rdzv-backend", "c10d", "--rdzv-endpoint", "node0:29500", "--node-rank", "1")
    argv = torchrun_argv(CaptureOptions(out_dir=tmp_path, nnodes="2", torchrun_args=extra))
    assert "--standalone" not in argv
    i = argv.index("--rdzv-backend")
    assert tuple(argv[i : i + len(extra)]) == extra and argv[-2:] == ["-m", WORKER_MODULE]


def test_world_size_and_option_checks(tmp_path: Path) -> None:
    assert world_size(CaptureOptions(out_dir=tmp_path, nproc_per_node=4, nnodes="1:2")) == 8
    with pytest.raises(InputError, match="--nnodes"):
        world_size(CaptureOptions(out_dir=tmp_path, nnodes="many"))
    with pytest.raises(InputError, match="outside the job"):
        check_options(CaptureOptions(out_dir=tmp_path / "new", faults=parse_faults(["hang:rank=2"])))
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "rank0.log").write_text("x")
    with pytest.raises(InputError, match="not an empty directory"):
        check_options(CaptureOptions(out_dir=tmp_path / "old"))
    with pytest.raises(InputError, match="--timeout"):
        check_options(CaptureOptions(out_dir=tmp_path / "new", timeout_s=0))
    with pytest.raises(InputError, match="rendezvous"):
        check_options(CaptureOptions(out_dir=tmp_path / "new", nnodes="2"))
    check_options(
        CaptureOptions(out_dir=tmp_path / "new", nnodes="2", torchrun_args=("--rdzv-endpoint", "h:1"))
    )
    notes = check_options(CaptureOptions(out_dir=tmp_path / "new", faults=parse_faults(["no-ib"])))
    assert notes and "only changes NCCL" in notes[0]
    late = check_options(CaptureOptions(out_dir=tmp_path / "new", backend="nccl", timeout_s=30))
    assert late and "grace" in late[0]
    assert check_options(CaptureOptions(out_dir=tmp_path / "new", backend="nccl")) == ()


def test_job_env_asks_nccl_and_pytorch_for_their_evidence(tmp_path: Path) -> None:
    cfg = CaptureConfig(
        out_dir=str(tmp_path),
        backend="nccl",
        coll=True,
        extra_env=(("FOO", "1"), ("NCCL_DEBUG_SUBSYS", "ALL")),
    )
    env = job_env(cfg)
    assert env["NCCL_DEBUG"] == "INFO" and env["TZ"] == "UTC"
    assert env["NCCL_DEBUG_SUBSYS"] == "ALL" and env["FOO"] == "1"  # --env wins
    assert env["NCCL_DEBUG_TIMESTAMP_LEVELS"] == "ALL" and "%6f" in env["NCCL_DEBUG_TIMESTAMP_FORMAT"]
    assert env["TORCH_CPP_LOG_LEVEL"] == "INFO" and env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"
    # The watchdog: abort the communicator but keep the process (2 = CleanUpOnly), monitoring on,
    # no blocking wait, and a dump wait that ends well inside torchrun's SIGTERM-to-SIGKILL grace.
    assert env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "2" and env["TORCH_NCCL_ENABLE_MONITORING"] == "1"
    assert env["TORCH_NCCL_BLOCKING_WAIT"] == "0"
    assert cfg.timeout_s + int(env["TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC"]) / 1000 <= TORCHRUN_GRACE_S / 2
    assert int(env["TORCH_FR_BUFFER_SIZE"]) > 0 and int(env["TORCH_NCCL_TRACE_BUFFER_SIZE"]) > 0
    prefix = str(tmp_path / "flight" / "nccl_trace_rank_")
    assert env["TORCH_FR_DUMP_TEMP_FILE"] == prefix == env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"]
    assert CaptureConfig.from_env({CONFIG_ENV: env[CONFIG_ENV]}) == cfg
    no_coll = job_env(CaptureConfig(out_dir=str(tmp_path)))["NCCL_DEBUG_SUBSYS"].split(",")
    assert "COLL" not in no_coll and {"INIT", "BOOTSTRAP", "ENV", "NET", "GRAPH", "TUNING"} <= set(no_coll)


def test_rank_env_gives_each_rank_its_own_nccl_file_and_faults(tmp_path: Path) -> None:
    cfg = CaptureConfig(out_dir=str(tmp_path), faults=parse_faults(["iface:rank=1,name=lo", "no-p2p"]))
    assert cfg.step_faults is False
    r0, r1 = rank_env(cfg, 0), rank_env(cfg, 1)
    assert r0["NCCL_DEBUG_FILE"] != r1["NCCL_DEBUG_FILE"] and r1["NCCL_DEBUG_FILE"].endswith("nccl_rank1.log")
    assert "%" not in r0["NCCL_DEBUG_FILE"]
    assert "NCCL_SOCKET_IFNAME" not in r0 and r1["GLOO_SOCKET_IFNAME"] == "lo"
    assert r0["NCCL_P2P_DISABLE"] == r1["NCCL_P2P_DISABLE"] == "1"


def test_config_steps_cover_late_faults(tmp_path: Path) -> None:
    cfg = CaptureConfig(out_dir=str(tmp_path))
    assert cfg.fault_step == 4 and cfg.steps == 6
    late = CaptureConfig(out_dir=str(tmp_path), faults=parse_faults(["crash:rank=0,at=9"]))
    assert late.steps == 11


def test_bad_spec_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capture", "--inject", "explode:rank=1"]) == 2
    err = capsys.readouterr().err
    assert "unknown fault 'explode'" in err and "Traceback" not in err


def test_bad_env_item_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capture", "--backend", "gloo", "--out", str(tmp_path / "o"), "--env", "NOEQUALS"]) == 2
    assert "--env: expected KEY=VALUE" in capsys.readouterr().err


def test_missing_torch_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "torch" else real(n, *a))
    assert main(["capture", "--backend", "gloo", "--out", str(tmp_path / "o")]) == 2
    assert "pip install 'ncclscope[capture]'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_ncclscope_imports_and_fails_cleanly_without_torch(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import ncclscope, ncclscope.capture, ncclscope.cli.capture\n"
        "from ncclscope.cli import main\n"
        f"sys.exit(main(['capture', '--out', {str(tmp_path / 'o')!r}]))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "pip install 'ncclscope[capture]'" in p.stderr and "Traceback" not in p.stderr


def test_descendants_finds_grandchildren() -> None:
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc")
    code = "import subprocess, sys, time; c = subprocess.Popen(['sleep', '30']); print(c.pid, flush=True); time.sleep(30)"
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        grandchild = int(p.stdout.readline())
        assert grandchild in descendants(p.pid) and grandchild in descendants(os.getpid())
    finally:
        for pid in descendants(p.pid):
            os.kill(pid, 9)
        p.kill()
        p.wait()


def test_run_manifest_keys_are_json(tmp_path: Path) -> None:
    # The config travels to every worker as JSON in one environment variable.
    cfg = CaptureConfig(out_dir=str(tmp_path), faults=parse_faults(["straggler:rank=1,delay_ms=5"]))
    assert json.loads(job_env(cfg)[CONFIG_ENV])["faults"][0]["delay_ms"] == 5.0
