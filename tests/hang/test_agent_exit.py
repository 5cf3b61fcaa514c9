"""torchrun's agent line `failed (exitcode: C) local_rank: L (pid: P) of binary: …` names a worker killed by a
signal when the ChildFailedError table that names the global rank is not in the input (a pasted excerpt).

Line shapes: the agent logs through Python logging (`ERROR:torch.distributed.elastic.multiprocessing.api:…`,
torch 1.9-2.1) and, from 2.2, with a glog-like header (`E0325 20:57:27.620000 2606 …/api.py:869] …`); the
text after it is the same (torch/distributed/elastic/multiprocessing/api.py). Values here are made up.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope.session import analyze

OLD = "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: {c}) local_rank: 3 (pid: 4242) of binary: /usr/bin/python"
NEW = "E0101 10:00:00.000000 77 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: {c}) local_rank: 3 (pid: 4242) of binary: /usr/bin/python"
SENT = "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4241 closing signal SIGTERM"


def _exits(tmp_path: Path, lines: list[str]) -> list[str]:
    p = tmp_path / "agent.log"
    p.write_text("\n".join(lines) + "\n")
    return [f.title for f in analyze([str(p)]).findings if f.id == "rank-exited"]


@pytest.mark.parametrize("shape", [OLD, NEW])
@pytest.mark.parametrize(("code", "signal"), [(-9, "SIGKILL"), (-11, "SIGSEGV"), (-7, "SIGBUS")])
def test_a_signal_death_names_the_worker_and_the_signal(
    tmp_path: Path, shape: str, code: int, signal: str
) -> None:
    titles = _exits(tmp_path, [SENT, shape.format(c=code)])
    assert len(titles) == 1
    assert f"local_rank 3 (pid 4242) exited: torchrun reports exit code {code} ({signal}" in titles[0]


@pytest.mark.parametrize("code", [-15, -2, -6, 1, 0])
def test_a_stop_an_abort_or_an_exit_status_is_not_a_death_here(tmp_path: Path, code: int) -> None:
    # SIGTERM/SIGINT: the agent or the scheduler stopped it; SIGABRT: the NCCL watchdog's own abort (an echo);
    # a positive status: the worker's own exception, which its lines say better.
    assert _exits(tmp_path, [SENT, OLD.format(c=code)]) == []


def test_the_failure_table_names_the_rank_instead(tmp_path: Path) -> None:
    table = [
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2024-01-01_10:00:00",
        "  host      : node-a",
        "  rank      : 11 (local_rank: 3)",
        "  exitcode  : -9 (pid: 4242)",
    ]
    titles = _exits(tmp_path, [OLD.format(c=-9), *table])
    assert titles and all(t.startswith("Rank 11 exited") for t in titles)
