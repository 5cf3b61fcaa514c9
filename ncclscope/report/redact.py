"""Report stage, redaction: consistent pseudonyms for what identifies a site in a shared report.

Host names, IPv4/IPv6 addresses, MAC addresses, user names in home paths and hex pointers/ids are
replaced by `host-1`, `ip-1.2`, `ip6-1`, `mac-1`, `user-1`, `0xptr-1`, the same value always by the
same pseudonym. Loopback and unspecified addresses (127.x, ::1, 0.0.0.0, ::) and `localhost` identify
nobody and carry diagnoses (iface-loopback), so they are kept. IPv4 pseudonyms keep the /24 grouping:
`ip-2.5` is the fifth address seen in the second /24, so "these ranks are on another subnet" survives.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator
from dataclasses import fields, is_dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from ncclscope.session import Session

# Columns whose values are host names (peer may also hold an address, which the IP rules catch).
HOST_COLUMNS = frozenset({"host", "hostname", "host_name", "peer", "peer_host", "src_host", "dst_host"})
KEEP_HOSTS = frozenset({"localhost", "localhost.localdomain", "unknown", "none", "null", ""})
# Account names that are not personal; redacted inside home paths, not as free words.
GENERIC_USERS = frozenset(
    {
        "root",
        "user",
        "users",
        "ubuntu",
        "admin",
        "ec2-user",
        "centos",
        "jovyan",
        "debian",
        "shared",
        "builder",
        "runner",
        "home",
    }
)

_PTR = r"(?<![0-9A-Za-z])0x[0-9a-fA-F]{6,}(?![0-9A-Za-z])"
_MAC = r"(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}(?![0-9A-Fa-f:])"
# Candidate IPv6 (validated in code): hex groups joined by ':' with an optional %zone. A letter that
# is not a hex digit may precede it, and so may `iface:`: NCCL prints `remoteGidsfd00:…` and
# `veth75fa783:fe80:…` glued.
_IP6 = r"(?:(?<![0-9A-Fa-f:.])|(?<=[0-9A-Za-z]:))(?:[0-9A-Fa-f]{1,4}|:)(?::[0-9A-Fa-f]{0,4}){2,8}(?:%[\w.-]+)?(?![0-9A-Za-z:])"
_IP4 = r"(?<![0-9.])(?:\d{1,3}\.){3}\d{1,3}(?![0-9]|\.[0-9])"
# An IPv6 address ending in an IPv4 one (`::ffff:10.1.2.5`, IPv4-mapped): the IPv4 part is the identity.
_IP46 = r"(?<![0-9A-Fa-f:.])(?:[0-9A-Fa-f]{0,4}:){2,6}(?:\d{1,3}\.){3}\d{1,3}(?![0-9]|\.[0-9])"
# Cloud host names that spell an address: `ip-10-1-2-3` (AWS), `10-1-2-3.compute.internal`.
_IPNAME = r"(?<![A-Za-z0-9-])(?:ip-\d{1,3}(?:-\d{1,3}){3}(?![0-9])|\d{1,3}(?:-\d{1,3}){3}(?=\.[A-Za-z]))"
# `~alice/…`, `~alice`: a home directory by its owner's name.
_TILDE = r"(?<![\w~/])~[A-Za-z_][A-Za-z0-9._-]*(?=[/\s'\":,;)\]]|$)"
# The user (and password) of a URL: `https://alice:secret@host/`.
_CRED = r"(?<=://)[^\s/@:]+(?::[^\s/@]*)?@"
# /home/<u>/, /Users/<u>/, /scratch/<u>/ (and C:\Users\<u>\): the user is group 2.
_USER = r"((?:/home|/Users|/users|/scratch|/u)/|[A-Za-z]:\\Users\\)([A-Za-z0-9._-]+)(?=[/\\]|$|[\s'\":,;)\]])"
# NCCL's `host:pid:tid [dev]` prefix, to learn host names that no frame column named.
_PREFIX_HOST = re.compile(r"(?:^|[\s\]>:|])([A-Za-z][A-Za-z0-9._-]*):\d+:\d+ \[\d+\]")


def _valid6(v: str) -> bool:
    try:
        ipaddress.IPv6Address(v)
        return True
    except ValueError:
        return False


def _strip_port(v: str) -> str:
    # Peers print as `10.1.2.3<43210>`; a host named `<cluster_name>` (a user's placeholder) stays whole.
    return re.sub(r"<\d+>$", "", v).strip()


def _is_ip(v: str) -> bool:
    try:
        ipaddress.ip_address(v.split("%", 1)[0])
        return True
    except ValueError:
        return bool(re.fullmatch(_IP6, v))


def _trie(words: Iterable[str]) -> str:
    """One regex for a set of literal words, as a trie (`node-(?:0(?:1|2)|1)`): matching costs the length
    of the text, not text × words as a flat alternation does (32,000 host names: 54 s -> linear).
    Longer words come first where one word is a prefix of another, so the longest match wins."""
    root: dict[str, Any] = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}  # the end of a word

    def emit(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        end = "" in node
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 and not end else "(?:" + "|".join(alts) + ")"
        return body + "?" if end else body

    return emit(root)


MAX_TRIE_WORD = 200  # longer words (no real host name) join a flat alternation: the trie recurses per char


def _boundary_alternation(words: Iterable[str]) -> str:
    uniq = {w for w in words if w}
    if not uniq:
        return r"(?!x)x"
    long = sorted((w for w in uniq if len(w) > MAX_TRIE_WORD), key=lambda w: (-len(w), w))
    alts = "|".join([*(re.escape(w) for w in long), _trie(w for w in uniq if len(w) <= MAX_TRIE_WORD)])
    return rf"(?<![A-Za-z0-9])(?:{alts})(?![A-Za-z0-9])"


class Redactor:
    """Learns identifying values (hosts first, then whatever the patterns find) and replaces them."""

    def __init__(self, reserved: frozenset[str] = frozenset()) -> None:
        # Host names that are words of the typed report sections' field names (`host`, `rank`, `count` of
        # `last_op_count`): such a name identifies nobody, and replacing it would rename the fields.
        self.reserved = reserved
        self.hosts: dict[str, str] = {}
        self.ips: dict[str, str] = {}  # IPv4
        self.ip6s: dict[str, str] = {}
        self.subnets: dict[str, list[str]] = {}  # /24 → its addresses, in order seen
        self._net_no: dict[str, int] = {}  # /24 → its number in the pseudonyms
        self.users: dict[str, str] = {}
        self.ptrs: dict[str, str] = {}
        self.macs: dict[str, str] = {}
        self._rx: re.Pattern[str] | None = None
        self._word_users: re.Pattern[str] | None = None

    # -- learning ---------------------------------------------------------------------------
    def add_host(self, name: str | None) -> None:
        name = _strip_port(name or "")
        if name.lower() in KEEP_HOSTS or name in self.reserved or _is_ip(name) or name in self.hosts:
            return
        self.hosts[name] = f"host-{len(self.hosts) + 1}"
        # A host's short name is the same machine: `node-07.cluster.local` vs `node-07`.
        short = name.split(".", 1)[0]
        if (
            short != name
            and short.lower() not in KEEP_HOSTS
            and short not in self.reserved | self.hosts.keys()
        ):
            self.hosts[short] = self.hosts[name]
        self._rx = None

    def learn_text(self, text: str) -> None:
        """Learn prefix host names, then number every other value in order of appearance."""
        for m in _PREFIX_HOST.finditer(text):
            self.add_host(m.group(1))
        for _ in self._sub_iter(text):
            pass

    def learn(self, obj: Any) -> None:
        for s in _strings(obj):
            for m in _PREFIX_HOST.finditer(s):
                self.add_host(m.group(1))
        for s in _strings(obj):
            for _ in self._sub_iter(s):
                pass

    def learn_frames(self, frames: Iterable[pl.DataFrame]) -> None:
        """Host names from every host-like column (values sorted, so numbering is reproducible)."""
        for df in frames:
            for c in df.columns:
                if c in HOST_COLUMNS and df.schema[c] == pl.Utf8:
                    for v in sorted(x for x in df[c].drop_nulls().unique().to_list()):
                        self.add_host(v)

    # -- replacing --------------------------------------------------------------------------
    def __call__(self, text: str) -> str:
        if not text:
            return text
        for m in _PREFIX_HOST.finditer(text):
            self.add_host(m.group(1))
        rx = self._pattern()
        out = rx.sub(self._replace, text)
        # A user name first met in this text is also a free word in it: run again with it known.
        return out if self._rx is rx else self._pattern().sub(self._replace, text)

    def tree(self, obj: Any) -> Any:
        """The same JSON-like tree with every string (keys too) redacted."""
        if isinstance(obj, str):
            return self(obj)
        if isinstance(obj, dict):
            return {self(k) if isinstance(k, str) else k: self.tree(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return type(obj)(self.tree(v) for v in obj)
        return obj

    def frame(self, df: pl.DataFrame) -> pl.DataFrame:
        """A frame with its string columns (and lists of strings) redacted, value by value."""
        out = []
        for c, t in df.schema.items():
            if t == pl.Utf8:
                out.append(pl.col(c).map_elements(self, return_dtype=pl.Utf8, skip_nulls=True))
            elif t == pl.List(pl.Utf8):
                out.append(
                    pl.col(c).list.eval(
                        pl.element().map_elements(self, return_dtype=pl.Utf8, skip_nulls=True)
                    )
                )
            else:
                out.append(pl.col(c))
        return df.select(out) if df.height else df

    def summary(self) -> dict[str, int]:
        return {
            "hosts": len(set(self.hosts.values())),
            "addresses": len(self.ips) + len(self.ip6s),
            "users": len(self.users),
            "pointers": len(self.ptrs),
            "macs": len(self.macs),
        }

    # -- internals --------------------------------------------------------------------------
    def _pattern(self) -> re.Pattern[str]:
        if self._rx is None:
            hosts = _boundary_alternation(self.hosts)
            self._rx = re.compile(
                f"(?P<host>{hosts})|(?P<cred>{_CRED})|(?P<user>{_USER})|(?P<tilde>{_TILDE})|(?P<ptr>{_PTR})"
                f"|(?P<mac>{_MAC})|(?P<ipname>{_IPNAME})|(?P<ip46>{_IP46})|(?P<ip6>{_IP6})|(?P<ip4>{_IP4})"
                f"|(?P<word>{self._user_words()})"
            )
        return self._rx

    def _user_words(self) -> str:
        return _boundary_alternation(u for u in self.users if u.lower() not in GENERIC_USERS and len(u) >= 3)

    def _sub_iter(self, text: str) -> Iterator[str]:
        for m in self._pattern().finditer(text):
            yield self._replace(m)

    def _replace(self, m: re.Match[str]) -> str:
        kind = m.lastgroup
        v = m.group(0)
        if kind == "host":
            return self.hosts[v]
        if kind == "user":
            return self._user(m.group(0), v)
        if kind == "ptr":
            return self._number(self.ptrs, v.lower(), "0xptr-")
        if kind == "mac":
            return self._number(self.macs, v.lower(), "mac-")
        if kind == "cred":
            name, colon, _secret = v[:-1].partition(":")
            return self._name(name) + (":***" if colon else "") + "@"
        if kind == "tilde":
            return "~" + self._name(v[1:])
        if kind == "ipname":
            dotted = v.removeprefix("ip-").replace("-", ".")
            out = self._ip4(dotted)
            return v if out == dotted else out
        if kind == "ip46":
            head, _, v4 = v.rpartition(":")
            if head.lower() in ("::ffff", ":", "::ffff:0"):
                return head + ":" + self._ip4(v4)
            return self._number(self.ip6s, v.lower(), "ip6-")
        if kind == "ip6":
            return self._ip6(v, m.string, m.start())
        if kind == "ip4":
            return self._ip4(v)
        if kind == "word":
            return self.users.get(v, v)
        return v

    def _number(self, table: dict[str, str], key: str, prefix: str) -> str:
        if key not in table:
            table[key] = f"{prefix}{len(table) + 1}"
        return table[key]

    def _user(self, whole: str, _: str) -> str:
        m = re.match(_USER, whole)
        assert m is not None
        return m.group(1) + self._name(m.group(2))

    def _name(self, name: str) -> str:
        if name not in self.users:
            self.users[name] = f"user-{len(self.users) + 1}"
            self._rx = None  # personal names are then redacted as free words too
        return self.users[name]

    def _ip4(self, v: str) -> str:
        octets = v.split(".")
        if len(octets) != 4 or not all(o.isascii() and o.isdigit() and int(o) <= 255 for o in octets):
            return v
        v = ".".join(str(int(o)) for o in octets)  # `010.001.002.003` is 10.1.2.3, the same pseudonym
        a = ipaddress.IPv4Address(v)
        if a.is_loopback or a.is_unspecified:
            return v
        if v not in self.ips:
            net = v.rsplit(".", 1)[0]
            if net not in self.subnets:
                self.subnets[net] = []
                self._net_no[net] = len(self.subnets)  # (list(subnets).index(net) per address was ~n²)
            members = self.subnets[net]
            members.append(v)
            self.ips[v] = f"ip-{self._net_no[net]}.{len(members)}"
        return self.ips[v]

    def _ip6(self, v: str, text: str, start: int) -> str:
        lead = ""
        addr, _, zone = v.partition("%")
        groups = addr.split(":")
        # `ib0:fe80:…` glued to a name: a short first group is the tail of the interface name
        # (`remoteGidsfd00:…` keeps its four-digit first group).
        rest = groups[1:]
        if (
            start > 0
            and text[start - 1].isalpha()
            and len(groups[0]) <= 3
            and rest[:1] != [""]
            and (_valid6(":".join(rest)) or len([g for g in rest if g]) >= 4)
        ):
            lead, addr = groups[0] + ":", ":".join(groups[1:])
            groups = groups[1:]
        nonempty = [g for g in groups if g]
        if "::" in addr:
            ok = len(nonempty) >= 2 or addr == "::" or (len(nonempty) == 1 and addr.startswith("::"))
        else:
            ok = len(nonempty) >= 4 and any(c in "abcdefABCDEF" for c in addr) or len(nonempty) == 8
        if not ok:
            return v
        try:
            a = ipaddress.IPv6Address(addr)
            if a.is_loopback or a.is_unspecified:
                return v
        except ValueError:
            pass
        key = addr.lower()
        if key not in self.ip6s:
            kind = "fe80::ip6-" if key.startswith("fe80") else "ip6-"
            self.ip6s[key] = f"{kind}{len(self.ip6s) + 1}"
        zone_out = f"%{self(zone)}" if zone else ""
        return lead + self.ip6s[key] + zone_out


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)


def session_frames(obj: Any, depth: int = 0) -> Iterator[pl.DataFrame]:
    """Every Polars frame reachable from a session (log frames, ranks, traces, dumps)."""
    if isinstance(obj, pl.DataFrame):
        yield obj
    elif is_dataclass(obj) and not isinstance(obj, type) and depth < 3:
        for f in fields(obj):
            yield from session_frames(getattr(obj, f.name), depth + 1)
    elif isinstance(obj, dict) and depth < 3:
        for v in obj.values():
            yield from session_frames(v, depth + 1)


def for_session(s: Session, doc: dict[str, Any] | None = None) -> Redactor:
    """A redactor seeded the same way for every format: ranks' hosts (by rank), every frame's host
    columns, then the report document's strings (its JSON view first), so `host-3` names the same
    machine everywhere. `doc`: the document already built for this session, if any."""
    from ncclscope.report import document as D
    from ncclscope.report import sections

    doc = doc if doc is not None else D.build(s)
    r = Redactor(reserved=schema_words(sec.schema for sec in sections.SECTIONS if sec.schema is not None))
    ranks = s.ranks.sort("rank", nulls_last=True) if "rank" in s.ranks.columns else s.ranks
    r.learn_frames([ranks])
    r.learn_frames(session_frames(s))
    r.learn(D.json_view(doc))
    r.learn(doc)
    return r


def schema_words(types: Iterable[object]) -> frozenset[str]:
    """The field names of the msgspec Structs reachable from `types` (the typed report sections' data),
    and each run of letters and digits in them (the words a host name would be matched as)."""
    import typing

    import msgspec

    out: set[str] = set()
    seen: set[type] = set()
    stack = list(types)
    while stack:
        t = stack.pop()
        if isinstance(t, type) and issubclass(t, msgspec.Struct):
            if t not in seen:
                seen.add(t)
                for f in msgspec.structs.fields(t):
                    out.add(f.name)
                    out.update(w for w in re.split(r"[^A-Za-z0-9]+", f.name) if w)
                    stack.append(f.type)
        else:
            stack.extend(typing.get_args(t))
    return frozenset(out)
