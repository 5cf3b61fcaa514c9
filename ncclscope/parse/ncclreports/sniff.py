"""Parse stage, NCCL's own reports told by their first bytes (no Polars here: the input classifier runs
before the CLI sizes Polars' thread pool).

Inspector: a JSON object with `header` and `coll_perf`/`p2p_perf`/the format version (`inspector_json.cc`).
RAS JSON: `communicators` with `nccl_version` or `missing_ranks` (`jsonWriteHeader`, 2.28.7+). ncclparam:
`ncclParamDumpAll`'s banner or a `Current value=… set_by=… default=…` line. RAS text: a line only the
RAS client prints (`client_support.cc`, `peers.cc` for monitor mode).
"""

from __future__ import annotations

import re

_RAS_TEXT = (
    b"Job summary\n===",
    b"ranks have launched up to operation",
    b"ranks have not launched any operations",
    b"Missing communicator data from",
    b"considered dead (unreachable via the RAS network)",
    b"] PEER_DEAD: Process ",
)
_RAS_COMM = re.compile(
    rb"(?m)^\s*#\d+-\d+ \([0-9a-fA-F]{16}\) (?:OK|ERROR|INCOMPLETE|MISMATCH)"
)  # `#0-0 (hash) ERROR`
NCCLPARAM_MARKER = b"=== ncclParam Registry Dump ==="
_NCCLPARAM_VALUE = re.compile(rb"\n\s+Current value=.* set_by=\S+ default=")


def looks_like_inspector(head: bytes) -> bool:
    start = head.lstrip()[:4096]
    return (
        start.startswith(b"{")
        and b'"header"' in start
        and (b'"coll_perf"' in head or b'"p2p_perf"' in head or b'"inspector_output_format_version"' in head)
    )


def looks_like_ras_json(head: bytes) -> bool:
    return b'"communicators"' in head and (b'"nccl_version"' in head or b'"missing_ranks' in head)


def looks_like_ncclparam(head: bytes) -> bool:
    return NCCLPARAM_MARKER in head or _NCCLPARAM_VALUE.search(head) is not None


def looks_like_ras_events(head: bytes) -> bool:
    """`ncclras -m -f json`: `{"timestamp": …, "group": "LIFECYCLE", "event": "PEER_…"`."""
    return re.search(rb'"group"\s*:\s*"(?:LIFECYCLE|TRACE)",\s*"event"\s*:\s*"PEER_', head) is not None


def report_kind(head: bytes) -> str | None:
    """'inspector' | 'ras_json' | 'ras_events' | 'ras_text' | 'ncclparam' | None, from a file's first
    (decompressed) bytes."""
    if looks_like_inspector(head):
        return "inspector"
    if head.lstrip().startswith(b"{") and looks_like_ras_events(head):
        return "ras_events"
    if head.lstrip().startswith(b"{") and looks_like_ras_json(head):
        return "ras_json"
    if looks_like_ncclparam(head):
        return "ncclparam"
    if any(m in head for m in _RAS_TEXT) or _RAS_COMM.search(head):
        return "ras_text"
    return None
