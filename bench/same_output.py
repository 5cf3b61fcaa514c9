"""Run `ncclscope analyze --format json` of two trees on every real input and compare the outputs.

Real inputs: each log of ../shared/corpus/complete and ../shared/corpus/issues (when ../shared is there), each
log of samples/logs, samples/nccltests and samples/complete, and each capture directory of samples/capture and
samples/gpu (a directory with a logs/ folder, nested ones such as gpu/nccl232 included). The JSON output
and the exit status of each tree are written under OUT/<tree name>/ and compared; differences are listed,
exit 1 if there is one.

    python bench/same_output.py --base /tmp/base            # this tree against a git worktree of another commit
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = ROOT.parent / "shared"


def inputs() -> list[Path]:
    """Every real input, files and capture directories, in a fixed order."""
    out: list[Path] = []
    for folder in (SHARED / "corpus" / "complete", SHARED / "corpus" / "issues"):
        if folder.is_dir():
            out += sorted(
                p for p in folder.iterdir() if p.is_file() and not p.name.endswith((".json", ".md"))
            )
    for folder in ("logs", "nccltests", "complete"):
        d = ROOT / "samples" / folder
        if d.is_dir():
            out += sorted(p for p in d.iterdir() if p.is_file() and not p.name.endswith((".json", ".md")))
    for d in sorted((ROOT / "samples").rglob("logs")):  # capture directories, nested ones too (gpu/nccl232)
        top = d.relative_to(ROOT / "samples").parts[0]
        if d.is_dir() and top in ("capture", "gpu") and d.parent.parent != ROOT / "samples":
            out.append(d.parent)
    return out


def run(tree: Path, path: Path) -> tuple[int, bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    env["PYTHONPATH"] = str(tree)
    p = subprocess.run(
        # -P: the cwd (this tree) is not put before PYTHONPATH, so each tree runs its own package
        [sys.executable, "-P", "-m", "ncclscope", "analyze", str(path), "--format", "json", "--quiet"],
        capture_output=True,
        env=env,
        cwd=ROOT,  # the same cwd for both trees: paths in the output are relative to it
        check=False,
    )
    return p.returncode, p.stdout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the other source tree")
    ap.add_argument("--out", default=str(HERE / "out" / "same_output"))
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    trees = {"this": ROOT, "base": Path(args.base).resolve()}
    paths = inputs()
    diffs = 0
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        results = {(name, p): ex.submit(run, tree, p) for p in paths for name, tree in trees.items()}
        for p in paths:
            (ca, a), (cb, b) = results[("this", p)].result(), results[("base", p)].result()
            key = hashlib.sha1(str(p).encode()).hexdigest()[:8]
            for name, code, text in (("this", ca, a), ("base", cb, b)):
                d = Path(args.out) / name
                d.mkdir(parents=True, exist_ok=True)
                (d / f"{p.name}.{key}.json").write_bytes(text + f"\nexit {code}\n".encode())
            if (ca, a) != (cb, b):
                diffs += 1
                print(f"DIFFERS: {p.relative_to(ROOT.parent)} (exit {ca} vs {cb})", flush=True)
    print(f"{len(paths)} inputs, {diffs} differ")
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main())
