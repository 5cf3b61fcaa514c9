"""CLI stage, `ncclscope capture`: PLACEHOLDER until the capture script lands."""

from __future__ import annotations
