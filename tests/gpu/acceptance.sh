#!/usr/bin/env bash
# GPU acceptance run (on a machine with a GPU, nvcc and Nsight tools), as the README describes.
# Writes everything under $OUT (default ./gpu-acceptance): command outputs, run directories, logs.
# Exits non-zero if any command's exit code is not the expected one (tests/gpu/lib.sh).
#   OUT=/tmp/acc bash tests/gpu/acceptance.sh [--bench]
source "$(dirname "$0")/lib.sh"
OUT=${OUT:-gpu-acceptance}; mkdir -p "$OUT"
export NSIGHTTK_REPORTS="$OUT/reports"
exec > >(tee "$OUT/acceptance.log") 2>&1
run nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv
run make demo
run nsighttk doctor
log "doctor without libdw on LD_LIBRARY_PATH"
env LD_LIBRARY_PATH= nsighttk doctor > "$OUT/doctor-no-libdw.txt" 2>&1 || true
grep -A2 -i "importer" "$OUT/doctor-no-libdw.txt" || true
check_grep "doctor without libdw names nsys' importer" "[Ii]mporter" "$OUT/doctor-no-libdw.txt"
run nsighttk build --list
log "every sample, built for the local GPU, checks its own result"
for s in $(nsighttk build --list); do
  bin=$(nsighttk build "$s" 2>/dev/null | head -1 | cut -d' ' -f1)
  rc=0; timeout 120 "$bin" > "$OUT/sample-$s.txt" 2>&1 || rc=$?
  echo "$s: exit $rc ($(tail -1 "$OUT/sample-$s.txt"))"
  check "sample $s checks its own result" 0 "$rc"
done
run nsighttk nsys add
run nsighttk nsys kernels/streams_demo.py -- --steps 3
expect_fail nsighttk nsys add_grid -- 0  # N=0: an empty launch fails; the program's exit code is nsighttk's
log "raw nsys on a failing target (what does nsys itself print and return?)"
nsys=$(nsighttk doctor --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tools"]["nsys"]["path"])')
expect_fail "$nsys" profile -t cuda -s none --cpuctxsw none -o /tmp/rawfail --force-overwrite true \
  "$(nsighttk build add_grid | head -1 | cut -d' ' -f1)" 0
log "nsys without libdw (importer failure): one error line, exit 2"
expect_exit 2 env LD_LIBRARY_PATH= nsighttk nsys add_grid
rep=$(ls -d "$NSIGHTTK_REPORTS"/*-nsys-add | head -1)/raw/profile.nsys-rep
run nsighttk stats "$rep" -r cuda_gpu_kern_sum,cuda_gpu_mem_time_sum
run nsighttk analyze "$(ls -d "$NSIGHTTK_REPORTS"/*-nsys-streams_demo | head -1)"
cp "$(ls -d "$NSIGHTTK_REPORTS"/*-nsys-add | head -1)/summary.md" "$OUT/add-summary.md"
cp "$(ls -d "$NSIGHTTK_REPORTS"/*-nsys-streams_demo | head -1)/run.json" "$OUT/streams_demo-run.json"
if [ "${1:-}" = "--bench" ]; then
  run python3 tests/benchmarks/stats_vs_nsys.py --nsys "$nsys" --out /tmp/bench
fi
