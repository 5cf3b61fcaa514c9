"""Parse stage, TORCH rows of torchcomms lines (grammar family `torchcomms`, tag `[TC][rank=R][name=N]`).

torchcomms is the library behind torch nightly's `nccl2` backend (and `ncclx`). Its work object logs
`Operation timed out after N ms` when a collective's end event is still pending past its timeout: the
rank that logs it is waiting, like ProcessGroupNCCL's watchdog timeout, so the row is a
`watchdog_timeout` (no SeqNum or op in that line; `ran_for_ms` = N). Its timeout watchdog then aborts
(`taking_down`), or reports NCCL's asynchronous error (`backend_error`, the rank's own failure).
"""

from __future__ import annotations

import re
from typing import Any

from lark import Token

Row = dict[str, Any]
_TAG = re.compile(r"\[TC\](?:\[rank=(-?\d+)\])?(?:\[name=([^\]]*)\])?")


def _ints(items: list[Any]) -> list[int]:
    return [int(str(i)) for i in items if isinstance(i, Token) and i.type == "INT"]


def _rest(items: list[Any]) -> str:
    toks = [str(i) for i in items if isinstance(i, Token) and i.type == "REST"]
    return toks[-1].strip() if toks else ""


def _on_rank(items: list[Any]) -> Row:
    ints = _ints(items)
    return {"rank": ints[0]} if ints else {}


class TorchCommsRows:
    """Transformer callbacks for the `torchcomms` alternatives and the `[TC]` tag (mixed into the torch
    grammar's Transformer)."""

    def tag_tc(self, items: list[Any]) -> Row:
        m = _TAG.fullmatch(str(items[0]))
        rank, name = (m.group(1), m.group(2)) if m else (None, None)
        # `[rank=-1]`: the prefix builder's placeholder before the communicator has a rank
        return {"_tag": True, "rank": int(rank) if rank and int(rank) >= 0 else None, "pg_desc": name or None}

    def tc_timeout(self, items: list[Any]) -> Row:
        return {"kind": "watchdog_timeout", "detail": "torchcomms_timeout", "ran_for_ms": _ints(items)[0]}

    def tc_cuda_event(self, items: list[Any]) -> Row:
        which = next(str(i) for i in items if isinstance(i, Token) and i.type == "TC_EVENT")
        return {"kind": "backend_error", "detail": f"CUDA error during {which} event query: {_rest(items)}"}

    def tc_abort_timeout(self, items: list[Any]) -> Row:
        return {"kind": "taking_down", "detail": "torchcomms abort: timeout", **_on_rank(items)}

    def tc_abort_error(self, items: list[Any]) -> Row:
        return {"kind": "taking_down", "detail": "torchcomms abort: error", **_on_rank(items)}

    def tc_async_error(self, items: list[Any]) -> Row:
        return {"kind": "backend_error", "detail": f"NCCL async error: {_rest(items)}", **_on_rank(items)}

    def tc_revoke(self, items: list[Any]) -> Row:
        what = next(str(i) for i in items if isinstance(i, Token) and i.type == "TC_WHAT")
        return {"kind": "taking_down", "detail": f"torchcomms revoke: {what}", **_on_rank(items)}
