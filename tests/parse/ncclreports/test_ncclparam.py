"""`ncclparam -l` (NCCL 2.30.3+): settings and who set them, as environment rows the config rules read.

The format is `ncclParam::dump` (`src/include/param/param.h`) under `ncclParamDumpAll`'s banner; the
sample is built from it (no public dump was found; NVIDIA/nccl `docs/.../api/param.rst` shows two entries).
"""

from __future__ import annotations

from pathlib import Path

from ncclscope.parse.inputs import classify_inputs
from ncclscope.parse.ncclreports.ncclparam import env_rows, read_ncclparam
from ncclscope.parse.ncclreports.read import read_nccl_reports
from ncclscope.session import analyze

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "ncclparam" / "ncclparam_l_2_30_7_built.txt"
DOCS = """NCCL_NO_CACHE (const char *) [Private, Cached] Comma-separated list of param keys to disable caching (or ALL)
    Current value=<unset> set_by=Default default=<unset>
    Accepted value: String

NCCL_PARAM_DUMP_ALL (bool) [Private] Print all parameters including private ones
    Current value=TRUE set_by=EnvPlugin default=FALSE
    Accepted value: Boolean: 1/T/TRUE or 0/F/FALSE
"""


def _read(text: str):  # type: ignore[no-untyped-def]
    return read_ncclparam("p.txt", enumerate(text.splitlines(), start=1))


def test_the_documented_example() -> None:
    p = _read(DOCS)
    assert p.select("name", "type", "flags", "value", "set_by", "default").rows() == [
        ("NCCL_NO_CACHE", "const char *", "Private, Cached", None, "Default", None),
        ("NCCL_PARAM_DUMP_ALL", "bool", "Private", "TRUE", "EnvPlugin", "FALSE"),
    ]
    assert env_rows(p).select("name", "value", "line").rows() == [("NCCL_PARAM_DUMP_ALL", "TRUE", 6)]


def test_a_value_keeps_its_spaces() -> None:
    p = read_nccl_reports([(str(SAMPLE), "ncclparam")]).params
    row = p.filter(p["name"] == "NCCL_DEBUG_TIMESTAMP_FORMAT").row(0, named=True)
    assert row["value"] == "[%F %T] " and row["set_by"] == "Default"


def test_sample_is_a_log_and_a_report() -> None:
    got = classify_inputs([str(SAMPLE)])
    assert got.logs == (str(SAMPLE),) and got.reports == ((str(SAMPLE), "ncclparam"),)


def test_settings_reach_the_config_rules_and_the_health_section(tmp_path: Path) -> None:
    """Two nodes' dumps that differ: env-mismatch compares them as it compares `set by environment` lines;
    a data-path setting (built line: NCCL_P2P_DISABLE is not in 2.30.7's registry yet) is listed by the
    health section's settings that change the data path."""
    a = SAMPLE.read_text()
    b = a.replace("Current value=INIT,NET,ENV", "Current value=INIT,ENV").replace(
        "=== ncclParam Registry Dump ===\n",
        "=== ncclParam Registry Dump ===\nNCCL_P2P_DISABLE (int64_t) [] Disable P2P\n"
        "    Current value=1 set_by=EnvPlugin default=0\n    Accepted value: Integer\n\n",
    )
    (tmp_path / "node1.txt").write_text(a)
    (tmp_path / "node2.txt").write_text(b)
    s = analyze([str(tmp_path)])
    titles = [f.title for f in s.findings if f.id == "env-mismatch"]
    assert any("NCCL_DEBUG_SUBSYS" in t and "INIT,NET,ENV" in t for t in titles)
    from ncclscope.report.views_health import section

    settings = section(s).settings
    assert [(x.name, x.value) for x in settings] == [("NCCL_P2P_DISABLE", "1")]
