"""Capture stage, fault specs: `kind:key=value,…` strings → frozen `Fault` records (no torch here).

Step faults stop or skew one rank at one step: hang (a sleep outside the collective), mismatch,
crash, and the faults that stop a rank from inside: oom, cuda-error (`extra=yes`: the error path calls
one more collective) and gil (the GIL held in a C call). Each fault names the ranks it applies to;
`no-p2p` and `no-ib` apply to every rank (both ends of a connection must agree on a transport) unless
`rank=…,asymmetric=yes` asks for a transport mismatch.
The worker asks a fault what to do at each collective; the launcher validates ranks against the world size.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Literal, cast

from ncclscope.errors import InputError

FaultKind = Literal[
    "straggler", "hang", "mismatch", "crash", "oom", "cuda-error", "gil", "iface", "no-ib", "no-p2p"
]

# kind -> (required keys, optional keys); `rank` accepts one rank or several joined by '+'.
_KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "straggler": (frozenset({"rank", "delay_ms"}), frozenset({"at"})),
    "hang": (frozenset({"rank"}), frozenset({"at"})),
    "mismatch": (frozenset({"rank"}), frozenset({"at"})),
    "crash": (frozenset({"rank"}), frozenset({"at", "code"})),
    "oom": (frozenset({"rank"}), frozenset({"at", "extra"})),
    "cuda-error": (frozenset({"rank"}), frozenset({"at", "extra"})),
    "gil": (frozenset({"rank"}), frozenset({"at"})),
    "iface": (frozenset({"rank"}), frozenset({"name"})),
    "no-ib": (frozenset(), frozenset({"rank", "asymmetric"})),
    "no-p2p": (frozenset(), frozenset({"rank", "asymmetric"})),
}
KINDS: tuple[str, ...] = tuple(_KEYS)
# Faults that act at one step of the workload (the others act through the environment).
STEP_FAULTS = frozenset({"hang", "mismatch", "crash", "oom", "cuda-error", "gil"})
# Of those, the ones that stop the rank at the start of its step, before the forward pass (the
# others fire at the step's first all_reduce): its peers go on into the step's collectives.
START_FAULTS = frozenset({"oom", "cuda-error", "gil"})
NCCL_ONLY = frozenset({"no-ib", "no-p2p"})


class FaultSpecError(InputError):
    """An `--inject` spec cannot be parsed or names a rank outside the job."""


@dataclass(frozen=True, slots=True)
class Fault:
    """One injected fault. `ranks` empty means every rank; `at` None means the worker's default step."""

    kind: FaultKind
    ranks: tuple[int, ...] = ()
    delay_ms: float = 0.0
    at: int | None = None
    code: int | None = None  # crash: exit status; None = SIGKILL, as the OOM killer would
    name: str = "lo"
    asymmetric: bool = False  # no-p2p / no-ib on some ranks only: a transport mismatch, on purpose
    extra: bool = False  # oom / cuda-error: the error path calls one more collective (a desync)
    spec: str = field(default="", compare=False)

    def applies_to(self, rank: int) -> bool:
        return not self.ranks or rank in self.ranks

    def env(self) -> dict[str, str]:
        """Environment this fault sets on the ranks it applies to (before the backend initialises)."""
        if self.kind == "iface":
            return {"NCCL_SOCKET_IFNAME": self.name, "GLOO_SOCKET_IFNAME": self.name}
        if self.kind == "no-ib":
            return {"NCCL_IB_DISABLE": "1"}
        if self.kind == "no-p2p":
            return {"NCCL_P2P_DISABLE": "1"}
        return {}

    def to_json(self) -> dict[str, object]:
        d = asdict(self)
        d["ranks"] = list(self.ranks)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> Fault:
        ranks = d.get("ranks") or []
        assert isinstance(ranks, list)
        at = d.get("at")
        return cls(
            kind=cast(FaultKind, d["kind"]),
            ranks=tuple(int(r) for r in ranks),
            delay_ms=float(cast(float, d.get("delay_ms", 0.0))),
            at=None if at is None else int(cast(int, at)),
            code=None if d.get("code") is None else int(cast(int, d["code"])),
            name=str(d.get("name", "lo")),
            asymmetric=bool(d.get("asymmetric", False)),
            extra=bool(d.get("extra", False)),
            spec=str(d.get("spec", "")),
        )


