"""Parse stage, runtime lines: PyTorch c10d, gloo, torchrun and NCCL RAS lines → one TORCH row per line.

`match(message) -> dict | None` is what the log reader calls for every line without an NCCL
prefix, after launcher wrappers were peeled; it returns the TORCH columns of `ncclscope.schema`
minus the ORIGIN ones. `grammars/torch.lark` is the source of truth for every line shape; a
cheap anchor search (`runtime_anchor`) only spares Lark the lines that cannot be PyTorch lines at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import lark
from lark import Lark, Token, Transformer
from lark.exceptions import LarkError

from ncclscope import grammar as G
from ncclscope import prebuilt
from ncclscope import schema as S
from ncclscope.parse.logs.lines.frtrace_rows import FrTraceRows
from ncclscope.parse.logs.lines.runtime_anchor import ANCHOR, MAX_CHARS
from ncclscope.parse.logs.lines.torchcomms_rows import TorchCommsRows

Row = dict[str, object]
COLUMNS: tuple[str, ...] = tuple(c for c in S.TORCH if c not in S.ORIGIN)

_ANCHOR = ANCHOR
_RANK_WRAPPER = re.compile(r"^\[rank\d+\]:\s?")
_MAX_LINE = MAX_CHARS


def grammar_text(name: str = "torch.lark") -> str:
    """The PyTorch-line grammar source (`grammars/torch.lark`)."""
    return G.grammar_text(name)


@cache
def parser() -> Lark:
    """The torch-line parser, built once per process (LALR with the contextual lexer)."""
    ready = prebuilt.shipped(_cache_name())  # the wheel's prebuilt tables first
    if ready:
        return _lark(str(ready))
    final = _cache_file()
    if final is None or final.exists():
        return _lark(str(final) if final else False)
    tmp = final.with_name(
        f"{final.name}.{os.getpid()}.tmp"
    )  # written whole, then renamed: no reader sees half
    p = _lark(str(tmp))
    with contextlib.suppress(OSError):
        os.replace(tmp, final)
        prebuilt.saved(final)
    return p


def _lark(cache: str | bool) -> Lark:
    return Lark(
        grammar_text(),
        parser="lalr",
        lexer="contextual",
        maybe_placeholders=False,
        start=["start", "exc_only"],
        cache=cache,
    )


def _cache_name() -> str:
    """The parse tables' file name, by grammar, Lark and Python version (Lark keys its tables by all three)."""
    key = f"{lark.__version__}\n{sys.version_info[:2]}\n{grammar_text()}"
    return f"torch-lark-{hashlib.sha256(key.encode()).hexdigest()[:16]}.pickle"


def _cache_file() -> Path | None:
    """Lark's parse tables on disk, by grammar and Lark version (building them costs ~1.5 s, loading ~50 ms)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ncclscope"
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return base / _cache_name()


@cache
def _header_search() -> re.Pattern[str]:
    # The c10/glog header regexes come from the grammar, so cutting junk glued in front of a
    # header (a tqdm bar without a newline) uses the very shapes the grammar accepts.
    p = parser()
    pats = [p.get_terminal(n).pattern.to_regexp() for n in ("C10_HEADER", "GLOG_HEADER")]
    return re.compile("|".join(f"(?:{x})" for x in pats))


def _prepare(message: str) -> str:
    text = _RANK_WRAPPER.sub("", message.rstrip("\r\n "), count=1)
    hit = _header_search().search(text)
    return text[hit.start() :] if hit else text.lstrip()


def match(message: str) -> Row | None:
    """TORCH columns for a PyTorch/RAS line, or None when the grammar does not accept it."""
    if len(message) > _MAX_LINE or not _ANCHOR.search(message):
        return None
    text = _prepare(message)
    try:
        tree = parser().parse(text, start="start")
    except LarkError:
        try:  # an exception line of no known family: `torch.OutOfMemoryError: CUDA out of memory. …`
            tree = parser().parse(text, start="exc_only")
        except LarkError:
            return None
    body: Row = _ToRow().transform(tree)
    return {c: body.get(c) for c in COLUMNS}


_LEVEL = re.compile(r"\b(ERROR|WARNING|INFO|DEBUG|CRITICAL)\b")


def _exc_name(items: list[Any]) -> str | None:
    """`torch.OutOfMemoryError` from an EXC_PREFIX (`…:`) or EXC_BARE token among a rule's items."""
    tok = next((i for i in items if isinstance(i, Token) and i.type in ("EXC_PREFIX", "EXC_BARE")), None)
    return str(tok).strip().rstrip(":") if tok is not None else None


