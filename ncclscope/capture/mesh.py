"""Capture stage, parallel layout: `--layout tp=2,dp=2,ep=2` → the process groups of a Megatron-style
job (pure, no torch), so the job can run collectives in every group and a stopped rank holds up each
group it belongs to.

Ranks are laid out as Megatron-LM's default order `tp-cp-ep-dp` (parallel_state.RankGenerator):
tensor-parallel ranks are adjacent, data-parallel ranks the furthest apart. Unlike Megatron, where the
expert-parallel groups are carved out of the data-parallel ranks, every dimension here is an axis of
its own, so the world size is the product of the sizes and each group kind has its own members; this
keeps a layout's groups easy to check by hand. `etp` is the expert tensor-parallel group: in Megatron's
expert decomposition the ranks of one expert-parallel group that share the expert's weights, here the
tp × ep ranks that share the other coordinates (its size is tp × ep; `etp=yes` asks for it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ncclscope.errors import InputError

# Axes, fastest-varying first (Megatron's default order), and each one's group description as
# Megatron-LM passes it to `new_group(group_desc=...)` (megatron/core/parallel_state.py).
AXES: tuple[str, ...] = ("tp", "cp", "ep", "dp")
DESC: dict[str, str] = {
    "tp": "TENSOR_MODEL_PARALLEL_GROUP",
    "cp": "CONTEXT_PARALLEL_GROUP",
    "ep": "EXPERT_MODEL_PARALLEL_GROUP",
    "dp": "DATA_PARALLEL_GROUP",
    "etp": "EXPERT_TENSOR_AND_MODEL_PARALLEL_GROUP",
}
MAX_WORLD = 64  # a capture runs every rank on one machine; 64 is already far past a laptop's
_YES = {"yes": True, "true": True, "1": True, "no": False, "false": False, "0": False}


class LayoutSpecError(InputError):
    """A `--layout` spec cannot be parsed or asks for an impossible job."""


@dataclass(frozen=True, slots=True)
class MeshGroup:
    """One process group of the layout: its kind (`tp`, …), its index among that kind's groups
    (ordered by lowest rank) and its global ranks, ascending."""

    kind: str
    index: int
    ranks: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"{self.kind}{self.index}"

    @property
    def desc(self) -> str:
        return DESC[self.kind]


@dataclass(frozen=True, slots=True)
class Mesh:
    """Sizes per axis (every axis present, 1 when not asked for) and whether to add the expert-TP group."""

    tp: int = 1
    cp: int = 1
    ep: int = 1
    dp: int = 1
    etp: bool = False
    spec: str = ""

    @property
    def sizes(self) -> tuple[int, ...]:
        return (self.tp, self.cp, self.ep, self.dp)

    @property
    def world_size(self) -> int:
        return math.prod(self.sizes)

    def coords(self, rank: int) -> dict[str, int]:
        """`rank` → its index along every axis (tp fastest)."""
        out: dict[str, int] = {}
        rest = rank
        for axis, size in zip(AXES, self.sizes, strict=True):
            out[axis] = rest % size
            rest //= size
        return out

    def rank_of(self, coords: dict[str, int]) -> int:
        rank, stride = 0, 1
        for axis, size in zip(AXES, self.sizes, strict=True):
            rank += coords[axis] * stride
            stride *= size
        return rank

    def groups(self) -> tuple[MeshGroup, ...]:
        """Every group of every kind with more than one rank, in the order the job creates them
        (axis order, then lowest rank): each rank must call `new_group` for all of them, in this order."""
        kinds: list[tuple[str, tuple[str, ...]]] = [(a, (a,)) for a in AXES]
        if self.etp:
            kinds.append(("etp", ("tp", "ep")))
        out: list[MeshGroup] = []
        for kind, axes in kinds:
            members: dict[tuple[int, ...], list[int]] = {}
            for rank in range(self.world_size):
                c = self.coords(rank)
                key = tuple(c[a] for a in AXES if a not in axes)
                members.setdefault(key, []).append(rank)
            if len(next(iter(members.values()))) < 2:
                continue
            ordered = sorted(tuple(m) for m in members.values())
            out.extend(MeshGroup(kind, i, ranks) for i, ranks in enumerate(ordered))
        return tuple(out)

    def groups_of(self, rank: int) -> tuple[MeshGroup, ...]:
        return tuple(g for g in self.groups() if rank in g.ranks)

    def to_json(self) -> dict[str, object]:
        return {
            "tp": self.tp,
            "cp": self.cp,
            "ep": self.ep,
            "dp": self.dp,
            "etp": self.etp,
            "spec": self.spec,
        }

    @classmethod
    def from_json(cls, d: dict[str, object]) -> Mesh:
        def size(key: str) -> int:
            v = d.get(key, 1)
            return int(v) if isinstance(v, int | str) else 1

        return cls(
            tp=size("tp"),
            cp=size("cp"),
            ep=size("ep"),
            dp=size("dp"),
            etp=bool(d.get("etp")),
            spec=str(d.get("spec", "")),
        )


def parse_mesh(spec: str) -> Mesh:
    """`tp=2,dp=2,ep=2` → Mesh; raises LayoutSpecError with the accepted form."""
    form = "e.g. --layout tp=2,dp=2 or tp=2,dp=2,ep=2 (axes tp, cp, ep, dp; etp=yes adds the expert-TP group)"
    sizes: dict[str, int] = {}
    etp = False
    seen: set[str] = set()
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, value = part.partition("=")
        key, value = key.strip().lower(), value.strip().lower()
        if not sep or not key or not value:
            raise LayoutSpecError(f"--layout {spec!r}: expected axis=size, got {part!r} ({form})")
        if key in seen:
            raise LayoutSpecError(f"--layout {spec!r}: {key} given twice")
        seen.add(key)
        if key == "etp":
            if value not in _YES:
                raise LayoutSpecError(f"--layout {spec!r}: etp must be yes or no, got {value!r}")
            etp = _YES[value]
            continue
        if key not in AXES:
            raise LayoutSpecError(f"--layout {spec!r}: unknown axis {key!r} ({form})")
        if not value.isdigit() or int(value) < 1:
            raise LayoutSpecError(f"--layout {spec!r}: {key} must be a whole number >= 1, got {value!r}")
        sizes[key] = int(value)
    if not sizes:
        raise LayoutSpecError(f"--layout {spec!r}: no axis given ({form})")
    mesh = Mesh(**sizes, etp=etp, spec=spec.strip())
    if mesh.world_size > MAX_WORLD:
        raise LayoutSpecError(
            f"--layout {spec!r}: {mesh.world_size} ranks; a capture runs every rank on this machine "
            f"(at most {MAX_WORLD})"
        )
    if mesh.world_size < 2:
        raise LayoutSpecError(
            f"--layout {spec!r}: one rank has no process group to capture; give a size >= 2"
        )
    if etp and (mesh.tp < 2 or mesh.ep < 2):
        raise LayoutSpecError(
            f"--layout {spec!r}: etp=yes needs tp and ep of 2 or more (else it is the tp or ep group)"
        )
    return mesh
