#!/usr/bin/env bash
# GPU acceptance for the workloads: CUDA extension build, bench of every workload at the
# sizes the README quotes (+ plots), and bench medians against nsys' kernel times.
# Exits non-zero if any command's exit code is not the expected one (tests/gpu/lib.sh).
#   OUT=/tmp/w bash tests/gpu/workloads_acceptance.sh [bench|nsys|all]
source "$(dirname "$0")/lib.sh"
OUT=${OUT:-gpu-workloads}; mkdir -p "$OUT"
what=${1:-all}
export NSIGHTTK_REPORTS="$OUT/reports"
nsys=$(nsighttk doctor --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tools"]["nsys"]["path"])')
if [ "$what" = bench ] || [ "$what" = all ]; then
  { echo "### nsys --pytorch modes"; "$nsys" profile --help | grep -A12 -- "--pytorch"; } > "$OUT/nsys-pytorch-help.txt" 2>&1
  run python3 -c "from nsighttk.workload import cuda_ext; m = cuda_ext.load(); print(m.__file__)" > "$OUT/ext-build.txt" 2>&1
  run python3 -c "from nsighttk.workload import cuda_ext; m = cuda_ext.load(); print('cached', m.__file__)" >> "$OUT/ext-build.txt" 2>&1
  for w in add square gelu; do
    run nsighttk bench $w --sizes 2^16,2^20,2^24,2^28 --plot "$OUT/bench-$w.png" --json > "$OUT/bench-$w.json" 2>"$OUT/bench-$w.err"
  done
  run nsighttk bench softmax --sizes 2^20,2^24,2^28 --json > "$OUT/bench-softmax.json" 2>"$OUT/bench-softmax.err"
  run nsighttk bench matmul --dtype bfloat16 --sizes 1024,4096 --json > "$OUT/bench-matmul.json" 2>"$OUT/bench-matmul.err"
  run nsighttk bench cdist --sizes 1024,4096 --json > "$OUT/bench-cdist.json" 2>"$OUT/bench-cdist.err"
  run nsighttk bench gelu --sizes 2^24 --arch sm_80 --variants torch_gelu,cuda > "$OUT/bench-gelu-sm80.txt" 2>&1
  # an arch this (sm_90) GPU cannot run: one error line, exit 2, before any benchmark
  expect_exit 2 nsighttk bench gelu --sizes 2^24 --arch sm_100 > "$OUT/bench-gelu-sm100.txt" 2>&1
  run nsighttk bench square --sizes 2^28 > "$OUT/bench-square.txt" 2>&1
fi
if [ "$what" = nsys ] || [ "$what" = all ]; then
  run "$nsys" profile -t cuda,nvtx -s none --cpuctxsw none -o /tmp/bvn --force-overwrite true \
    python3 tests/gpu/bench_vs_nsys_workloads.py run --out "$OUT/bvn-bench.json" > "$OUT/bvn-profile.log" 2>&1
  run "$nsys" export --type sqlite --force-overwrite true -o /tmp/bvn.sqlite /tmp/bvn.nsys-rep >> "$OUT/bvn-profile.log" 2>&1
  run python3 tests/gpu/bench_vs_nsys_workloads.py compare /tmp/bvn.sqlite "$OUT/bvn-bench.json" > "$OUT/bvn-compare.txt" 2>&1
  run nsighttk nsys kernels/streams_demo.py --pytorch autograd-nvtx -- --steps 2 > "$OUT/nsys-autograd-nvtx.txt" 2>&1
  run nsighttk nsys workload:gelu --arch sm_90 -- --size 16777216 > "$OUT/nsys-workload-gelu.txt" 2>&1
fi