def parse_fault(spec: str) -> Fault:
    """`straggler:rank=1,delay_ms=50` → Fault; raises FaultSpecError with the accepted forms."""
    kind, _, rest = spec.strip().partition(":")
    kind = kind.strip().lower()
    if kind not in _KEYS:
        raise FaultSpecError(f"--inject {spec!r}: unknown fault {kind!r}; expected one of {', '.join(KINDS)}")
    params = _parse_params(spec, rest)
    required, optional = _KEYS[kind]
    unknown = set(params) - required - optional
    if unknown:
        allowed = ", ".join(sorted(required | optional)) or "none"
        raise FaultSpecError(
            f"--inject {spec!r}: unknown key(s) {', '.join(sorted(unknown))} for {kind} (allowed: {allowed})"
        )
    missing = required - set(params)
    if missing:
        raise FaultSpecError(
            f"--inject {spec!r}: {kind} needs {', '.join(sorted(missing))} (e.g. {_example(kind)})"
        )
    return _build(cast(FaultKind, kind), params, spec.strip())


def parse_faults(specs: Iterable[str]) -> tuple[Fault, ...]:
    return tuple(parse_fault(s) for s in specs if s.strip())


def check_ranks(faults: Iterable[Fault], world_size: int) -> None:
    """Every named rank must exist in a job of `world_size` ranks."""
    for f in faults:
        bad = [r for r in f.ranks if r >= world_size]
        if bad:
            raise FaultSpecError(
                f"--inject {f.spec or f.kind!r}: rank {bad[0]} is outside the job "
                f"(world size {world_size}: ranks 0..{world_size - 1})"
            )


def _parse_params(spec: str, rest: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip().lower().replace("-", "_")
        if not sep or not key or not value.strip():
            raise FaultSpecError(f"--inject {spec!r}: expected key=value, got {part!r}")
        if key in params:
            raise FaultSpecError(f"--inject {spec!r}: {key} given twice")
        params[key] = value.strip()
    return params


def _build(kind: FaultKind, p: dict[str, str], spec: str) -> Fault:
    ranks = tuple(_int(spec, "rank", r) for r in p["rank"].split("+")) if "rank" in p else ()
    if len(set(ranks)) != len(ranks):
        raise FaultSpecError(f"--inject {spec!r}: a rank is repeated")
    delay = _number(spec, "delay_ms", p["delay_ms"]) if "delay_ms" in p else 0.0
    if kind == "straggler" and delay <= 0:
        raise FaultSpecError(f"--inject {spec!r}: delay_ms must be > 0")
    name = p.get("name", "lo")
    if not name.replace(".", "").replace("_", "").replace("-", "").replace("^", "").isalnum():
        raise FaultSpecError(f"--inject {spec!r}: name must be an interface name such as lo or eth0")
    at = _int(spec, "at", p["at"]) if "at" in p else None
    code = _int(spec, "code", p["code"]) if "code" in p else None
    if code is not None and not 1 <= code <= 255:
        raise FaultSpecError(f"--inject {spec!r}: code must be an exit status 1..255")
    asym = _yes(spec, "asymmetric", p["asymmetric"]) if "asymmetric" in p else False
    extra = _yes(spec, "extra", p["extra"]) if "extra" in p else False
    if kind in NCCL_ONLY and bool(ranks) != asym:
        raise FaultSpecError(
            f"--inject {spec!r}: {kind} applies to every rank (both ends of a connection must "
            f"agree on a transport); to disable it on some ranks only, a transport mismatch, "
            f"give both rank= and asymmetric=yes (e.g. {kind}:rank=1,asymmetric=yes)"
        )
    return Fault(
        kind=kind,
        ranks=ranks,
        delay_ms=delay,
        at=at,
        code=code,
        name=name,
        asymmetric=asym,
        extra=extra,
        spec=spec,
    )


def _yes(spec: str, key: str, value: str) -> bool:
    v = value.strip().lower()
    if v not in ("yes", "true", "1", "no", "false", "0"):
        raise FaultSpecError(f"--inject {spec!r}: {key} must be yes or no, got {value!r}")
    return v in ("yes", "true", "1")


def _int(spec: str, key: str, value: str) -> int:
    v = value.strip()
    if not v.isdigit():
        raise FaultSpecError(f"--inject {spec!r}: {key} must be a non-negative integer, got {value!r}")
    return int(v)


def _number(spec: str, key: str, value: str) -> float:
    try:
        v = float(value)
    except ValueError:
        raise FaultSpecError(f"--inject {spec!r}: {key} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise FaultSpecError(f"--inject {spec!r}: {key} must be finite")
    return v


def _example(kind: str) -> str:
    return {
        "straggler": "straggler:rank=1,delay_ms=50",
        "hang": "hang:rank=1",
        "mismatch": "mismatch:rank=1",
        "crash": "crash:rank=1",
        "oom": "oom:rank=0,extra=yes",
        "cuda-error": "cuda-error:rank=1",
        "gil": "gil:rank=1",
        "iface": "iface:rank=1,name=lo",
    }.get(kind, kind)
