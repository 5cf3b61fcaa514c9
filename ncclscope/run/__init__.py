"""Run stage: `ncclscope run -- <command>` records the evidence of the user's own job (NCCL logs with
timestamps, Flight Recorder dumps, the console, the node's versions and topology) and diagnoses it when
it ends. It sits before capture (which is `run` applied to the bundled job) and the CLI: it calls the
session and the report modules; it never prints (the CLI does). Importing it never imports torch.
"""

from __future__ import annotations

from ncclscope.run.diagnose import Diagnosis, diagnose
from ncclscope.run.layout import RunLayout
from ncclscope.run.record import Prepared, RunOptions, RunRecord, prepare, record
from ncclscope.run.settings import SETTINGS, EnvChoice, EnvSetting, Value
from ncclscope.run.supervise import Ended

__all__ = [
    "SETTINGS",
    "Diagnosis",
    "Ended",
    "EnvChoice",
    "EnvSetting",
    "Prepared",
    "RunLayout",
    "RunOptions",
    "RunRecord",
    "Value",
    "diagnose",
    "prepare",
    "record",
]
