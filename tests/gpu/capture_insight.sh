#!/usr/bin/env bash
# Captures for the iterations, expert rules and collectives, made on the GPU machine:
#   - a GPT-2 training loop with NVTX `step N` ranges (nsys) and with torch.profiler (ProfilerStep#N)
#   - cuda_samples/sync_pitfalls.cu, which triggers each of nsys' expert rules
#   - with two GPUs: the same training loop under DDP (NCCL all-reduce), nsys per rank and Kineto per rank
#   - for each capture: `nsys stats` (ten reports, CSV) and `nsys analyze` (six rules, CSV and table), the
#     references our numbers are tested against; and nsys' own rule and report scripts
# Exits non-zero if any profile, export, `nsys stats` or `nsys analyze` fails (tests/gpu/lib.sh).
# Usage (GPU machine, repository root): OUT=dir bash tests/gpu/capture_insight.sh
source "$(dirname "$0")/lib.sh"
OUT=${OUT:?set OUT}
gpu_env
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
NSYS=${NSYS:-$NSIGHTTK_BUNDLED_NSYS}
W=/tmp/cap; rm -rf $W; mkdir -p $W/small $W/gpt2 $W/ddp
exec > >(tee $W/small/capture.log) 2>&1
RULES=cuda_memcpy_async,cuda_memcpy_sync,cuda_memset_sync,cuda_api_sync,gpu_gaps,gpu_time_util
REPORTS=cuda_gpu_kern_sum,cuda_gpu_kern_gb_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,cuda_api_sum,cuda_gpu_sum,nvtx_sum,nvtx_gpu_proj_sum,nvtx_kern_sum,cuda_gpu_trace
echo "== versions"; nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader; "$NSYS" --version
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'gpus', torch.cuda.device_count())"
NGPU=$(nvidia-smi -L | wc -l)

references() {  # SQLITE: nsys stats + nsys analyze beside it
  local s=$1 b=${1%.sqlite}
  run "$NSYS" stats -r "$REPORTS" -f csv -o "$b.stats" "$s" > "$b.stats.log" 2>&1
  run "$NSYS" analyze -r "$RULES" -f csv -o "$b.rules" "$s" > "$b.rules.log" 2>&1
  run "$NSYS" analyze -r "$RULES" "$s" > "$b.rules_table.txt" 2>&1
  run "$NSYS" analyze -r "$RULES" -f json -o "$b.rulesjson" "$s" > /dev/null 2>&1
}
capture() {  # DIR NAME COMMAND...
  local d=$1 n=$2; shift 2
  echo "== nsys $n: $*"; local t0; t0=$(date +%s.%N)
  run "$NSYS" profile -t cuda,nvtx,osrt -s none --cpuctxsw=none --force-overwrite true -o "$d/$n" "$@" > "$d/$n.profile.log" 2>&1
  echo "profile in $(echo "$(date +%s.%N) - $t0" | bc) s"; tail -2 "$d/$n.profile.log"
  run "$NSYS" export --type sqlite --force-overwrite true -o "$d/$n.sqlite" "$d/$n.nsys-rep" > /dev/null 2>&1
  rm -f "$d/$n.nsys-rep"
  references "$d/$n.sqlite"
}

echo "== help texts"
"$NSYS" analyze --help > $W/small/analyze_help.txt 2>&1
"$NSYS" analyze --help-rules=ALL > $W/small/analyze_help_rules.txt 2>&1 || "$NSYS" analyze --help-rules > $W/small/analyze_help_rules.txt 2>&1
nd=$(dirname "$NSYS"); run tar -C "$nd" -czf $W/small/nsys_rules_reports_src.tar.gz rules reports

nvcc -O3 -lineinfo -arch=sm_90 -o $W/sync_pitfalls cuda_samples/sync_pitfalls.cu
capture $W/small sync_pitfalls $W/sync_pitfalls
for opt in "gpu_gaps:gap=100" "gpu_time_util:threshold=80:chunks=10" "cuda_api_sync:rows=3" "gpu_gaps:rows=1" "cuda_memcpy_sync:rows=1"; do
  tag=$(echo "$opt" | tr ':=' '__')
  run "$NSYS" analyze -r "$opt" -f csv -o "$W/small/sync_pitfalls.opt_$tag" $W/small/sync_pitfalls.sqlite > "$W/small/sync_pitfalls.opt_$tag.log" 2>&1
done
for f in tests/fixtures/h200-nsys2025.3/*.sqlite tests/fixtures/h100-ranks/*.sqlite; do
  cp "$f" $W/small/fixture_$(basename "$f"); references $W/small/fixture_$(basename "$f")
done

capture $W/gpt2 gpt2_train python3 tests/fixtures/training/gpt2_train.py --steps 6
run python3 tests/fixtures/training/gpt2_train.py --steps 6 --torch-profiler $W/gpt2/gpt2_train.pt.trace.json
for opt in "gpu_gaps:gap=1" "gpu_time_util:threshold=80:chunks=10"; do
  tag=$(echo "$opt" | tr ':=' '__')
  run "$NSYS" analyze -r "$opt" -f csv -o "$W/gpt2/gpt2_train.opt_$tag" $W/gpt2/gpt2_train.sqlite > /dev/null 2>&1
done

if [ "$NGPU" -ge 2 ]; then
  echo "== DDP on 2 GPUs (nsys per rank)"
  run torchrun --standalone --nproc-per-node 2 --no-python "$NSYS" profile -t cuda,nvtx,osrt -s none --cpuctxsw=none \
    --force-overwrite true -o "$W/ddp/ddp_rank%q{RANK}" python3 tests/fixtures/training/gpt2_train.py --ddp --layers 4 --steps 6 \
    > $W/ddp/ddp.profile.log 2>&1
  tail -4 $W/ddp/ddp.profile.log
  for r in 0 1; do
    run "$NSYS" export --type sqlite --force-overwrite true -o $W/ddp/ddp_rank$r.sqlite $W/ddp/ddp_rank$r.nsys-rep >/dev/null 2>&1
    rm -f $W/ddp/ddp_rank$r.nsys-rep; references $W/ddp/ddp_rank$r.sqlite
  done
  run torchrun --standalone --nproc-per-node 2 tests/fixtures/training/gpt2_train.py --ddp --layers 4 --steps 6 \
    --torch-profiler "$W/ddp/ddp_rankRANK.pt.trace.json" > $W/ddp/ddp.torch.log 2>&1
fi

echo "== packing"; ls -la $W/small $W/gpt2 $W/ddp
cd $W && for d in small gpt2 ddp; do
  tar -cf - $d | xz -T0 -6 > $W/$d.tar.xz
  if [ $(stat -c %s $W/$d.tar.xz) -gt 15000000 ]; then split -b 15000000 -d $W/$d.tar.xz $OUT/$d.tar.xz.part; else cp $W/$d.tar.xz $OUT/; fi
done
ls -la $OUT
