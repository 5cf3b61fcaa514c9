#!/usr/bin/env bash
# Re-creates the CPU captures in this folder (torch CPU build, gloo, one host). Run from the repo root:
#   bash samples/capture/regenerate.sh [PYTHON]   (default .venv/bin/python)
# Each run is bounded: a 10 s process-group timeout, and the outer deadline (2 x 10 + 120 s).
# No node snapshot (it would commit this machine's interfaces and environment) and no reports (the
# analysis is what the tests check against these files, not part of them).
set -euo pipefail
python=${1:-.venv/bin/python}
here=samples/capture
cap() {  # cap NAME NPROC [--inject SPEC]
  local name=$1 nproc=$2; shift 2
  rm -rf "${here:?}/$name"
  "$python" -m ncclscope capture --backend gloo --nproc-per-node "$nproc" --timeout 10 --out "$here/$name" -q --no-snapshot --no-analyze "$@" || true
}
cap clean 2
cap straggler 4 --inject straggler:rank=2,delay_ms=20
cap hang 4 --inject hang:rank=1
cap crash 4 --inject crash:rank=3
cap mismatch 4 --inject mismatch:rank=1
