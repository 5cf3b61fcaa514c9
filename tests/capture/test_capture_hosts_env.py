"""Capture stage, `--env` precedence and multi-node output: a user's variable wins over capture's
settings and over the variables a fault sets; each node writes under its own subdirectory of --out.
The unit checks need no torch; the two runs (gloo, CPU) do."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ncclscope.capture import CaptureConfig, CaptureOptions, parse_faults, plan, run_capture
from ncclscope.capture.config import rank_env, workload_env
from ncclscope.capture.launcher import config_for
from ncclscope.errors import InputError


def test_env_wins_over_fault_variables_and_pinned_knobs(tmp_path: Path) -> None:
    cfg = CaptureConfig(
        out_dir=str(tmp_path),
        faults=parse_faults(["no-p2p", "iface:rank=1,name=eth9"]),
        extra_env=(
            ("NCCL_P2P_DISABLE", "0"),
            ("NCCL_SOCKET_IFNAME", "ib0"),
            ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "3"),
        ),
    )
    job = workload_env(cfg)
    assert job["NCCL_P2P_DISABLE"] == "0" and job["NCCL_SOCKET_IFNAME"] == "ib0"
    assert job["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "3"
    r1 = rank_env(cfg, 1)
    # The worker applies rank_env over the job's environment: what it leaves out, --env decided.
    assert "NCCL_P2P_DISABLE" not in r1 and "NCCL_SOCKET_IFNAME" not in r1
    assert r1["GLOO_SOCKET_IFNAME"] == "eth9"  # the fault still sets what the user did not give
    without = rank_env(CaptureConfig(out_dir=str(tmp_path), faults=cfg.faults), 1)
    assert without["NCCL_P2P_DISABLE"] == "1" and without["NCCL_SOCKET_IFNAME"] == "eth9"


def test_one_node_writes_into_out_itself(tmp_path: Path) -> None:
    opts = CaptureOptions(out_dir=tmp_path / "cap", host="node-a")
    assert opts.host_dir == tmp_path / "cap"
    assert Path(config_for(opts).out_dir) == (tmp_path / "cap").resolve()


def test_each_node_gets_its_own_directory(tmp_path: Path) -> None:
    rdzv = ("--rdzv-backend", "c10d", "--rdzv-endpoint", "node-a:29500")
    a = CaptureOptions(out_dir=tmp_path / "cap", nnodes="2", host="node-a", torchrun_args=rdzv)
    b = CaptureOptions(out_dir=tmp_path / "cap", nnodes="2", host="node-b", torchrun_args=rdzv)
    assert a.host_dir == tmp_path / "cap" / "node-a" and b.host_dir == tmp_path / "cap" / "node-b"
    ranked = CaptureOptions(
        out_dir=tmp_path / "cap", nnodes="1:2", host="x/y", torchrun_args=(*rdzv, "--node-rank=1")
    )
    assert ranked.host_dir == tmp_path / "cap" / "x_y.node1"
    # Node a has written its files: node b may still start in the same --out, node a again may not.
    config_for(a).layout.make_dirs()
    (a.host_dir / "logs" / "rank0.log").write_text("x")
    assert plan(b, {})[0].layout.node_dir == (tmp_path / "cap" / "node-b").resolve()
    with pytest.raises(InputError, match="node-a: already holds a run"):
        plan(a, {})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.torch
@pytest.mark.slow
def test_env_beats_a_fault_in_a_real_run(tmp_path: Path) -> None:
    """iface on a name that does not exist makes gloo fail at init; --env GLOO_SOCKET_IFNAME=lo undoes it."""
    pytest.importorskip("torch")
    faults = parse_faults(["iface:rank=1,name=nosuch0"])
    broken = run_capture(CaptureOptions(out_dir=tmp_path / "f", backend="gloo", faults=faults, timeout_s=5))
    assert broken.returncode != 0
    assert "Unable to find address for: nosuch0" in (tmp_path / "f" / "logs" / "rank1.log").read_text()
    res = run_capture(
        CaptureOptions(
            out_dir=tmp_path / "o",
            backend="gloo",
            faults=faults,
            timeout_s=5,
            extra_env=(("GLOO_SOCKET_IFNAME", "lo"),),
        )
    )
    assert res.returncode == 0
    m = json.loads((tmp_path / "o" / "manifest" / "rank1.json").read_text())
    assert m["status"] == "completed" and m["env"]["GLOO_SOCKET_IFNAME"] == "lo"
    assert m["env"]["NCCL_SOCKET_IFNAME"] == "nosuch0"


@pytest.mark.torch
@pytest.mark.slow
def test_two_nodes_share_one_out(tmp_path: Path) -> None:
    """Two launchers on this host play two nodes (one gloo rank each, static rendezvous)."""
    pytest.importorskip("torch")
    out, port = tmp_path / "cap", _free_port()
    cmd = [
        sys.executable,
        "-m",
        "ncclscope",
        "capture",
        "--backend",
        "gloo",
        "--timeout",
        "5",
        "--nnodes",
        "2",
        "--nproc-per-node",
        "1",
        "--out",
        str(out),
        "-q",
        "--no-snapshot",
        "--no-analyze",
        "--",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(port),
        "--node-rank",
    ]
    procs = [
        subprocess.Popen([*cmd, str(n)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for n in (0, 1)
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    host = socket.gethostname()
    for n in (0, 1):
        node = out / f"{host}.node{n}"
        run = json.loads((node / "capture.json").read_text())
        assert run["returncode"] == 0 and run["node_dir"] == node.name and run["world_size"] == 2
        assert (node / "console.log").exists() and (node / "logs" / f"rank{n}.log").exists()
        assert json.loads((node / "run.json").read_text())["node_dir"] == node.name
        assert json.loads((node / "manifest" / f"rank{n}.json").read_text())["status"] == "completed"
        assert not (node / "logs" / f"rank{1 - n}.log").exists()  # the other node's rank is elsewhere
    assert f"next: ncclscope analyze {out}" in outs[0]
