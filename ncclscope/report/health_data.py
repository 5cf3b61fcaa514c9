"""Report stage, health section's data: what was checked and found healthy, typed.

`HealthSection` is the report document's `health` entry (built by `report.views_health.section`); the JSON
output carries it as `health` (a `Health`, the section less its job facts) and `facts` (the `JobFacts`,
`align.facts`). Every string in it was made printable when built; redaction maps the document tree and
`views_health.of` reads it back typed.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from ncclscope.report.cited import Evidence

Sure = Literal["proven", "likely", "unknown"]


class Fact(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One fact: its value (null when unknown), the evidence it came from, and how sure it is."""

    value: bool | int | str | None
    how: str
    sure: Sure


class CommFact(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One communicator: its key (commId or `n<N>#k`), size, nodes, the hosts of its members, and whether
    its comm-local ranks are the world ranks (`global_ranks`)."""

    key: str
    comm_id: str | None
    nranks: int | None
    nnodes: int | None
    ranks_seen: int
    complete: int
    hosts: tuple[str, ...]
    global_ranks: bool


class InputFact(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One input file: `whole` true (its start and end seen), false (an excerpt), null (cannot tell), and why."""

    path: str
    whole: bool | None
    how: str


class JobFacts(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What the job is, each fact with how it was inferred and how sure (align.facts)."""

    hosts: tuple[str, ...]
    phantom_hosts: tuple[str, ...]
    nodes: Fact
    multi_node: Fact
    world_size: Fact
    launcher: Fact
    library: Fact
    opcount_sequence: Fact
    communicators: tuple[CommFact, ...]
    inputs: tuple[InputFact, ...]
    jobs: Annotated[
        tuple[tuple[str, ...], ...],
        msgspec.Meta(description="input paths per job, when the inputs hold several (else empty)"),
    ]
    several_jobs: Fact


class Init(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How far one communicator's init got: ranks that completed it of its size."""

    comm: str
    nranks: int | None
    nnodes: int | None
    ranks_seen: int
    complete: int
    hosts: Annotated[int, msgspec.Meta(description="how many hosts its members are on")]
    state: Literal["complete", "partial", "not seen"]


class Warns(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """WARN lines printed before their input's teardown: unexplained ones (the first cited), known-benign
    ones counted."""

    count: int
    benign: int
    first: tuple[Evidence, ...]


class Transport(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    transport: str
    channels: int


class Algorithm(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    algorithm: str
    lines: int


class CommPath(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One communicator's data path (lines attributed to the communicator their process named last)."""

    comm: str
    transports: tuple[Transport, ...]
    coll_channels: tuple[int, ...]
    pxn: tuple[int, ...]
    gdr_flag: tuple[int, ...]
    nics: tuple[str, ...]
    algorithms: tuple[Algorithm, ...]
    ring_plan: str | None


class DataPath(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The job's data path: transports per channel, channel counts, PXN, GPUDirect RDMA, NICs, TUNING lines."""

    network: tuple[str, ...]
    transports: tuple[Transport, ...]
    coll_channels: tuple[int, ...]
    gdr_flag: Annotated[tuple[int, ...], msgspec.Meta(description="`use ring PXN x GDR y`: the values of y")]
    pxn: tuple[int, ...]
    nics: tuple[str, ...]
    socket_ifaces: tuple[str, ...]
    tuning_lines: int
    communicators: tuple[CommPath, ...]


class PathSetting(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A setting that changes the data path, what it changes, and the line that sets it."""

    name: str
    value: str
    changes: str
    path: str
    line: int
    text: str


class Health(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What was checked and found healthy (report.views_health), with the lines that show it."""

    healthy: bool
    statement: str
    init: tuple[Init, ...]
    warns_before_teardown: Warns
    success: Annotated[Evidence | None, msgspec.Meta(description="the run's success marker, if printed")]
    data_path: DataPath
    settings: tuple[PathSetting, ...]


class HealthSection(Health, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The document's `health`: the JSON's `health` and its job facts (the JSON's `facts`)."""

    facts: JobFacts
