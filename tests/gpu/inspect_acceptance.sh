#!/usr/bin/env bash
# GPU acceptance for `nsighttk inspect` and a two-rank nsys capture:
#   OUT=/tmp/i bash tests/gpu/inspect_acceptance.sh
# JIT on the GPU vs ahead-of-time for the same arch (registers must agree), Inductor's Triton output
# code, and the driver's own n_regs/n_spills next to cuobjdump's figures.  Exits non-zero if a command
# fails or JIT and ahead-of-time registers differ (tests/gpu/lib.sh).
source "$(dirname "$0")/lib.sh"
OUT=${OUT:-gpu-inspect}; mkdir -p "$OUT"
W=$(mktemp -d)  # everything goes here; $OUT gets the log and one tarball
export NSIGHTTK_REPORTS="$W/reports"
NSYS=${NSIGHTTK_BUNDLED_NSYS:-nsys}
exec > "$OUT/inspect-acceptance.log" 2>&1
for w in square gelu softmax matmul; do
  log "inspect $w (JIT on the GPU)"; run nsighttk inspect "$w" --size 512 --json > "$W/inspect-$w.json"
  python3 - "$W/inspect-$w.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(d["mode"], d["run_dir"])
for k in d["kernels"]:
    print(f'{k["variant"]:24s} {k["kernel"][:40]:40s} warps {k["num_warps"]} stages {k["num_stages"]} '
          f'regs {k["registers"]} (driver {k["driver_registers"]}) spills stack {k["stack_bytes"]} local '
          f'{k["local_bytes"]} (driver {k["driver_spills"]}) smem {k["shared_bytes"]} occ {k["theoretical_occupancy_pct"]}')
print("output code:", d["output_code"], "skipped:", d["skipped"])
PY
  sm=$(python3 -c 'import torch; a, b = torch.cuda.get_device_capability(); print(f"sm_{a}{b}")')
  log "inspect $w --aot --arch $sm (what a login node would compute)"
  run nsighttk inspect "$w" --size 512 --aot --arch "$sm" --json > "$W/inspect-$w-aot.json"
  run python3 - "$W/inspect-$w.json" "$W/inspect-$w-aot.json" <<'PY'
import json, sys
jit, aot = (json.load(open(p)) for p in sys.argv[1:3])
regs = lambda d: sorted((k["variant"], k["kernel"], k["num_warps"], k["num_stages"], k["registers"], k["shared_bytes"])
                        for k in d["kernels"] if k["source"] == "triton")
a, b = regs(jit), regs(aot)
print("JIT:", a); print("AOT:", b); print("JIT vs AOT:", "same" if a == b else "DIFFERENT")
sys.exit(a != b)
PY
done
run nsighttk inspect square --variants triton --markdown
if [ -n "${WITH_RANKS:-}" ]; then
log "two ranks under torchrun, nsys per rank (%q{RANK})"
mkdir -p "$W/ranks"
run python3 -m torch.distributed.run --standalone --nproc-per-node 2 --no-python \
  "$NSYS" profile -t cuda,nvtx -o "$W/ranks/rank%q{RANK}" --export sqlite --force-overwrite true \
  python3 -m nsighttk.collect.drivers.workload_main add --size 16777216 --iters 5 --variants torch_add,triton
ls -la "$W/ranks"
for f in "$W"/ranks/*.sqlite; do run "$NSYS" stats -r cuda_gpu_kern_sum -f csv -o "${f%.sqlite}.kern_sum" "$f"; done
fi
tar czf "$OUT/inspect.tgz" -C "$W" --exclude='*_cache' --exclude='*.nsys-rep' .
