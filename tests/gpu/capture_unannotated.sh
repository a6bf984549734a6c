#!/usr/bin/env bash
# Captures of unannotated programs, each program's own printed timings kept as the ground truth
# (tests/fixtures/training/*.py print one JSON line per iteration; truth.py gathers them into truth.json):
#   eager     small GPT training (1 layer), eager, 2 micro-steps per optimizer step, an evaluation every 8 steps:
#             nsys unannotated and nsys with NVTX "step N" ranges (--nvtx)
#   compile   the same model under torch.compile (default mode; compilation and autotuning inside the
#             capture, a fresh Inductor/Triton cache each run): unannotated and --nvtx
#   generate  Hugging Face GPT-2 generate() (random weights, greedy, 64 new tokens, 2 prompts): nsys
#   ddp       small GPT under DDP on 2 GPUs: nsys per rank (.nsys-rep kept), `nsys recipe nccl_sum` and
#             `nsys recipe cuda_gpu_kern_sum` over both ranks (CSV, Parquet), and a torch.profiler trace
#             per rank (record_shapes, no schedule)
#   repro     torch.profiler traces with record_shapes of a BERT forward+backward and of the small GPT;
#             nsys --pytorch autograd-shapes-nvtx of the small GPT
# The compile part runs on the second GPU while eager, generate and repro run on the first.  nsys:
# -t cuda,nvtx,osrt -s none --cpuctxsw=none, exported to SQLite and trimmed by tests/fixtures/trim_export.py
# --work-api-only (CUDA API calls kept where they launched or waited for GPU work).
# Each part is packed as $OUT/<part>.tar.xz as soon as it ends; versions and logs in $OUT/env.tar.xz.
# Exits non-zero if any capture, export, recipe or program fails (tests/gpu/lib.sh).
# Usage (GPU machine, repository root): OUT=dir bash tests/gpu/capture_unannotated.sh
source "$(dirname "$0")/lib.sh"
OUT=${OUT:?set OUT}
gpu_env
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
NSYS=${NSYS:-$NSIGHTTK_BUNDLED_NSYS}
W=/tmp/unannotated; rm -rf $W; mkdir -p $W/env
exec > >(tee $W/env/capture.log) 2>&1
NGPU=$(nvidia-smi -L | wc -l)
NSYS_OPTS=(-t cuda,nvtx,osrt -s none --cpuctxsw=none --force-overwrite true)

versions() {
  nvidia-smi --query-gpu=index,name,compute_cap,driver_version,memory.total --format=csv
  nvidia-smi
  "$NSYS" --version
  python3 -c "import torch, transformers, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda,
  'nccl', torch.cuda.nccl.version(), 'triton', triton.__version__, 'transformers', transformers.__version__,
  'gpus', torch.cuda.device_count())"
  "$NSYS" profile --help | grep -A12 -- '--pytorch' || true
  "$NSYS" recipe --help || true
  "$NSYS" recipe nccl_sum --help || true
}

nsys_capture() {  # DIR NAME [NSYS OPTION...] -- COMMAND...: DIR/NAME.sqlite (trimmed), the program's output in NAME.log
  local d=$1 n=$2 opts=()
  shift 2
  while [ "$1" != "--" ]; do opts+=("$1"); shift; done
  shift
  run timeout 300 "$NSYS" profile "${NSYS_OPTS[@]}" "${opts[@]}" -o "$d/$n" "$@" > "$d/$n.log" 2>&1
  run "$NSYS" export --type sqlite --force-overwrite true -o "$d/$n.full.sqlite" "$d/$n.nsys-rep" > /dev/null
  run python3 tests/fixtures/trim_export.py --work-api-only "$d/$n.full.sqlite" "$d/$n.sqlite"
  rm -f "$d/$n.full.sqlite"
}

truth() {  # OUT.json COMMAND-TEXT RUN.jsonl...
  local out=$1 cmd=$2
  shift 2
  run python3 tests/fixtures/training/truth.py --command "$cmd" "$out" "$@"
}

