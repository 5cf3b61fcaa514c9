"""PyTorch's Flight Recorder analyzer output (`fr_trace`) pasted into a log: each record's lines through the
torch grammar (`frtrace`), and the record read back as a hang verdict (missing ranks = culprits).

Real text: torch 2.13's own analyzer run on the bundled gloo dumps, pytorch#140969's test plan, the
pytorch/tutorials Flight Recorder tutorial (provenance in samples/logs/*frtrace*.meta.json). The 2.4 one-line
form, the 2.5 `errors`/`Input/output` headers and the `We cannot decide` line are built from the analyzer's
source (torch/distributed/flight_recorder/components/utils.py and builder.py at each release), said per case.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope.hang import build_hang_view
from ncclscope.hang.classify import HangVerdict
from ncclscope.parse import read_flight, read_logs
from ncclscope.parse.logs.lines import runtime_lines

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

CASES: list[tuple[str, dict[str, object]]] = [
    # torch 2.13 (real, samples/logs/frtrace_torch213_*)
    ("Not all ranks joining collective, sequence number: 5", {"detail": "not_joined", "seq": 5}),
    ("group info: 0:default_pg", {"detail": "group", "pg_name": "0", "pg_desc": "default_pg"}),
    ("collective: gloo:all_reduce", {"detail": "collective", "op_type": "all_reduce"}),
    ("missing ranks: {2}", {"detail": "missing 2"}),
    ("expected ranks: {0, 1, 2, 3}", {"detail": "expected 0, 1, 2, 3", "world_size": 4}),
    ("collective state: scheduled", {"detail": "state scheduled"}),
    ("Collective sequence number: 5 has errors", {"detail": "errors", "seq": 5}),
    (
        (
            "error msg: Culprit rank 1; Error type: COLLECTIVE_TYPE_MISMATCH, Expected collective type: "
            "'all_reduce' does not match found collective type: 'broadcast'"
        ),
        {"detail": "culprits 1 COLLECTIVE_TYPE_MISMATCH"},
    ),
    # late 2024 (real, pytorch#140969)
    ("Not all ranks joining collective: sequence number: 31117", {"detail": "not_joined", "seq": 31117}),
    ("missing ranks: {3, 4, 5, 6, 7}", {"detail": "missing 3, 4, 5, 6, 7"}),
    # torch 2.5 (real, the tutorial; indented as quoted there)
    ("  Not all ranks joining collective 5 at entry 4", {"detail": "not_joined", "seq": 5}),
    ("  expected ranks: 2", {"detail": "expected", "world_size": 2}),
    # torch 2.5 errors / all_to_all headers and the joined culprit list (built from builder.py's format)
    ("Collective 5 at entry 4 errors", {"detail": "errors", "seq": 5}),
    (
        (
            "error message: Culprit rank 1; MatchState.SIZE_OR_SYNTAX_MISMATCH, Culprit rank 3; "
            "MatchState.COLLECTIVE_STATE_MISMATCH"
        ),
        {"detail": "culprits 1 SIZE_OR_SYNTAX_MISMATCH; 3 COLLECTIVE_STATE_MISMATCH"},
    ),
    ("Input/output mismatch in the collective 7 at entry 6", {"detail": "io_mismatch", "seq": 7}),
    ("Input/output mismatch in the collective sequence number: 7", {"detail": "io_mismatch", "seq": 7}),
    # torch 2.4 printed one line (built from its print() call)
    (
        (
            "Not all ranks joining collective for group 0:default_pg collective nccl:all_reduce  Missing ranks "
            "are {1}  [[3, 4]] [[3, 4]] 2 scheduled "
        ),
        {"detail": "not_joined missing 1", "pg_name": "0", "op_type": "all_reduce"},
    ),
    # p2p record names, torchcomms / nccl2 backends
    ("collective: nccl:send 0->1", {"detail": "collective", "op_type": "send"}),
    ("collective: nccl2:all_reduce", {"detail": "collective", "op_type": "all_reduce"}),
    (
        (
            "We cannot decide what's wrong with this collective entry because we missed FR dumps from ranks "
            "({3}) so we don't have enough information. If you want to debug further use -j to dump all raw trace"
        ),
        {"detail": "no_dumps 3"},
    ),
]


@pytest.mark.parametrize(("line", "expected"), CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_record_line(line: str, expected: dict[str, object]) -> None:
    row = runtime_lines.match(line)
    assert row is not None and row["kind"] == "fr_trace", line
    assert {k: row.get(k) for k in expected} == expected
    assert runtime_lines._ANCHOR.search(line)


@pytest.mark.parametrize(
    "line", ["internal record id: 4", "input sizes: [[1024]]", "world size: 8", "collective stack trace: "]
)
def test_lines_not_read(line: str) -> None:
    assert runtime_lines.match(line) is None


def _verdicts(*paths: Path, dumps: list[str] | None = None) -> list[HangVerdict]:
    return list(build_hang_view(read_logs([str(p) for p in paths]), read_flight(dumps or [])).verdicts)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("frtrace_torch213_gloo_a_rank2_skips", ("a", (2,), "all_reduce", 5, "PG 0 (default_pg)")),
        ("frtrace_torch213_gloo_c_rank1_broadcast", ("c", (1,), "all_reduce", 5, "PG 0 (default_pg)")),
        (
            "pytorch140969_frtrace_missing_ranks_3_7",
            ("a", (3, 4, 5, 6, 7), "all_reduce", 31117, "PG 0 (default_pg)"),
        ),
        ("pytorchtutorials_frtrace_2_5_missing_rank1", ("a", (1,), "all_reduce", 5, "PG 0 (default_pg)")),
    ],
)
def test_real_analyzer_output(name: str, expected: tuple[object, ...]) -> None:
    vs = _verdicts(SAMPLES / "logs" / f"{name}.log")
    assert len(vs) == 1
    v = vs[0]
    assert (v.klass, v.culprits, v.op, v.seq, v.group) == expected
    assert v.source == "fr_trace" and v.confidence == "high" and v.key == "0"


def test_the_analyzer_and_the_dumps_it_read_are_one_hang() -> None:
    """Pasted analyzer output beside the very dumps: one verdict, read from the dumps themselves."""
    dumps = sorted(
        str(p) for p in (SAMPLES / "hang" / "flight_gloo_torch2.13" / "a_rank_skips").glob("nccl_*")
    )
    vs = _verdicts(SAMPLES / "logs" / "frtrace_torch213_gloo_a_rank2_skips.log", dumps=dumps)
    assert [(v.source, v.klass, v.culprits) for v in vs] == [("flight", "a", (2,))]


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "fr_trace.out"
    p.write_text(text)
    return p


def test_state_mismatch_alone_names_no_culprit(tmp_path: Path) -> None:
    """Only the state differs: the record does not say who waits on whom (built from 2.13's format)."""
    p = _write(
        tmp_path,
        "Collective sequence number: 9 has errors\ninternal record id: 8\ngroup info: 3:tp\n"
        "collective: nccl:all_gather\nexpected ranks: {0, 1}\ncollective state: started\n"
        "error msg: Culprit rank 1; Error type: COLLECTIVE_STATE_MISMATCH, Expected state: 'started' does "
        "not match found state: 'scheduled'\n",
    )
    (v,) = _verdicts(p)
    assert (v.klass, v.culprits, v.group, v.op, v.seq) == ("undetermined", (), "PG 3 (tp)", "all_gather", 9)
    assert "rank(s) 1" in v.reason and v.confidence == "low"


def test_two_records_in_two_groups(tmp_path: Path) -> None:
    """Each record keeps its own group: the second header starts a new record (2.5 format)."""
    p = _write(
        tmp_path,
        "Not all ranks joining collective 12 at entry 40\ngroup info: 1:dp\ncollective: nccl:all_reduce\n"
        "missing ranks: {6}\nexpected ranks: 2\n"
        "Input/output mismatch in the collective 3 at entry 41\ngroup info: 2:ep\n"
        "collective: nccl:all_to_all\nexpected ranks: 4\n",
    )
    got = sorted((v.group, v.klass, v.culprits, v.seq, v.group_size) for v in _verdicts(p))
    assert got == [("PG 1 (dp)", "a", (6,), 12, 2), ("PG 2 (ep)", "c", (), 3, 4)]


def test_field_lines_without_a_header_are_no_record(tmp_path: Path) -> None:
    p = _write(tmp_path, "missing ranks: {1}\ncollective: nccl:all_reduce\ngroup info: 0:default_pg\n")
    assert _verdicts(p) == []


def test_a_forged_rank_beyond_int32_is_no_culprit(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        "Not all ranks joining collective, sequence number: 99999999999999999999\n"
        "missing ranks: {3, 99999999999999999999}\nerror msg: Culprit rank 4294967296; Error type: X\n",
    )
    (v,) = _verdicts(p)
    assert v.culprits == (3,) and v.seq is None


def test_a_missing_dumps_line_closes_the_record_before_it() -> None:
    """2.13 logs `We cannot decide …` alone (no header): it is no part of the record above, and no verdict."""
    from ncclscope.hang.frtrace import _records, _verdict

    rows = [
        {"detail": d, "path": "x", "line": i, "text": d, "seq": 5 if i == 1 else None}
        for i, d in enumerate(["not_joined", "group", "no_dumps 3", "missing 7"], start=1)
    ]
    recs = _records(rows)
    assert [[r["detail"] for r in rec.rows] for rec in recs] == [["group"], ["missing 7"]]
    assert _verdict(recs[1]) is None
