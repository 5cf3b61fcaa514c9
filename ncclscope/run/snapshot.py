"""Run stage, node snapshot: versions (Python, torch, CUDA, NCCL, driver), `nvidia-smi topo -m`,
`ip addr`, `ibv_devinfo`, `ncclparam -l` and the job's NCCL_*/TORCH_* environment, written as one
Markdown file per node. Every probe is optional, has a timeout and a bounded output; a missing tool
or a probe that fails or hangs is noted, never fatal. Probes run with the job's own environment, so
LD_PRELOAD / LD_LIBRARY_PATH pick the same NCCL the job loads.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ncclscope.run.tee import utc_now
from ncclscope.version import __version__

MAX_OUTPUT = 256 * 1024
# The variables that shape NCCL, gloo and PyTorch distributed, kept in the snapshot and the manifests.
_ENV_PREFIXES = ("NCCL_", "TORCH_", "GLOO_", "CUDA_", "MASTER_", "TORCHELASTIC_", "OMP_", "PYTORCH_")
_ENV_NAMES = frozenset(
    {
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "ROLE_RANK",
        "ROLE_WORLD_SIZE",
        "GROUP_WORLD_SIZE",
        "TZ",
        "NVIDIA_VISIBLE_DEVICES",
    }
)
_VERSIONS = """
import json, platform
out = {"python": platform.python_version()}
try:
    import torch, torch.distributed as dist
    out.update(torch=torch.__version__, cuda=torch.version.cuda, gpus=torch.cuda.device_count())
    if dist.is_available() and dist.is_nccl_available():
        out["nccl_built"] = ".".join(map(str, torch.cuda.nccl.version()))
        try:
            from ncclscope.run.nccl import loaded_nccl_version
            v = loaded_nccl_version()
            out["nccl_loaded"] = ".".join(map(str, v)) if v else None
        except Exception:
            pass
except Exception as e:
    out["torch_error"] = f"{type(e).__name__}: {e}"[:300]
print(json.dumps(out))
"""


def captured_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables that shape NCCL, gloo and PyTorch distributed, sorted by name."""
    return {k: env[k] for k in sorted(env) if k in _ENV_NAMES or k.startswith(_ENV_PREFIXES)}


@dataclass(frozen=True)
class Probe:
    name: str
    argv: tuple[str, ...]
    timeout_s: float = 20.0
    why: str = ""


def default_probes(python: str | None = None) -> tuple[Probe, ...]:
    """`python`: the job's interpreter, when known (else ncclscope's own)."""
    return (
        Probe(
            "versions",
            (python or sys.executable, "-c", _VERSIONS),
            90.0,
            "torch, CUDA and NCCL as the job's Python sees them",
        ),
        Probe(
            "driver",
            ("nvidia-smi", "--query-gpu=index,name,pci.bus_id,driver_version", "--format=csv,noheader"),
            why="GPUs, bus ids and the CUDA driver",
        ),
        Probe("topology", ("nvidia-smi", "topo", "-m"), why="GPU-GPU and GPU-NIC paths (NVLink, PCIe, NUMA)"),
        Probe("ip-addr", ("ip", "addr"), why="interfaces and addresses NCCL_SOCKET_IFNAME chooses from"),
        Probe("ibv-devinfo", ("ibv_devinfo",), why="InfiniBand/RoCE HCAs, ports and link state"),
        Probe("ncclparam", ("ncclparam", "-l"), why="NCCL's parameters and their values"),
    )


@dataclass(frozen=True)
class ProbeResult:
    probe: Probe
    status: str  # ok | missing | timeout | failed (exit N) | error
    output: str = ""
    elapsed_s: float = 0.0
    detail: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "command": list(self.probe.argv[:1])
            + (["…"] if self.probe.name == "versions" else list(self.probe.argv[1:])),
            "status": self.status,
            "detail": self.detail,
            "elapsed_s": round(self.elapsed_s, 3),
        }


def run_probe(p: Probe, env: Mapping[str, str]) -> ProbeResult:
    if shutil.which(p.argv[0], path=env.get("PATH")) is None:
        return ProbeResult(p, "missing", detail=f"{p.argv[0]} not found on PATH")
    t0 = time.monotonic()
    try:
        done = subprocess.run(
            list(p.argv),
            check=False,
            env=dict(env),
            capture_output=True,
            timeout=p.timeout_s,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"")[:MAX_OUTPUT].decode("utf-8", "replace")
        return ProbeResult(p, "timeout", out, time.monotonic() - t0, f"no answer within {p.timeout_s:g} s")
    except OSError as e:
        return ProbeResult(p, "error", detail=str(e.strerror or e))
    text = (done.stdout[:MAX_OUTPUT] + done.stderr[: MAX_OUTPUT // 4]).decode("utf-8", "replace")
    status = "ok" if done.returncode == 0 else "failed"
    detail = "" if done.returncode == 0 else f"exit status {done.returncode}"
    return ProbeResult(p, status, text, time.monotonic() - t0, detail)


@dataclass(frozen=True)
class Snapshot:
    results: tuple[ProbeResult, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    taken_utc: str = ""
    versions: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "taken_utc": self.taken_utc,
            "probes": {r.probe.name: r.to_json() for r in self.results},
            "versions": self.versions,
        }


def take(
    env: Mapping[str, str], probes: Sequence[Probe] | None = None, python: str | None = None
) -> Snapshot:
    results = tuple(run_probe(p, env) for p in (default_probes(python) if probes is None else probes))
    return Snapshot(results, tuple(captured_env(env).items()), utc_now(), _versions(results))


def _versions(results: Sequence[ProbeResult]) -> dict[str, object]:
    out: dict[str, object] = {}
    for r in results:
        if r.probe.name == "versions" and r.status == "ok":
            out.update(_json_line(r.output))
        if r.probe.name == "driver" and r.status == "ok":
            drivers = sorted(
                {ln.split(",")[-1].strip() for ln in r.output.splitlines() if ln.count(",") >= 3}
            )
            out["driver"] = ", ".join(drivers) or None
    return out


def _json_line(text: str) -> dict[str, object]:
    """The probe's JSON line; torch may print warnings around it (stderr is kept with the output)."""
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict):
                return data
    return {}


def fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def to_markdown(snap: Snapshot, host: str) -> str:
    lines = [f"# Node snapshot: {host}", "", f"Taken {snap.taken_utc} by ncclscope {__version__}.", ""]
    for r in snap.results:
        shown = (
            " ".join(r.probe.argv)
            if r.probe.name != "versions"
            else "python -c <versions of torch, CUDA, NCCL>"
        )
        lines += [f"## {r.probe.name}", "", f"`{shown}`: {r.status}" + (f" ({r.detail})" if r.detail else "")]
        if r.probe.why:
            lines.append(f"({r.probe.why})")
        if r.output:
            f = fence(r.output)
            lines += ["", f, r.output.rstrip("\n"), f]
        lines.append("")
    body = "\n".join(f"{k}={v}" for k, v in snap.env)
    f = fence(body)
    lines += [
        "## environment",
        "",
        "The job's NCCL_*, TORCH_*, GLOO_*, CUDA_*, … variables.",
        "",
        f,
        body,
        f,
        "",
    ]
    return "\n".join(lines)


def write(snap: Snapshot, path: Path, host: str) -> None:
    path.write_text(to_markdown(snap, host), encoding="utf-8")
