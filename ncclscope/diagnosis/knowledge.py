"""Diagnosis stage, knowledge: what each finding is (cause, consequence, symptom, risk, info) and which
kinds of event explain which, written as data with a reason per entry.

`KINDS` is tried in order; the first entry whose finding id and conditions match classes the finding
(a finding no entry matches is classed by its severity: `DEFAULT_KINDS`). `LINKS` says which kinds
explain which, within what scope, and whether time must agree. Every entry has a test in
tests/diagnosis/test_knowledge.py that fails without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ncclscope.diagnosis.model import EventClass

Scope = Literal["job", "ranks", "members", "culprits-wait", "same-culprits", "same-line"]


@dataclass(frozen=True, slots=True)
class Kind:
    """Classes a finding: `finding` ("*" for any id), optional severities and metric conditions
    (`has`: a metric that is present and truthy; `equals`: metric values)."""

    id: str
    finding: str
    klass: EventClass
    tier: int  # precedence: lower is more fundamental (a cause explains only higher tiers); echoes of a
    # peer (closed connections, flushed requests) sit above the symptoms, since a hang explains them too
    reason: str
    severities: tuple[str, ...] = ()
    has: tuple[str, ...] = ()
    equals: tuple[tuple[str, object], ...] = ()
    contains: tuple[tuple[str, object], ...] = ()  # metric list holds the value
    only: tuple[tuple[str, tuple[object, ...]], ...] = ()  # every item of a metric list is one of these


@dataclass(frozen=True, slots=True)
class LinkRule:
    """Events of kinds `causes` explain events of kinds `echoes` ("*": any kind) within `scope`; `timed`: the cause
    may not come after the echo (where both carry a time, or both lie in one file)."""

    id: str
    causes: tuple[str, ...]
    echoes: tuple[str, ...]
    scope: Scope
    reason: str
    relation: str  # how the chain says it: "<echo> because <relation>"
    timed: bool = True
    same_tier: bool = False  # allowed between events of one tier (the earlier finding explains the later)
    any_tier: bool = False  # allowed from a higher tier to a lower one (the reasoner never closes a cycle)


LOCAL_FAILURES = (
    "process-exception",
    "process-death",
    "cuda-error",
    "nvls-failure",
    "shm-exhausted",
    "duplicate-gpu",
    "local-fatal",
    "ras-dead",
)
NETWORK_FAILURES = ("network-failure", "connection-root")
CONFIG_FAILURES = ("config-fatal",)
HANGS = ("hang-stuck-rank", "hang-desync", "hang-no-culprit")

KINDS: tuple[Kind, ...] = (
    # --- the library itself --------------------------------------------------------------------
    Kind(
        "unsupported-library",
        "nccl-1x",
        "cause",
        9,
        "A build against NCCL 1.x (the single-process library NCCL 2 replaced in 2017) fails in ways nobody "
        "fixes any more: whatever else failed in that run is the old library's failure first.",
        severities=("error",),
    ),
    # --- a rank's own failure -------------------------------------------------------------------
    Kind(
        "exit-echo",
        "rank-exited",
        "consequence",
        75,
        "rank-exited marks an exit whose reason another error-group finding names on the same rank "
        "(metrics.echo_of): the exit is that finding's echo.",
        has=("echo_of",),
    ),
    Kind(
        "log-cut",
        "rank-exited",
        "symptom",
        85,
        "A log that ends mid-line says a writer was killed, not why: a symptom of the job being killed.",
        severities=("warning",),
    ),
    Kind(
        "process-exception",
        "rank-exited",
        "cause",
        10,
        "A rank that raised its own fatal exception (metrics.exc_type) and died of it stops every "
        "collective of every group it belongs to; its exception says why.",
        has=("exc_type",),
    ),
    Kind(
        "process-death",
        "rank-exited",
        "cause",
        11,
        "A rank that died (its own exception, a crash at the end of its log, a signal it did not send "
        "itself) stops every collective of every group it belongs to.",
    ),
    Kind(
        "ras-dead",
        "ras-dead-process",
        "cause",
        11,
        "NCCL RAS declared a job process dead (60 s unreachable over its own network): like a rank that "
        "died, it stops every collective of every communicator it belongs to.",
        severities=("error",),
    ),
    Kind(
        "app-exception",
        "rank-exception",
        "cause",
        10,
        "A rank raised a fatal exception of its own (OOM, CUDA error) and went on (an error path, a "
        "handler): what it does next (an extra collective, a wait) is the exception's consequence.",
    ),
    Kind(
        "abort-echo",
        "cuda-error",
        "consequence",
        72,
        "An unhandled CUDA error PyTorch raised out of ncclCommAbort (metrics.role abort-echo): the abort only "
        "synchronises and frees the communicator, so the error is the sticky one of an earlier CUDA fault.",
        equals=(("role", "abort-echo"),),
    ),
    Kind(
        "cuda-error",
        "cuda-error",
        "cause",
        10,
        "A CUDA failure inside NCCL ends the communicator on that rank.",
    ),
    Kind(
        "nvls-failure",
        "nvls-failure",
        "cause",
        10,
        "NVLS setup failing is a local driver/fabric-manager failure: the communicator cannot be built.",
    ),
    Kind(
        "shm-exhausted",
        "shm-exhausted",
        "cause",
        10,
        "No shared memory: the intra-node transport cannot start.",
    ),
    Kind(
        "duplicate-gpu",
        "duplicate-gpu",
        "cause",
        10,
        "NCCL refuses two ranks on one GPU: init fails on those ranks.",
        severities=("error",),
    ),
    Kind(
        "local-fatal",
        "p2p-degraded",
        "cause",
        12,
        "`P2P is disabled between NVLINK connected GPUs` is fatal at init (error severity only).",
        severities=("error",),
    ),
    Kind(
        "wrong-data",
        "nccltests-wrong",
        "cause",
        15,
        "nccl-tests counted wrong elements: corrupt data, whatever else the run shows.",
    ),
    # --- the network ------------------------------------------------------------------------------
    Kind(
        "ib-flushed",
        "ib-error",
        "consequence",
        72,
        "IB status 5 (work request flushed) is what every queued request reports after an earlier error "
        "moved the QP to the error state.",
        only=(("statuses", (5,)),),
    ),
    Kind(
        "network-failure",
        "ib-error",
        "cause",
        30,
        "An IB/RoCE/OFI completion error (retry exceeded, protection, RNR) is the network failing under "
        "a transfer.",
    ),
    Kind(
        "connection-echo",
        "connection-failure",
        "consequence",
        72,
        "A connection closed by the remote peer, a broken pipe or a proxy closure says a peer went away, "
        "not why.",
        equals=(("role", "echo"),),
    ),
    Kind(
        "connection-retry",
        "connection-failure",
        "symptom",
        55,
        "Connect retries that did not run out yet: the peer was not there (yet), which is a symptom.",
        equals=(("role", "retry"),),
    ),
    Kind(
        "config-fatal",
        "connection-failure",
        "cause",
        20,
        "A connection failure whose first line's meaning is a configuration (a rank claimed twice, an "
        "incompatible peer, no interface): the processes disagree, the network is not to blame.",
        equals=(("cause_class", "configuration"),),
    ),
    Kind(
        "connection-root",
        "connection-failure",
        "cause",
        30,
        "Connection refused / timed out / no route when connecting: the address or the network is wrong.",
    ),
    # --- what a stuck job looks like --------------------------------------------------------------
    Kind(
        "desync",
        "collective-mismatch",
        "cause",
        40,
        "Ranks that called different collectives at one position wait for each other forever; unless an "
        "error path explains the odd call, the divergence in the program is the cause.",
    ),
    Kind(
        "hang-stuck-rank",
        "collective-hang",
        "symptom",
        58,
        "A stuck collective whose culprits never entered or died: the ranks holding it up are named.",
        contains=(("_hang_class", "a"),),
    ),
    Kind(
        "hang-desync",
        "collective-hang",
        "symptom",
        60,
        "A stuck collective where ranks called different things (class c).",
        contains=(("_hang_class", "c"),),
    ),
    Kind(
        "hang-no-culprit",
        "collective-hang",
        "symptom",
        62,
        "A stuck collective with no rank to blame in its own group (every rank entered, or undetermined).",
    ),
    Kind(
        "timeout",
        "watchdog-timeout",
        "symptom",
        70,
        "The watchdog timing out is how a stuck collective is detected on the ranks that waited.",
    ),
    Kind(
        "timeout",
        "failed-collective",
        "symptom",
        70,
        "The Flight Recorder's stack of a failed collective is printed by the watchdog that timed the "
        "collective out (or saw it fail): like the timeout line, it is how the stuck collective was detected.",
    ),
    Kind(
        "init-stuck",
        "init-incomplete",
        "symptom",
        65,
        "Init that started on some ranks and completed on others is a symptom: something kept the rest "
        "from connecting (error severity).",
        severities=("error",),
    ),
    Kind(
        "init-unseen",
        "init-incomplete",
        "risk",
        89,
        "Init START with no COMPLETE on any rank of the communicator (warning severity): the log may simply "
        "end before COMPLETE, so it is a weak sign, below any measured risk.",
    ),
    Kind(
        "unexplained",
        "unexplained-warn",
        "symptom",
        90,
        "A WARN with no meaning: it may be the cause, but nothing here says what it means.",
    ),
    # --- configuration that keeps the job from forming -----------------------------------------
    Kind(
        "config-fatal",
        "*",
        "cause",
        20,
        "Error-severity configuration findings (versions, environment, interfaces, topology, world size): "
        "processes that disagree on these cannot connect or run the same algorithm.",
        severities=("error",),
        equals=(("_group", "config"),),
    ),
    # --- meanings of WARN families (issue 28): cause classes of the message catalog ------------------
    Kind(
        "stored-error",
        "nccl-warn",
        "consequence",
        72,
        "A WARN that, in its context, reports again an error its communicator already holds "
        "(metrics.repeats: NCCL 2.14-2.25's `Attempt to use communicator before the previous operation "
        "returned ncclSuccess` after an earlier WARN of the process): the earlier failure, seen again.",
        has=("repeats",),
    ),
    Kind(
        "peer-echo",
        "*",
        "consequence",
        72,
        "A WARN whose code path reports a peer's failure (its meaning's cause class is peer-failure).",
        equals=(("cause_class", "peer-failure"),),
    ),
    Kind(
        "teardown-line",
        "*",
        "info",
        95,
        "Teardown and benign WARN families describe the job ending or a harmless fallback.",
        contains=(("_cause_classes", "teardown"),),
    ),
    Kind(
        "local-fatal",
        "*",
        "cause",
        12,
        "A WARN family of the resource, hardware/driver or internal cause class at error severity.",
        severities=("error",),
        contains=(("_cause_classes", "local"),),
    ),
    Kind(
        "config-fatal",
        "*",
        "cause",
        22,
        "A WARN family of the configuration cause class at error severity (e.g. NCCL's own collective "
        "mismatch WARN, an address-vector failure of a misconfigured provider).",
        severities=("error",),
        equals=(("cause_class", "configuration"),),
    ),
    Kind(
        "network-failure",
        "*",
        "cause",
        30,
        "A WARN family of the network cause class at error severity.",
        severities=("error",),
        equals=(("cause_class", "network"),),
    ),
    # --- slow, not broken -------------------------------------------------------------------------
    Kind(
        "slow-transport",
        "*",
        "risk",
        80,
        "A degraded data path (sockets instead of IB, no GPUDirect RDMA, no P2P, a GPU shared by ranks) "
        "costs bandwidth.",
        severities=("warning", "info"),
        contains=(("_finding_family", "transport"),),
    ),
    Kind(
        "slow",
        "*",
        "risk",
        82,
        "Measured slowness: low bus bandwidth, a straggler, exposed communication.",
        severities=("warning", "info"),
        contains=(("_finding_family", "slow"),),
    ),
)

# Finding ids that `slow-transport` and `slow` stand for (read as the pseudo-metric _finding_family).
FINDING_FAMILY: dict[str, str] = {
    "net-socket-fallback": "transport",
    "gdr-disabled": "transport",
    "p2p-degraded": "transport",
    "iface-virtual": "transport",
    "duplicate-gpu": "transport",  # accepted GPU sharing (warning): ranks time-slice one GPU
    "low-busbw": "slow",
    "nccltests-low-busbw": "slow",
    "straggler": "slow",
    "comm-overhead": "slow",
}

# Cause classes of the message meanings, read as the pseudo-metric _cause_classes.
CAUSE_CLASS_GROUP: dict[str, str] = {
    "teardown": "teardown",
    "benign": "teardown",
    "resource": "local",
    "hardware/driver": "local",
    "internal": "local",
}

DEFAULT_KINDS: dict[str, tuple[str, EventClass, int]] = {
    "error": ("other-error", "cause", 68),
    "warning": ("other-warning", "risk", 88),
    "info": ("other-info", "info", 99),
}

LINKS: tuple[LinkRule, ...] = (
    LinkRule(
        "same-line",
        ("*",),
        ("*",),
        "same-line",
        "Two findings that rest on the same first line are one fact read by two rules (NCCL's `Bootstrap "
        "Root … already checked in` is both a world split and the first line of a connection failure): the "
        "later one folds under the first.",
        "the same line, read by another rule",
        timed=False,
        same_tier=True,
    ),
    LinkRule(
        "local-failure-closes-peers",
        (*LOCAL_FAILURES, "app-exception"),
        ("connection-echo", "ib-flushed", "peer-echo", "exit-echo", "connection-retry", "abort-echo"),
        "job",
        "A process that dies or stops on its own error closes its sockets and queue pairs: its peers "
        "report the connection lost, not why.",
        "its peers lost their connection to it",
    ),
    LinkRule(
        "old-library-fails",
        ("unsupported-library",),
        (*LOCAL_FAILURES, *NETWORK_FAILURES, "connection-echo", "peer-echo", *HANGS, "timeout", "init-stuck"),
        "job",
        "Under NCCL 1.x the CUDA errors, failed connections and hangs of a run are that library's: upgrading is "
        "the fix before any of them is worth reading on its own.",
        "the run used NCCL 1.x, which fails there",
        timed=False,
    ),
    LinkRule(
        "stored-error-repeats",
        (*LOCAL_FAILURES, *NETWORK_FAILURES, *CONFIG_FAILURES, "app-exception"),
        ("stored-error",),
        "job",
        "A communicator that failed keeps the error (ncclCommSetAsyncError) and returns it, with a WARN of its "
        "own, on every later call until it is destroyed: the later WARN is the earlier failure seen again.",
        "the communicator kept that error and returned it on its next use",
    ),
    LinkRule(
        "local-failure-stalls-collectives",
        (*LOCAL_FAILURES, "app-exception"),
        (*HANGS, "timeout", "init-stuck", "log-cut", "unexplained"),
        "job",
        "A rank that failed never reaches its next collective (or init), so every group it belongs to "
        "waits for it until the watchdog fires; the job is then killed.",
        "the others waited for it",
    ),
    LinkRule(
        "error-path-desync",
        ("process-exception", "app-exception", "cuda-error"),
        ("desync",),
        "ranks",
        "A rank's error path (an exception handler, cleanup, a retry) calls a collective its peers never "
        "call, so the ranks disagree at that position: the error explains the different call, and the "
        "healthy ranks that called the expected one are not to blame.",
        "its error path called a different collective than its peers",
    ),
    LinkRule(
        "network-failure-stalls",
        NETWORK_FAILURES,
        (
            "connection-echo",
            "ib-flushed",
            "peer-echo",
            "exit-echo",
            "abort-echo",
            *HANGS,
            "timeout",
            "init-stuck",
            "log-cut",
        ),
        "job",
        "A transfer that fails on the network leaves its collective unfinished on every rank; the "
        "watchdog then aborts the communicators and the peers report closed connections.",
        "data stopped moving between the ranks",
    ),
    LinkRule(
        "config-breaks-job",
        CONFIG_FAILURES,
        (
            *NETWORK_FAILURES,
            "connection-echo",
            "connection-retry",
            "peer-echo",
            *HANGS,
            "timeout",
            "init-stuck",
            "desync",
            "exit-echo",
            "log-cut",
            "unexplained",
        ),
        "job",
        "Processes that disagree on the NCCL version, the environment, the interface or the world size "
        "cannot connect or run the same protocol: connection errors, stuck init and hangs follow.",
        "the processes could not agree on how to connect",
        timed=False,
    ),
    LinkRule(
        "desync-hangs",
        ("desync",),
        (*HANGS, "timeout", "connection-echo", "exit-echo", "log-cut"),
        "job",
        "Collectives that do not match across ranks never complete: the hang and its timeouts follow.",
        "the mismatched collective never completed",
    ),
    LinkRule(
        "desync-aborts",
        ("desync",),
        ("process-death",),
        "ranks",
        "A rank killed by a signal (SIGABRT) with no exception of its own, among the ranks that called a "
        "different collective: the backend aborts on the mismatch it received (gloo's size enforce), so "
        "the death is the desync's consequence.",
        "the backend aborted it on the mismatched collective",
        timed=False,
        any_tier=True,
    ),
    LinkRule(
        "stuck-ranks-hold-groups",
        ("hang-stuck-rank",),
        ("hang-desync", "hang-no-culprit"),
        "members",
        "A rank stuck in one group never reaches its next collective in the other groups it belongs to, "
        "and a member that waits in the stuck group cannot go on in its other groups either: their "
        "'every rank entered' or 'desync' reading is the echo of the stuck ranks, not the network.",
        "its members wait on the ranks stuck in another group",
        timed=False,
    ),
    LinkRule(
        "waits-elsewhere",
        ("hang-stuck-rank",),
        ("hang-stuck-rank",),
        "culprits-wait",
        "A rank that is behind in one group because it entered, and waits in, another group's stuck "
        "collective is not a culprit: the ranks that hold up that other group are (Flight Recorder's view "
        "across groups, as a wavefront over every group's dump).",
        "its culprits wait in this group's stuck collective",
        timed=False,
        same_tier=True,
    ),
    LinkRule(
        "same-stuck-ranks",
        ("hang-stuck-rank",),
        ("hang-stuck-rank",),
        "same-culprits",
        "The same ranks holding up several groups are one failure seen in each group they belong to.",
        "the same ranks hold this group up too",
        timed=False,
        same_tier=True,
    ),
    LinkRule(
        "hang-detected",
        HANGS,
        ("timeout", "connection-echo", "peer-echo", "exit-echo", "log-cut", "ib-flushed", "abort-echo"),
        "job",
        "The watchdog timeout is how the stuck collective was detected; after it PyTorch aborts the "
        "communicators and the launcher kills the job, which closes every connection.",
        "the watchdog detected the stuck collective and the job was torn down",
        timed=False,
    ),
    LinkRule(
        "init-stuck-closes",
        ("init-stuck",),
        ("connection-echo", "log-cut", "timeout"),
        "job",
        "A communicator stuck in init is torn down by the job's own timeout: closures follow.",
        "the stuck init was torn down",
        timed=False,
    ),
    LinkRule(
        "slow-path-slows",
        ("slow-transport",),
        ("slow",),
        "job",
        "A degraded data path (sockets, no GDR, no P2P, a shared GPU) is a reason for measured low "
        "bandwidth and exposed communication.",
        "the data path is degraded",
        timed=False,
    ),
)


@dataclass(frozen=True)
class Knowledge:
    """The tables the diagnosis reads (tests pass trimmed copies to show what each entry does)."""

    kinds: tuple[Kind, ...] = KINDS
    links: tuple[LinkRule, ...] = LINKS
    finding_family: dict[str, str] = field(default_factory=lambda: dict(FINDING_FAMILY))
    time_slack_us: float = 5e6  # clocks of different hosts may disagree by this much (NTP-synced nodes)


DEFAULT = Knowledge()
