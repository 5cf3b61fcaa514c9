"""Run stage, recording: plan the job's environment and launcher options (`prepare`, no side effect
but a check of the output directory), then run the command with its evidence switched on, snapshot
the node beside it and leave the run manifest `run.json` (written at the start, rewritten at the end,
so a wrapper that is killed still leaves one).
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ncclscope.errors import InputError
from ncclscope.run.launchers import Launch, job_python, plan_launch
from ncclscope.run.layout import RunLayout, task_id
from ncclscope.run.settings import NOT_SET, EnvChoice, Value, elsewhere, env_updates, plan_env
from ncclscope.run.snapshot import Probe, Snapshot, take, write
from ncclscope.run.stacks import StallWatch
from ncclscope.run.supervise import Ended, run_command
from ncclscope.run.tee import ConsoleLog, utc_now
from ncclscope.version import __version__

SCHEMA = "ncclscope.run/1"


@dataclass(frozen=True)
class RunOptions:
    command: tuple[str, ...]
    out_dir: Path
    coll: bool = False
    flight: bool = True
    stacks: bool = False
    host: str = field(default_factory=socket.gethostname)
    probes: tuple[Probe, ...] | None = None  # None: the default probes; () none at all
    snapshot_wait_s: float = 120.0  # how long the end waits for a snapshot still running
    stall_s: float = 120.0  # --stacks: seconds without new output before the stacks are dumped
    node: str | None = None  # the node directory under out_dir, when the caller names it (RunLayout)
    values: tuple[Value, ...] = ()  # the caller's values for evidence settings the user did not set
    deadline_s: float | None = None  # SIGTERM, then SIGKILL, the command and its processes after this


@dataclass(frozen=True)
class Prepared:
    opts: RunOptions
    layout: RunLayout
    launch: Launch
    choices: tuple[EnvChoice, ...]
    env: dict[str, str]
    notes: tuple[str, ...] = ()  # said before the command starts


@dataclass(frozen=True)
class RunRecord:
    prepared: Prepared
    ended: Ended
    snapshot: Snapshot | None
    notes: tuple[str, ...] = ()
    stacks: tuple[Path, ...] = ()

    @property
    def layout(self) -> RunLayout:
        return self.prepared.layout


def prepare(opts: RunOptions, environ: Mapping[str, str] | None = None) -> Prepared:
    """What will run, with which environment, writing where; refuses a used node directory."""
    if not opts.command:
        raise InputError(
            "nothing to run: give the command after `--`, e.g. ncclscope run -- torchrun … train.py"
        )
    env = dict(os.environ if environ is None else environ)
    task = task_id(env) if opts.node is None else None
    layout = RunLayout(opts.out_dir.resolve(), opts.host, task, opts.node)
    d = layout.node_dir
    if opts.out_dir.exists() and not opts.out_dir.is_dir():
        raise InputError(f"--out {opts.out_dir}: exists and is not a directory")
    if d.exists() and (not d.is_dir() or any(d.iterdir())):
        raise InputError(f"{d}: already holds a run; give a new --out")
    launch = plan_launch(opts.command, env, layout.torchrun_dir(False), layout.torchrun_dir(True))
    choices = plan_env(env, str(d), coll=opts.coll, flight=opts.flight, values=opts.values)
    return Prepared(
        opts, layout, launch, choices, {**env, **env_updates(choices)}, elsewhere(choices, str(d))
    )


def record(
    p: Prepared,
    *,
    echo_out: IO[bytes] | None = None,
    echo_err: IO[bytes] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> RunRecord:
    """Run the command to its end; always leaves console.log, run.json and (when it finished in time)
    snapshot.md behind."""
    lay = p.layout
    started = utc_now()
    try:
        lay.make_dirs(p.opts.flight)
        _write_manifest(p, started, None, None)
    except OSError as e:
        raise InputError(f"cannot write the run into {lay.node_dir}: {e.strerror or e}") from None
    shot: list[Snapshot] = []
    probes = p.opts.probes
    python = job_python(p.opts.command, p.env)
    snap_thread = threading.Thread(
        target=lambda: shot.append(take(p.env, probes, python)), daemon=True, name="ncclscope-snap"
    )
    if probes != ():
        snap_thread.start()
    log = ConsoleLog(lay.console_log)
    watches: list[StallWatch] = []

    def begun(pid: int) -> None:
        if p.opts.stacks:
            watches.append(StallWatch(pid, lambda: progress(lay), lay.stacks_dir, p.opts.stall_s))
            watches[0].start()
        if on_start is not None:
            on_start(pid)

    try:
        ended = run_command(
            p.launch.argv,
            p.env,
            log,
            echo_out=echo_out,
            echo_err=echo_err,
            on_start=begun,
            deadline_s=p.opts.deadline_s,
        )
    except InputError as e:
        _write_manifest(p, started, None, utc_now(), failed=str(e))
        raise
    finally:
        log.close()
        for w in watches:
            w.stop()
    notes = list(p.notes)
    if watches and watches[0].pyspy is None:
        notes.append("--stacks: py-spy is not on PATH, no stacks were taken (pip install py-spy)")
    if ended.timed_out:
        notes.append(f"the command passed its {p.opts.deadline_s:g} s deadline and was killed")
    if snap_thread.is_alive():
        snap_thread.join(timeout=p.opts.snapshot_wait_s)
    snapshot = shot[0] if shot else None
    if snapshot is not None:
        write(snapshot, lay.snapshot, p.opts.host)
    elif probes != ():
        notes.append(f"the node snapshot did not finish within {p.opts.snapshot_wait_s:g} s of the job's end")
    notes += _missing_notes(snapshot)
    rec = RunRecord(p, ended, snapshot, tuple(notes), tuple(watches[0].rounds) if watches else ())
    _write_manifest(p, started, rec, utc_now())
    return rec


def _missing_notes(s: Snapshot | None) -> list[str]:
    if s is None:
        return []
    return [f"snapshot {r.probe.name}: {r.status} ({r.detail})" for r in s.results if r.status != "ok"]


def progress(lay: RunLayout) -> int:
    """Bytes written so far to the files that grow while a job makes progress."""
    paths = [lay.console_log, *lay.nccl_dir.glob("*")]
    for d in (lay.torchrun_dir(False), lay.torchrun_dir(True)):
        if d.is_dir():
            paths += d.rglob("*.log")
    total = 0
    for f in paths:
        try:
            total += f.stat().st_size
        except OSError:
            continue
    return total


def files(root: Path) -> list[str]:
    """Every file under `root`, relative, sorted (hidden directories included)."""
    return sorted(str(f.relative_to(root)) for f in root.rglob("*") if f.is_file())


def _write_manifest(
    p: Prepared, started: str, rec: RunRecord | None, ended_utc: str | None, failed: str | None = None
) -> None:
    lay = p.layout
    data: dict[str, object] = {
        "schema": SCHEMA,
        "ncclscope": __version__,
        "host": p.opts.host,
        "task": lay.task,
        "out_dir": str(lay.out_dir),
        "node_dir": os.path.relpath(lay.node_dir, lay.out_dir),
        "command": list(p.opts.command),
        "argv": list(p.launch.argv),
        "launcher": {
            "torchrun": p.launch.torchrun,
            "added": list(p.launch.added),
            "user_options": dict(p.launch.user_options),
            "torchrun_dir": os.path.relpath(p.launch.torchrun_dir, lay.node_dir)
            if p.launch.torchrun_dir
            else None,
        },
        "options": {"coll": p.opts.coll, "flight_recorder": p.opts.flight, "stacks": p.opts.stacks},
        "env": [c.to_json() for c in p.choices],
        "not_set": [{"name": n, "why": why} for n, why in NOT_SET],
        "started_utc": started,
        "status": "not started" if failed else "running" if rec is None else "ended",
    }
    if failed:
        data.update(ended_utc=ended_utc, error=failed)
    if rec is not None:
        e = rec.ended
        data.update(
            ended_utc=ended_utc,
            elapsed_s=round(e.elapsed_s, 3),
            pid=e.pid,
            returncode=e.returncode,
            signal=e.signal,
            exit_status=e.exit_status,
            timed_out=e.timed_out,
            forwarded_signals=list(e.forwarded),
            snapshot=rec.snapshot.to_json() if rec.snapshot is not None else None,
            notes=list(rec.notes),
            stacks=[os.path.relpath(s, lay.node_dir) for s in rec.stacks],
            files=files(lay.node_dir),
        )
    write_json(lay.manifest, data)


def write_json(path: Path, data: Mapping[str, object]) -> None:
    """A manifest, replaced whole (a reader, or a process killed mid-write, never sees half of one)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)
