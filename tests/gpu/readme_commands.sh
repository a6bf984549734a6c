#!/usr/bin/env bash
# The README's GPU examples (`<!-- example: gpu -->` blocks), run on a GPU machine: each command's
# output is saved (OUT/readme_gpu.json, for `python tests/readme_examples.py update --gpu FILE`) and
# compared with what the README shows, numbers masked (timings differ between runs).  Exits 1 when
# any output differs.  Needs nsighttk's dependencies importable by python3 (after `make install`).
# Usage (GPU machine, repository root): OUT=dir bash tests/gpu/readme_commands.sh
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp}
run python3 tests/readme_examples.py run --gpu --out "$OUT/readme_gpu.json"  # 1: some output differs
