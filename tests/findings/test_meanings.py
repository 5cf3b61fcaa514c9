"""Findings, meanings: every WARN format of the catalog lands in a family with a meaning, both ways.

From the catalog: each WARN entry has a family (or is listed in UNMEANT with a reason), per release too,
and a line generated from each recognisable WARN format is placed in a family through the same path a
log line takes (catalog name, else text and printed source file). From real lines: WARNs copied from the
corpus and samples (provenance beside each) land in the family whose meaning fits what their threads
concluded, and the rules give that meaning, with advice that follows the line's words.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from logframes_builder import logs, proc, run, warn

from ncclscope.findings import meanings as M
from ncclscope.session import analyze

# Catalog WARN ids that no family claims, each with why (none today: a new entry fails the suite).
UNMEANT: dict[str, str] = {}

A = proc("node-a", 100, 0)
CONV = re.compile(r"%[-+ #0]*(\d+|\*)?(\.\d+)?(hh|h|ll|l|z|j|t|L)?([diouxXcspfegEG%])")
SAMPLE = {"s": "mlx5_0", "p": "0x7f00", "c": "x", "%": "%", "f": "1.5", "e": "1.5", "g": "1.5"}


def _line(fmt: str) -> str:
    """One line NCCL could print with `fmt` (first line, values filled in)."""
    first = fmt.split("\n", 1)[0].rstrip()
    return CONV.sub(lambda m: SAMPLE.get(m.group(4).lower(), "1f" if m.group(4) in "xX" else "7"), first)


def _warn_entries() -> list[M._Msg]:
    return [m for m in M.catalog().messages if m.level == "WARN"]


def test_every_family_has_a_complete_meaning() -> None:
    fams = M.families()
    assert len({f.id for f in fams}) == len(fams)
    for f in fams:
        assert f.cause in M.CAUSES and f.severity in M.SEVERITIES, f.id
        assert len(f.why) > 40 and len(f.fix) > 20 and f.read, f.id
        assert all(re.fullmatch(r"[A-Z][A-Z0-9_]+", v) for v in f.variables), f.id
        for p in (*f.formats, *(v.message for v in f.variants)):
            re.compile(p)
        assert all(len(v.why) > 40 and len(v.fix) > 20 for v in f.variants), f.id
        assert all(v.cause is None or v.cause in M.CAUSES for v in f.variants), f.id
        assert f.formats or f.severity != "error", f"{f.id}: a per-file family is a guess, at most a warning"


def test_every_warn_format_has_a_family_or_a_reason() -> None:
    placed = M.family_by_catalog_id()
    missing = {m.id for m in _warn_entries() if m.id not in placed}
    assert missing == set(UNMEANT), sorted(missing - set(UNMEANT))[:20]


@pytest.mark.parametrize("repo", ["nccl", "rccl", "aws-ofi-nccl", "nccl-rdma-sharp-plugins"])
def test_every_release_has_a_meaning_for_every_warn_format(repo: str) -> None:
    cov = M.coverage(repo)
    assert cov and all(n > 0 for _, n in cov.values())
    short = {tag: f"{a}/{n}" for tag, (a, n) in cov.items() if a + sum(1 for _ in UNMEANT) < n}
    assert not short, short


def test_a_line_generated_from_each_warn_format_lands_in_a_family() -> None:
    lost = []
    for m in _warn_entries():
        if not m.format or len(re.sub(r"%\S*|\s", "", m.format.split("\n", 1)[0])) < 4:
            continue  # no literal text to name a line by (`%s`): placed by its source file only
        line = _line(m.format)
        fam = M.family_of(line)
        if fam is None:
            lost.append((m.id, line))
        elif M.family_by_catalog_id().get(m.id) != fam.id:
            # the catalog named the line as an earlier entry of the same text: that entry's family
            assert fam.matches_format(line) or fam.files, (m.id, line, fam.id)
    assert not lost, lost[:10]


# Real WARN lines (the text after `NCCL WARN`, the file NCCL printed) -> family, with where they come from.
REAL = [
    (
        "NET/OFI Couldn't open AV. RC: -22, ERROR: Invalid argument",
        None,
        "ofi-address-vector",
        "samples/logs/awsofi24_horovod_efa_ring_net_libfabric_2_4.log:13",
    ),
    (
        "SHARP group create: Streaming Tree lock failed (-18)",
        "sharp_plugin.c",
        "collnet-sharp",
        "corpus/issues/nccl1219_sharp_collnet_lock_failed_mixed_sharp_logs.log:8",
    ),
    (
        (
            "Mismatched collective detected, please check your collective calls at and around rank 39. You can "
            "use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective logs"
        ),
        "init.cc",
        "collective-mismatch",
        "corpus/issues/nccl296_mismatched_collective_2_4_8.log:1",
    ),
    (
        "ncclSocketInit: connecting to address with family 33022 is neither AF_INET(2) nor AF_INET6(10)",
        "misc/socket.cc",
        "incompatible-peer",
        "corpus/issues/awsofi715_sagemaker_cloudwatch_family_33022.log:6",
    ),
    (
        "Call to posix_fallocate failed: No space left on device",
        "include/shm.h",
        "shm-space",
        "corpus/issues/nccl342_shm_fallocate_no_prefix_2_7_3.log:1",
    ),
    (
        "Error: failed to extend /dev/shm/nccl-WU88OE to 9637892 bytes, error: No space left on device (28)",
        "misc/shmutils.cc",
        "shm-space",
        "corpus/issues/pytorchciinfra490_shm_no_space_timestamp_prefix.log:1",
    ),
    (
        "socketFinalizeAccept: wrong type 4 != 3",
        "misc/socket.cc",
        "incompatible-peer",
        "corpus/issues/nccltests188_socket_finalize_wrong_type.log:15",
    ),
    (
        "Cuda failure 'invalid resource handle'",
        "enqueue.cc",
        "cuda-failure",
        "corpus/issues/trtllm1670_repeated_cuda_oom_invalid_handle.log:3",
    ),
    (
        "Duplicate GPU detected : rank 2 and rank 0 both on CUDA device 1000",
        "init.cc",
        "duplicate-gpu",
        "corpus/issues/horovod3929_ompi_tag_prefix_duplicate_gpu.log:4",
    ),
    (
        "[Proxy Service 0] Failed to execute operation Close from rank 0, retcode 3",
        "proxy.cc",
        "proxy-op-failed",
        "corpus/complete/mlperf41oracle_128node_lora.log:1925",
    ),
    (
        "socketStartConnect: Connect to 10.69.24.2<45763> failed : Software caused connection abort",
        "misc/socket.cc",
        "socket-connect",
        "corpus/issues/nccltests166_socket_connect_abort_proxy.log:1",
    ),
    (
        "Net : No interface found in the same subnet as remote address a.b.c.d0<1778>",
        "misc/socket.cc",
        "socket-no-interface",
        "corpus/issues/nccl929_wsl_docker_bridge_ip_no_usable_interface.log:2",
    ),
]


REAL += [
    (
        "NET/IB : Got completion with error 12, opcode 0, len 32633, vendor err 129",
        "transport/net_ib.cc",
        "ib-completion",
        "corpus/issues/nccl394_md_quote_pdsh_prefix_gid_table_change_2_5_7.log:5",
    ),
    (
        "NET/IB : Got async event : GID table change",
        "transport/net_ib.cc",
        "ib-completion",
        "corpus/issues/nccl394_md_quote_pdsh_prefix_gid_table_change_2_5_7.log:1",
    ),
    (
        "Socket creation failed : Address family not supported by protocol",
        "include/socket.h",
        "socket-create",
        "corpus/issues/nccl210_socket_creation_failed_af_2_4.log:1",
    ),
    (
        "Cannot get incoming CPU.",
        "net_fastsocket.cc",
        "fastsocket-flow-placement",
        "corpus/issues/fastsocket4_gcp_fastsocket_warns.log:1",
    ),
    (
        "NET/OFI OFI fi_getinfo() call failed: No data available",
        None,
        "ofi-provider",
        "corpus/issues/awsofi1020_ofi_getinfo_failed_ts_prefix.log:1",
    ),
    (
        "Net : Call to recv from 10.48.180.247<58355> failed : Broken pipe",
        "misc/socket.cc",
        "socket-peer-closed",
        "corpus/issues/nccl795_aws_p4d_remote_crash_broken_pipe.log:1",
    ),
]


@pytest.mark.parametrize(
    ("message", "src", "family", "origin"), REAL, ids=[r[3].rsplit("/", 1)[-1] for r in REAL]
)
def test_real_lines_land_in_their_family(message: str, src: str | None, family: str, origin: str) -> None:
    fam = M.family_of(message, src)
    assert fam is not None and fam.id == family, (origin, fam)


def test_named_misses_of_issue_28_have_meanings() -> None:
    # Made from the catalog's formats (no corpus line has them): ibv_modify_qp, SHARP/CollNet, NVML,
    # NCCL_GRAPH_FILE, aws-ofi address vectors, the 2.29 empty-address family line.
    cases = {
        "Call to ibv_modify_qp failed with error Invalid argument errno 22": "ib-modify-qp",
        "Failed to open libnvidia-ml.so.1": "nvml-missing",
        "Could not open XML graph file /opt/microsoft/ncv4/graph.xml : No such file or directory": "graph-file",
        "NET/OFI Unable to insert remote address into address vector for device 0. RC: -22": "ofi-address-vector",
        "ncclSocketInit: connecting to address  with family 1 is neither AF_INET(2) nor AF_INET6(10)": "incompatible-peer",
        "Bootstrap Root : rank 3 of 8 ranks has already checked in": "bootstrap-rank-claimed-twice",
        "NET/IB : req 0/1 tag 7 peer 10.0.0.2<5000> collective mismatch error, local size 64 remote size 128": (
            "ib-collective-mismatch"
        ),
    }
    for line, want in cases.items():
        fam = M.family_of(line)
        assert fam is not None and fam.id == want, (line, fam)


def test_a_warn_with_a_family_gets_its_meaning_and_cause_class() -> None:
    lf = logs(
        warnings=[
            warn(
                A,
                "other",
                "Bootstrap Root : rank 3 of 8 ranks has already checked in",
                src_file="bootstrap.cc",
            )
        ]
    )
    assert run("unexplained-warn", lf) == []
    [f] = run("nccl-warn", lf)
    assert f.severity == "error" and f.metrics["cause_class"] == "configuration"
    assert f.metrics["family"] == "bootstrap-rank-claimed-twice" and "same rank" in f.why
    assert any("src/bootstrap.cc:" in s for s in f.metrics["source"])  # file:line (releases) of the format


def test_advice_follows_the_words_of_the_line() -> None:
    full = warn(
        A,
        "shm",
        "Error: failed to extend /dev/shm/nccl-x to 9637892 bytes, error: No space left on device (28)",
    )
    mapped = warn(A, "shm", "Error: Could not map /dev/shm/nccl-x size 9637892, error: Invalid argument (22)")
    [f1] = run("nccl-warn", logs(warnings=[full]))
    [f2] = run("nccl-warn", logs(warnings=[mapped]))
    assert "--shm-size" in f1.fix and "/dev/shm is full" in f1.why
    assert "will not help" in f2.fix and "/dev/shm had room" in f2.why


def test_a_benign_family_is_reported_as_benign_not_as_a_problem() -> None:
    lf = logs(
        warnings=[warn(A, "other", "MSCCL++: Cannot enable MSCCL++; environment is not MSCCL compatible")]
    )
    assert run("nccl-warn", lf) == [] and run("unexplained-warn", lf) == []
    [b] = run("benign-warn", lf)
    fam = M.family_of("MSCCL++: Cannot enable MSCCL++ on gfx90a architecture")
    assert b.severity == "info" and fam is not None and fam.cause == "benign"


def test_a_warn_no_family_claims_stays_unexplained() -> None:
    lf = logs(warnings=[warn(A, "other", "Weird thing 17 happened on 0x7f00")])
    assert run("nccl-warn", lf) == []
    [u] = run("unexplained-warn", lf)
    assert "Weird thing 17" in u.title


def test_a_line_of_a_newer_release_gets_the_meaning_of_the_file_that_printed_it() -> None:
    # 2.31/2.32 formats are known from the wheels' strings only; NCCL prints `file:line` in each WARN.
    fam = M.family_of("NET/IB: something 2.33 will say about QP 12", "transport/net_ib/p2p.cc")
    assert fam is not None and fam.id == "ib-transport"
    assert M.family_of("something 2.33 will say", None) is None


def test_the_nccl_text_torch_quotes_after_last_error_gets_its_meaning(tmp_path: Path) -> None:
    # PyTorch's DistBackendError quotes NCCL's last WARN on the line after `Last error:` without a prefix.
    log = tmp_path / "rank1.log"
    log.write_text(
        "[rank1]: torch.distributed.DistBackendError: NCCL error in: .../ProcessGroupNCCL.cpp:1727, invalid "
        "usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.19.3\n"
        "[rank1]: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
        "[rank1]: Last error:\n"
        "[rank1]: Call to ibv_modify_qp failed with error Invalid argument errno 22\n"
    )
    [f] = [f for f in analyze([str(log)]).findings if f.id == "nccl-warn"]
    assert f.metrics["family"] == "ib-modify-qp" and "GID index" in f.why and f.evidence[0].line == 3


def test_nccl_tests_failures_get_the_meaning_of_the_error_they_quote(tmp_path: Path) -> None:
    # nccl-tests src/common.h: `host: Test CUDA failure file:line '<cuda error>'`, `Test NCCL failure
    # file:line '<ncclGetErrorString> / <ncclGetLastError>'` (the last error since nccl-tests 2.13).
    log = tmp_path / "nccltests.log"
    log.write_text(
        "node-a: Test CUDA failure common.cu:891 'out of memory'\n"
        "node-b: Test NCCL failure common.cu:1005 'unhandled system error (run with NCCL_DEBUG=INFO for "
        "details) / Call to connect returned Connection refused, retrying'\n"
        "node-c: Test NCCL failure common.cu:1005 'remote process exited or there was a network error'\n"
    )
    found = {f.metrics["family"]: f for f in analyze([str(log)]).findings if f.id == "nccl-warn"}
    assert found["cuda-failure"].metrics["cause_class"] == "resource"
    assert "refused" in found["socket-connect"].title and "Nothing listened" in found["socket-connect"].why
    assert found["nccl-result-remote"].metrics["cause_class"] == "peer-failure"
