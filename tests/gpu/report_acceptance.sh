#!/usr/bin/env bash
# GPU acceptance for issue 6's HTML reports and per-rank profiling:
#   OUT=/tmp/r bash tests/gpu/report_acceptance.sh
# nsys, ncu and bench runs each write report.html into their run directory; `ranks --launch`
# runs torchrun with nsys per rank; `nsys stats` of each rank for comparison.  $OUT gets the log
# and one tarball of the run directories' small files (report.html, run.json, ranks.json, csv).
set -uo pipefail
OUT=${OUT:-gpu-report}; mkdir -p "$OUT"
W=$(mktemp -d)
export NSIGHTTK_REPORTS="$W/reports"
NSYS=${NSIGHTTK_BUNDLED_NSYS:-nsys}
log() { echo; echo "### $*"; }
{
log "nsys add";         nsighttk nsys add; echo "[exit $?]"
log "ncu matmul_tiled"; nsighttk ncu matmul_tiled; echo "[exit $?]"
log "bench add";        nsighttk bench add --sizes 2^20,2^24,2^26 --variants torch_add,triton,cuda; echo "[exit $?]"
log "ranks --launch torchrun (2 ranks)"
nsighttk ranks --launch "python3 -m torch.distributed.run --standalone --nproc-per-node 2 --no-python" \
  -- python3 -m nsighttk.collect.drivers.workload_main add --size 16777216 --iters 5 --variants torch_add,triton
echo "[exit $?]"
for f in "$W"/reports/*-ranks-*/raw/rank*.sqlite; do
  log "nsys stats $(basename "$f")"; "$NSYS" stats -r cuda_gpu_kern_sum -f csv "$f" | tail -n +2
done
log "runs"; nsighttk runs list
log "compare the bench run with itself (HTML)"
b=$(ls -d "$W"/reports/*-bench-add | head -1)
nsighttk compare "$b" "$b" --html "$W/reports/compare-bench.html"; echo "[exit $?]"
ls -la "$W"/reports/*/report.html
} > "$OUT/report-acceptance.log" 2>&1
(cd "$W/reports" && tar czf "$OUT/report-runs.tgz" --exclude='*.nsys-rep' --exclude='*.sqlite' \
  --exclude='*.ncu-rep' --exclude='*.qdstrm' --exclude='nsighttk.db*' .)
ls -la "$OUT"
