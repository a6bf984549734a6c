#!/usr/bin/env bash
# GPU acceptance for the workloads (issue 4): CUDA extension build, bench of every workload at the
# sizes the README quotes (+ plots), and bench medians against nsys' kernel times.
#   OUT=/tmp/w bash tests/gpu/workloads_acceptance.sh [bench|nsys|all]
set -uo pipefail
OUT=${OUT:-gpu-workloads}; mkdir -p "$OUT"
what=${1:-all}
export NSIGHTTK_REPORTS="$OUT/reports"
nsys=$(nsighttk doctor --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tools"]["nsys"]["path"])')
if [ "$what" = bench ] || [ "$what" = all ]; then
  { echo "### nsys --pytorch modes"; "$nsys" profile --help | grep -A12 -- "--pytorch"; } > "$OUT/nsys-pytorch-help.txt" 2>&1
  { time python3 -c "from nsighttk.workload import cuda_ext; m = cuda_ext.load(); print(m.__file__)"; } > "$OUT/ext-build.txt" 2>&1
  { time python3 -c "from nsighttk.workload import cuda_ext; m = cuda_ext.load(); print('cached', m.__file__)"; } >> "$OUT/ext-build.txt" 2>&1
  for w in add square gelu; do
    nsighttk bench $w --sizes 2^16,2^20,2^24,2^28 --plot "$OUT/bench-$w.png" --json > "$OUT/bench-$w.json" 2>"$OUT/bench-$w.err"
  done
  nsighttk bench softmax --sizes 2^20,2^24,2^28 --json > "$OUT/bench-softmax.json" 2>"$OUT/bench-softmax.err"
  nsighttk bench matmul --dtype bfloat16 --sizes 1024,4096 --json > "$OUT/bench-matmul.json" 2>"$OUT/bench-matmul.err"
  nsighttk bench cdist --sizes 1024,4096 --json > "$OUT/bench-cdist.json" 2>"$OUT/bench-cdist.err"
  nsighttk bench gelu --sizes 2^24 --arch sm_80 --variants torch_gelu,cuda > "$OUT/bench-gelu-sm80.txt" 2>&1
  nsighttk bench gelu --sizes 2^24 --arch sm_100 > "$OUT/bench-gelu-sm100.txt" 2>&1; echo "exit $?" >> "$OUT/bench-gelu-sm100.txt"
  nsighttk bench square --sizes 2^28 > "$OUT/bench-square.txt" 2>&1
fi
if [ "$what" = nsys ] || [ "$what" = all ]; then
  "$nsys" profile -t cuda,nvtx -s none --cpuctxsw none -o /tmp/bvn --force-overwrite true \
    python3 tests/gpu/bench_vs_nsys_workloads.py run --out "$OUT/bvn-bench.json" > "$OUT/bvn-profile.log" 2>&1
  "$nsys" export --type sqlite --force-overwrite true -o /tmp/bvn.sqlite /tmp/bvn.nsys-rep >> "$OUT/bvn-profile.log" 2>&1
  python3 tests/gpu/bench_vs_nsys_workloads.py compare /tmp/bvn.sqlite "$OUT/bvn-bench.json" > "$OUT/bvn-compare.txt" 2>&1
  nsighttk nsys kernels/streams_demo.py --pytorch autograd-nvtx -- --steps 2 > "$OUT/nsys-autograd-nvtx.txt" 2>&1
  nsighttk nsys workload:gelu --arch sm_90 -- --size 16777216 > "$OUT/nsys-workload-gelu.txt" 2>&1
fi
