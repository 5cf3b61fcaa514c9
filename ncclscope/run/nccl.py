"""Run stage, the NCCL a process has loaded: its release as `ncclGetVersion` reports it (no torch here).

The node snapshot asks it in the job's own Python (so LD_PRELOAD / LD_LIBRARY_PATH pick the NCCL the job
loads); capture's pre-flight and its workers ask it too.
"""

from __future__ import annotations

import ctypes
import os


def decode_nccl_version(code: int) -> tuple[int, int, int]:
    """`ncclGetVersion`'s code: X*10000 + Y*100 + Z from NCCL 2.9 on, X*1000 + Y*100 + Z before (nccl.h)."""
    if code >= 10000:
        return code // 10000, code % 10000 // 100, code % 100
    return code // 1000, code % 1000 // 100, code % 100


def loaded_nccl_version() -> tuple[int, int, int] | None:
    """The NCCL release this process has loaded (call after `import torch`), or None. `LD_PRELOAD` or
    `LD_LIBRARY_PATH` may load another release than the one torch was built with, which is what
    `torch.cuda.nccl.version()` reports (torch 2.11 said 2.28.9 while NCCL 2.32.3 ran, samples/gpu/nccl232).
    RTLD_NOLOAD: only a library already loaded is asked; none is loaded here."""
    try:
        lib = ctypes.CDLL("libnccl.so.2", mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
        code = ctypes.c_int(0)
        if lib.ncclGetVersion(ctypes.byref(code)) != 0 or code.value <= 0:
            return None
    except (OSError, AttributeError):  # no libnccl loaded, or one without ncclGetVersion
        return None
    return decode_nccl_version(code.value)
