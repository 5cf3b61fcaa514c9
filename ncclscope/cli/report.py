"""CLI stage, `ncclscope report`: PLACEHOLDER until the Markdown/HTML/JSON reporters land."""

from __future__ import annotations