def _int(tok: Any) -> int:
    return int(str(tok))


def _ranks(tok: Any) -> str:
    """`[1, 3]` → `1, 3` (kept as text in `detail`; ncclscope.hang splits it)."""
    return str(tok).strip("[]").replace(" ", "").replace(",", ", ")


def _merge(items: list[Any]) -> Row:
    out: Row = {}
    for it in items:
        if isinstance(it, dict):
            for k, v in it.items():
                if v is not None and out.get(k) is None:
                    out[k] = v
    return out


def _rest(items: list[Any]) -> str | None:
    toks = [str(t) for t in items if isinstance(t, Token) and t.type == "REST"]
    return toks[-1].strip() if toks else None


def _inner(kind: str, detail: str, items: list[Any], **extra: object) -> Row:
    """A message that wraps another one (P9, P21): the inner line's fields, the outer kind."""
    inner = _merge([i for i in items if isinstance(i, dict)])
    return {**inner, **extra, "kind": kind, "detail": detail}


def _torch_version(v: str | None) -> str | None:
    """NCCL's version as PyTorch printed it. PyTorch before 1.11 split NCCL_VERSION_CODE by the 2.8-era
    formula (code/1000, code%1000/100, code%100), so 2.9+ codes (major*10000+minor*100+patch) come out
    as `21.2.12` for 2.12.12 and `21.0.3` for 2.10.3; read such a triple back into the release."""
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", v or "")
    if m is None or int(m[1]) < 20:
        return v
    code = int(m[1]) * 1000 + int(m[2]) * 100 + int(m[3])
    return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"


