#!/usr/bin/env bash
# GPU acceptance run for `nsighttk ncu` (leaves the GPU's clocks alone: --clock-control none).
# Exits non-zero if any command's exit code is not the expected one (tests/gpu/lib.sh).
#   OUT=/tmp/acc bash tests/gpu/ncu_acceptance.sh
source "$(dirname "$0")/lib.sh"
OUT=${OUT:-gpu-acceptance}; mkdir -p "$OUT"
export NSIGHTTK_REPORTS="$OUT/ncu-reports"
exec > >(tee "$OUT/ncu-acceptance.log") 2>&1
run nsighttk ncu add --clock-control none
run nsighttk ncu gelu --arch sm_90 --clock-control none -c 1
run nsighttk ncu gelu --arch sm_80 --clock-control none -c 1  # PTX for sm_80, JIT-compiled on a newer GPU
expect_exit 2 nsighttk ncu gelu --arch sm_100 --clock-control none  # on an sm_90 GPU: cannot run, one line
expect_exit 2 nsighttk ncu add_grid -k no_such_kernel --clock-control none  # ncu profiled no kernels
run nsighttk ncu kernels/streams_demo.py --nvtx-include "demo/" -c 3 --clock-control none -- --steps 1
