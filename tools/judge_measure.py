"""Measure ncclscope on a judge set (samples/judge2, samples/judge3, …): one `analyze` per excerpt, results
tabulated, nothing judged. Each set's `measure.py` runs this with its own directory.

Runs `python -m ncclscope analyze <file> --format json --quiet` on every `*.log` of a sample directory
(this one by default) against the ncclscope of a given checkout (PYTHONPATH=<checkout>, run from inside the
checkout so no other copy of the package shadows it), and writes a Markdown table with one row per file:
file, failure class and expected verdict (from the file's `.meta.json`), the verdict text ncclscope gave,
and its exit code. Judging right / partly / wrong is left to a person reading the table.

    python samples/judge3/measure.py --checkout /work/main --out /tmp/judge3_results.md
    python tools/judge_measure.py --checkout . --out results.md --python .venv/bin/python --dir samples/judge2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PYTHON = "/work/main/.venv/bin/python"
TIMEOUT_S = 600


@dataclass(frozen=True)
class Row:
    file: str
    failure: str
    expected: str
    actual: str
    exit_code: str


def _cell(text: str) -> str:
    """One Markdown table cell: no newlines, no unescaped pipes, no backticks that could open code."""
    return " ".join(text.split()).replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")


def _meta(log: Path) -> dict[str, object]:
    path = log.with_suffix(".meta.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _verdict(stdout: str, stderr: str) -> str:
    """The verdict text of the JSON document, else the first stderr line, else a note."""
    try:
        doc = json.loads(stdout)
        text = doc["verdict"]["text"]
        if isinstance(text, str):
            return text
    except (ValueError, KeyError, TypeError):
        pass
    first = next((ln for ln in stderr.splitlines() if ln.strip()), "")
    return f"(no JSON verdict) {first}".strip()


def measure_one(log: Path, checkout: Path, python: str) -> Row:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    cmd = [python, "-m", "ncclscope", "analyze", str(log), "--format", "json", "--quiet"]
    meta = _meta(log)
    try:
        proc = subprocess.run(
            cmd, cwd=checkout, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
        actual, code = _verdict(proc.stdout, proc.stderr), str(proc.returncode)
    except subprocess.TimeoutExpired:
        actual, code = f"(timed out after {TIMEOUT_S} s)", "timeout"
    return Row(
        file=log.stem,
        failure=str(meta.get("failure", "?")),
        expected=str(meta.get("expected_verdict", "?")),
        actual=actual,
        exit_code=code,
    )


def _revision(checkout: Path) -> str:
    try:
        proc = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return proc.stdout.strip() or "unknown"


def render(rows: list[Row], checkout: Path, python: str, sample_dir: Path) -> str:
    head = [
        f"# ncclscope on `{sample_dir.name}` (measured, not judged)",
        "",
        (
            f"Checkout `{checkout}` at `{_revision(checkout)}`, interpreter `{python}`, "
            "`python -m ncclscope analyze <file> --format json --quiet`, one file at a time."
        ),
        "",
        "| file | class | expected (meta) | ncclscope verdict | exit |",
        "|---|---|---|---|---|",
    ]
    body = [
        f"| `{_cell(r.file)}` | {_cell(r.failure)} | {_cell(r.expected)} | {_cell(r.actual)} | {r.exit_code} |"
        for r in rows
    ]
    return "\n".join(head + body) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", required=True, type=Path, help="ncclscope checkout to measure")
    ap.add_argument("--out", required=True, type=Path, help="Markdown file to write")
    ap.add_argument("--python", default=DEFAULT_PYTHON, help=f"interpreter (default {DEFAULT_PYTHON})")
    ap.add_argument("--dir", type=Path, required=True, help="directory of *.log + *.meta.json")
    args = ap.parse_args(argv)
    checkout = args.checkout.resolve()
    sample_dir = args.dir.resolve()
    if not (checkout / "ncclscope").is_dir():
        print(f"measure.py: no ncclscope package under {checkout}", file=sys.stderr)
        return 2
    logs = sorted(sample_dir.glob("*.log"))
    if not logs:
        print(f"measure.py: no *.log under {sample_dir}", file=sys.stderr)
        return 2
    rows = [measure_one(log, checkout, args.python) for log in logs]
    args.out.write_text(render(rows, checkout, args.python, sample_dir), encoding="utf-8")
    print(f"measure.py: {len(rows)} files -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
