#!/usr/bin/env bash
# References from nsys 2025.3 for the expert-rule details no real capture shows: `nsys analyze` on the
# synthetic exports of tests/rules_synth.py (grown from the committed sync_pitfalls capture: two processes,
# two devices, ties, every copy and memory kind, CUDA profiling overheads, NVTX ranges) with the options,
# limits, time windows, NVTX ranges, process=/thread= and rows=-1 of rules_synth.SYNTH_SPECS, in the csv, json,
# column and (boxed) table formats.  Needs nsys 2025.3 only (no GPU, no profiling); the exports are rebuilt
# from their seeds by the tests, so only nsys' outputs are kept.
# Usage (repository root): OUT=dir [NSYS=/path/to/nsys] bash tests/gpu/rules_reference.sh
# then commit $OUT/* as tests/fixtures/h200-nsys2025.3/rules/synthetic/ (test_rules.py compares with it).
# Exits non-zero if any `nsys analyze` fails or writes no output (tests/gpu/lib.sh).
source "$(dirname "$0")/lib.sh"
OUT=${OUT:?set OUT}
if [ -z "${NSYS:-}" ] && [ -f .device/gpu-env.sh ]; then gpu_env; NSYS=${NSIGHTTK_BUNDLED_NSYS:-}; fi
NSYS=${NSYS:?set NSYS to an nsys 2025.3 executable}
mkdir -p "$OUT"
"$NSYS" --version > "$OUT/nsys_version.txt"
SPECS=$(python3 -c "import sys; sys.path.insert(0, 'tests'); from rules_synth import SYNTH_SPECS; print(','.join(SYNTH_SPECS))")
BASE=tests/fixtures/h200-nsys2025.3/rules/sync_pitfalls.sqlite
work=$(mktemp -d)
for seed in 0 1 2; do
  db="$work/synth$seed.sqlite"
  python3 -c "import sys; sys.path.insert(0, 'tests'); from pathlib import Path; from rules_synth import make_rules_export
make_rules_export(Path('$BASE'), Path('$db'), $seed)"
  for fmt in csv json; do
    run "$NSYS" analyze -r "$SPECS" -f "$fmt" -o "$OUT/synth$seed.$fmt" --force-overwrite true "$db" > /dev/null 2>&1
    check "synth$seed $fmt: nsys analyze wrote its outputs" yes "$(ls "$OUT/synth$seed.$fmt"* > /dev/null 2>&1 && echo yes || echo no)"
  done
  for fmt in column table; do
    run "$NSYS" analyze -r "$SPECS" -f "$fmt" "$db" > "$OUT/synth$seed.$fmt.txt" 2>&1
  done
done
run "$NSYS" analyze -r cuda_memcpy_async,cuda_memcpy_sync,cuda_memset_sync,cuda_api_sync,gpu_gaps,gpu_time_util -f table "$BASE" > "$OUT/sync_pitfalls.table.txt" 2>&1
rm -rf "$work"
ls -la "$OUT"
