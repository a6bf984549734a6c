#!/usr/bin/env bash
# GPU acceptance run (on a machine with a GPU, nvcc and Nsight tools), as the README describes.
# Writes everything under $OUT (default ./gpu-acceptance): command outputs, run directories, logs.
#   OUT=/tmp/acc bash tests/gpu/acceptance.sh [--bench]
set -uo pipefail
OUT=${OUT:-gpu-acceptance}; mkdir -p "$OUT"
export NSIGHTTK_REPORTS="$OUT/reports"
log() { echo; echo "### $*"; }
run() { log "$*"; "$@"; echo "[exit code: $?]"; }
{
run nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv
run make demo
run nsighttk doctor
log "doctor without libdw on LD_LIBRARY_PATH"; env LD_LIBRARY_PATH= nsighttk doctor | grep -A2 -i "importer"
run nsighttk build --list
log "every sample, built for the local GPU, checks its own result"
for s in $(nsighttk build --list); do
  bin=$(nsighttk build "$s" 2>/dev/null | head -1 | cut -d' ' -f1)
  timeout 120 "$bin" > "$OUT/sample-$s.txt" 2>&1; echo "$s: exit $? ($(tail -1 "$OUT/sample-$s.txt"))"
done
run nsighttk nsys add
run nsighttk nsys kernels/streams_demo.py -- --steps 3
run nsighttk nsys add_grid -- 0
log "raw nsys on a failing target (what does nsys itself print and return?)"
nsys=$(nsighttk doctor --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tools"]["nsys"]["path"])')
"$nsys" profile -t cuda -s none --cpuctxsw none -o /tmp/rawfail --force-overwrite true \
  "$(nsighttk build add_grid | head -1 | cut -d' ' -f1)" 0; echo "[nsys exit code: $?]"
log "nsys without libdw (importer failure)"; env LD_LIBRARY_PATH= nsighttk nsys add_grid; echo "[exit code: $?]"
rep=$(ls -d "$NSIGHTTK_REPORTS"/*-nsys-add | head -1)/raw/profile.nsys-rep
run nsighttk stats "$rep" -r cuda_gpu_kern_sum,cuda_gpu_mem_time_sum
run nsighttk analyze "$(ls -d "$NSIGHTTK_REPORTS"/*-nsys-streams_demo | head -1)"
cp "$(ls -d "$NSIGHTTK_REPORTS"/*-nsys-add | head -1)/summary.md" "$OUT/add-summary.md"
cp "$(ls -d "$NSIGHTTK_REPORTS"/*-nsys-streams_demo | head -1)/run.json" "$OUT/streams_demo-run.json"
} 2>&1 | tee "$OUT/acceptance.log"
if [ "${1:-}" = "--bench" ]; then
  python3 tests/benchmarks/stats_vs_nsys.py --nsys "$nsys" --out /tmp/bench 2>&1 | tee "$OUT/bench.log"
fi
