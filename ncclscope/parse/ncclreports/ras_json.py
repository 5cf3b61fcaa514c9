"""Parse stage, the NCCL RAS client's JSON report (`ncclras -f json`, NCCL 2.28.7+).

Written by `jsonWriteHeader`/`jsonWriteRank`/`jsonWriteMissingRank` in `src/ras/client_support.cc`.
NCCL 2.28.7 and 2.28.9 print a missing rank's `"nvml_dev": N` with no comma before its `"status"`
object, so every report that names a missing rank is invalid JSON (fixed in 2.29.2). The reader mends
only that: when the text does not decode, one pass inserts the comma after each missing rank's
`"nvml_dev": N` that a `"status"` key follows on the next line, and the report says so (`repaired`). Anything else that does not decode is a note.
Line numbers for evidence come from the text: the line of each communicator's `"hash"` and of each
missing rank's `"rank"`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ncclscope.parse.ncclreports.ras_model import (
    RasComm,
    RasCountGroup,
    RasMissing,
    RasProcess,
    RasReport,
    norm_hash,
)
from ncclscope.parse.ncclreports.ras_text import MAX_RANK
from ncclscope.records import Evidence

# The defect, exactly: `"nvml_dev": N` then a newline and `"status"` with no comma between (jsonWriteMissingRank).
_DEFECT = re.compile(r'("nvml_dev"\s*:\s*-?\d+)([ \t]*\r?\n[ \t]*"status"\s*:)')


def decode_mended(text: str) -> tuple[Any, int]:
    """The JSON value and the number of commas inserted (the 2.28.7/2.28.9 defect, one pass over the text,
    only where the text is not valid JSON as it is); ValueError otherwise."""
    try:
        return json.loads(text), 0
    except json.JSONDecodeError:
        pass
    mended, fixed = _DEFECT.subn(r"\1,\2", text)
    try:
        return json.loads(mended), fixed
    except json.JSONDecodeError as e:
        raise ValueError(f"{e.msg} at line {e.lineno}") from None


def _int(v: object) -> int | None:
    """An integer that fits Int64 with room (a hostile report may hold any number)."""
    return v if isinstance(v, int) and not isinstance(v, bool) and -(1 << 62) < v < (1 << 62) else None


def _lines_of(text: str, pattern: str) -> list[int]:
    return [text.count("\n", 0, m.start()) + 1 for m in re.finditer(pattern, text)]


def _counts(ranks: list[dict[str, Any]], ev: Evidence) -> tuple[RasCountGroup, ...]:
    """Per collective type whose count differs between ranks: one group per count, every member listed."""
    ops: dict[str, dict[int, list[int]]] = {}
    for r in ranks:
        rank = _int(r.get("rank"))
        counts = r.get("collective_counts")
        if rank is None or not 0 <= rank < MAX_RANK or not isinstance(counts, dict):
            continue
        for op, n in counts.items():
            if _int(n) is not None:
                ops.setdefault(str(op), {}).setdefault(int(n), []).append(rank)
    out = []
    for op, by in ops.items():
        if len(by) > 1:
            out += [RasCountGroup(op, c, len(rs), tuple(sorted(rs)), ev) for c, rs in sorted(by.items())]
    return tuple(out)


def _errors(ranks: list[dict[str, Any]]) -> tuple[tuple[int, str], ...]:
    out = []
    for r in ranks:
        st = r.get("status") if isinstance(r.get("status"), dict) else {}
        rank = _int(r.get("rank"))
        for key in ("init_state", "async_error"):
            v = _int(st.get(key)) if isinstance(st, dict) else None
            if rank is not None and v not in (None, 0, 7):  # 7: ncclInProgress (still initialising)
                out.append((rank, f"{key} {v}"))
    return tuple(out)


def read_ras_json(path: str, text: str) -> tuple[RasReport | None, str | None]:
    """(report, None), or (None, why) when the text is not a RAS report that decodes."""
    try:
        doc, fixed = decode_mended(text)
    except (ValueError, RecursionError) as e:
        return None, f"{path}: an NCCL RAS JSON report that does not decode ({e}); skipped"
    if not isinstance(doc, dict) or not isinstance(doc.get("communicators"), list):
        return None, f"{path}: JSON without a RAS `communicators` list; skipped"
    hash_lines = _lines_of(text, r'"hash"\s*:')
    missing_lines = iter(_lines_of(text, r'"unresponsive"\s*:'))
    comms = []
    for i, c in enumerate(x for x in doc["communicators"] if isinstance(x, dict)):
        line = hash_lines[i] if i < len(hash_lines) else 0
        ev = Evidence(path, line, f'"hash": "{c.get("hash")}" size {c.get("size")}'[:300])
        ranks = [r for r in c.get("ranks") or [] if isinstance(r, dict)]
        missing = []
        for m in c.get("missing_ranks") or []:
            if not isinstance(m, dict) or not 0 <= (_int(m.get("rank")) or -1) < MAX_RANK:
                continue
            st = m.get("status") if isinstance(m.get("status"), dict) else {}
            assert isinstance(st, dict)
            ml = next(missing_lines, line)
            unresp, dead = st.get("unresponsive"), st.get("considered_dead")
            mev = Evidence(
                path, ml, f"missing rank {m.get('rank')}: unresponsive {unresp}, considered_dead {dead}"
            )
            host = m.get("host")
            missing.append(
                RasMissing(
                    int(m["rank"]),
                    str(host) if host is not None else None,
                    _int(m.get("pid")),
                    unresp if isinstance(unresp, bool) else None,
                    dead if isinstance(dead, bool) else None,
                    mev,
                )
            )
        reported = tuple(sorted(r for r in (_int(x.get("rank")) for x in ranks) if r is not None))
        comms.append(
            RasComm(
                norm_hash(str(c.get("hash", ""))),
                "",
                _int(c.get("size")),
                reported,
                tuple(missing),
                _counts(ranks, ev),
                _errors(ranks),
                ev,
            )
        )
    ras = doc.get("ras") if isinstance(doc.get("ras"), dict) else {}
    timeouts = _int(ras.get("timeouts_count")) if isinstance(ras, dict) else None
    version, ts = doc.get("nccl_version"), doc.get("timestamp")
    mended = (
        f"inserted {fixed} missing comma(s) (the NCCL 2.28.7/2.28.9 missing-rank defect)" if fixed else None
    )
    report = RasReport(
        path,
        "json",
        str(version) if version is not None else None,
        str(ts) if ts is not None else None,
        tuple(comms),
        (),
        timeouts or 0,
        mended,
    )
    return report, None


def read_ras_events(path: str, text: str) -> tuple[RasReport | None, str | None]:
    """Monitor mode in JSON (`ncclras -m -f json`, 2.29+): one object per event, one after another
    (`rasClientsNotifyEvent`). `PEER_DEAD` with a `peer` host/pid is a dead process; other events
    (PEER_NEW, trace events that name only an address) are skipped."""
    dec = json.JSONDecoder()
    at, procs = 0, list[RasProcess]()
    lines = iter(_lines_of(text, r'"event"\s*:'))
    while at < len(text):
        while at < len(text) and text[at] in " \t\r\n":
            at += 1
        if at >= len(text):
            break
        try:
            doc, at = dec.raw_decode(text, at)
        except (json.JSONDecodeError, RecursionError) as e:
            why = f"{path}: NCCL RAS monitor events that stop decoding at line {text.count(chr(10), 0, at) + 1} ({e})"
            return (_events(path, procs), why) if procs else (None, why)
        line = next(lines, 0)
        peer = doc.get("peer") if isinstance(doc, dict) else None
        if isinstance(doc, dict) and doc.get("event") == "PEER_DEAD" and isinstance(peer, dict):
            pid, host = _int(peer.get("pid")), peer.get("host")
            if pid is not None and isinstance(host, str):
                gpus = ",".join(str(g) for g in peer.get("cuda_devs") or [] if isinstance(g, int))
                ev = Evidence(
                    path, line, f"[{doc.get('timestamp')}] PEER_DEAD: process {pid} on {host}"[:300]
                )
                procs.append(RasProcess(pid, host, gpus, True, ev))
    return (_events(path, procs), None) if procs else (None, None)


def _events(path: str, procs: list[RasProcess]) -> RasReport:
    return RasReport(path, "json", None, None, (), tuple(procs), 0)
