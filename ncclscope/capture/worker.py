"""Capture stage, worker: what torchrun starts on every rank (`python -m ncclscope.capture.worker`).

Order matters: the rank's output goes to its own log and its environment is set before torch
(and so NCCL) is imported; every way out writes the manifest and flushes the profiler trace, and
every failing one (Python error, SIGTERM) also the Flight Recorder dump, before the process ends.
torch's elastic `record` wraps the run, so torchrun's failure summary holds the rank's real error.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import time
import traceback
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import Any

from ncclscope.capture.config import CaptureConfig, rank_env
from ncclscope.capture.evidence import (
    Manifest,
    device_info,
    dump_flight,
    flight_path,
    flush_stdio,
    torch_versions,
)
from ncclscope.capture.inject import Plan
from ncclscope.run.tee import utc_now

EXIT_FAILED = 1
EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(BaseException):
    """SIGTERM arrived (torchrun stopping the job, or the outer timeout)."""


def say(rank: int, msg: str) -> None:
    """One progress line in the rank's log: UTC time, then key facts, greppable by 'ncclscope-capture'."""
    print(f"{utc_now()} ncclscope-capture rank={rank} {msg}", flush=True)


def _redirect_output(path: Path) -> None:
    # At the file-descriptor level, so C++ (c10d, gloo, NCCL without a debug file) lands here too.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for target in (1, 2):
        os.dup2(fd, target)
    os.close(fd)
    for s in (sys.stdout, sys.stderr):
        s.reconfigure(line_buffering=True)  # type: ignore[union-attr]


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    # torchrun and the outer deadline may both send SIGTERM: unwind once, and let the second one
    # not interrupt the evidence being written.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated()


def _install_handlers() -> None:
    faulthandler.enable(all_threads=True)  # SIGSEGV/SIGABRT/…: every thread's Python stack in the log
    signal.signal(signal.SIGTERM, _on_sigterm)
    # Print the stacks at once, even while the main thread is blocked inside a collective, then
    # let the Python handler above unwind when the main thread can.
    faulthandler.register(signal.SIGTERM, all_threads=True, chain=True)


def main() -> int:
    cfg = CaptureConfig.from_env()
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    world = int(os.environ["WORLD_SIZE"])
    _redirect_output(cfg.layout.log(rank))
    os.environ.update(rank_env(cfg, rank))
    _install_handlers()
    man = Manifest(cfg.layout.manifest(rank), cfg, rank, local_rank, world)
    man.start()
    from torch.distributed.elastic.multiprocessing.errors import record

    try:
        return record(_run)(cfg, rank, local_rank, man) or 0
    except Terminated:
        code = EXIT_TERMINATED
    except BaseException:  # noqa: BLE001 - already in the rank log, the manifest and torchrun's error file
        code = EXIT_FAILED
    flush_stdio()
    os._exit(code)  # skip teardown that could block on peers that are gone


