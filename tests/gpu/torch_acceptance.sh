#!/usr/bin/env bash
# GPU acceptance for the torch.profiler path: traces of workloads with PyTorch's own
# key_averages next to them (fixtures), the BERT sweep, bf16 and real-BERT runs, failure cases.
# Exits non-zero if any command's exit code or message is not the expected one (tests/gpu/lib.sh).
#   OUT=/tmp/t bash tests/gpu/torch_acceptance.sh
source "$(dirname "$0")/lib.sh"
OUT=${OUT:-gpu-torch}; mkdir -p "$OUT"
export NSIGHTTK_REPORTS="$OUT/reports"
exec > "$OUT/torch-acceptance.log" 2>&1
run nsighttk torch workload:square --size 16777216
run nsighttk torch workload:gelu --size 16777216 --record-shapes
run nsighttk model bert --batch-sizes 1 8 --seq-lens 128 256 --output-dir "$OUT/bert"
run nsighttk model bert --batch-sizes 8 --seq-lens 256 --dtype bfloat16 --skip-benchmark --output-dir "$OUT/bert-bf16"
run nsighttk model bert --real-bert --batch-sizes 1 --seq-lens 128 --skip-benchmark --output-dir "$OUT/bert-hf"
log "model bert too large: the size that does not fit is reported (exit 3), the others run"
expect_exit 3 nsighttk model bert --batch-sizes 1 16384 --seq-lens 512 --skip-benchmark --output-dir "$OUT/bert-big" \
  > "$OUT/bert-too-large.txt" 2>&1
cat "$OUT/bert-too-large.txt"
check_grep "model bert says which size does not fit" "does not fit" "$OUT/bert-too-large.txt"
printf 'import torch\nx = torch.ones(4, device="cuda")\ny = x * 2\nraise ValueError("boom")\n' > /tmp/raises.py
log "torch script that raises: exit 3, the error named, the profile kept"
expect_exit 3 nsighttk torch /tmp/raises.py > "$OUT/torch-raises.txt" 2>&1
cat "$OUT/torch-raises.txt"
check_grep "the script's error is named" "ValueError: boom" "$OUT/torch-raises.txt"
