#!/usr/bin/env bash
# References from nsys 2025.3 for `nsighttk rules` on the committed training captures (GPT-2 steps on
# an H200, the two ranks of a DDP all-reduce step on two H200s): `nsys analyze` with the six rules in
# the csv, json and table formats, as tests/parity/test_rules.py reads them.  Needs nsys 2025.3 only (no GPU).
# Usage (repository root): OUT=dir [NSYS=/path/to/nsys] bash tests/gpu/rules_training.sh
# then copy $OUT/fixture_* into tests/fixtures/h200-nsys2025.3/rules/.
# Exits non-zero if any `nsys analyze` fails or does not write its 13 files (tests/gpu/lib.sh).
source "$(dirname "$0")/lib.sh"
OUT=${OUT:?set OUT}
if [ -z "${NSYS:-}" ] && [ -f .device/gpu-env.sh ]; then gpu_env; NSYS=${NSIGHTTK_BUNDLED_NSYS:-}; fi
NSYS=${NSYS:?set NSYS to an nsys 2025.3 executable}
RULES=cuda_memcpy_async,cuda_memcpy_sync,cuda_memset_sync,cuda_api_sync,gpu_gaps,gpu_time_util
mkdir -p "$OUT" /tmp/cap/small  # the path nsys prints in its messages, as for the other fixture_* references
"$NSYS" --version
for pair in fixture_gpt2_train:tests/fixtures/h200-nsys2025.3/gpt2_train.sqlite \
            fixture_ddp_rank0:tests/fixtures/h200x2-ddp/rank0.sqlite \
            fixture_ddp_rank1:tests/fixtures/h200x2-ddp/rank1.sqlite; do
  name=${pair%%:*}; db=/tmp/cap/small/$name.sqlite
  cp "${pair#*:}" "$db"
  run "$NSYS" analyze -r "$RULES" -f csv -o "$OUT/$name.rules" --force-overwrite true "$db" > /dev/null
  run "$NSYS" analyze -r "$RULES" -f json -o "$OUT/$name.rulesjson" --force-overwrite true "$db" > /dev/null
  run "$NSYS" analyze -r "$RULES" -f table "$db" > "$OUT/$name.rules_table.txt"
  check "$name: 6 csv, 6 json and 1 table file" 13 "$(find "$OUT" -maxdepth 1 -name "$name.*" | wc -l)"
done
