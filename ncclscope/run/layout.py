"""Run stage, layout: where one `ncclscope run` writes, under `--out DIR`.

Each wrapper writes under `DIR/<host>/`, so nodes sharing DIR (Slurm, a shared file system) never
collide; when a launcher starts several wrappers on one node (`srun --ntasks-per-node 8 ncclscope run
…`, `mpirun`), each gets `DIR/<host>/task<N>/`, N its task number. A caller may name the node
directory itself (`capture` on one node writes into DIR, on several into `DIR/<host>.node<N>/`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ncclscope.run.settings import FLIGHT_PREFIX, NCCL_FILE

# (global task id, tasks on this node) as each launcher exports them to the processes it starts.
# Slurm: srun sets SLURM_PROCID and, per step, SLURM_STEP_NUM_TASKS / SLURM_STEP_NUM_NODES.
# Open MPI: OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_LOCAL_SIZE.
_TASK_VARS = (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),)


def _int(env: Mapping[str, str], name: str) -> int | None:
    v = env.get(name, "").strip()
    return int(v) if v.isascii() and v.isdigit() and len(v) < 10 else None


def task_id(env: Mapping[str, str]) -> int | None:
    """This wrapper's task number when a launcher runs several wrappers on one node, else None."""
    procid = _int(env, "SLURM_PROCID")
    tasks, nodes = _int(env, "SLURM_STEP_NUM_TASKS"), _int(env, "SLURM_STEP_NUM_NODES")
    if procid is not None and tasks is not None and nodes is not None and tasks > nodes:
        return procid
    for rank_var, local_var in _TASK_VARS:
        rank, local = _int(env, rank_var), _int(env, local_var)
        if rank is not None and local is not None and local > 1:
            return rank
    return None


def safe_host(host: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", host).strip(".") or "host"


@dataclass(frozen=True)
class RunLayout:
    """Every path one wrapper writes, under its node directory."""

    out_dir: Path
    host: str
    task: int | None = None
    node: str | None = None  # the node directory under out_dir when the caller chose it ("": out_dir)

    @property
    def node_dir(self) -> Path:
        if self.node is not None:
            return self.out_dir / self.node
        d = self.out_dir / safe_host(self.host)
        return d if self.task is None else d / f"task{self.task}"

    @property
    def console_log(self) -> Path:
        """The command's stdout and stderr, each line stamped with its UTC arrival time."""
        return self.node_dir / "console.log"

    @property
    def nccl_dir(self) -> Path:
        return self.node_dir / Path(NCCL_FILE).parent

    @property
    def flight_dir(self) -> Path:
        return self.node_dir / Path(FLIGHT_PREFIX).parent

    @property
    def stacks_dir(self) -> Path:
        return self.node_dir / "stacks"

    def torchrun_dir(self, visible: bool) -> Path:
        """torchrun's own per-rank files (`--log-dir`). Hidden (a dot directory, which `analyze` does not
        walk) when every line is also in console.log through `--tee`, so each line is read once."""
        return self.node_dir / ("torchrun" if visible else ".torchrun")

    @property
    def manifest(self) -> Path:
        return self.node_dir / "run.json"

    @property
    def snapshot(self) -> Path:
        """The node's versions, topology and environment (Markdown: `analyze` skips it, people read it)."""
        return self.node_dir / "snapshot.md"

    def make_dirs(self, flight: bool = True) -> None:
        """NCCL opens its file without creating folders; PyTorch's dump writer neither."""
        for d in (self.nccl_dir, self.flight_dir) if flight else (self.nccl_dir,):
            d.mkdir(parents=True, exist_ok=True)
