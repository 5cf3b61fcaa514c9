#!/usr/bin/env bash
# Re-creates the held-out judge captures in this folder (torch CPU build, gloo, one host).
# Run from the repo root:  bash samples/judge/regenerate.sh [PYTHON] [CASE...]
# (default PYTHON .venv/bin/python; no CASE: every case). Each run is bounded by `timeout 200`
# and a 10 s process-group timeout. See SOURCE.md for what each case holds.
set -uo pipefail
python=${1:-.venv/bin/python}
shift || true
here=samples/judge
cap() {  # cap NAME [capture options...]
  local name=$1; shift
  rm -rf "${here:?}/$name"
  local t0=$SECONDS
  timeout 200 "$python" -m ncclscope capture --backend gloo --timeout 10 --out "$here/$name" -q "$@"
  echo "case $name rc=$? $((SECONDS - t0))s" >&2
}
want() { [ ${#cases[@]} -eq 0 ] || [[ " ${cases[*]} " == *" $1 "* ]]; }
cases=("$@")
want j1_gil_r0_tp2dp2 && cap j1_gil_r0_tp2dp2 --layout tp=2,dp=2 --inject gil:rank=0
want j2_sleep_r2_tp2cp2 && cap j2_sleep_r2_tp2cp2 --layout tp=2,cp=2 --inject hang:rank=2
want j3_oom_extra_r3_tp2dp2 && cap j3_oom_extra_r3_tp2dp2 --layout tp=2,dp=2 --inject oom:rank=3,extra=yes
want j4_mismatch_r1_tp2dp2 && cap j4_mismatch_r1_tp2dp2 --layout tp=2,dp=2 --inject mismatch:rank=1
want j5_healthy_tp2dp2 && cap j5_healthy_tp2dp2 --layout tp=2,dp=2
want j6_killed_r2_4ranks && cap j6_killed_r2_4ranks --nproc-per-node 4 --inject crash:rank=2
want j7_cuda_error_r1_ep2dp2 && cap j7_cuda_error_r1_ep2dp2 --layout ep=2,dp=2 --inject cuda-error:rank=1
want j8_sleep_r0_r3_tp2dp2 && cap j8_sleep_r0_r3_tp2dp2 --layout tp=2,dp=2 --inject hang:rank=0 --inject hang:rank=3
exit 0