def _run(cfg: CaptureConfig, rank: int, local_rank: int, man: Manifest) -> int:
    """Run the job; on failure write the evidence, then re-raise for `record` (never returns non-zero)."""
    import torch
    import torch.distributed as dist

    from ncclscope.capture import workload

    status, code, err, started = "failed", EXIT_FAILED, "", False
    failure: BaseException | None = None
    try:
        device = workload.pick_device(torch, cfg.backend, local_rank, shared_ok=cfg.allow_shared_gpu)
        man.update(
            versions={**man.data["versions"], **torch_versions(torch, cfg.backend)},
            **device_info(torch, device),
        )
        say(
            rank,
            f"init backend={cfg.backend} world_size={man.world_size} device={device} "
            f"timeout_s={cfg.timeout_s:g}",
        )
        dist.init_process_group(
            cfg.backend, timeout=timedelta(seconds=cfg.timeout_s), **_eager_init(dist, cfg.backend, device)
        )
        started = True
        groups = _groups(dist, cfg, rank, man)
        man.update(status="running", init_done_utc=utc_now())
        _steps(torch, cfg, rank, device, man, groups)
        status, code = "completed", 0
    except Terminated as e:
        status, code, err, failure = "terminated", EXIT_TERMINATED, "SIGTERM", e
        say(rank, "terminated by SIGTERM")
    except Exception as e:  # noqa: BLE001 - any failure is evidence: record it, then exit non-zero
        err, failure = f"{type(e).__name__}: {e}", e
        traceback.print_exc()
        say(rank, f"failed: {type(e).__name__}")
    finally:
        # torchrun SIGTERMs the survivors as soon as one rank dies, often while this rank is already
        # writing its evidence (after the peer's error, or its end-of-run dump): that must not be cut
        # short (SIGKILL follows torchrun's grace period if this hangs).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        flight = (
            "not needed"
            if not flight_needed(code, cfg)
            else "no process group"
            if not started
            else dump_flight(torch, flight_path(cfg.layout, rank), cfg.backend)
        )
        man.update(status=status, exit_code=code, error=err, flight_dump=flight, ended_utc=utc_now())
        flush_stdio()
    if failure is not None:
        raise failure  # `record` writes it to torchrun's error file; main() then exits without teardown
    signal.signal(signal.SIGTERM, _on_sigterm)  # a teardown blocked on peers that are gone stays stoppable
    dist.destroy_process_group()
    return 0


def flight_needed(code: int, cfg: CaptureConfig) -> bool:
    """Like PyTorch's dump-on-timeout: a dump when the rank failed, so a dump's presence means what
    it means in a real job; and on every rank whenever a step fault was injected, even a rank that
    completed (NCCL may let a size mismatch pass silently: the dumps still hold both sizes)."""
    return code != 0 or cfg.step_faults


def _eager_init(dist: Any, backend: str, device: Any) -> dict[str, Any]:
    """NCCL: bind the device at init (torch >= 2.3) so NCCL initialises, and logs, right away."""
    import inspect

    if backend == "nccl" and "device_id" in inspect.signature(dist.init_process_group).parameters:
        return {"device_id": device}
    return {}


def _groups(dist: Any, cfg: CaptureConfig, rank: int, man: Manifest) -> Any:
    """With --layout: every process group of the layout, and this rank's in the manifest."""
    if cfg.mesh is None:
        return None
    from ncclscope.capture.meshwork import make_groups

    groups = make_groups(dist, cfg.mesh, rank, timedelta(seconds=cfg.timeout_s), lambda m: say(rank, m))
    man.update(
        groups={
            k: {"name": g.name, "desc": g.desc, "ranks": list(g.ranks)}
            for k, (g, _) in groups.by_kind.items()
        }
    )
    return groups


def _steps(torch: Any, cfg: CaptureConfig, rank: int, device: Any, man: Manifest, groups: Any = None) -> None:
    from ncclscope.capture import workload

    plan = Plan.for_rank(cfg.faults, rank, cfg.fault_step)
    stall = cfg.timeout_s * 3 + 10
    if groups is not None:
        from ncclscope.capture.meshwork import MeshWorkload

        wl: workload.Workload = MeshWorkload(
            torch,
            device,
            plan,
            cfg.sizes,
            stall,
            lambda m: say(rank, m),
            groups,
            sync_timeout_s=cfg.sync_timeout_s,
        )
    else:
        wl = workload.Workload(
            torch, device, plan, cfg.sizes, stall, lambda m: say(rank, m), sync_timeout_s=cfg.sync_timeout_s
        )
    trace = cfg.layout.trace(rank)

    def export(prof: Any) -> None:
        trace.parent.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(str(trace))
        say(rank, f"trace written: {trace.name}")

    prof = workload.profiler(
        torch, cfg.backend, cfg.profile_wait, cfg.profile_warmup, cfg.profile_active, export
    )
    with prof:
        for step in range(cfg.steps):
            t0 = time.perf_counter()
            say(rank, f"step={step} begin")
            wl.step(step)
            prof.step()
            say(rank, f"step={step} end dur_ms={(time.perf_counter() - t0) * 1e3:.1f}")
    man.update(skipped_ops=wl.skipped)


if __name__ == "__main__":
    raise SystemExit(main())
