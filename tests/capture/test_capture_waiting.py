"""Capture stage, the worker's wait on the device: polling a CUDA event instead of blocking in
`torch.cuda.synchronize()`, so SIGTERM and deadlines reach Python. A stand-in "kernel" that never
finishes plays the collective whose peer is gone (no torch, no GPU)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from types import FrameType, SimpleNamespace

import pytest

from ncclscope.capture.waiting import MAX_SLICE_S, WaitTimeout, wait_for_event, wait_until


class NeverFinishes:
    """A CUDA event recorded after a kernel that never completes."""

    def __init__(self) -> None:
        self.recorded = 0
        self.queries = 0

    def record(self) -> None:
        self.recorded += 1

    def query(self) -> bool:
        self.queries += 1
        return False


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


def test_returns_once_done_with_short_growing_slices() -> None:
    clock = FakeClock()
    answers = iter([False] * 12 + [True])
    polls = wait_until(lambda: next(answers), timeout_s=60, what="x", clock=clock, sleep=clock.sleep)
    assert polls == 13 and len(clock.slept) == 12
    assert clock.slept == sorted(clock.slept) and clock.slept[0] < 0.001 and max(clock.slept) == MAX_SLICE_S


def test_deadline_raises_instead_of_hanging() -> None:
    clock = FakeClock()
    kernel = NeverFinishes()
    with pytest.raises(WaitTimeout, match=r"step 4's CUDA work still not done after 7 s"):
        wait_until(kernel.query, timeout_s=7, what="step 4's CUDA work", clock=clock, sleep=clock.sleep)
    assert 7 <= clock.now - 100.0 < 7 + 2 * MAX_SLICE_S
    assert kernel.queries > 700  # polled all along, never blocked in one call


class Stop(BaseException):
    pass


@pytest.fixture
def sigterm_raises() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise Stop()

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def test_sigterm_interrupts_the_wait_in_process(sigterm_raises: None) -> None:
    kernel = NeverFinishes()

    def done() -> bool:
        if kernel.query() is False and kernel.queries == 3:
            os.kill(os.getpid(), signal.SIGTERM)  # torchrun stopping the job, mid-wait
        return False

    with pytest.raises(Stop):
        wait_until(done, timeout_s=3600, what="x")
    assert kernel.queries in (3, 4)  # the handler ran right after the poll that saw the signal


def test_wait_for_event_records_then_polls() -> None:
    class DoneAfterTwo(NeverFinishes):
        def query(self) -> bool:
            super().query()
            return self.queries >= 2

    ev = DoneAfterTwo()
    assert wait_for_event(ev, timeout_s=60, what="x") == 2 and ev.recorded == 1


CHILD = textwrap.dedent("""
    import sys
    from ncclscope.capture import worker
    from ncclscope.capture.waiting import wait_for_event

    class NeverFinishes:
        polls = 0
        def record(self): pass
        def query(self):
            self.polls += 1
            if self.polls == 1:
                print("waiting", flush=True)  # the parent signals only once the wait has begun
            return False

    worker._install_handlers()  # the worker's own SIGTERM handling: faulthandler stacks, then Terminated
    try:
        wait_for_event(NeverFinishes(), timeout_s=3600, what="a collective whose peer is gone")
    except worker.Terminated:
        print("interrupted", flush=True)
        sys.exit(worker.EXIT_TERMINATED)
    sys.exit(3)
""")


def test_real_sigterm_reaches_a_worker_waiting_on_a_kernel_that_never_finishes() -> None:
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "waiting"
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)  # a guard only: a blocked wait would never return
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert out.strip() == "interrupted" and p.returncode == 143, err
    assert "wait_until" in err  # faulthandler's stack on SIGTERM shows where the main thread waited


def test_the_workload_waits_by_polling_never_in_synchronize() -> None:
    from ncclscope.capture.workload import Workload

    class FakeCuda:
        Event = NeverFinishes

        def synchronize(self) -> None:
            raise AssertionError("blocked in torch.cuda.synchronize()")

    wl = object.__new__(Workload)  # only what _sync reads: no process group needed
    wl.torch, wl.device, wl.sync_timeout_s = (
        SimpleNamespace(cuda=FakeCuda()),
        SimpleNamespace(type="cuda"),
        0.05,
    )
    with pytest.raises(WaitTimeout, match=r"step 4's CUDA work \(collectives included\) still not done"):
        wl._sync(4)
    wl.device = SimpleNamespace(type="cpu")
    wl._sync(5)  # gloo: nothing to wait for
