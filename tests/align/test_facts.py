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


def test_rccl_banner_behind_the_info_prefix_is_the_library(tmp_path: Path) -> None:
    """Under NCCL_DEBUG=INFO RCCL prints its banner as an INFO line (`… NCCL INFO RCCL version : X`), under
    WARN bare; both name the library and its version. Built from RCCL's banner shape; the real file is
    samples/complete2/mlperf51mangoboost_mi300x_2node_lora."""
    banner = "RCCL version : 2.22.3-HEAD:271856d"
    for i, line in enumerate((f"node-a:10:10 [0] NCCL INFO {banner}", banner)):
        log = tmp_path / f"r{i}.log"
        log.write_text(
            f"{line}\nnode-a:10:20 [0] NCCL INFO comm 0xa rank 0 nranks 1 cudaDev 0 busId 1000 - Init COMPLETE\n"
        )
        lib = analyze([str(log)]).facts.library
        assert (lib.value, lib.sure) == ("RCCL 2.22.3-HEAD:271856d", "proven")
    real = (
        Path(__file__).resolve().parents[2]
        / "samples"
        / "complete2"
        / "mlperf51mangoboost_mi300x_2node_lora.log.gz"
    )
    assert analyze([str(real)]).facts.library.value == "RCCL 2.22.3-HEAD:271856d"


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


def test_coll_lines_after_start_prove_init_finished() -> None:
    """Rank 1's `Init COMPLETE` is not in the excerpt, but its COLL lines on the same comm pointer prove init
    finished: no init-incomplete (it was an error: '1 rank(s) started init but never completed while 1 did')."""
    s = analyze([str(DATA / "rocm6074_excerpt_no_complete_rank1.log")])
    assert "init-incomplete" not in {f.id for f in s.findings}
    assert s.facts.opcount_sequence.value is True


COMPLETE = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "complete"


def test_two_jobs_in_one_directory_are_not_one_job_on_two_versions(tmp_path: Path) -> None:
    """Two whole healthy runs (NCCL 2.18.5, 16 ranks; NCCL 2.25.1, 16 ranks) copied into one directory: before,
    an ERROR 'Ranks run different NCCL versions' and an env-mismatch ERROR; now one several-jobs warning."""
    import gzip
    import shutil

    import pytest

    rgat = COMPLETE / "mlperf51dell_2x8_b200_rgat.log"
    if not rgat.exists():
        pytest.skip("../shared/corpus/complete is absent")
    bert = Path(__file__).resolve().parents[2] / "samples" / "complete" / "mlperf50dell_2x8_h200_bert.log.gz"
    (tmp_path / "bert.log").write_bytes(gzip.decompress(bert.read_bytes()))
    shutil.copy(rgat, tmp_path / "rgat.log")
    s = analyze([str(tmp_path)])
    assert s.facts.several_jobs.value is True and len(s.facts.jobs) == 2
    bad = {(f.id, f.severity) for f in s.findings if f.severity in ("error", "warning")}
    assert bad == {("several-jobs", "warning")}
    # each run alone is still one job
    assert analyze([str(tmp_path / "bert.log")]).facts.jobs == ()


def _glue(lines: list[str], row: int, other: int) -> str:
    """`lines` with line `other` run onto the end of line `row` (two writers sharing one stdout), in place of both."""
    glued = lines[row].rstrip("\n") + lines[other]
    return "".join(glued if k == row else ln for k, ln in enumerate(lines) if k != other)


