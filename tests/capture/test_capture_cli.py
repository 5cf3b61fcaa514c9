"""Capture stage, launcher and CLI without running a job: the torchrun command, the environment,
option checks, and the errors a user sees (no torch needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ncclscope.capture import CaptureConfig, CaptureOptions, parse_faults, plan, torchrun_argv
from ncclscope.capture.config import CONFIG_ENV, TORCHRUN_GRACE_S, rank_env, workload_env
from ncclscope.capture.launcher import WORKER_MODULE, check_options, world_size
from ncclscope.cli import main
from ncclscope.errors import InputError
from ncclscope.run.supervise import descendants


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
    with pytest.raises(InputError, match="already holds a run"):  # run's check, through capture's plan
        plan(CaptureOptions(out_dir=tmp_path / "old"), {})
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="not a directory"):
        plan(CaptureOptions(out_dir=tmp_path / "file"), {})
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


def test_the_job_gets_runs_evidence_settings_and_its_own(tmp_path: Path) -> None:
    """capture is run applied to the bundled job: run's plan sets the evidence variables (a shorter
    dump wait for capture's short timeouts) around the job's own settings; --env wins over both."""
    out = tmp_path / "o"
    opts = CaptureOptions(
        out_dir=out, backend="nccl", coll=True, extra_env=(("FOO", "1"), ("NCCL_DEBUG_SUBSYS", "ALL"))
    )
    p, _ = plan(opts, {"PATH": "/usr/bin"})
    env, root = p.env, out.resolve()
    assert p.layout.node_dir == root  # one node: into --out itself
    assert env["NCCL_DEBUG"] == "INFO" and env["TZ"] == "UTC" and env["PATH"] == "/usr/bin"
    assert env["NCCL_DEBUG_SUBSYS"] == "ALL" and env["FOO"] == "1"  # --env wins
    kept = {c.setting.names[0]: c for c in p.choices if c.action == "kept"}
    assert set(kept) == {"NCCL_DEBUG_SUBSYS"}
    assert env["NCCL_DEBUG_TIMESTAMP_LEVELS"] == "ALL" and "%6f" in env["NCCL_DEBUG_TIMESTAMP_FORMAT"]
    assert env["NCCL_DEBUG_FILE"] == str(root / "nccl" / "nccl.%h.%p.log")  # run's, not one per rank
    assert env["TORCH_CPP_LOG_LEVEL"] == "INFO" and env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"
    # The watchdog: abort the communicator but keep the process (2 = CleanUpOnly), monitoring on,
    # no blocking wait, and a dump wait that ends well inside torchrun's SIGTERM-to-SIGKILL grace.
    assert env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "2" and env["TORCH_NCCL_ENABLE_MONITORING"] == "1"
    assert env["TORCH_NCCL_BLOCKING_WAIT"] == "0"
    wait = next(c for c in p.choices if c.setting.names[0] == "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC")
    assert wait.action == "set" and "capture" in wait.to_json()["why"]  # type: ignore[operator]
    assert opts.timeout_s + int(env["TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC"]) / 1000 <= TORCHRUN_GRACE_S / 2
    assert int(env["TORCH_FR_BUFFER_SIZE"]) > 0 and int(env["TORCH_NCCL_TRACE_BUFFER_SIZE"]) > 0
    prefix = str(root / "flight" / "nccl_trace_rank_")
    assert env["TORCH_FR_DUMP_TEMP_FILE"] == prefix == env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"]
    assert CaptureConfig.from_env({CONFIG_ENV: env[CONFIG_ENV]}).out_dir == str(root)
    # run's torchrun options go right after the module; the worker stays last
    assert p.launch.torchrun and p.launch.argv[3:5] == ("--log-dir", str(root / ".torchrun"))
    assert p.launch.argv[-2:] == ("-m", WORKER_MODULE)
    no_coll = plan(CaptureOptions(out_dir=tmp_path / "n"), {})[0].env["NCCL_DEBUG_SUBSYS"].split(",")
    assert "COLL" not in no_coll and {"INIT", "BOOTSTRAP", "ENV", "NET", "GRAPH", "TUNING"} <= set(no_coll)


def test_the_users_own_environment_wins_over_runs_settings(tmp_path: Path) -> None:
    p, _ = plan(CaptureOptions(out_dir=tmp_path / "o"), {"NCCL_DEBUG": "WARN"})
    assert p.env["NCCL_DEBUG"] == "WARN"
    c = next(c for c in p.choices if c.setting.names[0] == "NCCL_DEBUG")
    assert c.action == "kept" and c.user == (("NCCL_DEBUG", "WARN"),)


def test_rank_env_gives_each_rank_its_faults(tmp_path: Path) -> None:
    cfg = CaptureConfig(out_dir=str(tmp_path), faults=parse_faults(["iface:rank=1,name=lo", "no-p2p"]))
    assert cfg.step_faults is False
    r0, r1 = rank_env(cfg, 0), rank_env(cfg, 1)
    assert "NCCL_DEBUG_FILE" not in r0 and "NCCL_DEBUG_FILE" not in r1  # run sets it, one file per process
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
    assert json.loads(workload_env(cfg)[CONFIG_ENV])["faults"][0]["delay_ms"] == 5.0


def test_the_worker_names_its_nccl_file_and_dump_from_runs_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's manifest points at the files run's variables make for this process (or the user's)."""
    import socket

    from ncclscope.capture.config import Layout
    from ncclscope.capture.evidence import flight_path, nccl_file

    monkeypatch.setattr(socket, "gethostname", lambda: "gpu7.cluster.example")
    assert nccl_file(f"{tmp_path}/nccl/nccl.%h.%p.log") == tmp_path / "nccl" / f"nccl.gpu7.{os.getpid()}.log"
    assert nccl_file(None) is None and nccl_file("") is None
    lay = Layout(tmp_path)
    monkeypatch.delenv("TORCH_FR_DUMP_TEMP_FILE", raising=False)
    monkeypatch.delenv("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", raising=False)
    assert flight_path(lay, 3) == tmp_path / "flight" / "nccl_trace_rank_3"
    monkeypatch.setenv("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "/scratch/old_")  # the user's older name
    assert flight_path(lay, 3) == Path("/scratch/old_3")
    monkeypatch.setenv("TORCH_FR_DUMP_TEMP_FILE", "/scratch/fr_")  # PyTorch reads this one first
    assert flight_path(lay, 3) == Path("/scratch/fr_3")
