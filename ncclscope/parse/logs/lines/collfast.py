"""Parse stage, COLL lines field by field: vectorised, with no cache whose hit rate decides the speed.

A COLL line is `<wrappers><host:pid:tid [dev]> NCCL INFO <op>: opCount <hex> sendbuff <ptr> … stream <ptr>`.
The grammar's `coll` rule is one fixed sequence of literals and space-free fields (`grammar.neighbours`).
A line is taken by the position of ` NCCL INFO ` (the marker); its message is checked with the rule's
own regex, anchored (on ASCII text, `\\d` as `[0-9]`: the rule's regexes admit only ASCII). For the
facts the message is cut at its first ` count `: the head (op, opCount, buffers: new on every line) is
matched line by line, without captures, and op and opCount are cut at the literals after them; the tail
(size, type, op, root, comm, stream) is matched once per distinct tail. The head before the marker
(wrappers and prefix) repeats for every line of a thread; each distinct head is checked once (ASCII, no
earlier ` NCCL `) and goes through the general prefix and wrapper patterns once (`peel.parse_heads`).
The rule's optional trailing `detail` (RCCL prints ` task N globalrank G` after the stream pointer) is
matched and dropped, as the general path drops it. Lines that do not fit this plan exactly (another
` NCCL ` before the marker, a literal met in the head, ANSI residue or trailing blanks in the head,
non-ASCII text, longer than MAX_TEXT, a number beyond 64 bits) are left to the general path, which gives
the same rows (and counts a note on the number).
"""

from __future__ import annotations

import functools
import re

import polars as pl

from ncclscope import grammar as G
from ncclscope import schema as S
from ncclscope.parse.logs.lines import peel
from ncclscope.parse.logs.lines.families import HEX_FIELDS
from ncclscope.parse.logs.lines.peel import MAX_TEXT

MARKER = " NCCL INFO "
_FAM = "coll"
_DIRTY = peel.ANSI  # heads `peel.clean` would change (the line itself ends with a pointer)


_ASCII_CLASS = {"d": "0-9", "w": "0-9A-Za-z_", "s": "\\t\\n\\x0b\\x0c\\r "}  # Unicode \d \w \s on ASCII
_NOT_ASCII = "[\\x00-\\x09\\x0b-\\x7f]"  # `.`: any ASCII character but the line feed


