"""nccl-tests reader: the real outputs in samples/nccltests, the older and newer table shapes, `-J` JSON."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ncclscope.parse.nccltests import has_nccltests, patterns, read_nccltests

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
NT = SAMPLES / "nccltests"

# file -> (result lines, op, ranks in the device list, avg busbw, out-of-bounds values, peak busbw)
EXPECTED = {
    "awstutorial_a10g_2node_socket_nccl2_11_4.log": (25, None, 2, 0.300212, 0, 0.86),
    "eks_efa_t4_2node_ofi_nccl2_12_7.log": (31, None, 2, 1.15327, 0, 3.15),
    "ebpf_rtx5090_2rank_socket_tests2_18_0.log": (8, "all_reduce", 2, 1.57614, 0, 2.31),
    "inc_rtx3090_2node_wrong_results.log": (27, None, 2, 3.02663, 108, 7.64),
    "dgxspark_roce_switch_ok_nccl2_28_9.log": (1, "all_gather", 2, 21.9636, 0, 21.99),
    "dgxspark_roce_direct_degraded_nccl2_28_9.log": (3, "all_gather", 2, 2.83174, 0, 2.84),
}


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_output(name: str) -> None:
    n_rows, op, n_dev, avg, oob, peak = EXPECTED[name]
    path = NT / name
    f = read_nccltests([str(path)])
    assert f.paths == (str(path),)
    assert f.results.height == 2 * n_rows
    assert f.results["placement"].value_counts().sort("placement")["count"].to_list() == [n_rows, n_rows]
    assert f.results["op"].unique().to_list() == [op]
    assert f.devices.height == n_dev and f.devices["rank"].to_list() == list(range(n_dev))
    assert f.summary.select("avg_busbw_gbps", "oob_values").row(0) == (avg, oob)
    assert f.results["busbw_gbps"].max() == peak
    # every row cites the line it was read from
    text = _lines(path)
    for line, cited in f.results.select("line", "text").unique().iter_rows():
        assert text[line - 1] == cited
    assert f.summary["line"].item() == next(i for i, t in enumerate(text, 1) if "Avg bus bandwidth" in t)


def test_info_lines_between_header_and_rows() -> None:
    """The tutorial run: NCCL INFO lines sit between the column header and the first row, and the
    table has the pre-2.13 `error` column (maximum error), not a `#wrong` count."""
    f = read_nccltests([str(NT / "awstutorial_a10g_2node_socket_nccl2_11_4.log")])
    first = f.results.sort("line").row(0, named=True)
    assert (first["size_bytes"], first["count"], first["dtype"], first["redop"], first["root"]) == (
        8,
        2,
        "float",
        "sum",
        None,
    )
    assert first["time_us"] == 172.7 and first["line"] == 48
    assert f.results["wrong"].null_count() == f.results.height
    assert f.results["max_error"].to_list() == [0.0] * f.results.height
    big = f.results.filter(pl.col("size_bytes") == 134217728).sort("placement")
    assert big["busbw_gbps"].to_list() == [0.77, 0.73] and big["time_us"].to_list() == [174589.0, 183560.0]


def test_wrong_counts_and_oob() -> None:
    f = read_nccltests([str(NT / "inc_rtx3090_2node_wrong_results.log")])
    assert f.results.filter(pl.col("size_bytes") == 8)["wrong"].to_list() == [4, 4]
    assert f.results.filter(pl.col("size_bytes") == 536870912)["wrong"].to_list() == [268435000, 268435000]
    assert f.results["wrong"].min() == 4 and f.results["max_error"].null_count() == f.results.height
    assert f.summary["oob_values"].item() == 108


def test_mpi_tags_and_versions() -> None:
    f = read_nccltests([str(NT / "ebpf_rtx5090_2rank_socket_tests2_18_0.log")])
    run = f.runs.row(0, named=True)
    assert (run["tests_version"], run["nccl_library"], run["op"], run["min_bytes"], run["iters"]) == (
        "2.18.0",
        22907,
        "all_reduce",
        1048576,
        50,
    )
    assert f.devices["busid"].to_list() == ["0000:02:00", "0000:02:00"]
    assert f.devices["gpu_name"].unique().to_list() == ["NVIDIA GeForce RTX 5090"]


def test_two_runs_in_one_file(tmp_path: Path) -> None:
    """Runs are counted by their `# nThread` headers; each keeps its own operation and footer."""
    a = (NT / "ebpf_rtx5090_2rank_socket_tests2_18_0.log").read_text()
    b = (NT / "dgxspark_roce_direct_degraded_nccl2_28_9.log").read_text()
    p = tmp_path / "two.log"
    p.write_text(a + b)
    f = read_nccltests([str(p)])
    per_run = f.results.group_by("run").agg(pl.col("op").first(), pl.len()).sort("run")
    assert per_run.rows() == [(1, "all_reduce", 16), (2, "all_gather", 6)]
    assert f.summary.sort("run")["avg_busbw_gbps"].to_list() == [1.57614, 2.83174]
    assert f.runs.sort("run")["tests_version"].to_list() == ["2.18.0", "2.18.3"]


# Row shapes of releases without a sample: printf formats of v2.10 broadcast (root, no redop), v2.10
# sendrecv (neither), 2.13+ alltoall with in-place `N/A`, 2.19.2 per-iteration columns, markdown indentation.
SHAPES = """\
#       size         count      type    root     time   algbw   busbw  error     time   algbw   busbw  error
     1048576        262144     float       0    123.4    8.50    8.50  0e+00    120.1    8.73    8.73  0e+00
