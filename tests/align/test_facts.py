"""Align stage, job facts: each fact derived once from real lines, with how it was inferred and how sure."""

from __future__ import annotations

from pathlib import Path

from ncclscope.session import analyze

DATA = Path(__file__).resolve().parent / "data"
RCCL = str(DATA / "rccl1055_healthy_2gpu_2_18_3.log")


def test_rccl_init_complete_with_allocation_tail_counts_as_complete() -> None:
    """RCCL ends `Init COMPLETE` lines with `localSize N used B bytes`: both ranks complete, no init-incomplete."""
    s = analyze([RCCL])
    [comm] = s.facts.communicators
    assert (comm.nranks, comm.ranks_seen, comm.complete) == (2, 2, 2)
    assert "init-incomplete" not in {f.id for f in s.findings}


def test_rccl_library_and_single_node_are_facts() -> None:
    f = analyze([RCCL]).facts
    assert f.library.value == "RCCL 2.18.3+hip6.0" and f.library.sure == "proven"
    assert f.multi_node.value is False and f.nodes.value == 1
    assert f.world_size.value == 2
    assert [i.whole for i in f.inputs] == [True]


def test_docker_bridge_address_on_a_single_node_job_is_no_warning() -> None:
    """eth0 at 172.17.0.3 inside one container: nothing leaves the host, so no warning or error."""
    s = analyze([RCCL])
    assert not [f for f in s.findings if f.severity in ("error", "warning")]


# Init lines of mlperf51dell_2x8_b200_rgat (../shared/corpus/complete; NCCL 2.27.7): global ranks 0, 1 on
# node-00 and 8 on node-01 of the 16-rank world; then a 2-rank communicator {0, 8} (comm-local ranks 0, 1)
# whose NET line node-01 prints with comm-local ranks. Composed: the 2-rank Init and NET lines reuse the
# run's processes with NCCL 2.27's formats, because no public log holds such a pair whole.
SUBCOMM = """\
node-00:666739:666739 [0] NCCL INFO ncclCommInitRank comm 0x28606342 rank 0 nranks 16 cudaDev 0 nvmlDev 0 \
busId 3000 commId 0x2bd3d5d07936be00 - Init COMPLETE
node-00:666711:666711 [1] NCCL INFO ncclCommInitRank comm 0x2f2b8191 rank 1 nranks 16 cudaDev 1 nvmlDev 1 \
busId 2b000 commId 0x2bd3d5d07936be00 - Init COMPLETE
node-01:472534:472534 [0] NCCL INFO ncclCommInitRank comm 0x4d7be528 rank 8 nranks 16 cudaDev 0 nvmlDev 0 \
busId 3000 commId 0x2bd3d5d07936be00 - Init COMPLETE
node-00:666739:666739 [0] NCCL INFO ncclCommInitRank comm 0x28606399 rank 0 nranks 2 cudaDev 0 nvmlDev 0 \
busId 3000 commId 0xe8f3cec248045300 - Init COMPLETE
node-01:472534:472534 [0] NCCL INFO ncclCommInitRank comm 0x4d7be599 rank 1 nranks 2 cudaDev 0 nvmlDev 0 \
busId 3000 commId 0xe8f3cec248045300 - Init COMPLETE
node-01:472534:472534 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IBext_v10/0/GDRDMA
"""


def test_comm_local_ranks_are_read_in_their_communicator(tmp_path: Path) -> None:
    """`0 -> 1` printed by global rank 8 is comm-local: rank 0 of the 2-rank comm is on node-00, so the NET
    channel crosses hosts (read as world ranks 0 and 1, both on node-00, it looked like one host on the NIC)."""
    log = tmp_path / "subcomm.log"
    log.write_text(SUBCOMM)
    s = analyze([str(log)])
    assert not [f for f in s.findings if f.id == "p2p-degraded" and f.severity == "warning"]
    sizes = sorted((c.nranks, c.global_ranks) for c in s.facts.communicators)
    assert sizes == [(2, False), (16, True)]