def test_a_line_glued_to_a_prefix_is_no_second_host(tmp_path: Path) -> None:
    """The RCCL run's `[GPU0] Epoch 9 | … Steps: 32` with rank 1's next NCCL line run onto it reads as host
    `32b1cc0f529b57`. Before: two hosts, so 'multi-node' and an iface-virtual ERROR and a socket finding on a
    one-container job; now the glued name is a phantom and the job stays single-node with no finding."""
    lines = (DATA / "rccl1055_healthy_2gpu_2_18_3.log").read_text().splitlines(keepends=True)
    row = next(k for k, ln in enumerate(lines) if ln.startswith("[GPU0] Epoch 9"))
    other = next(k for k, ln in enumerate(lines) if "Connection closed by localRank 1" in ln)
    log = tmp_path / "glued.log"
    log.write_text(_glue(lines, row, other))
    s = analyze([str(log)])
    assert s.facts.hosts == ("b1cc0f529b57",) and s.facts.phantom_hosts == ("32b1cc0f529b57",)
    assert s.facts.multi_node.value is False
    assert not [f for f in s.findings if f.severity in ("error", "warning")]
    assert set(s.ranks["host"].to_list()) == {"b1cc0f529b57"}


def test_an_nccl_tests_row_glued_to_a_prefix_keeps_the_real_hosts(tmp_path: Path) -> None:
    """samples/nccltests awstutorial (2 nodes, NCCL INFO interleaved with the table): its first table row with
    ip-host-01's `Init COMPLETE` line run onto it gives host `0e+00ip-host-01`, a phantom."""
    src = (
        Path(__file__).resolve().parents[2]
        / "samples"
        / "nccltests"
        / "awstutorial_a10g_2node_socket_nccl2_11_4.log"
    )
    lines = src.read_text().splitlines(keepends=True)
    row = next(k for k, ln in enumerate(lines) if ln.lstrip().startswith("8 ") and "float" in ln)
    other = next(k for k, ln in enumerate(lines) if "ip-host-01" in ln and "Init COMPLETE" in ln)
    log = tmp_path / "glued.log"
    log.write_text(_glue(lines, row, other))
    s = analyze([str(log)])
    assert s.facts.hosts == ("ip-host-00", "ip-host-01") and s.facts.phantom_hosts == ("0e+00ip-host-01",)
    assert s.ranks.height == 2
    assert [c.hosts for c in s.facts.communicators] == [("ip-host-00", "ip-host-01")]


# ROCm/ROCm#6074 comment #1 (RCCL 2.27.7): both ranks' Init and `comm … nRanks 2 nNodes 1` lines, with rank 1's
# host renamed `TARS-b`, as two k8s pods of one machine print (composed: one public log holding such a pair whole
# was not found). NCCL counts one node; the host names are pods.
PODS = """\
TARS:829507:829550 [0] NCCL INFO ncclCommInitRankConfig_impl comm 0x2bc1f840 rank 0 nranks 2 cudaDev 0 nvmlDev 0 \
busId 3000 commId 0xcde2ea451c75c2ba - Init START
TARS-b:829508:829551 [1] NCCL INFO ncclCommInitRankConfig_impl comm 0x3ab1b680 rank 1 nranks 2 cudaDev 1 nvmlDev 1 \
busId d000 commId 0xcde2ea451c75c2ba - Init START
TARS:829507:829550 [0] NCCL INFO comm 0x2bc1f840 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0
TARS-b:829508:829551 [1] NCCL INFO comm 0x3ab1b680 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0
TARS:829507:829550 [0] NCCL INFO Channel 00/0 : 0[3000] -> 1[d000] via P2P/IPC comm 0x2bc1f840 nRanks 02
TARS-b:829508:829551 [1] NCCL INFO Channel 00/0 : 1[d000] -> 0[3000] via P2P/IPC comm 0x3ab1b680 nRanks 02
TARS:829507:829550 [0] NCCL INFO ncclCommInitRankConfig_impl comm 0x2bc1f840 rank 0 nranks 2 cudaDev 0 nvmlDev 0 \
busId 3000 commId 0xcde2ea451c75c2ba - Init COMPLETE
TARS-b:829508:829551 [1] NCCL INFO ncclCommInitRankConfig_impl comm 0x3ab1b680 rank 1 nranks 2 cudaDev 1 nvmlDev 1 \
busId d000 commId 0xcde2ea451c75c2ba - Init COMPLETE
"""


