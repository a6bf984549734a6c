#!/usr/bin/env bash
# GPU acceptance for the HTML reports and per-rank profiling:
#   OUT=/tmp/r bash tests/gpu/report_acceptance.sh
# nsys, ncu and bench runs each write report.html into their run directory; `ranks --launch`
# runs torchrun with nsys per rank; `nsys stats` of each rank for comparison.  $OUT gets the log
# and one tarball of the run directories' small files (report.html, run.json, ranks.json, csv).
# Exits non-zero if any command fails or a run directory lacks its report.html (tests/gpu/lib.sh).
source "$(dirname "$0")/lib.sh"
OUT=${OUT:-gpu-report}; mkdir -p "$OUT"
W=$(mktemp -d)
export NSIGHTTK_REPORTS="$W/reports"
NSYS=${NSIGHTTK_BUNDLED_NSYS:-nsys}
exec > "$OUT/report-acceptance.log" 2>&1
run nsighttk nsys add
run nsighttk ncu matmul_tiled
run nsighttk bench add --sizes 2^20,2^24,2^26 --variants torch_add,triton,cuda
run nsighttk ranks --launch "python3 -m torch.distributed.run --standalone --nproc-per-node 2 --no-python" \
  -- python3 -m nsighttk.collect.drivers.workload_main add --size 16777216 --iters 5 --variants torch_add,triton
ranks=("$W"/reports/*-ranks-*/raw/rank*.sqlite)
check "rank exports written by ranks --launch" 2 "$(ls "${ranks[@]}" 2>/dev/null | wc -l)"
for f in "${ranks[@]}"; do
  log "nsys stats $(basename "$f")"; "$NSYS" stats -r cuda_gpu_kern_sum -f csv "$f" | tail -n +2
done
run nsighttk runs list
b=$(ls -d "$W"/reports/*-bench-add | head -1)
run nsighttk compare "$b" "$b" --html "$W/reports/compare-bench.html"
for d in "$W"/reports/*-nsys-add "$W"/reports/*-ncu-matmul_tiled "$W"/reports/*-bench-add; do
  check "report.html in $(basename "$d")" yes "$([ -s "$d/report.html" ] && echo yes || echo no)"
done
(cd "$W/reports" && tar czf "$OUT/report-runs.tgz" --exclude='*.nsys-rep' --exclude='*.sqlite' \
  --exclude='*.ncu-rep' --exclude='*.qdstrm' --exclude='nsighttk.db*' .)
ls -la "$OUT"
