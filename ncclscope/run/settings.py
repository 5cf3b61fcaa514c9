"""Run stage, knowledge: the environment `ncclscope run` gives the user's job so that NCCL and PyTorch
write their evidence, each entry with its reason and where its name and default come from.

A setting is a group of names that mean one thing (a current name and its older aliases). The user's
environment wins: when any name of a group is already set, the whole group is left alone, because
PyTorch reads the first name of a group that is set (`getCvar*`, torch/csrc/distributed/c10d/Utils.hpp)
and setting the new name beside the user's old one would override the user.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Group = Literal["nccl", "clock", "flight", "watchdog", "torchrun"]
NODE = "{node}"  # replaced by this node's output directory
# torchrun's console tag: the global rank (its default `[default0]:` is the local rank, the same on
# every node); `[rankN]:` is also the form PyTorch itself uses, which the log grammar peels.
TORCHRUN_PREFIX = "[rank${rank}]:"
FLIGHT_PREFIX = "flight/nccl_trace_rank_"
NCCL_FILE = "nccl/nccl.%h.%p.log"
SUBSYS = ("INIT", "BOOTSTRAP", "ENV", "NET", "GRAPH", "TUNING")
# NCCL >= 2.26 prints its own timestamp; `%6f` is NCCL's microsecond extension. NCCL formats it in
# local time, so the job runs with TZ=UTC and the timestamps are UTC.
NCCL_TIMESTAMP_FORMAT = "[%F %T.%6f] "


@dataclass(frozen=True)
class EnvSetting:
    """Names (the first is the one NCCL/PyTorch reads first), the value set when none is set, why."""

    names: tuple[str, ...]
    value: str
    group: Group
    why: str
    source: str


NCCL_SOURCE = "NVIDIA/nccl src/debug.cc"
TORCH_PG = "pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp/.cpp"
SETTINGS: tuple[EnvSetting, ...] = (
    EnvSetting(
        ("NCCL_DEBUG",),
        "INFO",
        "nccl",
        "INFO prints the version, each communicator's init (rank, nranks, busId), transports and WARNs: "
        "what every NCCL diagnosis reads; the default prints WARNs only",
        NCCL_SOURCE,
    ),
    EnvSetting(
        ("NCCL_DEBUG_SUBSYS",),
        ",".join(SUBSYS),
        "nccl",
        "NCCL's default is INIT,BOOTSTRAP,ENV; NET and GRAPH add the network and topology choices, TUNING "
        "the algorithm/protocol tables. COLL (one line per collective) only with --coll: it can be GBs",
        NCCL_SOURCE + " (NCCL_DEBUG_SUBSYS options)",
    ),
    EnvSetting(
        ("NCCL_DEBUG_FILE",),
        f"{NODE}/{NCCL_FILE}",
        "nccl",
        "one file per process under the run directory: NCCL replaces %h by the host name and %p by the "
        'pid, and opens it with fopen(…, "w"), which creates no directory (ncclscope makes nccl/ first)',
        NCCL_SOURCE + " (ncclDebugInit)",
    ),
    EnvSetting(
        ("NCCL_DEBUG_TIMESTAMP_LEVELS",),
        "ALL",
        "nccl",
        "a timestamp on every line, not only on WARN (the default); read by NCCL >= 2.26.2, ignored before",
        NCCL_SOURCE + " (added in v2.26.2-1)",
    ),
    EnvSetting(
        ("NCCL_DEBUG_TIMESTAMP_FORMAT",),
        NCCL_TIMESTAMP_FORMAT,
        "nccl",
        "microseconds (%6f, NCCL's own extension) instead of the default '[%F %T] '; NCCL >= 2.26.2",
        NCCL_SOURCE + " (added in v2.26.2-1)",
    ),
    EnvSetting(
        ("TZ",),
        "UTC",
        "clock",
        "NCCL's timestamps and PyTorch's glog lines are local time without a zone; in UTC they line up "
        "with the UTC stamps ncclscope puts on every console line",
        NCCL_SOURCE + " (localtime_r); c10 glog",
    ),
    EnvSetting(
        ("PYTHONUNBUFFERED",),
        "1",
        "clock",
        "each line reaches the console log when it is printed, so its timestamp is true and a rank "
        "that dies does not take its last lines with it",
        "python -u",
    ),
    EnvSetting(
        ("TORCH_CPP_LOG_LEVEL",),
        "INFO",
        "clock",
        "PyTorch's C++ INFO lines: ProcessGroupNCCL's options and each communicator's creation, the "
        "watchdog's reports; the default (WARNING) hides them",
        "pytorch c10/util/Logging.cpp",
    ),
    EnvSetting(
        ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"),
        "2000",
        "flight",
        "Flight Recorder entries kept per process; older torch records nothing by default (0). Both "
        "names are set: older torch reads only the second, torch 2.13 the first (default 2000 there)",
        "pytorch torch/csrc/distributed/c10d/FlightRecorder.hpp (torch 2.13.0)",
    ),
    EnvSetting(
        ("TORCH_NCCL_DUMP_ON_TIMEOUT",),
        "1",
        "flight",
        "write the Flight Recorder on a watchdog timeout or NCCL error; false by default in older torch, "
        "true in recent ones",
        TORCH_PG + " (dumpOnTimeoutOrEx_)",
    ),
    EnvSetting(
        ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"),
        f"{NODE}/{FLIGHT_PREFIX}",
        "flight",
        "where each rank's dump goes (PyTorch appends the global rank); by default "
        "$XDG_CACHE_HOME or ~/.cache/torch/comm_lib_trace_rank_ (torch 2.13), /tmp/nccl_trace_rank_ before",
        "pytorch torch/csrc/distributed/c10d/FlightRecorder.cpp (DebugInfoWriter::getWriter)",
    ),
    EnvSetting(
        ("TORCH_NCCL_ENABLE_MONITORING",),
        "1",
        "watchdog",
        "the dump on timeout needs the heartbeat monitor thread (ProcessGroupNCCL.hpp: 'must be set "
        "together with TORCH_NCCL_ENABLE_MONITORING=1'); on by default, pinned in case a site profile "
        "turned it off",
        TORCH_PG,
    ),
    EnvSetting(
        ("TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC",),
        "15000",
        "watchdog",
        "how long the watchdog waits for the dump before it tears the process down: 2000 ms in older "
        "torch cut large dumps short; 15 s (the recent default) stays under torchrun's 30 s "
        "SIGTERM-to-SIGKILL grace",
        TORCH_PG + " (HeartbeatMonitor)",
    ),
    EnvSetting(
        ("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE",),
        TORCHRUN_PREFIX,
        "torchrun",
        "torchrun tags each worker's console line with its global rank instead of `[default<local>]:`; set "
        "whatever the command, since a script may start torchrun itself",
        "pytorch torch/distributed/run.py, elastic/agent/server/local_elastic_agent.py",
    ),
)

# Left alone on purpose: each changes how the job behaves, not only what it records.
NOT_SET: tuple[tuple[str, str], ...] = (
    (
        "TORCH_NCCL_ASYNC_ERROR_HANDLING",
        "how a failed collective ends the process (default 3, SkipCleanUp); changing it changes the job",
    ),
    ("TORCH_NCCL_BLOCKING_WAIT", "1 turns the watchdog off, and with it the dump on timeout"),
    ("TORCH_NCCL_DESYNC_DEBUG", "extra store traffic on every timeout; the Flight Recorder tells the same"),
    ("NCCL_DEBUG_SUBSYS=COLL", "one line per collective per rank; only with --coll"),
)


@dataclass(frozen=True)
class EnvChoice:
    """What happened to one setting: `set` (ncclscope's value) or `kept` (the user's, by name)."""

    setting: EnvSetting
    action: Literal["set", "kept"]
    value: str
    user: tuple[tuple[str, str], ...] = ()
    why: str = ""  # the caller's reason when it gave its own value in place of the setting's

    def to_json(self) -> dict[str, object]:
        return {
            "names": list(self.setting.names),
            "action": self.action,
            "value": self.value,
            "user": dict(self.user),
            "group": self.setting.group,
            "why": self.why or self.setting.why,
            "source": self.setting.source,
        }


@dataclass(frozen=True)
class Value:
    """A caller's value for a setting, in place of its default (the user's own value still wins):
    `capture` runs its bundled job with a shorter dump wait, to suit its short timeouts."""

    name: str  # the setting's first name
    value: str
    why: str


def plan_env(
    environ: Mapping[str, str],
    node_dir: str,
    *,
    coll: bool = False,
    flight: bool = True,
    values: tuple[Value, ...] = (),
) -> tuple[EnvChoice, ...]:
    """Every setting that applies, decided against the user's environment."""
    mine = {v.name: v for v in values}
    unknown = sorted(set(mine) - {s.names[0] for s in SETTINGS})
    if unknown:
        raise ValueError(f"no such evidence setting: {', '.join(unknown)}")
    out = []
    for s in SETTINGS:
        if s.group in ("flight", "watchdog") and not flight:
            continue
        user = tuple((n, environ[n]) for n in s.names if n in environ)
        if user:
            out.append(EnvChoice(s, "kept", user[0][1], user))
            continue
        given = mine.get(s.names[0])
        value = (given.value if given else s.value).replace(NODE, node_dir)
        if s.names == ("NCCL_DEBUG_SUBSYS",) and coll:
            value += ",COLL"
        out.append(EnvChoice(s, "set", value, why=given.why if given else ""))
    return tuple(out)


def env_updates(choices: tuple[EnvChoice, ...]) -> dict[str, str]:
    """The variables to add to the job's environment: every name of every group ncclscope sets."""
    return {n: c.value for c in choices if c.action == "set" for n in c.setting.names}


# Kept variables that send evidence outside the run directory: `analyze DIR` will not find it there.
_PLACES = {"NCCL_DEBUG_FILE": "NCCL's logs", "TORCH_FR_DUMP_TEMP_FILE": "the Flight Recorder dumps"}


def elsewhere(choices: tuple[EnvChoice, ...], node_dir: str) -> tuple[str, ...]:
    """A note for each kept setting whose files land outside `node_dir`."""
    out = []
    for c in choices:
        what = _PLACES.get(c.setting.names[0])
        if what and c.action == "kept" and not c.value.startswith(node_dir.rstrip("/") + "/"):
            name = c.user[0][0]
            out.append(
                f"{name} is yours ({c.value}): {what} go there, not into the run directory; add that path to `ncclscope analyze`"
            )
    return tuple(out)
