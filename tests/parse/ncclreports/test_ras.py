"""NCCL RAS reports: the text and JSON readers, the 2.28.9 comma repair, and the hang verdicts.

Real reports are in samples/ras (provenance in samples/ras/SOURCE.md); the short reports built here
follow `src/ras/client_support.cc` (v2.24.3 → v2.30.7) line for line and say which form they test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncclscope.hang import build_hang_view
from ncclscope.hang.ras_report import ras_report_verdicts
from ncclscope.parse.logs.read import read_logs
from ncclscope.parse.ncclreports.ras_json import decode_mended, read_ras_events, read_ras_json
from ncclscope.parse.ncclreports.ras_text import read_ras_text
from ncclscope.parse.ncclreports.read import read_nccl_reports
from ncclscope.parse.ncclreports.sniff import report_kind
from ncclscope.session import analyze

RAS = Path(__file__).resolve().parents[3] / "samples" / "ras"


def _text(body: str, path: str = "r.txt"):  # type: ignore[no-untyped-def]
    return read_ras_text(path, enumerate(body.splitlines(), start=1))


def test_the_2_28_9_report_is_mended_with_one_comma_and_says_so() -> None:
    text = (RAS / "ray_2_28_9_missing_rank_bad_comma.json").read_text()
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    doc, fixed = decode_mended(text)
    assert fixed == 1
    assert doc["communicators"][0]["missing_ranks"][0]["status"]["unresponsive"] is True
    rep, why = read_ras_json("x.json", text)
    assert why is None and rep is not None
    assert rep.repaired is not None and "2.28.7/2.28.9" in rep.repaired
    (m,) = rep.comms[0].missing
    assert (m.rank, m.pid, m.unresponsive, m.dead) == (1, 10017, True, False)
    assert m.evidence.line == 45  # the missing rank's "unresponsive" line in the file


def test_other_json_damage_is_a_note_not_a_repair() -> None:
    text = (RAS / "nccl_docs_2_29_1_missing_rank.json").read_text()
    rep, why = read_ras_json("cut.json", text[: len(text) // 2])
    assert rep is None and why is not None and "does not decode" in why
    rep, why = read_ras_json("list.json", '{"communicators": 3}')
    assert rep is None and why is not None
    # a missing comma elsewhere is not the 2.28.9 defect: not mended
    rep, why = read_ras_json("other.json", '{"communicators": [],\n "ras": {"a": 1\n "b": 2}}')
    assert rep is None and why is not None and "delimiter" in why


def test_json_without_the_defect_is_read_unchanged() -> None:
    rep, why = read_ras_json("a.json", (RAS / "ray_a10g_2_28_9_mismatch.json").read_text())
    assert why is None and rep is not None and rep.repaired is None
    (c,) = rep.comms
    assert c.hash == "f31e5874c3f25459" and c.size == 4 and c.reported == (0, 1, 2, 3)
    assert [(g.op, g.count, g.ranks) for g in c.counts] == [
        ("AllReduce", 100, (1,)),
        ("AllReduce", 101, (0, 2, 3)),
    ]


def test_text_2_24_lists_missing_ranks_without_processes() -> None:
    rep = _text(
        "Errors\n======\n\n#0-0 (cf264af53edbe986) INCOMPLETE\n  Missing communicator data from 2 ranks\n"
        "  The missing ranks: 21,22\n"
    )
    assert rep is not None
    assert [(m.rank, m.pid) for m in rep.comms[0].missing] == [(21, None), (22, None)]


def test_text_groups_of_one_and_not_launched_forms() -> None:
    """2.29+ prints a group of one on one line, with or without a process; `not launched any`: count 0."""
    rep = _text(
        "Warnings\n========\n\n#0-0 (00000000000000ab) MISMATCH\n"
        "  Communicator ranks have different Broadcast operation counts\n"
        "  3 ranks have launched up to operation 5\n"
        "  Rank 3 has not launched any operations -- [process information not found]\n"
    )
    assert rep is not None
    (c,) = rep.comms
    assert c.hash == "00000000000000ab"
    assert [(g.count, g.n, g.ranks) for g in c.counts] == [(5, 3, ()), (0, 1, (3,))]
    (v,) = ras_report_verdicts([rep])
    assert v.klass == "a" and v.culprits == (3,) and v.op == "Broadcast"


def test_one_communicator_under_errors_and_warnings_is_one() -> None:
    rep = _text(
        "Errors\n======\n\n#0-0 (1bdb83b038775869) INCOMPLETE\n  Missing communicator data from 1 rank\n"
        "  Rank 7 -- GPU 3 managed by process 3748990 on node node1\n\nWarnings\n========\n\n"
        "#0-0 (1bdb83b038775869) MISMATCH\n  Communicator ranks have different AllReduce operation counts\n"
        "  6 ranks have launched up to operation 64\n  1 ranks have launched up to operation 60\n"
        "  Rank 2 -- GPU 2 managed by process 3748985 on node node0\n"
    )
    assert rep is not None and len(rep.comms) == 1
    (v,) = ras_report_verdicts([rep])
    assert v.klass == "d" and v.culprits == (7,) and v.hosts == ("node1",)


def _snapshot(op: int) -> str:
    return (
        f"#0-0 (fa93daea854b060b) MISMATCH\n  Communicator ranks have different AllGather operation counts\n"
        f"  30 ranks have launched up to operation {op}\n  2 ranks have launched up to operation {op + 1}\n"
        "  Rank 12 -- GPU 4 managed by process 323032 on node n1\n  Rank 13 -- GPU 5 managed by process 323033 on node n1\n"
    )


def test_repeated_queries_decide_stuck_or_progressing() -> None:
    a, b, c = _text(_snapshot(640), "q1"), _text(_snapshot(640), "q2"), _text(_snapshot(700), "q3")
    assert a is not None and b is not None and c is not None
    (one,) = ras_report_verdicts([a])
    assert one.confidence == "medium" and one.missing
    (same,) = ras_report_verdicts([a, b])
    assert same.confidence == "high" and "unchanged across 2 queries" in same.reason
    assert len(same.culprits) == 30 and 12 not in same.culprits
    assert ras_report_verdicts([a, c]) == []  # the counts moved: the job was progressing


def test_a_dead_process_listed_by_pid_makes_the_missing_rank_dead() -> None:
    rep = _text(
        "Errors\n======\n\nDEAD\n  1 job process is considered dead (unreachable via the RAS network)\n"
        "  Process 3748990 on node node1 managing GPU 3\n\n#0-0 (1bdb83b038775869) INCOMPLETE\n"
        "  Missing communicator data from 1 rank\n  Rank 7 -- GPU 3 managed by process 3748990 on node node1\n"
    )
    assert rep is not None
    (v,) = ras_report_verdicts([rep])
    assert v.confidence == "high" and not v.missing and "considered dead" in v.reason


def test_report_verdict_replaces_the_log_grammars_reading(tmp_path: Path) -> None:
    """The torch grammar reads RAS count lines in any log; the report reader's verdict on the same
    communicator replaces it (one verdict, not two)."""
    p = str(RAS / "nccl1911_mismatch_2_26_2.txt")
    logs = read_logs([p])
    grammar_only = [v for v in build_hang_view(logs).verdicts if v.source == "ras"]
    assert len(grammar_only) == 1
    rep = read_nccl_reports([(p, "ras_text")]).ras
    both = [v for v in build_hang_view(logs, None, rep).verdicts if v.source == "ras"]
    assert len(both) == 1 and both[0].reason.startswith("NCCL RAS: 30 rank(s) at AllGather operation 640")


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("nccl1911_mismatch_2_26_2.txt", "ras_text"),
        ("nccl_example_2_30_7_dead.txt", "ras_text"),
        ("ray_2_28_9_missing_rank_bad_comma.json", "ras_json"),
        ("nccl_docs_2_29_1_missing_rank.json", "ras_json"),
    ],
)
def test_reports_are_told_by_their_bytes(name: str, kind: str) -> None:
    assert report_kind((RAS / name).read_bytes()[:65536]) == kind


def test_a_report_whose_rank_is_in_the_logs_names_it(tmp_path: Path) -> None:
    """ras-dead-process takes the rank from a log line of the same host:pid (NCCL's `host:pid:tid` prefix)."""
    log = tmp_path / "rank3.log"
    log.write_text(
        "node1:3748990:3749001 [3] NCCL INFO cudaDriverVersion 12080\n"
        "node1:3748990:3749001 [3] NCCL INFO ncclCommInitRank comm 0x55d1 rank 3 nranks 8 cudaDev 3 "
        "nvmlDev 3 busId 41000 commId 0x1bdb83b038775869 - Init COMPLETE\n"
    )
    s = analyze([str(log), str(RAS / "nccl_example_2_30_7_dead.txt")])
    (f,) = [f for f in s.findings if f.id == "ras-dead-process"]
    assert f.ranks == (3,) and f.severity == "error" and "rank 3" in f.title


def _init(host: str, pid: int, rank: int, nranks: int, comm: str) -> str:
    """NCCL 2.2x `Init COMPLETE` line (its `commId` is the commHash RAS prints)."""
    return (
        f"{host}:{pid}:{pid + 1} [0] NCCL INFO ncclCommInitRank comm 0x55d1 rank {rank} nranks {nranks} "
        f"cudaDev 0 nvmlDev 0 busId 41000 commId 0x{comm} - Init COMPLETE\n"
    )


def test_ras_ranks_of_a_sub_communicator_become_global_ranks(tmp_path: Path) -> None:
    """Comm 00000000000000bb holds global ranks 4 and 5 as its ranks 0 and 1; RAS missing its rank 1 names
    global rank 5. A communicator the logs do not show keeps RAS's numbers, and says they are local."""
    for g in range(8):
        text = _init(f"n{g // 4}", 100 + g, g, 8, "00000000000000aa")
        if g in (4, 5):
            text += _init(f"n{g // 4}", 100 + g, g - 4, 2, "00000000000000bb")
        (tmp_path / f"rank{g}.log").write_text(text)
    ras = (
        "Errors\n======\n\n#1-0 (00000000000000bb) INCOMPLETE\n  Missing communicator data from 1 rank\n"
        "  Rank 1 -- GPU 1 managed by process 105 on node n1\n\n#2-0 (00000000000000cc) INCOMPLETE\n"
        "  Missing communicator data from 1 rank\n  Rank 1 -- GPU 1 managed by process 999 on node n9\n"
    )
    (tmp_path / "ras.txt").write_text(ras)
    s = analyze([str(tmp_path)])
    got = {v.key: v for v in s.hang.verdicts if v.source == "ras"}
    assert got["00000000000000bb"].culprits == (5,)
    assert "are global (5,)" in got["00000000000000bb"].reason
    assert got["00000000000000cc"].culprits == (1,)
    assert any("own ranks" in m for m in got["00000000000000cc"].missing)


def test_monitor_mode_peer_dead_is_a_dead_process() -> None:
    """`ncclras -m` (2.29+), as NVIDIA/nccl's ras.rst shows it."""
    line = "   [2025-12-19 13:07:07] PEER_DEAD: Process 1524345 on node 172.16.64.245 managing GPU 1"
    head = b"RAS Monitor Mode - watching for peer changes (Ctrl+C to exit)...\n" + line.encode()
    assert report_kind(head) == "ras_text"
    rep = _text("RAS Monitor Mode - watching for peer changes (Ctrl+C to exit)...\n" + line)
    assert rep is not None
    assert [(p.pid, p.host, p.gpus, p.dead) for p in rep.processes] == [(1524345, "172.16.64.245", "1", True)]


def test_garbled_numbers_drop_their_lines_not_the_report() -> None:
    """NVIDIA/nccl#1762 (2.27.3, a RAS bug fixed in 2.29.2) printed `Rank 1057455228 -- …` for a
    communicator it had mis-read; such ranks, and counts past Int64, are skipped."""
    rep = _text(
        "#2-0 (93d7000200000001) INCOMPLETE\n  Missing communicator data from 255 ranks\n"
        "  Rank 1057455228 -- GPU 0 managed by process 60004 on node 10.4.109.13\n"
        "  Rank 3 -- GPU 0 managed by process 60005 on node 10.4.109.13\n"
        "  The missing ranks: 99999999999999999999999,4\n"
        "#0-0 (00000000000000ab) MISMATCH\n  Communicator ranks have different AllReduce operation counts\n"
        "  3 ranks have launched up to operation 99999999999999999999999\n"
        "  1 ranks have launched up to operation 7\n"
    )
    assert rep is not None
    comms = {c.hash: c for c in rep.comms}
    assert [m.rank for m in comms["93d7000200000001"].missing] == [3, 4]
    assert [g.count for g in comms["00000000000000ab"].counts] == [7]
    assert ras_report_verdicts([rep])  # still read, still a verdict
    rep2, why = read_ras_json(
        "big.json",
        '{"nccl_version": "x", "communicators": [{"hash": "0x1", "size": 2, "ranks": [], '
        '"missing_ranks": [{"rank": 123456789012345678901234567890, "status": {}}, {"rank": 1}]}]}',
    )
    assert why is None and rep2 is not None and [m.rank for m in rep2.comms[0].missing] == [1]


def test_error_blocks_name_the_ranks_and_their_error() -> None:
    """`#G-C (hash) ERROR` then rasClientBreakDownErrors' lines (2.26+ text)."""
    body = (
        "Errors\n======\n\n#0-0 (00000000000000ab) ERROR\n  Asynchronous errors on 3 ranks\n"
        "  2 ranks reported Remote process error\n  Rank 0 -- GPU 0 managed by process 10 on node n0\n"
        "  Rank 1 -- GPU 1 managed by process 11 on node n0\n"
        "  Rank 2 reported Unhandled CUDA error -- GPU 2 managed by process 12 on node n0\n"
    )
    rep = _text(body)
    assert rep is not None
    assert sorted(rep.comms[0].errors) == [
        (0, "asynchronous: Remote process error"),
        (1, "asynchronous: Remote process error"),
        (2, "asynchronous: Unhandled CUDA error"),
    ]


def test_ras_comm_error_finding(tmp_path: Path) -> None:
    (tmp_path / "ras.txt").write_text(
        "Errors\n======\n\n#0-0 (00000000000000ab) ERROR\n  Asynchronous error on 1 rank\n"
        "  Rank 2 reported Unhandled CUDA error -- GPU 2 managed by process 12 on node n0\n"
    )
    s = analyze([str(tmp_path / "ras.txt")])
    (f,) = [f for f in s.findings if f.id == "ras-comm-error"]
    assert f.ranks == (2,) and "Unhandled CUDA error" in f.title


def test_monitor_events_in_json() -> None:
    """`ncclras -m -f json` (2.29+): objects one after another; PEER_DEAD names a dead process, the rest
    are skipped, and a cut stream keeps what decoded with a note."""
    one = (RAS / "nccl_docs_2_29_monitor_peer_dead.json").read_text()
    assert report_kind(one.encode()) == "ras_events"
    new = one.replace("PEER_DEAD", "PEER_NEW").replace("1524345", "7")
    rep, why = read_ras_events("m.json", new + one + one[:40])
    assert rep is not None and why is not None and "stop decoding" in why
    assert [(p.pid, p.host, p.gpus, p.dead, p.evidence.line) for p in rep.processes] == [
        (1524345, "172.16.64.245", "1", True, 16)
    ]
    assert read_ras_events("n.json", new) == (None, None)
