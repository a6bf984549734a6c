#!/usr/bin/env bash
# GPU acceptance for the torch.profiler path (issue 5): traces of workloads with PyTorch's own
# key_averages next to them (fixtures), the BERT sweep, bf16 and real-BERT runs, failure cases.
#   OUT=/tmp/t bash tests/gpu/torch_acceptance.sh
set -uo pipefail
OUT=${OUT:-gpu-torch}; mkdir -p "$OUT"
export NSIGHTTK_REPORTS="$OUT/reports"
log() { echo; echo "### $*"; }
{
log "torch workload:square"; nsighttk torch workload:square --size 16777216; echo "[exit $?]"
log "torch workload:gelu"; nsighttk torch workload:gelu --size 16777216 --record-shapes; echo "[exit $?]"
log "model bert 1 8 x 128 256"; nsighttk model bert --batch-sizes 1 8 --seq-lens 128 256 --output-dir "$OUT/bert"; echo "[exit $?]"
log "model bert bf16"; nsighttk model bert --batch-sizes 8 --seq-lens 256 --dtype bfloat16 --skip-benchmark --output-dir "$OUT/bert-bf16"; echo "[exit $?]"
log "model bert --real-bert"; nsighttk model bert --real-bert --batch-sizes 1 --seq-lens 128 --skip-benchmark --output-dir "$OUT/bert-hf"; echo "[exit $?]"
log "model bert too large"; nsighttk model bert --batch-sizes 1 16384 --seq-lens 512 --skip-benchmark; echo "[exit $?]"
printf 'import torch\nx = torch.ones(4, device="cuda")\ny = x * 2\nraise ValueError("boom")\n' > /tmp/raises.py
log "torch script that raises"; nsighttk torch /tmp/raises.py; echo "[exit $?]"
} > "$OUT/torch-acceptance.log" 2>&1