class _ToRow(FrTraceRows, TorchCommsRows, Transformer[Token, Row]):
    """Tree → row dict. Rule names follow the grammar's labelled alternatives."""

    # --- line, header, tags -----------------------------------------------------------------
    def start(self, items: list[Any]) -> Row:
        header = [i for i in items if isinstance(i, dict) and "severity" in i and len(i) == 1]
        tags = [i for i in items if isinstance(i, dict) and i.get("_tag")]
        body = next(i for i in reversed(items) if isinstance(i, dict) and "kind" in i)
        out = dict(body)
        for t in tags:  # a PG tag names the group; the first tag naming a rank wins
            for k in ("pg_id", "pg_name", "pg_desc", "rank"):
                if out.get(k) is None and t.get(k) is not None:
                    out[k] = t[k]
        if header:
            out["severity"] = header[0]["severity"]
        exc = _exc_name(items)
        if exc is not None:  # the last line of a traceback, whatever family its message belongs to
            out["exc_type"] = exc
        return out

    def exc_only(self, items: list[Any]) -> Row:
        row: Row = {"kind": "exception", "exc_type": _exc_name(items), "detail": _rest(items) or ""}
        return self.start([*items, row])

    def header(self, items: list[Any]) -> Row:
        tok = items[0]
        if isinstance(tok, Token) and tok.type == "ELASTIC_LOG":
            level = _LEVEL.search(str(tok))
            return {"severity": level.group(1)[0] if level else None}
        return {"severity": str(tok).lstrip("[")[0]}

    def lead_rank(self, items: list[Any]) -> Row:
        return {
            "_tag": True,
            "rank": _int(next(i for i in items if isinstance(i, Token) and i.type == "INT")),
        }

    def tag_rank(self, items: list[Any]) -> Row:
        return {"_tag": True, "rank": _int(items[0])}

    def tag_pg(self, items: list[Any]) -> Row:
        desc = [str(i)[1:-1] for i in items if isinstance(i, Token) and i.type == "PG_DESC"]
        ints = [i for i in items if isinstance(i, Token) and i.type == "INT"]
        return {
            "_tag": True,
            "pg_id": str(ints[0]),
            "rank": _int(ints[-1]),
            "pg_desc": desc[0] if desc else None,
        }

    def tag_pg_guid(self, items: list[Any]) -> Row:
        out = self.tag_pg(items)
        out["pg_name"] = next(str(i) for i in items if isinstance(i, Token) and i.type == "PG_GUID")
        return out

    # --- watchdog timeout -------------------------------------------------------------------
    def watchdog(self, items: list[Any]) -> Row:
        row = _merge(items)
        wrapped = "seq" not in row and "op_type" not in row
        return {**row, "kind": "watchdog_timeout", "detail": "wrapped_head" if wrapped else "timeout"}

    def work_tail(self, items: list[Any]) -> Row:
        return {**_merge(items), "kind": "watchdog_timeout", "detail": "wrapped_tail"}

    def blocking_wait(self, items: list[Any]) -> Row:
        return {**_merge(items), "kind": "watchdog_timeout", "detail": "blocking_wait"}

    def work(self, items: list[Any]) -> Row:
        return _merge(items)

    def f_seq(self, items: list[Any]) -> Row:
        return {"seq": _int(items[0])}

    def f_op(self, items: list[Any]) -> Row:
        return {"op_type": str(items[0])}

    def f_numel_in(self, items: list[Any]) -> Row:
        return {"numel_in": _int(items[0])}

    def f_numel_out(self, items: list[Any]) -> Row:
        return {"numel_out": _int(items[0])}

    def f_timeout(self, items: list[Any]) -> Row:
        return {"timeout_ms": _int(items[0])}

    def f_shape(self, items: list[Any]) -> Row:
        return {}

    def ran_for(self, items: list[Any]) -> Row:
        return {"ran_for_ms": _int(items[0])}

    # --- PG status --------------------------------------------------------------------------
    _HEADS: ClassVar[dict[str, str]] = {
        "Exception (either an error or timeout) detected": "exception",
        "NCCL error is detected": "error",
        "Work timeout is detected": "timeout",
        "failure detected": "failure",
    }

    def status(self, items: list[Any]) -> Row:
        head = next((str(i) for i in items if isinstance(i, Token) and i.type == "STATUS_HEAD"), None)
        row = _merge(items)
        has_numbers = any(k in row for k in ("seq", "last_enqueued", "last_completed"))
        if head is not None:
            detail = self._HEADS[head] if has_numbers else "wrapped_head"
        else:
            detail = "timeout_at" if row.pop("_timeout_at", None) else "wrapped_tail"
        row.pop("_timeout_at", None)
        return {**row, "kind": "pg_status", "detail": detail}

    def st_skip(self, items: list[Any]) -> Row:
        return {}

    def st_punct(self, items: list[Any]) -> Row:
        return {}

    def st_seq(self, items: list[Any]) -> Row:
        return {"seq": _int(items[0])}

    def st_timeout_at(self, items: list[Any]) -> Row:
        return {"seq": _int(items[0]), "_timeout_at": True}

    def st_enq(self, items: list[Any]) -> Row:
        return {"last_enqueued": _int(items[-1])}

    def st_started(self, items: list[Any]) -> Row:
        return {"last_started": _int(items[-1])}

    def st_comp(self, items: list[Any]) -> Row:
        return {"last_completed": _int(items[-1])}

    # --- dump signals -----------------------------------------------------------------------
    def dump_signal(self, items: list[Any]) -> Row:
        return {**_merge(items), "kind": "dump_signal"}

    def src_local(self, items: list[Any]) -> Row:
        return {"detail": "this_local_rank"}

    def src_rank(self, items: list[Any]) -> Row:
        return {"detail": "from_rank", "from_rank": _int(items[0])}

    def dump_counts(self, items: list[Any]) -> Row:
        return {"last_enqueued": _int(items[0]), "last_completed": _int(items[1])}

    def dump_observed(self, items: list[Any]) -> Row:
        return {"kind": "dump_observed", "detail": "observed"}

    def dump_broadcast(self, items: list[Any]) -> Row:
        return {"kind": "dump_signal", "detail": "broadcast"}

    def dump_first_pg(self, items: list[Any]) -> Row:
        return {"kind": "dump_signal", "detail": "first_pg"}

    def dump_prepare(self, items: list[Any]) -> Row:
        return {"kind": "other", "detail": "dump_prepare"}

    def dump_file(self, items: list[Any]) -> Row:
        return {"kind": "dump_file", "detail": _rest(items)}

    def dump_file_error(self, items: list[Any]) -> Row:
        return {"kind": "dump_file", "detail": f"error: {_rest(items)}"}

    # --- heartbeat, communicator creation -----------------------------------------------------
    def heartbeat(self, items: list[Any]) -> Row:
        secs = [i for i in items if isinstance(i, Token) and i.type == "INT"]
        return {
            "kind": "heartbeat_stuck",
            "ran_for_ms": _int(secs[0]) * 1000 if secs else None,
            "detail": "watchdog_stuck" if secs else "heartbeat_timeout",
        }

    def created_comm(self, items: list[Any]) -> Row:
        return {"kind": "created_comm", "comm_ptr": str(items[0]).lower()}

    # --- exceptions -------------------------------------------------------------------------
    def _error(self, items: list[Any]) -> Row:
        reason = next((str(i).strip() for i in items if isinstance(i, Token) and i.type == "REASON"), None)
        version = next((str(i) for i in items if isinstance(i, Token) and i.type == "VERSION"), None)
        return {"kind": "backend_error", "detail": reason, "nccl_version": _torch_version(version)}

    nccl_error_in = _error
    nccl_error_plain = _error

    def nccl_code(self, items: list[Any]) -> Row:
        return {"kind": "backend_error", "detail": str(items[0])}

    def comm_aborted(self, items: list[Any]) -> Row:
        ranks = [i for i in items if isinstance(i, Token) and i.type == "INT"]
        extra: dict[str, object] = {"rank": _int(ranks[0])} if ranks else {}
        return _inner("backend_error", "comm_aborted", items, **extra)

    def store_error(self, items: list[Any]) -> Row:
        return {
            "kind": "backend_error",
            "detail": "unique_id_store",
            "rank": int(_ranks(items[0]).split(",")[0]),
        }

    def last_error(self, items: list[Any]) -> Row:
        return {"kind": "last_error", "detail": _rest(items)}

    # --- desync report ------------------------------------------------------------------------
    def ds_timeout(self, items: list[Any]) -> Row:
        return {
            "kind": "desync",
            "detail": "timeout_at",
            "rank": int(_ranks(items[0]).split(",")[0]),
            "op_type": str(items[1]),
            "seq": _int(items[2]),
        }

    def ds_never_joined(self, items: list[Any]) -> Row:
        return {"kind": "desync", "detail": f"never_joined {_ranks(items[0])}"}

    def ds_head(self, items: list[Any]) -> Row:
        return {"kind": "desync", "detail": "report"}

    def ds_not_finished(self, items: list[Any]) -> Row:
        return {"kind": "desync", "detail": f"not_finished {_ranks(items[0])}", "seq": _int(items[1])}

    def ds_not_joined(self, items: list[Any]) -> Row:
        return {"kind": "desync", "detail": f"not_joined {_ranks(items[0])}", "seq": _int(items[1])}

    def ds_snap_seq(self, items: list[Any]) -> Row:
        return {"kind": "desync", "detail": "snapshot", "seq": _int(items[0])}

    def ds_snap_started(self, items: list[Any]) -> Row:
        return {"kind": "desync", "detail": f"started {_ranks(items[0])}", "op_type": str(items[1])}

    def ds_snap_finished(self, items: list[Any]) -> Row:
        return {"kind": "desync", "detail": f"finished {_ranks(items[0])}", "op_type": str(items[1])}

    def ds_rank_head(self, items: list[Any]) -> Row:
        return {"kind": "desync", "detail": "report", "rank": _int(items[0])}

    def ds_failed(self, items: list[Any]) -> Row:
        return {"kind": "desync", "detail": "failed"}

    # --- taking down, terminate, options, stacks, misc -----------------------------------------
    def taking_down(self, items: list[Any]) -> Row:
        return {"kind": "taking_down", "detail": None}

    def term_reason(self, items: list[Any]) -> Row:
        return {"kind": "terminate", "detail": (_rest(items) or "").rstrip(".")}

    def term_watchdog(self, items: list[Any]) -> Row:
        inner = _merge([i for i in items if isinstance(i, dict)])
        if str(inner.get("kind", "")).startswith("gloo_"):  # `what(): [enforce fail …]`: keep gloo's own kind
            return inner
        return _inner("terminate", "watchdog_exception", items)

    def term_throw(self, items: list[Any]) -> Row:
        return {"kind": "terminate", "detail": _rest(items)}

    _OPTS: ClassVar[dict[str, tuple[str, type]]] = {
        "global rank": ("rank", int),
        "TIMEOUT(ms)": ("timeout_ms", int),
        "NCCL version": ("nccl_version", str),
        "PG Name": ("pg_name", str),
    }

    def init_options(self, items: list[Any]) -> Row:
        row: Row = {"kind": "init_options", "detail": None}
        for key, val in (i for i in items if isinstance(i, tuple)):
            if key in self._OPTS and val:
                col, conv = self._OPTS[key]
                try:
                    row[col] = conv(val)
                except ValueError:
                    pass
        return row

    def opt(self, items: list[Any]) -> tuple[str, str]:
        return str(items[0]).strip(), (str(items[1]).strip() if len(items) > 1 else "")

    def stack_missing(self, items: list[Any]) -> Row:
        return {"kind": "other", "detail": "stack_missing"}

    def stack_head(self, items: list[Any]) -> Row:
        return {"kind": "other", "detail": "stack_head"}

    def stack_frame(self, items: list[Any]) -> Row:
        return {"kind": "stack_frame", "detail": f"{items[1]} from {items[2]}", "seq": _int(items[0])}

    # RAS rows: seq = operation count, numel_in = how many ranks reached it, pg_name = comm hash.
    def ras_comm(self, items: list[Any]) -> Row:
        words = " ".join(str(i) for i in items if isinstance(i, Token) and i.type == "RAS_WORD")
        return {
            "kind": "ras",
            "detail": f"comm {words}".strip(),
            "pg_name": str(items[2]).lower(),
            "pg_id": f"{items[0]}-{items[1]}",
        }

    def ras_diff(self, items: list[Any]) -> Row:
        return {"kind": "ras", "detail": "op_count_mismatch", "op_type": str(items[0])}

    def ras_op_count(self, items: list[Any]) -> Row:
        n = _int(items[0]) if len(items) == 2 else None
        return {"kind": "ras", "detail": "op_count", "numel_in": n, "seq": _int(items[-1])}

    def ras_no_ops(self, items: list[Any]) -> Row:
        return {"kind": "ras", "detail": "op_count", "numel_in": _int(items[0]) if items else None, "seq": 0}

    def ras_rank(self, items: list[Any]) -> Row:
        return {"kind": "ras", "detail": f"rank on {_rest(items)}", "rank": _int(items[0])}

    # --- gloo errors (kind gloo_*): the waiting ranks' timeouts, a lost peer, a size mismatch ------
    def gloo_timeout(self, items: list[Any]) -> Row:
        ms = next(i for i in items if isinstance(i, Token) and i.type == "INT")
        d = next(str(i) for i in items if isinstance(i, Token) and i.type == "GLOO_DIR")
        return {"kind": "gloo_timeout", "timeout_ms": _int(ms), "detail": f"waiting for {d}"}

    def _peer_lost(self, items: list[Any], how: str) -> Row:
        peer = next(str(i) for i in items if isinstance(i, Token) and i.type == "PEER_ADDR")
        return {"kind": "gloo_peer_lost", "detail": f"connection {how} by peer {peer}"}

    def gloo_peer_closed(self, items: list[Any]) -> Row:
        return self._peer_lost(items, "closed")

    def gloo_peer_reset(self, items: list[Any]) -> Row:
        return self._peer_lost(items, "reset")

    def gloo_size_mismatch(self, items: list[Any]) -> Row:
        got, want = (_int(i) for i in items if isinstance(i, Token) and i.type == "INT")
        return {
            "kind": "gloo_size_mismatch",
            "numel_in": got,
            "numel_out": want,
            "detail": f"received {got} bytes, expected {want}",
        }

    # --- torchrun's failure report (kind launcher; detail says which line) ---------------------
    # Numbers go into `detail` as `key value` words (the TORCH schema has no exit-code/pid columns);
    # ncclscope.hang.exits reads them back.
    def tr_failed(self, items: list[Any]) -> Row:
        code, local, pid = (_int(i) for i in items if isinstance(i, Token) and i.type in ("SINT", "INT"))
        return {"kind": "launcher", "detail": f"failed exitcode {code} local_rank {local} pid {pid}"}

    def tr_sent(self, items: list[Any]) -> Row:
        return {"kind": "launcher", "detail": f"sent {items[1]} pid {_int(items[0])}"}

    def tr_failures(self, items: list[Any]) -> Row:
        return {"kind": "launcher", "detail": "section failures"}

    def tr_root(self, items: list[Any]) -> Row:
        return {"kind": "launcher", "detail": "section root_cause"}

    def tr_rank(self, items: list[Any]) -> Row:
        return {"kind": "launcher", "detail": f"rank local_rank {_int(items[1])}", "rank": _int(items[0])}

    def tr_host(self, items: list[Any]) -> Row:
        return {"kind": "launcher", "detail": f"host {_rest(items)}"}

    def tr_exit(self, items: list[Any]) -> Row:
        code, pid = (_int(i) for i in items if isinstance(i, Token) and i.type in ("SINT", "INT"))
        sig = next((str(i) for i in items if isinstance(i, Token) and i.type == "SIGNAME"), None)
        return {
            "kind": "launcher",
            "detail": f"exitcode {code} pid {pid}" + (f" signal {sig}" if sig else ""),
        }

    def tr_traceback_py(self, items: list[Any]) -> Row:
        return {"kind": "traceback", "detail": "table"}

    def tr_traceback_signal(self, items: list[Any]) -> Row:
        sig = next(str(i) for i in items if isinstance(i, Token) and i.type == "SIGNAME")
        pid = [i for i in items if isinstance(i, Token) and i.type == "INT"][-1]
        return {"kind": "launcher", "detail": f"traceback signal {sig} pid {_int(pid)}"}

    # --- other launchers' crash lines (kind launcher, detail `died …`; ncclscope.hang.exits reads them)
    def mpi_signal(self, items: list[Any]) -> Row:
        node, _, sig = str(items[3]).partition(" exited on signal ")
        return {
            "kind": "launcher",
            "detail": f"died signal {_int(sig)} pid {_int(items[2])} via {items[0]} node {node}",
            "rank": _int(items[1]),
        }

    def srun_task(self, items: list[Any]) -> Row:
        node, tasks = str(items[0]).removeprefix("srun: error: ").rstrip(":").split(": ")
        return {
            "kind": "launcher",
            "detail": f"died tasks {tasks.split()[1]} via srun node {node} how {_rest(items)}",
        }

    def mpi_first(self, items: list[Any]) -> Row:
        rank = str(items[0]).rstrip("]").rsplit(",", 1)[1]
        return {"kind": "launcher", "detail": "died first via mpirun-table", "rank": int(rank)}

    def mpi_exit_code(self, items: list[Any]) -> Row:
        return {"kind": "launcher", "detail": f"died exitcode {_int(items[0])} via mpirun-table"}

    def ucx_signal(self, items: list[Any]) -> Row:
        where = str(items[0]).strip("[]").split(":")
        return {
            "kind": "launcher",
            "detail": f"died signal {_int(items[1])} pid {where[1]} via ucx node {where[0]}",
        }

    # --- application output: tracebacks and spawn's report (kind traceback / spawn) ----------
    def tb_start(self, items: list[Any]) -> Row:
        return {"kind": "traceback", "detail": "start"}

    def tb_chain(self, items: list[Any]) -> Row:
        return {"kind": "traceback", "detail": "chained"}

    def spawn_failed(self, items: list[Any]) -> Row:
        return {"kind": "spawn", "detail": "process_error", "local_rank": _int(items[0])}

    def spawn_signal(self, items: list[Any]) -> Row:
        return {"kind": "spawn", "detail": f"exited signal {items[1]}", "local_rank": _int(items[0])}

    def spawn_code(self, items: list[Any]) -> Row:
        return {"kind": "spawn", "detail": f"exited exitcode {_int(items[1])}", "local_rank": _int(items[0])}

    def spawn_sent(self, items: list[Any]) -> Row:
        return {"kind": "spawn", "detail": f"sent {items[1]} pid {_int(items[0])}"}

    def misc_gil(self, items: list[Any]) -> Row:
        return {"kind": "other", "detail": "gil_hang"}

    def misc_destroy(self, items: list[Any]) -> Row:
        return {"kind": "other", "detail": "not_destroyed"}

    def misc_abort(self, items: list[Any]) -> Row:
        return {"kind": "other", "detail": "abort"}

    def lightning_world(self, items: list[Any]) -> Row:
        ints = [i for i in items if isinstance(i, Token) and i.type == "INT"]
        rank, member, size = (_int(t) for t in ints[-3:])
        return {
            "kind": "lightning_world",
            "rank": rank,
            "detail": f"MEMBER {member}/{size}",
            "world_size": size,
        }

    def misc_raised(self, items: list[Any]) -> Row:
        return {"kind": "other", "detail": f"raised from {items[0]}"}
