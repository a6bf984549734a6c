#!/usr/bin/env bash
# nsys stats vs nsighttk stats, report by report, on a 1M-kernel export, on a GPU host.
#
#   bash tests/gpu/stats_speed.sh [NSYS] [KERNELS]
#
# Needs nsys (2025.3.1 on the reference H100 host; any version that has the ten reports) and
# nsighttk's dependencies (`pip install -e .`; the repository itself is put on PYTHONPATH, so the
# checkout is what runs).  No GPU work is done: the export is
# synthetic (tests/synth.py grows the committed H200 capture to KERNELS kernels and as many CUDA
# runtime calls), so the figures compare the two tools' analysis only.  Prints one table row per
# report (best of 3 alternating runs: wall s, CPU s, peak RSS MB, speed-up) and the nine
# summaries together; the run took about 4 minutes on the H100 host with REPEAT=2 (2026-11-23;
# nsys' NVTX projection and GPU trace are the slow ones).
# Exits non-zero if a run of either tool failed or timed out, or if any CSV nsighttk wrote differs from
# nsys' (the last run of each report, byte for byte) (tests/gpu/lib.sh).
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
NSYS=${1:-$(command -v nsys)}
KERNELS=${2:-1000000}
OUT=${OUT:-$(mktemp -d /tmp/nsighttk-stats-speed.XXXXXX)}
mkdir -p "$OUT"
echo "host: $(hostname), $(nproc) cores, $(python3 --version), $("$NSYS" --version | tail -1)"
python3 tests/benchmarks/stats_vs_nsys.py --nsys "$NSYS" --kernels "$KERNELS" --out "$OUT" --repeat "${REPEAT:-3}" \
    --timeout 900 --keep | tee "$OUT/table.txt"
echo "export and CSV outputs kept in $OUT"
check "runs that failed (rc=N) or timed out (>N)" 0 "$(grep -cE ' rc=-?[0-9]+|>[0-9]+ ' "$OUT/table.txt" || true)"
compared=0
for theirs in "$OUT"/nsys_*.csv; do
  [ -e "$theirs" ] || continue
  name=${theirs#"$OUT"/nsys_}
  check_same "nsighttk stats = nsys stats: $name" "$theirs" "$OUT/nsighttk_$name"
  compared=$((compared + 1))
done
check "reports whose CSVs were compared (none: nsys wrote no CSV)" yes "$([ "$compared" -gt 0 ] && echo yes || echo no)"
