"""Parse stage, the NCCL RAS client's text report (`ncclras`, `echo status | nc host 28028`).

Sections, in the order `rasClientRunComms` prints them: the version banner, `Job summary`, the
`Communicators…` table, `Errors` (job-level `INCOMPLETE`/`DEAD` with `Process P on node H managing
GPU G`, then per communicator `#G-C (hash) INCOMPLETE` with the missing ranks: `Rank R -- GPU …
managed by process P on node H` (2.26+) or `The missing rank(s): R,…` (2.24/2.25)), then `Warnings`
(`#G-C (hash) MISMATCH`: per collective type, `N ranks have launched up to operation M` followed by the
members RAS lists, or `Rank R has launched up to operation M -- …` for a group of one (2.29+)).
Monitor mode (`ncclras -m`, 2.29+) prints `[%F %T] PEER_DEAD: Process P on node H managing GPU G`
(`peers.cc`, `rasClientsNotifyEvent`): a dead process. A rank or count too large to be real (a garbled
report) drops its line.
Leading indentation and a pasted line's viewer prefix do not matter; lines that are none of these
are skipped. Only what a line says is recorded: no rank is inferred here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ncclscope.parse.ncclreports.ras_model import (
    RasComm,
    RasCountGroup,
    RasMissing,
    RasProcess,
    RasReport,
    norm_hash,
)
from ncclscope.records import Evidence

_WHO = r"(?:GPUs? (?P<gpu>.+?) managed by process (?P<pid>\d+) on node (?P<host>\S+)|\[process information not found\])"
_RX = {
    "version": re.compile(r"NCCL version (\S+)"),
    "section": re.compile(r"(Errors|Warnings)$"),
    "job_incomplete": re.compile(r"Missing communicator data from (\d+) job process"),
    "job_dead": re.compile(r"(\d+) job process(?:es are| is) considered dead"),
    "process": re.compile(r"Process (\d+) on node (\S+) managing GPUs? (.+)$"),
    "comm": re.compile(r"#(\d+-\d+) \(([0-9a-fA-F]+)\) ([A-Z,]+)$"),
    "comm_missing": re.compile(r"Missing communicator data from (\d+) ranks?$"),
    "missing_list": re.compile(r"The missing ranks?: ([\d, ]+)$"),
    "diff_counts": re.compile(r"Communicator ranks have different (\S+) operation counts"),
    "diff_other": re.compile(r"Communicator ranks have different status"),
    "errors_on": re.compile(r"(Initialization|Asynchronous) errors? on (\d+) ranks?"),
    "group_err": re.compile(r"(\d+) ranks reported (.+)$"),
    "rank_err": re.compile(r"Rank (\d+) reported (.+?)(?: -- .*)?$"),
    "group_ops": re.compile(r"(\d+) ranks have launched up to operation (\d+)"),
    "group_none": re.compile(r"(\d+) ranks have not launched any operations"),
    "rank_ops": re.compile(r"Rank (\d+) has launched up to operation (\d+)(?: -- " + _WHO + ")?"),
    "rank_none": re.compile(r"Rank (\d+) has not launched any operations(?: -- " + _WHO + ")?"),
    "rank_who": re.compile(r"Rank (\d+) -- " + _WHO),
    "timeouts": re.compile(r"Encountered (\d+) communication timeouts?"),
    # monitor mode (`ncclras -m`, 2.29+): `[%F %T] PEER_DEAD: Process P on node H managing GPU G`
    "peer_dead": re.compile(r"\[[\d\- :]+\] PEER_DEAD: Process (\d+) on node (\S+) managing GPUs? (.+)$"),
}
MAX_RANK = 1 << 20  # a rank above this is a forged or garbled number (NVIDIA/nccl#1762 printed 1057455228)
MAX_COUNT = 1 << 62  # an operation count that fits Int64 with room
_NUMBERED = ("group_ops", "group_none", "rank_ops", "rank_none", "rank_who", "comm_missing", "rank_err")
_PREFIX = re.compile(r"^\s*(?:\d+\s*[|:]\s*)?")  # a viewer's line number pasted in front


@dataclass
class _Comm:
    hash: str
    label: str
    ev: Evidence
    missing: list[RasMissing] = field(default_factory=list)
    counts: list[RasCountGroup] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)
    sub: str = ""  # "missing" | "counts" | "errors" | "other"
    op: str = ""


@dataclass
class _State:
    path: str
    version: str | None = None
    where: str = ""  # "job_incomplete" | "job_dead" | "comm"
    comms: list[_Comm] = field(default_factory=list)
    processes: list[RasProcess] = field(default_factory=list)
    timeouts: int = 0


def _who(m: re.Match[str]) -> tuple[str | None, int | None]:
    pid = m.groupdict().get("pid")
    return m.groupdict().get("host"), int(pid) if pid else None


def _sane(m: re.Match[str]) -> bool:
    """The line's numbers fit: the first (a rank, or a number of ranks) below MAX_RANK, any other (an
    operation count, a pid) below MAX_COUNT; a line whose numbers do not is skipped."""
    nums = [g for g in m.groups() if g and g.isdigit()]
    return all(len(g) < 20 and int(g) < MAX_COUNT for g in nums) and (not nums or int(nums[0]) < MAX_RANK)


def _comm_line(st: _State, c: _Comm, text: str, e: Evidence) -> None:
    """One line inside a `#G-C (hash) …` block."""
    m0 = next((m for k in _NUMBERED if (m := _RX[k].search(text))), None)
    if m0 is not None and not _sane(m0):
        return
    if _RX["comm_missing"].search(text):
        c.sub = "missing"
    elif m := _RX["missing_list"].search(text):
        for r in re.findall(r"\d+", m.group(1))[:MAX_RANK]:
            if len(r) < 8 and int(r) < MAX_RANK:
                c.missing.append(RasMissing(int(r), None, None, None, None, e))
    elif m := _RX["diff_counts"].search(text):
        c.sub, c.op = "counts", m.group(1)
    elif _RX["diff_other"].search(text):
        c.sub = "other"
    elif m := _RX["errors_on"].search(text):
        c.sub, c.op = "errors", m.group(1).lower()
    elif c.sub == "errors" and (m := _RX["rank_err"].search(text)):
        c.errors.append((int(m.group(1)), f"{c.op}: {m.group(2)}"))
    elif c.sub == "errors" and (m := _RX["group_err"].search(text)):
        c.errors.append((-1, f"{c.op}: {m.group(2)}"))  # the members follow as `Rank R -- …` lines
    elif c.sub == "counts" and (m := _RX["group_ops"].search(text) or _RX["group_none"].search(text)):
        count = int(m.group(2)) if m.re is _RX["group_ops"] else 0
        c.counts.append(RasCountGroup(c.op, count, int(m.group(1)), (), e))
    elif c.sub == "counts" and (m := _RX["rank_ops"].search(text) or _RX["rank_none"].search(text)):
        count = int(m.group(2)) if m.re is _RX["rank_ops"] else 0
        c.counts.append(RasCountGroup(c.op, count, 1, (int(m.group(1)),), e))
    elif m := _RX["rank_who"].search(text):
        if c.sub == "missing":
            host, pid = _who(m)
            c.missing.append(RasMissing(int(m.group(1)), host, pid, None, None, e))
        elif c.sub == "errors" and c.errors:  # a member of the `N ranks reported E` group above
            c.errors.append((int(m.group(1)), c.errors[-1][1]))
        elif c.sub == "counts" and c.counts:
            g = c.counts[-1]
            c.counts[-1] = RasCountGroup(g.op, g.count, g.n, (*g.ranks, int(m.group(1))), g.evidence)


def _pid_ok(m: re.Match[str]) -> bool:
    return len(m.group(1)) < 11


def _line(st: _State, text: str, e: Evidence) -> None:
    if st.version is None and (m := _RX["version"].match(text)):
        st.version = m.group(1)
    elif m := _RX["comm"].match(text):
        st.comms.append(_Comm(norm_hash(m.group(2)), "#" + m.group(1), e))
        st.where = "comm"
    elif text == "INCOMPLETE":
        st.where = "job_incomplete"
    elif text == "DEAD":
        st.where = "job_dead"
    elif _RX["section"].match(text) or text in ("TIMEOUT", "MISMATCH", "ERROR"):
        st.where = ""
    elif st.where in ("job_incomplete", "job_dead") and (m := _RX["process"].match(text)) and _pid_ok(m):
        st.processes.append(RasProcess(int(m.group(1)), m.group(2), m.group(3), st.where == "job_dead", e))
    elif (m := _RX["peer_dead"].search(text)) and _pid_ok(m):
        st.processes.append(RasProcess(int(m.group(1)), m.group(2), m.group(3).strip(), True, e))
    elif m := _RX["timeouts"].search(text):
        st.timeouts = max(st.timeouts, int(m.group(1)))
    elif st.where == "comm" and st.comms:
        _comm_line(st, st.comms[-1], text, e)


def read_ras_text(path: str, lines: Iterable[tuple[int, str]]) -> RasReport | None:
    """The report in `(line number, text)` lines, or None when no communicator or process block is there."""
    st = _State(path)
    for n, raw in lines:
        text = _PREFIX.sub("", raw).rstrip()
        if text:
            _line(st, text, Evidence(path, n, raw.strip()[:300]))
    merged: dict[str, _Comm] = {}
    for c in st.comms:  # one communicator under Errors (INCOMPLETE) and again under Warnings (MISMATCH)
        first = merged.setdefault(c.hash, _Comm(c.hash, c.label, c.ev))
        first.missing += c.missing
        first.counts += c.counts
        first.errors += [x for x in c.errors if x[0] >= 0]
    comms = tuple(
        RasComm(c.hash, c.label, None, (), tuple(c.missing), tuple(c.counts), tuple(c.errors), c.ev)
        for c in merged.values()
    )
    if not comms and not st.processes:
        return None
    return RasReport(path, "text", st.version, None, comms, tuple(st.processes), st.timeouts)