def test_one_communicator_across_two_pods_is_one_node(tmp_path: Path) -> None:
    log = tmp_path / "pods.log"
    log.write_text(PODS.replace("\\\n", ""))
    s = analyze([str(log)])
    assert s.facts.hosts == ("TARS", "TARS-b")
    assert (s.facts.nodes.value, s.facts.multi_node.value, s.facts.nodes.sure) == (1, False, "proven")
    assert "nNodes 1" in s.facts.nodes.how
    assert not [f for f in s.findings if f.severity in ("error", "warning")]


ISSUES = COMPLETE.parent / "issues"


def test_172_17_on_a_physical_nic_is_not_called_a_docker_bridge() -> None:
    """nccl417 (../shared/corpus/issues): one VM, `Bootstrap : Using [0]enp68s0f0:172.17.6.148<0>`. Before: a
    warning calling it a Docker bridge; now info, conditional on the job spanning nodes (the count is unknown)."""
    import pytest

    log = ISSUES / "nccl417_stripped_prefix_vm_3gpu_hang_2_7_8.log"
    if not log.exists():
        pytest.skip("../shared/corpus/issues is absent")
    s = analyze([str(log)])
    [f] = [f for f in s.findings if f.id == "iface-virtual"]
    assert f.severity == "info" and f.title.startswith(
        "If this job spans nodes, check enp68s0f0 (172.17.6.148)"
    )
    assert s.facts.multi_node.value is None


def test_opcount_that_never_grows_is_a_fact(tmp_path: Path) -> None:
    """COLL lines that all print `opCount 0` (as nccl-tests runs do) say opCount is no sequence; the ROCm#6074
    lines, whose opCount grows 0, 1, …, say it is. Composed: the #6074 COLL line format with opCount 0 and a
    size sweep of counts."""
    line = (
        "TARS:{pid}:{pid} [{r}] NCCL INFO AllReduce: opCount 0 sendbuff 0x7973d6e00400 recvbuff 0x7973d6e00400 "
        "count {c} datatype 7 op 0 root 0 comm 0x{ptr} [nranks=2] stream 0x5502e7307980\n"
    )
    text = "".join(
        line.format(pid=pid, r=r, c=c, ptr=ptr)
        for c in (2, 4, 8, 16)
        for pid, r, ptr in ((829507, 0, "2bc1f840"), (829508, 1, "3ab1b680"))
    )
    log = tmp_path / "opcount0.log"
    log.write_text(text)
    f = analyze([str(log)]).facts.opcount_sequence
    assert (f.value, f.sure) == (False, "proven") and "opCount 0" in f.how
    grows = analyze([str(DATA / "rocm6074_excerpt_no_complete_rank1.log")]).facts.opcount_sequence
    assert grows.value is True


def test_opcount_zero_everywhere_is_no_collective_mismatch(tmp_path: Path) -> None:
    """ROCm#6074's two ranks with their COLL lines turned into an nccl-tests-like sweep (counts 1, 256, 65536, every
    line `opCount 0`, composed from its real lines). Before: a 'different collectives at #0' warning with an empty
    rank list (every size shares opCount 0 on both ranks); now opCount is known to be no sequence and the hang
    stage compares no positions."""
    out = []
    for ln in (DATA / "rocm6074_excerpt_no_complete_rank1.log").read_text().splitlines(keepends=True):
        if "opCount 1 " in ln:
            continue
        out += (
            [ln.replace("count 1 ", f"count {c} ") for c in (1, 256, 65536)] if "opCount 0 " in ln else [ln]
        )
    log = tmp_path / "sweep.log"
    log.write_text("".join(out))
    s = analyze([str(log)])
    assert s.facts.opcount_sequence.value is False
    assert s.hang.mismatches == ()
    assert not [f for f in s.findings if f.id == "collective-mismatch"]
