"""Several nodes sharing one run directory (`srun ncclscope run --out /shared/run42 -- …`): each
writes under its own host folder and, not being alone, diagnoses only its own; `analyze DIR` reads
every node."""

from __future__ import annotations

import sys
from pathlib import Path

from ncclscope.run import RunOptions, diagnose, prepare, record
from ncclscope.session import analyze
from tests.run.conftest import FAKE


def test_two_nodes_share_the_run_directory(tmp_path: Path) -> None:
    out = tmp_path / "run42"
    prepared = []
    for host, first in (("node1", 0), ("node2", 2)):
        cmd = (sys.executable, str(FAKE), "--ranks", "2", "--first-rank", str(first), "--world", "4")
        prepared.append(
            prepare(
                RunOptions(command=cmd, out_dir=out, host=host, probes=()), environ={"PATH": "/usr/bin:/bin"}
            )
        )
    prepared[1].layout.make_dirs()  # node2 has started: node1 is not alone when it ends
    for p in prepared:
        rec = record(p)
        d = diagnose(rec.layout)
        assert d.scope == rec.layout.node_dir  # its own folder only
        assert [r.parent for r in d.reports] == [rec.layout.node_dir] * 3
    assert sorted(p.name for p in out.iterdir()) == ["node1", "node2"]
    assert len(list(out.glob("node*/nccl/nccl.*.log"))) == 4
    s = analyze([str(out)])
    assert sorted(s.ranks["rank"].to_list()) == [0, 1, 2, 3]