#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error
     2097152        524288     float    250.0    8.39    8.39    N/A    240.5    8.72    8.72    N/A
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
    67108864       1048576     float    none      -1  44747.1    1.50    1.41       0  69049.0    0.97    0.91    N/A
     1048576        262144     float     sum      -1    35.39   29.63   44.44       0    33.10   36.20   40.10    2.10    34.44   30.45   45.68       0    33.00   35.90   39.80    1.90
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 9.04853
"""


def test_row_shapes_of_other_releases(tmp_path: Path) -> None:
    p = tmp_path / "shapes_alltoall_perf.log"
    p.write_text(SHAPES)
    r = read_nccltests([str(p)]).results.filter(pl.col("placement") == "in").sort("line")
    assert r["root"].to_list() == [0, None, -1, -1]
    assert r["redop"].to_list() == [None, None, "none", "sum"]
    assert r["busbw_gbps"].to_list() == [8.73, 8.72, 0.91, 45.68]
    assert r["max_error"].to_list() == [0.0, None, None, None]  # `error` column: a maximum error, N/A -> null
    assert r["wrong"].to_list() == [None, None, None, 0]  # `#wrong`: a count, N/A -> null
    assert r["op"].unique().to_list() == ["alltoall"]  # from the file name when no line names the program


def _json_report(version: int) -> dict[str, object]:
    """A `-J` report in src/util.cu's layout, filled with the DGX Spark degraded run's table."""
    f = read_nccltests([str(NT / "dgxspark_roce_direct_degraded_nccl2_28_9.log")])
    results = []
    for size, rows in f.results.sort("line").group_by("size_bytes", maintain_order=True):
        side = {
            p: {"time": t, "alg_bw": a, "bus_bw": b, "nwrong": float(w)}
            for p, t, a, b, w in rows.select(
                "placement", "time_us", "algbw_gbps", "busbw_gbps", "wrong"
            ).rows()
        }
        results.append(
            {
                "size": size[0],
                "count": rows["count"][0],
                "type": "float",
                "redop": "none",
                "root": "    -1",
                "out_of_place": side["out"],
                "in_place": side["in"],
                "actual_iterations": 5,
                "experiment_name": "",
            }
        )
    avg_key, bw_key = (
        ("average_bus_bandwidith", "bandwidith") if version == 1 else ("average_bus_bandwidth", "bandwidth")
    )
    return {
        "version": version,
        "start_time": "2025-11-02 10:00:00",
        "args": ["./build/all_gather_perf", "-b", "1G"],
        "env": ["NCCL_DEBUG=INFO"],
        "nccl_version": 22809,
        "config": {
            "nthreads": 1,
            "ngpus": 1,
            "minimum_bytes": 1073741824,
            "maximum_bytes": 4294967296,
            "step_factor": 2,
            "warmup_iters": 2,
            "iterations": 5,
            "devices": [
                {
                    "rank": 0,
                    "group": 0,
                    "pid": 23940,
                    "hostname": "spark-fb97",
                    "device": 0,
                    "device_hex": "000f:01:00",
                    "device_info": "NVIDIA GB10",
                }
            ],
        },
        "results": results,
        "out_of_bounds": {"count": 0, "okay": True},
        avg_key: {bw_key: 2.83174, "okay": "unchecked"},
        "errors": [],
        "end_time": "2025-11-02 10:00:09",
    }


@pytest.mark.parametrize("version", [1, 3])
def test_json_report(tmp_path: Path, version: int) -> None:
    p = tmp_path / "report.json"
    p.write_text(json.dumps(_json_report(version), separators=(",", ":")))
    assert has_nccltests(str(p))
    f = read_nccltests([str(p)])
    text = read_nccltests([str(NT / "dgxspark_roce_direct_degraded_nccl2_28_9.log")])
    cols = ["size_bytes", "count", "placement", "time_us", "algbw_gbps", "busbw_gbps", "wrong"]
    assert (
        f.results.select(cols)
        .sort("size_bytes", "placement")
        .equals(text.results.select(cols).sort("size_bytes", "placement"))
    )
    assert f.results["op"].unique().to_list() == ["all_gather"] and f.results["root"].unique().to_list() == [
        -1
    ]
    assert f.summary.select("avg_busbw_gbps", "oob_values").row(0) == (2.83174, 0)
    assert f.runs.select("nccl_library", "max_bytes").row(0) == (22809, 4294967296)
    assert f.devices.select("host", "busid").row(0) == ("spark-fb97", "000f:01:00")


def test_json_nan_is_null(tmp_path: Path) -> None:
    doc = _json_report(3)
    doc["results"][0]["in_place"]["bus_bw"] = "nan"  # type: ignore[index]
    p = tmp_path / "nan.json"
    p.write_text(json.dumps(doc, separators=(",", ":")))
    r = read_nccltests([str(p)]).results
    assert r.filter(pl.col("placement") == "in")["busbw_gbps"].null_count() == 1


def test_plain_nccl_logs_are_not_nccltests() -> None:
    logs = sorted((SAMPLES / "logs").glob("*.log"))
    assert logs and not any(has_nccltests(str(p)) for p in logs)
    f = read_nccltests([str(p) for p in logs])
    assert f.is_empty and f.paths == ()


def test_gzip_input(tmp_path: Path) -> None:
    import gzip

    p = tmp_path / "run.log.gz"
    p.write_bytes(gzip.compress((NT / "inc_rtx3090_2node_wrong_results.log").read_bytes()))
    assert read_nccltests([str(p)]).summary["oob_values"].item() == 108


def test_grammar_rules_compile_with_their_fields() -> None:
    """The regexes come from grammars/nccltests.lark: each line rule exposes its field rules as groups."""
    assert patterns.fields("avg_bw") == ("avg_busbw_gbps",)
    assert set(patterns.fields("device")) == {
        "rank",
        "group",
        "pid",
        "host",
        "device_index",
        "busid",
        "gpu_name",
    }
    assert {"size_bytes", "oop_wrong", "ip_busbw_gbps", "timestamp"} <= set(patterns.fields("result"))


HOSTILE = """\
# nThread 1 nGpus 99999999999999999999999 minBytes 8 maxBytes 99999999999999999999999 step: 2(factor) warmup iters: 5 iters: 20
#  Rank 99999999999999999999999 Group  0 Pid -1 on h device  0 [0x00] GPU
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
  99999999999999999999999  2  float  sum  -1  nan  inf  1e999  99999999999999999999999  1.0  -0.5  0.0  N/A
  134217728  33554432  float  sum  -1  10  1.0  0.01  3  10  1.0  0.01  0
