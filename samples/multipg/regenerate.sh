#!/usr/bin/env bash
# Re-creates the multi-process-group captures in this folder (torch CPU build, gloo, one host).
# Run from the repo root:  bash samples/multipg/regenerate.sh [PYTHON] [CASE...]
# (default PYTHON .venv/bin/python; no CASE: every case). Each run is bounded: a 10 s process-group
# timeout and the outer deadline (2 x 10 + 120 s). See SOURCE.md for what each case holds.
set -euo pipefail
python=${1:-.venv/bin/python}
shift || true
here=samples/multipg
cap() {  # cap NAME [capture options...]
  local name=$1; shift
  rm -rf "${here:?}/$name"
  "$python" -m ncclscope capture --backend gloo --timeout 10 --out "$here/$name" -q "$@" || true
}
want() { [ $# -eq 0 ] || [[ " ${cases[*]} " == *" $1 "* ]]; }
cases=("$@")
want a_sleep_tp2dp2 && cap a_sleep_tp2dp2 --layout tp=2,dp=2 --inject hang:rank=1
if want b_gil_sleep_tp2dp2ep2; then
  cap b_gil_sleep_tp2dp2ep2 --layout tp=2,dp=2,ep=2,etp=yes --inject gil:rank=3 --inject hang:rank=6
  gzip -n -9 "$here"/b_gil_sleep_tp2dp2ep2/logs/*.log  # 8 ranks: keeps the folder near 300 KB
fi
want c_oom_desync_2ranks && cap c_oom_desync_2ranks --nproc-per-node 2 --inject oom:rank=0,extra=yes
want d_cuda_error_tp2dp2 && cap d_cuda_error_tp2dp2 --layout tp=2,dp=2 --inject cuda-error:rank=2
want e_oom_extra_tp2dp2 && cap e_oom_extra_tp2dp2 --layout tp=2,dp=2 --inject oom:rank=0,extra=yes
want f_killed_tp2cp2 && cap f_killed_tp2cp2 --layout tp=2,cp=2 --inject crash:rank=3
exit 0
