"""Parse stage, TORCH rows of PyTorch's Flight Recorder analyzer output (`fr_trace`, grammar family `frtrace`).

The analyzer logs one record per collective it finds wrong: a header line (`Not all ranks joining
collective, sequence number: 5`, `Collective sequence number: 5 has errors`, …) and then one `key: value`
line each. Every line becomes its own row of kind `fr_trace`, with `detail` naming which line it is;
`ncclscope.hang.frtrace` joins a record's rows back together. Ranks go in `detail` as `1, 3` (the form
`hang.sources` splits), the op without its backend prefix (`nccl2:all_reduce` → `all_reduce`).
"""

from __future__ import annotations

from typing import Any

from lark import Token

Row = dict[str, Any]


def _toks(items: list[Any], *types: str) -> list[str]:
    return [str(i) for i in items if isinstance(i, Token) and i.type in types]


def _set(tok: str) -> str:
    """`{0, 1,2}` → `0, 1, 2`."""
    return ", ".join(x.strip() for x in tok.strip("{}").split(",") if x.strip())


def _op(name: str) -> str:
    """`nccl:all_reduce` / `nccl2:all_reduce` / `gloo:broadcast` → the op; a bare name is kept."""
    return name.split(":", 1)[-1]


def _group(tok: str) -> Row:
    """`0:default_pg` → pg_name 0, pg_desc default_pg (fr_trace prints `{pg_name}:{desc}`)."""
    name, _, desc = tok.partition(":")
    return {"pg_name": name, "pg_desc": desc or None}


class FrTraceRows:
    """Transformer callbacks for the `frtrace` alternatives of grammars/torch.lark (mixed into its
    Transformer)."""

    def fr_not_joined(self, items: list[Any]) -> Row:
        return {"kind": "fr_trace", "detail": "not_joined", "seq": int(_toks(items, "SINT")[0])}

    def fr_not_joined_flat(self, items: list[Any]) -> Row:
        group, name, ranks = (_toks(items, t)[0] for t in ("FR_GROUP", "FR_NAME", "RANKSET"))
        return {
            "kind": "fr_trace",
            "detail": f"not_joined missing {_set(ranks)}",
            "op_type": _op(name),
            **_group(group),
        }

    def fr_errors(self, items: list[Any]) -> Row:
        return {"kind": "fr_trace", "detail": "errors", "seq": int(_toks(items, "SINT")[0])}

    def fr_io_mismatch(self, items: list[Any]) -> Row:
        return {"kind": "fr_trace", "detail": "io_mismatch", "seq": int(_toks(items, "SINT")[0])}

    def fr_group(self, items: list[Any]) -> Row:
        return {"kind": "fr_trace", "detail": "group", **_group(_toks(items, "FR_GROUP")[0])}

    def fr_collective(self, items: list[Any]) -> Row:
        return {"kind": "fr_trace", "detail": "collective", "op_type": _op(_toks(items, "FR_NAME")[0])}

    def fr_missing(self, items: list[Any]) -> Row:
        return {"kind": "fr_trace", "detail": f"missing {_set(_toks(items, 'RANKSET')[0])}"}

    def fr_expected(self, items: list[Any]) -> Row:
        ranks = _toks(items, "RANKSET")
        if ranks:
            listed = _set(ranks[0])
            return {"kind": "fr_trace", "detail": f"expected {listed}", "world_size": len(listed.split(", "))}
        return {"kind": "fr_trace", "detail": "expected", "world_size": int(_toks(items, "INT")[0])}

    def fr_state(self, items: list[Any]) -> Row:
        return {"kind": "fr_trace", "detail": f"state {_toks(items, 'OPNAME')[0]}"}

    def fr_culprit(self, items: list[Any]) -> tuple[int, str]:
        rank, text = int(_toks(items, "INT")[0]), _toks(items, "FR_ERROR")[0].strip()
        # `Error type: COLLECTIVE_TYPE_MISMATCH, Expected …` (2.6+) or `MatchState.COLLECTIVE_TYPE_MISMATCH`
        word = text.removeprefix("Error type:").strip().removeprefix("MatchState.").split(",", 1)[0]
        return rank, word.strip() or "UNKNOWN"

    def fr_culprits(self, items: list[Any]) -> Row:
        pairs = sorted({i for i in items if isinstance(i, tuple)})
        return {"kind": "fr_trace", "detail": "culprits " + "; ".join(f"{r} {w}" for r, w in pairs)}

    def fr_no_dumps(self, items: list[Any]) -> Row:
        return {"kind": "fr_trace", "detail": f"no_dumps {_set(_toks(items, 'RANKSET')[0])}"}
