"""Measure ncclscope on this judge set: `tools/judge_measure.py` with this directory (see its docstring).

python samples/judge2/measure.py --checkout /work/main --out /tmp/judge2_results.md
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    if "--dir" not in sys.argv:
        sys.argv += ["--dir", str(HERE)]
    runpy.run_path(str(HERE.parent.parent / "tools" / "judge_measure.py"), run_name="__main__")
