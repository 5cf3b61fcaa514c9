#!/usr/bin/env bash
# Captures ncclscope's bundled torchrun job with the NCCL backend on a real GPU machine.
# Run from the repo root on a machine with a CUDA GPU and PyTorch:
#   bash samples/gpu/capture.sh OUTDIR [PYTHON] [SCENARIO...]
# Scenarios (default: probe world1 shared shared-ok):
#   probe      versions of the driver, CUDA, PyTorch and NCCL into OUTDIR/probe.txt
#   world1     one rank, NCCL_DEBUG_SUBSYS with COLL (every collective logged)
#   shared     two ranks on one GPU: NCCL's duplicate-GPU refusal, captured on purpose
#   shared-ok  two ranks on one GPU with NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL >= 2.30 allows it)
#   clean | hang | crash | mismatch | straggler   four ranks sharing the GPU, each a node of its own
#              (--node-per-rank: NCCL_HOSTID per rank, so any NCCL release accepts the shared GPU and
#              the ranks talk over NCCL's network transport); clean adds COLL
#   hang-coll | mismatch-coll   hang and mismatch with COLL (one NCCL line per collective)
# Each run is bounded by capture's own deadline (2 x timeout + 120 s).
set -uo pipefail
out=${1:?OUTDIR}; python=${2:-python3}; shift $(( $# >= 2 ? 2 : 1 ))
scenarios=("$@"); [ ${#scenarios[@]} -eq 0 ] && scenarios=(probe world1 shared shared-ok)
mkdir -p "$out"
cap() {  # cap NAME NPROC [capture options...]
  local name=$1 nproc=$2; shift 2
  rm -rf "${out:?}/$name"
  echo "== $name: capture --backend nccl --nproc-per-node $nproc $*"
  PYTHONPATH=$PWD "$python" -m ncclscope capture --backend nccl --nproc-per-node "$nproc" --timeout 10 \
    --out "$out/$name" -q "$@"
  echo "== $name: exit $?"
}
multi=(--allow-shared-gpu --env NCCL_MULTI_RANK_GPU_ENABLE=1)
nodes=(--allow-shared-gpu --node-per-rank)
for s in "${scenarios[@]}"; do
  case $s in
    probe)
      { date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv
        "$python" -c 'import torch, sys; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda); print("nccl", ".".join(map(str, torch.cuda.nccl.version())))'
        "$python" -m pip list 2>/dev/null | grep -i -E '^(torch|nvidia-nccl|lightning|pytorch-lightning) '
      } >"$out/probe.txt" 2>&1; cat "$out/probe.txt" ;;
    world1) cap world1 1 --coll ;;
    shared) cap shared 2 --allow-shared-gpu ;;
    shared-ok) cap shared-ok 2 --coll "${multi[@]}" ;;
    clean) cap clean 4 --coll "${nodes[@]}" ;;
    hang) cap hang 4 "${nodes[@]}" --inject hang:rank=1 ;;
    crash) cap crash 4 "${nodes[@]}" --inject crash:rank=3 ;;
    mismatch) cap mismatch 4 "${nodes[@]}" --inject mismatch:rank=1 ;;
    straggler) cap straggler 4 "${nodes[@]}" --inject straggler:rank=2,delay_ms=20 ;;
    hang-coll) cap hang-coll 4 --coll "${nodes[@]}" --inject hang:rank=1 ;;
    mismatch-coll) cap mismatch-coll 4 --coll "${nodes[@]}" --inject mismatch:rank=1 ;;
    *) echo "unknown scenario $s" >&2 ;;
  esac
done
