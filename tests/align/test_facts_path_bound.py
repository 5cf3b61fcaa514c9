"""Issue 30 item 2: the data path (align/facts_path.py) does not read every COLL line again for a big log.

Its owners are the lines naming a communicator: init lines, and COLL lines when there are at most
`OWNER_COLL_LINES` of them or TUNING lines need them (reading them all held ~0.5 KB per line: 2+ GiB for
7 M lines). Past the bound the paths come from the init lines, the same as with every COLL line read
when connections and channels follow their communicator's init.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ncclscope.align import facts_path
from ncclscope.align.rankmap import init_rows
from ncclscope.frames import FullFrames, LogFrames
from ncclscope.parse.logs.read import read_logs


def _log(tmp_path: Path) -> Path:
    lines = []
    for r in range(2):
        pre = f"node-0:{100 + r}:{200 + r} [{r}] NCCL INFO"
        init = f"{pre} ncclCommInitRank comm 0x55{r} rank {r} nranks 2 cudaDev {r} nvmlDev {r} busId {r}f000"
        lines += [
            f"{init} commId 0xe5509a - Init START",
            f"{pre} Channel 00/0 : {r}[{r}] -> {1 - r}[{1 - r}] via P2P/IPC",
            f"{init} commId 0xe5509a - Init COMPLETE",
        ]
        lines += [
            f"{pre} AllReduce: opCount {k:x} sendbuff 0x7f00 recvbuff 0x7f00 count 1024 datatype 7 op 0 "
            f"root 0 comm 0x55{r} [nranks=2] stream 0x5"
            for k in range(50)
        ]
    p = tmp_path / "run.log"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_past_the_bound_the_coll_lines_are_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lf = read_logs([str(_log(tmp_path))])
    assert lf.coll.lines == 100
    whole = facts_path.comm_paths(lf, init_rows(lf.inits))
    assert whole and whole[0].transports == (("P2P/IPC", 2),)  # one channel line per rank

    def boom() -> FullFrames:
        raise AssertionError("every COLL line read again")

    monkeypatch.setattr(facts_path, "OWNER_COLL_LINES", 99)
    big: LogFrames = dataclasses.replace(lf, rebuild=boom)
    assert facts_path.comm_paths(big, init_rows(big.inits)) == whole
    # A big input (only the evidence of its unknown lines kept): a re-read would keep every line: not read.
    assert facts_path.comm_paths(dataclasses.replace(big, unknown_count=10**7), init_rows(lf.inits)) == whole
    monkeypatch.setattr(facts_path, "OWNER_COLL_LINES", 100)  # within the bound: read (and here, raise)
    with pytest.raises(AssertionError, match="read again"):
        facts_path.comm_paths(dataclasses.replace(lf, rebuild=boom), init_rows(lf.inits))
