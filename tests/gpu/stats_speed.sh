#!/usr/bin/env bash
# nsys stats vs nsighttk stats, report by report, on a 1M-kernel export (issue 15), on a GPU host.
#
#   bash tests/gpu/stats_speed.sh [NSYS] [KERNELS]
#
# Needs nsys (2025.3.1 on the reference H100 host; any version that has the ten reports) and this
# repository's Python environment (`pip install -e .`).  No GPU work is done: the export is
# synthetic (tests/synth.py grows the committed H200 capture to KERNELS kernels and as many CUDA
# runtime calls), so the figures compare the two tools' analysis only.  Prints one table row per
# report (best of 3 alternating runs: wall s, CPU s, peak RSS MB, speed-up) and the nine
# summaries together; the run takes about 10-20 minutes (nsys' NVTX projection is the slow one).
set -euo pipefail
cd "$(dirname "$0")/../.."
NSYS=${1:-$(command -v nsys)}
KERNELS=${2:-1000000}
OUT=${OUT:-$(mktemp -d /tmp/nsighttk-stats-speed.XXXXXX)}
echo "host: $(hostname), $(nproc) cores, $(python3 --version), $("$NSYS" --version | tail -1)"
python3 tests/benchmarks/stats_vs_nsys.py --nsys "$NSYS" --kernels "$KERNELS" --out "$OUT" --repeat 3 \
    --timeout 900 --keep
echo "export and CSV outputs kept in $OUT"
