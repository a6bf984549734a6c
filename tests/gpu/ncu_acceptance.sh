#!/usr/bin/env bash
# GPU acceptance run for `nsighttk ncu` (leaves the GPU's clocks alone: --clock-control none).
#   OUT=/tmp/acc bash tests/gpu/ncu_acceptance.sh
set -uo pipefail
OUT=${OUT:-gpu-acceptance}; mkdir -p "$OUT"
export NSIGHTTK_REPORTS="$OUT/ncu-reports"
run() { echo; echo "### $*"; "$@"; echo "[exit code: $?]"; }
{
run nsighttk ncu add --clock-control none
run nsighttk ncu gelu --arch sm_90 --clock-control none -c 1
run nsighttk ncu gelu --arch sm_80 --clock-control none -c 1
run nsighttk ncu gelu --arch sm_100 --clock-control none
run nsighttk ncu add_grid -k no_such_kernel --clock-control none
run nsighttk ncu kernels/streams_demo.py --nvtx-include "demo/" -c 3 --clock-control none -- --steps 1
} 2>&1 | tee "$OUT/ncu-acceptance.log"
