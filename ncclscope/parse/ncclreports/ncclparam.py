"""Parse stage, `ncclparam -l` output (NCCL 2.30.3+): every registered setting, its value and who set it.

Printed by `ncclParamDumpAll` (`src/param/c_api.cc`) with `ncclParam::dump` (`src/include/param/param.h`):

    === ncclParam Registry Dump ===
    NCCL_IB_HCA (const char*) [Cached] <description>
        Current value=mlx5_0 set_by=EnvPlugin default=<unset>
        Accepted value: String

`set_by` is `EnvPlugin` when the environment plugin chain (the environment, or NCCL_CONF_FILE /
/etc/nccl.conf through the default plugin) supplied a value that parsed, else `Default`. Settings read
through this registry no longer print `NCCL_X set by environment to V`, so these rows are the only
record of them: the ones set by anything but the default become `schema.ENV` rows (the same table
the `set by environment` lines fill), and every row is kept in `params` for the notebook.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import polars as pl

from ncclscope import schema as S

MARKER = b"=== ncclParam Registry Dump ==="
_HEAD = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]*) \((?P<type>[^)]*)\) \[(?P<flags>[^\]]*)\]")
_VALUE = re.compile(r"^\s+Current value=(?P<value>.*?) set_by=(?P<by>\S+) default=(?P<default>.*)$")
PARAMS = {
    "path": pl.Utf8,
    "line": pl.Int64,
    "name": pl.Utf8,
    "type": pl.Utf8,
    "flags": pl.Utf8,
    "value": pl.Utf8,  # null for `<unset>`
    "set_by": pl.Utf8,  # EnvPlugin | Default (as printed)
    "default": pl.Utf8,
    "text": pl.Utf8,
}


def _value(v: str) -> str | None:
    return None if v == "<unset>" else v


def read_ncclparam(path: str, lines: Iterable[tuple[int, str]]) -> pl.DataFrame:
    """One row per setting whose `Current value=` line follows its header line (schema PARAMS)."""
    rows: list[dict[str, object]] = []
    head: re.Match[str] | None = None
    for n, raw in lines:
        text = raw.rstrip("\r\n")
        if m := _HEAD.match(text):
            head = m
        elif head is not None and (v := _VALUE.match(text)):
            rows.append(
                {
                    "path": path,
                    "line": n,
                    "name": head["name"],
                    "type": head["type"],
                    "flags": head["flags"],
                    "value": _value(v["value"]),
                    "set_by": v["by"],
                    "default": _value(v["default"]),
                    "text": f"{head['name']} {text.strip()}"[:300],
                }
            )
            head = None
    return pl.DataFrame(rows, schema=PARAMS, orient="row") if rows else pl.DataFrame(schema=PARAMS)


def env_rows(params: pl.DataFrame) -> pl.DataFrame:
    """The settings something other than the default set, as `schema.ENV` rows (no host/pid: the tool
    ran as a process of its own)."""
    chosen = params.filter(pl.col("set_by") != "Default")
    out = chosen.select("path", "line", "text", "name", "value")
    return pl.concat([S.empty(S.ENV), out], how="diagonal_relaxed").select(list(S.ENV))
