"""nccltests-no-mpi: several processes each running nccl-tests as a 1-rank job (built from nccl-tests'
src/common.cu output format; the device list and `nranks 1` Init lines as nccl-tests 2.13 and NCCL 2.18
print them)."""

from __future__ import annotations

from pathlib import Path

import ncclscope

TABLE = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  {pid} on     {host} device  0 [0x1b] NVIDIA A100-SXM4-80GB
{host}:{pid}:{pid} [0] NCCL INFO comm 0x55d1 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xabc{pid} - Init COMPLETE
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
   134217728      33554432     float     sum      -1    412.3  325.53    0.00      0    411.9  325.85    0.00      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0
#
"""


def _logs(tmp_path: Path, procs: list[tuple[str, int]]) -> list[str]:
    out = []
    for host, pid in procs:
        p = tmp_path / f"{host}.{pid}.log"
        p.write_text(TABLE.format(host=host, pid=pid))
        out.append(str(p))
    return out


def test_two_hosts_each_a_one_rank_job_is_no_mpi(tmp_path: Path) -> None:
    s = ncclscope.analyze(_logs(tmp_path, [("node-00", 12340), ("node-01", 12341)]))
    [f] = [f for f in s.findings if f.id == "nccltests-no-mpi"]
    assert f.severity == "error" and f.hosts == ("node-00", "node-01") and f.metrics["processes"] == 2


def test_one_single_gpu_run_is_legitimate(tmp_path: Path) -> None:
    s = ncclscope.analyze(_logs(tmp_path, [("node-00", 12340)]))
    assert not [f for f in s.findings if f.id == "nccltests-no-mpi"]
