"""Corpus: hang verdicts on the logs labelled hang / watchdog_timeout / timeout, against the metas.

EXPECTED is written by hand from each meta's `root_cause` and `notes` (and the log itself). Where the
thread concluded nothing and the excerpt holds no collective-level line (init output only), the
expected verdict is "none": a tool that invents a stuck collective there is wrong. `concluded` marks
the logs whose thread or notes reached a conclusion about the hang; the hit rate is printed for all
logs and for that subset (pytest -s shows it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ncclscope.hang import build_hang_view
from ncclscope.parse import read_logs

NOT_30 = frozenset(set(range(32)) - {12, 13})


@dataclass(frozen=True)
class Expect:
    verdict: bool  # a stuck collective must be reported (False: none must be)
    classes: frozenset[str] = frozenset()  # allowed classes (empty: any)
    seq: int | None = None
    culprits: frozenset[int] | None = None  # exactly these culprits (None: not checked)
    not_blamed: frozenset[int] = frozenset()  # must not be among the culprits
    detectors: frozenset[int] = frozenset()  # must be reported as first detectors
    concluded: str = ""  # what the thread / notes concluded, when they did
    why: str = field(default="", compare=False)


NONE = Expect(verdict=False, why="init/config excerpt only: no watchdog, status, COLL or RAS line")
EXPECTED: dict[str, Expect] = {
    "accelerate1532_trailing_pad_2_14_3_8gpu": NONE,
    "arctic219_flight_recorder_disabled_pg_status": Expect(
        True,
        frozenset({"b", "undetermined"}),
        seq=120049,
        culprits=frozenset(),
        why="only rank 5's status: it entered #120049 and has not completed it; nobody is seen behind",
    ),
    "arctic219_watchdog_stuck_heartbeat": Expect(
        True,
        frozenset({"b", "undetermined"}),
        seq=120049,
        culprits=frozenset(),
        why="rank 2 timed out in #120049, rank 7's watchdog is stuck in a CUDA/NCCL call",
    ),
    "awsofi24_horovod_efa_ring_net_libfabric_2_4": NONE,
    "deepspeed7128_commsplit_init_complete_collnet_channels": Expect(
        True,
        frozenset({"a", "c"}),
        concluded="notes: hang after Init COMPLETE = application-level mismatch",
        why="only the two Init COMPLETE lines: no collective-level evidence to reach it (expected miss)",
    ),
    "deepspeed7533_dump_signal_from_rank6_and_watchdog": Expect(
        True,
        seq=460631,
        not_blamed=frozenset({2, 6, 7}),
        detectors=frozenset({6}),
        concluded="notes: rank 6 only detected first; rank 2 enqueued the SeqNum, so it is not the straggler",
    ),
    "lightning4389_duplicate_global_ranks_srun": Expect(
        False, concluded="root_cause: srun rank mapping gave duplicate GLOBAL_RANKs (not a stuck collective)"
    ),
    "lightning8707_only_half_members_init": NONE,
    "llamafactory6269_watchdog_reduce_scatter": Expect(
        True, seq=7753, not_blamed=frozenset({0, 3, 4}), why="every visible rank entered #7753"
    ),
    "llamafactory8261_numbered_prefix_pg_status_first_pg_dump": Expect(
        True,
        seq=2847,
        not_blamed=frozenset({0, 2}),
        detectors=frozenset({0}),
        why="ranks 0 and 2 entered #2847 (enqueued 2855/2856); rank 0 signalled the dump",
    ),
    "milabench269_stream_prefix_wrapped_watchdog_reduce": Expect(
        True, seq=2070, not_blamed=frozenset({11, 12, 14, 15}), why="wrapped watchdog lines, all at #2070"
    ),
    "nccl1027_single_proc_8gpu_init_complete_then_stuck": NONE,
    "nccl147_interleaved_midline_ring_p2p_old": NONE,
    "nccl147_nccl_2_3_5_ib_init_app_interleaved": NONE,
    "nccl1609_h800_nvls_timeout": NONE,
    "nccl1911_ras_mismatch_stragglers_2_26_2": Expect(
        True,
        frozenset({"a"}),
        seq=641,
        culprits=NOT_30,
        concluded="notes: 30 ranks at op 640 never launched op 641: they are the stragglers",
    ),
    "nccl224_horovod_roce_34_hcas_empty_oob": NONE,
    "nccl367_docker_multiproc_hang": NONE,
    "nccl447_gcp_slurm_socket_hang": Expect(
        False, concluded="root_cause: PyTorch build vs NVIDIA driver mismatch (not a collective-level cause)"
    ),
    "nccl606_rtx_a6000_padded_lines_acs_hang_2_11_4": Expect(
        True,
        frozenset({"b"}),
        concluded="root_cause: PCIe ACS makes the P2P path hang (transport layer)",
        why="the excerpt is the init header only (expected miss)",
    ),
    "nccl634_ibbond_8gpu_init_hang": NONE,
    "nccl719_k9s_prefix_ib_3nics_hang": NONE,
    "nccl857_single_node_socket_one_gpu_hang": NONE,
    "nccltests193_indented_proxy_opid_18node_hang": NONE,
    "nccltests311_collnet_4node_trees_proxy_uds": NONE,
    "openrlhf1126_flight_recorder_dump_signal_from_rank34": Expect(
        True,
        frozenset({"undetermined"}),
        culprits=frozenset(),
        why="five ranks only observed the dump signal: the first detector and the culprit are elsewhere",
    ),
    "primerl3186_alltoall_timeout_dump_from_rank13": Expect(
        True,
        seq=1260,
        not_blamed=frozenset({0, 13}),
        detectors=frozenset({13}),
        concluded="root_cause: rank 13 timed out (detected it); rank 0 only received the dump signal",
    ),
    "pytorch118369_watchdog_legacy_format_progressbar": Expect(
        True, frozenset({"c"}), concluded="notes: different SeqNums per rank (96120 vs 64088): ranks diverged"
    ),
    "transformers20438_indented_graph_search_patterns": NONE,
    "vllm6042_ray_ansi_prefix_torch23_watchdog_gather": Expect(
        True, seq=158046, culprits=frozenset(), why="the only rank seen entered #158046"
    ),
    "vllmomni2928_dump_signal_from_this_local_rank": Expect(
        True,
        frozenset({"e"}),
        culprits=frozenset(),
        detectors=frozenset({1}),
        concluded="notes: last enqueued == last completed on both ranks: the hang is not in NCCL",
    ),
    "accelerate412_roce_no_gdr_2_10_3_hang_prepare": NONE,
    "basicsr737_watchdog_allreduce_3rank": Expect(
        True,
        seq=808,
        not_blamed=frozenset({0, 1, 2}),
        why="all three ranks timed out in #808 (last completed 807)",
    ),
    "lightning17066_p4d_affinity_trees_24ch_p2p_read": NONE,
    "llamafactory7396_watchdog_allreduce_pidprefix": Expect(
        True, seq=1580, not_blamed=frozenset({0, 3, 4}), why="the visible ranks timed out in #1580 on PG 1"
    ),
    "nccl1160_fsdp_hang_torch_debug_fingerprint_2_18_1": NONE,
    "nccl1634_heterogeneous_net_plugin_across_nodes": NONE,
    "nccl1936_2_27_5_fixed_port_hang_init": NONE,
    "nccl417_stripped_prefix_vm_3gpu_hang_2_7_8": NONE,
    "nccl733_k9s_prefix_3node_hang": NONE,
    "nccl733_k9s_prefix_ib_3hca_oob_eth0": NONE,
    "nccl783_coll_subsys_send_opcount_stripped": Expect(
        False,
        why="four COLL Send lines of one rank, nothing says a collective is stuck (the mismatch is in the attached logs)",
    ),
    "nccltests15_nccl_2_2_13_connect_timed_out": Expect(
        False, why="a bootstrap connect timeout: a connection failure, not a stuck collective"
    ),
    "nccltests244_2_2x_plugin_init_mpich_hang": NONE,
    "openr1_620_watchdog_broadcast_terminal_wrapped": Expect(
        True,
        seq=4,
        culprits=frozenset(),
        not_blamed=frozenset({1, 2, 3, 5, 6}),
        why="five ranks timed out in BROADCAST #4 (hard-wrapped lines)",
    ),
    "sglang3836_watchdog_interleaved_with_nccl_init": Expect(
        True, seq=5653, culprits=frozenset(), why="only rank 7's timeout in #5653 is seen"
    ),
    "vllm8447_2node_ib_pp_hang": NONE,
}
LABELS = ("hang", "watchdog_timeout", "timeout")


def _check(e: Expect, log: Path) -> tuple[bool, str]:
    verdicts = [v for v in build_hang_view(read_logs([str(log)])).verdicts if v.hang_evidence]
    if not e.verdict:
        return not verdicts, "none" if not verdicts else verdicts[0].sentence
    if not verdicts:
        return False, "none"
    v = verdicts[0]
    ok = (not e.classes or v.klass in e.classes) and (e.seq is None or v.seq == e.seq)
    ok &= e.culprits is None or set(v.culprits) == set(e.culprits)
    ok &= not (set(v.culprits) & e.not_blamed) and e.detectors <= set(v.detectors)
    return ok, v.sentence


@pytest.mark.corpus
def test_expected_table_covers_every_labelled_log(corpus_dir: Path) -> None:
    labelled = {
        m.name.removesuffix(".meta.json")
        for m in corpus_dir.glob("*.meta.json")
        if json.loads(m.read_text())["failure"] in LABELS
    }
    assert labelled == set(EXPECTED)


@pytest.mark.corpus
def test_corpus_hit_rate(corpus_dir: Path) -> None:
    hits, concluded_hits, concluded, lines = 0, 0, 0, []
    for name, e in EXPECTED.items():
        ok, got = _check(e, corpus_dir / f"{name}.log")
        hits += ok
        if e.concluded:
            concluded += 1
            concluded_hits += ok
        lines.append(f"{'HIT ' if ok else 'MISS'} {name}: {got[:160]}")
    print("\n".join(lines))
    print(
        f"hang corpus: {hits}/{len(EXPECTED)} as expected; where the thread concluded: {concluded_hits}/{concluded}"
    )
    # The two misses are excerpts without any collective-level line (nccl606, deepspeed7128).
    assert hits >= len(EXPECTED) - 2 and concluded_hits >= concluded - 2
