"""Capture stage, the faults that stop one rank from inside (needs torch only for the errors):
an out-of-memory error, a CUDA error, a held GIL.

On a GPU (NCCL) the OOM is real: the rank asks the caching allocator for twice the device's memory,
which fails at once without touching any. With no GPU (gloo on a CPU) there is no CUDA allocator: the
rank raises `torch.OutOfMemoryError` with the caching allocator's message (c10/cuda/
CUDACachingAllocator.cpp, torch 2.13) for an 80 GiB device, and the CUDA error is always raised this
way (`torch.AcceleratorError`, the text of c10/cuda/CUDAException.cpp for an illegal address), since
a real one would need a faulty kernel. The GIL is held by a C call (libc's `pthread_mutex_timedlock`
on a mutex the thread already holds, through ctypes.PyDLL, which keeps the GIL): no Python runs in
the process, signals do not end the wait, and it costs no CPU.
"""

from __future__ import annotations

import ctypes
import time
from typing import Any

GIB = 1 << 30
# An 80 GiB device, nearly full, as in a real OOM on a training GPU (values in GiB).
_CPU_OOM = {"ask": 2.0, "total": 79.19, "free": 1.08, "in_use": 78.1, "allocated": 74.62, "reserved": 1.91}
CUDA_ILLEGAL_ADDRESS = (
    "CUDA error: an illegal memory access was encountered\n"
    "Search for `cudaErrorIllegalAddress' in "
    "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
    "below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)


def cuda_oom_message(
    ask: float, total: float, free: float, in_use: float, allocated: float, reserved: float
) -> str:
    """The caching allocator's OOM text (sizes in GiB, printed as its format_size does)."""
    return (
        f"CUDA out of memory. Tried to allocate {ask:.2f} GiB. GPU 0 has a total capacity of {total:.2f} GiB "
        f"of which {free:.2f} GiB is free. Including non-PyTorch memory, this process has {in_use:.2f} GiB "
        f"memory in use. Of the allocated memory {allocated:.2f} GiB is allocated by PyTorch, and "
        f"{reserved:.2f} GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is "
        "large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
        "documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html"
        "#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)"
    )


def oom_error(torch: Any, device: Any) -> BaseException:
    """The OOM this rank hits: a real one on a CUDA device, the allocator's message on a CPU."""
    if device.type == "cuda":
        total = torch.cuda.get_device_properties(device).total_memory
        try:
            torch.empty(2 * total, dtype=torch.uint8, device=device)
        except torch.OutOfMemoryError as e:
            real: BaseException = e
            return real
    cls = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    err: BaseException = cls(cuda_oom_message(**_CPU_OOM))
    return err


def cuda_error(torch: Any) -> BaseException:
    cls = getattr(torch, "AcceleratorError", None) or RuntimeError
    try:
        err: BaseException = cls(CUDA_ILLEGAL_ADDRESS)
        return err
    except TypeError:  # torch.AcceleratorError may want an error code as well
        return RuntimeError(CUDA_ILLEGAL_ADDRESS)


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


CLOCK_REALTIME = 0  # pthread_mutex_timedlock measures its deadline on this clock


def hold_gil(seconds: float) -> str:
    """Keep the GIL for `seconds` inside one C call. A blocking call rather than a spinning one: the
    effect on the process is the same (no Python runs) and it leaves the machine's CPUs to the other
    ranks. Returns how the GIL was held (the fallback lets it go)."""
    try:
        libc = ctypes.PyDLL(None)  # PyDLL: the GIL stays held during the call
        lock, timed = libc.pthread_mutex_lock, libc.pthread_mutex_timedlock
    except (OSError, AttributeError):
        time.sleep(seconds)  # no POSIX threads library to call: a plain sleep, which lets the GIL go
        return "sleep (pthread_mutex_timedlock unavailable; GIL released)"
    mutex = ctypes.create_string_buffer(64)  # all zeros: PTHREAD_MUTEX_INITIALIZER for glibc
    lock(mutex)
    deadline = _Timespec()
    libc.clock_gettime(CLOCK_REALTIME, ctypes.byref(deadline))
    whole = int(seconds)
    deadline.tv_sec += whole
    deadline.tv_nsec += int((seconds - whole) * 1e9)
    if deadline.tv_nsec >= 1_000_000_000:
        deadline.tv_sec += 1
        deadline.tv_nsec -= 1_000_000_000
    timed(mutex, ctypes.byref(deadline))  # the thread waits for itself: ETIMEDOUT at the deadline
    return "pthread_mutex_timedlock via ctypes.PyDLL"