capture_eager() {
  local d=$1 v
  for v in "" _nvtx; do
    nsys_capture "$d" "eager$v" -- python3 tests/fixtures/training/small_gpt.py --layers 1 --iters 20 --accum 2 \
      --eval-every 8 ${v:+--nvtx} --out "$d/eager$v.jsonl"
    truth "$d/eager$v.truth.json" "python3 small_gpt.py --layers 1 --iters 20 --accum 2 --eval-every 8 ${v:+--nvtx}" "$d/eager$v.jsonl"
  done
  rm -f "$d"/*.nsys-rep
}

capture_compile() {
  local d=$1 v
  if [ "$NGPU" -ge 2 ]; then export CUDA_VISIBLE_DEVICES=1; fi
  for v in "" _nvtx; do
    # a fresh cache: each capture compiles and autotunes from nothing; one compile thread keeps it in-process
    nsys_capture "$d" "compile$v" -- env TORCHINDUCTOR_CACHE_DIR="$d/cache$v" TRITON_CACHE_DIR="$d/cache$v/triton" \
      TORCHINDUCTOR_COMPILE_THREADS=1 python3 tests/fixtures/training/small_gpt.py --layers 1 --iters 20 --compile ${v:+--nvtx} \
      --out "$d/compile$v.jsonl"
    truth "$d/compile$v.truth.json" "TORCHINDUCTOR_COMPILE_THREADS=1 python3 small_gpt.py --layers 1 --iters 20 --compile ${v:+--nvtx}" \
      "$d/compile$v.jsonl"
    rm -rf "$d/cache$v"
  done
  rm -f "$d"/*.nsys-rep
}

capture_generate() {
  local d=$1
  nsys_capture "$d" generate -- python3 tests/fixtures/training/hf_generate.py --prompts 48,128 --new-tokens 64 --layers 1 \
    --out "$d/generate.jsonl"
  truth "$d/generate.truth.json" "python3 hf_generate.py --prompts 48,128 --new-tokens 64 --layers 1" "$d/generate.jsonl"
  rm -f "$d"/*.nsys-rep
}

recipe() {  # DIR NAME RECIPE [OPTION...]: `nsys recipe` over the two ranks' reports in DIR/reps, into DIR/NAME
  local d=$1 o=$2
  shift 2
  if ! timeout 240 "$NSYS" recipe "$@" --input "$d/reps/rank0.nsys-rep" "$d/reps/rank1.nsys-rep" --csv \
      --output "$d/$o" > "$d/$o.log" 2>&1; then
    cat "$d/$o.log"; rm -rf "${d:?}/$o"  # older recipes take one --input: the folder of reports
    run timeout 240 "$NSYS" recipe "$@" --input "$d/reps" --csv --output "$d/$o" >> "$d/$o.log" 2>&1
  fi
}

capture_ddp() {
  local d=$1 r name
  run timeout 300 torchrun --standalone --nproc-per-node 2 --no-python "$NSYS" profile "${NSYS_OPTS[@]}" \
    -o "$d/rank%q{RANK}" python3 tests/fixtures/training/small_gpt.py --ddp --iters 16 --layers 2 \
    --out "$d/rankRANK.jsonl" > "$d/ddp.log" 2>&1
  for r in 0 1; do
    run "$NSYS" export --type sqlite --force-overwrite true -o "$d/rank$r.full.sqlite" "$d/rank$r.nsys-rep" > /dev/null
    run python3 tests/fixtures/trim_export.py --work-api-only "$d/rank$r.full.sqlite" "$d/rank$r.sqlite"
    rm -f "$d/rank$r.full.sqlite"
  done
  truth "$d/ddp.truth.json" "torchrun --nproc-per-node 2 small_gpt.py --ddp --iters 16 --layers 2" \
    "$d/rank0.jsonl" "$d/rank1.jsonl"
  mkdir -p "$d/reps" && cp "$d"/rank0.nsys-rep "$d"/rank1.nsys-rep "$d/reps/"
  for name in nccl_sum cuda_gpu_kern_sum; do
    recipe "$d" "recipe_$name" $name
    recipe "$d" "recipe_${name}_concurrent" $name --mode concurrent
  done
  rm -rf "$d/reps"
  run timeout 300 torchrun --standalone --nproc-per-node 2 tests/fixtures/training/small_gpt.py --ddp --iters 4 --layers 2 \
    --kineto "$d/rankRANK.pt.trace.json" --out "$d/kineto_rankRANK.jsonl" > "$d/ddp_kineto.log" 2>&1
  truth "$d/ddp_kineto.truth.json" "torchrun --nproc-per-node 2 small_gpt.py --ddp --iters 4 --layers 2 --kineto T.json" \
    "$d/kineto_rank0.jsonl" "$d/kineto_rank1.jsonl"
  gzip -9 "$d"/*.pt.trace.json
}

capture_repro() {
  local d=$1
  run timeout 300 python3 tests/fixtures/training/bert_step.py --steps 2 --layers 4 --batch 8 --seq 128 --dtype bf16 \
    --kineto "$d/bert.pt.trace.json" > "$d/bert.jsonl"
  truth "$d/bert.truth.json" "python3 bert_step.py --steps 2 --layers 4 --batch 8 --seq 128 --dtype bf16 --kineto T.json" \
    "$d/bert.jsonl"
  run timeout 300 python3 tests/fixtures/training/small_gpt.py --layers 2 --iters 3 --kineto "$d/small_gpt.pt.trace.json" \
    --out "$d/small_gpt.jsonl"
  truth "$d/small_gpt.truth.json" "python3 small_gpt.py --layers 2 --iters 3 --kineto T.json" "$d/small_gpt.jsonl"
  gzip -9 "$d"/*.pt.trace.json
  nsys_capture "$d" small_gpt_shapes --pytorch autograd-shapes-nvtx -- python3 tests/fixtures/training/small_gpt.py \
    --layers 1 --iters 3 --out "$d/small_gpt_shapes.jsonl"
  truth "$d/small_gpt_shapes.truth.json" "nsys profile --pytorch autograd-shapes-nvtx python3 small_gpt.py --layers 1 --iters 3" \
    "$d/small_gpt_shapes.jsonl"
  rm -f "$d"/*.nsys-rep
}

declare -A PID
start() {  # PART: capture_PART in a child shell (errexit on) in the background, its log in $W/PART/PART.log
  mkdir -p "$W/$1"
  echo "=== $1 starts ($(date +%T))"
  ( trap - EXIT; set -euo pipefail; GPU_FAILURES=0; "capture_$1" "$W/$1"; exit $((GPU_FAILURES > 0)) ) > "$W/$1/$1.log" 2>&1 &
  PID[$1]=$!
}
finish() {  # PART: wait for it, check it, pack $W/PART into $OUT/PART.tar.xz
  local rc=0
  wait "${PID[$1]}" || rc=$?
  echo "=== $1 ends ($(date +%T))"
  tail -n 4 "$W/$1/$1.log" || true
  check "part $1 (see $1/$1.log)" 0 "$rc"
  ls -la "$W/$1"
  tar -C "$W" --exclude='*_pqtdir' --exclude='*.full.sqlite' -cf - "$1" | xz -T0 -6 > "$OUT/$1.tar.xz"
}

versions > $W/env/versions.log 2>&1 || true
head -4 $W/env/versions.log
start compile
[ "$NGPU" -ge 2 ] || finish compile
for part in eager generate repro; do start $part; finish $part; done
[ "$NGPU" -lt 2 ] || finish compile
if [ "$NGPU" -ge 2 ]; then start ddp; finish ddp; fi
tar -C $W -cf - env | xz -T0 -6 > "$OUT/env.tar.xz"
ls -la "$OUT"