# Out of bounds values : 99999999999999999999999 FAILED
# Avg bus bandwidth    : nan
"""


def test_hostile_numbers_become_unknown(tmp_path: Path) -> None:
    """Numbers beyond 64 bits, nan and inf: unknown (null), never an exception, in the reader, the rules,
    the report section and diff; the good row next to them is still read and judged."""
    from ncclscope.diff import diff_sessions
    from ncclscope.report import document, views_nccltests
    from ncclscope.report.markdown import render_doc
    from ncclscope.session import analyze

    p = tmp_path / "all_reduce_perf.log"
    p.write_text(HOSTILE)
    f = read_nccltests([str(p)])
    assert f.results["size_bytes"].to_list() == [None, None, 134217728, 134217728]
    assert f.results["wrong"].to_list() == [None, None, 3, 0]
    assert f.summary.select("oob_values", "avg_busbw_gbps").row(0) == (None, None)
    s = analyze([str(p)])
    wrong = [x for x in s.findings if x.id == "nccltests-wrong"]
    assert len(wrong) == 1 and wrong[0].metrics["max_wrong"] == 3
    assert "| ? |" in render_doc(document.build(s)) and views_nccltests.html(document.build(s))
    assert diff_sessions(s, s).differences == ()
    doc = {
        "version": 3,
        "start_time": "x",
        "results": [{"size": 1e30, "count": "inf", "out_of_place": {"bus_bw": 1e400}}],
    }
    j = tmp_path / "r.json"
    j.write_text(json.dumps(doc).replace("Infinity", "1e400"))
    r = read_nccltests([str(j)]).results
    assert r["size_bytes"].to_list() == [None] and r["busbw_gbps"].to_list() == [None]


def test_log_reader_notes_the_inputs_with_markers(tmp_path: Path) -> None:
    """The analysis does not scan inputs again: the log reader names those with a marker line, and only
    those are read by nccl-tests' reader (same results as its own byte search)."""
    from ncclscope.parse.logs.read import read_logs
    from ncclscope.tuning import Tuning

    plain = sorted((SAMPLES / "logs").glob("*.log"))[:3]
    tests = [NT / n for n in EXPECTED]
    wrapped = tmp_path / "wrapped.log"  # a marker deep inside application output and ANSI colour
    wrapped.write_text("x\n" * 50_000 + "\x1b[1m#  nThread 1 nGpus 1 minBytes 8\x1b[0m\n")
    paths = [str(p) for p in [*plain, *tests, wrapped]]
    for fast in (True, False):  # the fast paths' candidate pass and the general path alone
        logs = read_logs(paths, tuning=Tuning(fast_paths=fast))
        assert logs.nccltests_marked == frozenset(str(p) for p in [*tests, wrapped])
        assert logs.nccltests_marked == frozenset(p for p in paths if has_nccltests(p))
    a = read_nccltests(paths, marked=logs.nccltests_marked)
    b = read_nccltests(paths)
    assert a.paths == b.paths and a.results.equals(b.results) and a.summary.equals(b.summary)