def ascii_regex(pattern: str) -> str:
    """`pattern` (Unicode mode) for ASCII text under `(?-u)`, matching the same on ASCII text: `\\d`, `\\w`
    and `\\s` become their ASCII classes, `.` the ASCII characters but the line feed, a negated class
    the ASCII characters it admits. Unicode classes make Polars' automaton several times bigger and
    slower; and under `(?-u)` a byte-wise `.` or `[^…]` could match invalid UTF-8, which Polars refuses.
    ValueError for what has no such translation here (`\\D`, `\\p{…}`, a nested or empty class)."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(_escape_out(pattern[i + 1], in_class=False))
            i += 2
        elif c == ".":
            out.append(_NOT_ASCII)
            i += 1
        elif c == "[":
            body, i = _class_body(pattern, i + 1)
            out.append(_ascii_class(body))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _escape_out(e: str, *, in_class: bool) -> str:
    if e in _ASCII_CLASS:
        return _ASCII_CLASS[e] if in_class else f"[{_ASCII_CLASS[e]}]"
    if e in "DWSpPXRkKbB" and (in_class or e not in "bB"):  # `\b` outside a class: the same on ASCII
        raise ValueError(f"no ASCII translation of \\{e}")
    return "\\" + e


def _class_body(pattern: str, i: int) -> tuple[str, int]:
    """(the class's text after `[`, the index after its `]`), escapes translated; a class nested in it or
    one that starts with `]` is refused."""
    body, first = [], True
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            body.append(_escape_out(pattern[i + 1], in_class=True))
            i += 2
        elif c == "[" or (c == "]" and (first or body == ["^"])):
            raise ValueError("no ASCII translation of a nested class or one starting with ]")
        elif c == "]":
            return "".join(body), i + 1
        else:
            body.append(c)
            i += 1
        first = False
    raise ValueError("unterminated class")


def _ascii_class(body: str) -> str:
    """A class as the ASCII characters it admits: a negated one listed whole (Python's `re` reads the
    translated body, which holds only single characters, ranges and plain escapes: both engines agree)."""
    if any(op in body for op in ("&&", "--", "~~")):  # Rust's class set operations: Python reads them as text
        raise ValueError("no ASCII translation of a class with set operations")
    if not body.startswith("^"):
        return f"[{body}]"
    admitted = [c for c in range(128) if re.fullmatch(f"[{body}]", chr(c))]
    if not admitted:
        raise ValueError("a class that admits no ASCII character")
    return "[" + "".join(f"\\x{c:02x}" for c in admitted) + "]"


@functools.cache
def plan() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the rule's fields in order, the literal after each but the last): the rule is
    `f0 lit0 f1 lit1 … fN (" " detail)?`, one fixed sequence (`grammar.neighbours`)."""
    nb = G.neighbours(_FAM)
    names = [G.base_field(n) for n in G.group_names(_FAM)]
    inner = sorted(nb, key=names.index)
    fields = (names[0], *inner, names[names.index(inner[-1]) + 1])
    lits = (nb[inner[0]][0], *[nb[f][1] for f in inner])
    return fields, lits


TRAILER = "detail"  # the rule ends `stream (" " detail)?`: text NCCL forks print after the stream, not kept
SPLIT = "count"  # facts: the fields from here on (size, type, op, root, comm, stream) repeat line after line


@functools.cache
def message_regex(full: bool, part: str = "all") -> str:
    """The rule (its optional trailing `detail` matched, not captured), anchored, for ASCII messages (`(?-u)`, digits as
    `[0-9]`: Unicode classes make Polars' automaton several times slower; on ASCII text they match the
    same). Groups: every field when `full`; else `_sig` (count to datatype) and `_comm` (comm pointer to
    nranks), what `collfacts` needs besides op and op_count, which `_facts` cuts at the literals (a
    capture-free check and two cuts: `take` ~6% faster than capturing them). `part` "head"/"tail": the fields
    before SPLIT, or from the literal before SPLIT to the end (the message is one exactly when it is the
    two)."""
    fields, lits = plan()
    groups = (
        {f: (f, f) for f in fields}
        if full
        else {
            "_sig": ("count", "datatype"),
            "_comm": ("comm_ptr", "nranks"),
        }
    )
    opens = {a: g for g, (a, _) in groups.items()}
    closes = {b for _, b in groups.values()}
    cut = fields.index(SPLIT)
    out = []
    for k, f in enumerate(fields):
        if part == "tail" and k < cut:
            if k == cut - 1:
                out.append(_escape(lits[k]))
            continue
        if part == "head" and k >= cut:
            break
        if f in opens:
            out.append(f"(?P<{opens[f]}>")
        out.append(G.rule_regex(f, capture=False))
        if f in closes:
            out.append(")")
        if k < len(lits) and not (part == "head" and k == cut - 1):
            out.append(_escape(lits[k]))
    if part != "head":  # the rule's optional `(" " detail)?` (RCCL: `… stream 0x… task 0 globalrank 3`)
        out.append(f"(?: {G.rule_regex(TRAILER, capture=False)})?")
    return "(?-u)^" + ascii_regex("".join(out)) + "$"


def _escape(text: str) -> str:
    return "".join("\\" + c if c in "()[]{}.*+?|^$\\" else c for c in text)


def _typed(col: pl.Expr, field: str) -> pl.Expr:
    if S.COLLECTIVES[field] == pl.Int64:
        return col.str.to_integer(base=16 if field in HEX_FIELDS else 10, strict=False)
    return col


def take(raw: pl.DataFrame, *, full: bool) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(COLL rows, their heads, the other rows of `raw`). `raw` has path, line, raw; heads
    (`peel.parse_heads`) give each `_head` its prefix fields. COLL rows have path, line, text, `_head`
    and every COLLECTIVES field when `full`; else op, op_count, `_sig` (the text from count to
    datatype) and `_comm` (from the comm pointer to nranks), what `collfacts` needs."""
    fields, lits = plan()
    r, m = pl.col("raw"), pl.col("_m")
    start = m + len(MARKER)
    # A line with the marker whose message is the rule whole (the rule's regexes admit only ASCII text);
    # whether its head is ASCII and holds no other ` NCCL ` is checked once per distinct head
    # (`_clean_heads`: until then `find`'s byte offsets may not be `slice`'s character offsets).
    c = (
        raw.lazy()
        .with_row_index("_c")
        .with_columns(r.str.find(MARKER, literal=True).alias("_m"))
        .filter(m.is_not_null() & (r.str.len_bytes() <= MAX_TEXT))
    )
    rows = _all(c, fields, start) if full else _facts(c, lits[fields.index(SPLIT) - 1], start)
    if rows.is_empty():
        return raw.clear(), _no_heads(), raw
    code, distinct = distinct_codes(rows["_head"])
    clean = _clean_heads(distinct)
    if not clean.all():  # (rare: a non-ASCII head, another ` NCCL ` in it) the general path takes those
        rows = rows.filter(clean.gather(code))
        code, distinct = distinct_codes(rows["_head"])
    rows, heads, n_heads = _split_stamps(rows, code, distinct)
    # (a prefix field out of range goes the general path's way too: it counts a note on it)
    heads = heads.filter(~pl.col("_head").str.contains(_DIRTY) & (pl.col(peel.OVF_PREFIX) == ""))
    heads = heads.drop(peel.OVF_PREFIX)
    if heads.height < n_heads:
        rows = rows.filter(pl.col("_head").is_in(heads["_head"].implode()))
    rest = (
        raw
        if rows.is_empty()
        else raw.filter(pl.repeat(True, raw.height, eager=True).scatter(rows["_c"], False))
    )
    return rows.drop("_c"), heads, rest


STAMPED = "_wts_us"  # a line's timestamp from a leading timestamp wrapper cut off its head (`_split_stamps`)


def _split_stamps(
    rows: pl.DataFrame, code: pl.Series, distinct: pl.Series
) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """(rows, their heads parsed, how many distinct heads the rows have), given each row's head as its
    index `code` among the `distinct` heads (`distinct_codes`). A head repeats for every line of a
    thread, so each distinct head is parsed once; but a leading timestamp wrapper (`kubectl logs
    --timestamps`, CloudWatch, GitHub Actions, Python logging, NCCL's own `[%F %T] `) makes every head
    distinct. When over a quarter are, the wrappers in front of the first one that carries a timestamp, and
    it, are cut off each distinct head in a few vectorised passes, as long as none of them carries a rank; the
    timestamp is kept per line (STAMPED) and the rest deduplicated and parsed once. That gives the fields of
    the whole head (the general path takes the first timestamp and the first rank a wrapper carries); a rest
    with a timestamp of its own keeps its whole head. Tests: random stamped lines give the general path's
    rows."""
    if distinct.len() * 4 <= rows.height:
        return rows, peel.parse_heads(distinct), distinct.len()
    table = _cut_stamps(distinct).sort("_i")  # a row per distinct head, in `code` order
    heads = peel.parse_heads(table["_rest"].unique())
    own = heads.filter(pl.col("ts_us").is_not_null())["_head"]  # rests stamped themselves: whole heads
    if own.len():
        back = pl.col("_rest").is_in(own.implode())
        table = table.with_columns(
            pl.when(back).then(pl.col("_head")).otherwise(pl.col("_rest")).alias("_rest"),
            pl.when(back).then(None).otherwise(pl.col(STAMPED)).alias(STAMPED),
        )
        whole = table.filter(back)["_rest"].unique()
        heads = pl.concat([heads.filter(pl.col("ts_us").is_null()), peel.parse_heads(whole)])
        heads = heads.unique("_head", keep="first")
    if table[STAMPED].is_null().all() and not table.filter(pl.col("_rest") != pl.col("_head")).height:
        return rows, heads, distinct.len()
    rows = rows.with_columns(table["_rest"].gather(code).alias("_head"), table[STAMPED].gather(code))
    return rows, heads, table["_rest"].n_unique()


def _clean_heads(heads: pl.Series) -> pl.Series:
    """Per distinct head (the line up to and with the marker): ASCII, and its first ` NCCL ` the marker's."""
    n = heads.str.len_bytes()
    return (n == heads.str.len_chars()) & (heads.str.find(" NCCL ", literal=True) == n - len(MARKER))


@functools.cache
def _ascii_wrappers() -> str:
    """The wrapper pattern for ASCII heads (~1.5x faster: Polars' capture engine on ASCII classes)."""
    return "(?-u)" + ascii_regex(peel.wrapper_pattern())


def _cut_stamps(distinct: pl.Series) -> pl.DataFrame:
    """`_i` (the head's index in `distinct`), `_head`, `_rest` (the head without its leading wrappers up
    to the first timestamp, or whole) and STAMPED (that timestamp, µs) of distinct heads."""
    pat = _ascii_wrappers()  # the heads are ASCII (`take`)
    pending = distinct.to_frame("_head").with_columns(
        pl.lit(0, pl.Int64).alias("_at"), pl.int_range(pl.len(), dtype=pl.UInt32).alias("_i")
    )
    done: list[pl.DataFrame] = []
    for _ in range(peel.MAX_WRAPPERS):
        if pending.is_empty():
            break
        g = pending["_head"].str.slice(pending["_at"]).str.extract_groups(pat)
        names = g.struct.fields

        def first(f: str, g: pl.Series = g, names: list[str] = names) -> pl.Series:
            cols = [g.struct.field(n) for n in names if G.base_field(n) == f]
            return (
                pl.select(pl.coalesce(cols)).to_series()
                if cols
                else pl.repeat(None, g.len(), dtype=pl.Utf8, eager=True)
            )

        w, ts = g.struct.field("_w"), first("ts")
        ranked = first("rank_hint").is_not_null() | first("rank_tag").is_not_null()
        stop = w.is_null() | ranked  # no wrapper left, or one with a rank before any timestamp: keep whole
        stamped = ~stop & ts.is_not_null()
        done.append(
            pending.filter(stop.fill_null(True)).select(
                "_i", "_head", pl.col("_head").alias("_rest"), pl.lit(None, pl.Float64).alias(STAMPED)
            )
        )
        hit = pending.with_columns(w.str.len_chars().alias("_n"), ts.alias("_ts")).filter(
            stamped.fill_null(False)
        )
        done.append(
            hit.select(
                "_i",
                "_head",
                pl.col("_head").str.slice(pl.col("_at") + pl.col("_n")).alias("_rest"),
                peel.parse_ts(pl.col("_ts")).alias(STAMPED),
            )
        )
        go = (~stop & ts.is_null()).fill_null(False)
        pending = pending.with_columns((pl.col("_at") + w.str.len_chars().fill_null(0)).alias("_at")).filter(
            go
        )
    done.append(
        pending.select("_i", "_head", pl.col("_head").alias("_rest"), pl.lit(None, pl.Float64).alias(STAMPED))
    )
    return pl.concat(done)


def _all(c: pl.LazyFrame, fields: tuple[str, ...], start: pl.Expr) -> pl.DataFrame:
    """Every field of every line (one anchored pass per message)."""
    r = pl.col("raw")
    g = r.str.slice(start).str.extract_groups(message_regex(True)).alias("_g")
    rows = (
        c.select("_c", "path", "line", r.alias("text"), r.str.head(start).alias("_head"), g)
        .unnest("_g")
        .filter(pl.col("op").is_not_null())
    )
    ints = [
        f for f in fields if S.COLLECTIVES[f] == pl.Int64
    ]  # every field is there: the rule has no optional one
    typed = rows.with_columns([_typed(pl.col(f), f) for f in fields])
    return typed.filter(pl.all_horizontal([pl.col(f).is_not_null() for f in ints])).collect()


def _facts(c: pl.LazyFrame, split: str, start: pl.Expr) -> pl.DataFrame:
    """The fact fields: the message's head (op, opCount, buffers: new on every line) checked line by line,
    its tail (from ` count `: size, type, op, root, comm, stream) once per distinct tail, joined back.
    The first ` count ` after the marker is the literal's (the fields before it hold no space)."""
    r, k, h = pl.col("raw"), pl.col("_k"), pl.col("_hd")
    c = c.with_columns(r.str.find(split, literal=True).alias("_k")).filter(k > pl.col("_m"))
    rows = (
        c.with_columns(r.str.slice(start, k - start).alias("_hd"))
        .filter(h.str.contains(message_regex(False, "head")))
        .select(
            "_c",
            "path",
            "line",
            r.alias("text"),
            r.str.head(start).alias("_head"),
            r.str.slice(k).alias("_tail"),
            *_head_cuts(h),
        )
        .collect()
    )
    code, distinct = distinct_codes(rows["_tail"])
    tails = distinct.str.extract_groups(message_regex(False, "tail")).struct.unnest()
    fits = pl.all_horizontal([e.is_not_null() for e in sig_fields(pl.col("_sig"), pl.col("_comm"))])
    good = tails.select(pl.col("_sig").is_not_null() & fits).to_series()
    rows = rows.drop("_tail").with_columns(
        tails["_sig"].gather(code), tails["_comm"].gather(code), _typed(pl.col("op_count"), "op_count")
    )
    return rows.filter(good.gather(code) & pl.col("op_count").is_not_null())


def _head_cuts(h: pl.Expr) -> list[pl.Expr]:
    """op and op_count (text) of message heads that match the rule's head: cut at the literals after them.
    The fields hold no space and each literal holds one, so the first occurrence of the literal after a
    field, searched from the field's start, is where the field ends. op starts the head; op_count's end
    is searched from the head's start, where an earlier occurrence could only give a value that is no
    number (`_typed` makes it null: the line goes the general path's way)."""
    fields, lits = plan()
    i, j = fields.index("op"), fields.index("op_count")
    if (i, j) != (0, 1):  # the cuts below assume `op: opCount N …`
        raise ValueError(f"COLL rule's fields start {fields[:2]}, not (op, op_count)")
    a = h.str.find(lits[0], literal=True).cast(pl.Int64)
    b = a + len(lits[0])
    n = (h.str.find(lits[1], literal=True).cast(pl.Int64) - b).clip(lower_bound=0)
    return [h.str.head(a).alias("op"), h.str.slice(b, n).alias("op_count")]


def distinct_codes(values: pl.Series) -> tuple[pl.Series, pl.Series]:
    """(each value's index among the distinct values, the distinct values): one hashing pass, through a
    Categorical of its own (freed with it; ~2x faster than joining a table of the distinct values back)."""
    cats = pl.Categories.random()
    cat = values.cast(pl.Categorical(cats))
    distinct = cats.to_series()  # while `cat` holds the mapping: Polars empties it when no column uses it
    code = cat.to_physical()
    top = code.max()
    if isinstance(top, int) and top >= distinct.len():  # not the mapping this Polars was seen to keep
        distinct = values.unique(maintain_order=True).drop_nulls()
        index = distinct.to_frame("v").with_row_index("i")
        code = values.to_frame("v").join(index, on="v", how="left", maintain_order="left")["i"]
    return code, distinct


def sig_fields(sig: pl.Expr, comm: pl.Expr) -> list[pl.Expr]:
    """count, datatype from `_sig` and comm_ptr, nranks from `_comm` (typed as the rule's fields)."""
    fields, lits = plan()
    mid, nr = lits[fields.index("count")], lits[fields.index("comm_ptr")]
    a, b = sig.str.split_exact(mid, 1).struct, comm.str.split_exact(nr, 1).struct
    return [
        _typed(a.field("field_0"), "count").alias("count"),
        _typed(a.field("field_1"), "datatype").alias("datatype"),
        b.field("field_0").alias("comm_ptr"),
        _typed(b.field("field_1"), "nranks").alias("nranks"),
    ]


@functools.cache
def _no_heads() -> pl.DataFrame:
    return peel.parse_heads(pl.Series("_head", [], dtype=pl.Utf8))


def with_heads(rows: pl.DataFrame, heads: pl.DataFrame) -> pl.DataFrame:
    """COLL rows with their prefix fields: the COLLECTIVES frame (`full` rows)."""
    out = rows.join(heads, on="_head", how="left", maintain_order="left").drop("_head")
    if (
        STAMPED in out.columns
    ):  # heads parsed without their timestamp wrapper: the line's own, else the head's
        out = out.with_columns(pl.coalesce(STAMPED, "ts_us").alias("ts_us"))
    return S.conform(out, S.COLLECTIVES)