def test_a_big_log_is_cut_to_its_nccltests_lines(tmp_path: Path) -> None:
    """Only the lines the reader uses are kept from a marked input (streamed, never held whole): an
    nccl-tests run inside a long application log gives the results of the run on its own, at its lines."""
    from ncclscope.parse.logs.engine.reader import ReadStats, read_chunks
    from ncclscope.parse.nccltests.text import relevant, with_body
    from ncclscope.tuning import Tuning

    src = NT / "inc_rtx3090_2node_wrong_results.log"
    noise = "".join(f"2024-01-01 00:00:{i % 60:02d} step {i} loss 0.{i}\n" for i in range(30_000))
    big = tmp_path / "train.log"
    big.write_text(noise + src.read_text(encoding="utf-8") + noise)
    alone, inside = read_nccltests([str(src)]).results, read_nccltests([str(big)]).results
    assert alone["line"].n_unique() == EXPECTED[src.name][0] and inside.height == alone.height
    shifted = alone.with_columns(pl.col("line") + 30_000).drop("path")
    assert inside.drop("path").equals(shifted)
    small = Tuning(read_block_bytes=1 << 16)  # many chunks
    kept = sum(
        relevant(with_body(c.select("line", "raw"))).height for c in read_chunks(str(big), ReadStats(), small)
    )
    assert kept < 200  # of 60,000 lines
    assert read_nccltests([str(big)], tuning=small).results.drop("path").equals(shifted)


def test_a_json_report_over_the_cap_is_a_note(tmp_path: Path) -> None:
    from ncclscope.tuning import Tuning

    p = tmp_path / "r.json"
    p.write_text('{"version":1,"start_time":"x","args":[],"results":[]}')
    f = read_nccltests([str(p)], tuning=Tuning(max_json_report_bytes=8))
    assert f.is_empty and any("max_json_report_bytes" in n for n in f.notes)
