#!/usr/bin/env bash
# GPU checks by section; each section's output goes to $OUT/<section>.log
# (a GPU machine may bring back only a few files).  Each section runs with errexit (any failing command fails
# it); the script exits non-zero if any section failed (tests/gpu/lib.sh).
#   offline        tests/gpu/offline_install.sh: wheel in a fresh venv, make install WHEELS=..., make demo, bench
#   orchestration  `nsighttk nsys` vs `nsys profile --stats=true` on the same program, 3 alternating runs
#   rules_ref      tests/gpu/rules_reference.sh: nsys 2025.3's analyze on the synthetic rule exports
#   names          nsys + torch.profiler captures of tests/gpu/kernel_names.py: the kernel names they record
#   ptstep         nsys --pytorch=autograd-nvtx on the GPT-2 loop: do ProfilerStep#N ranges reach the export?
#   stats_speed    tests/gpu/stats_speed.sh: the ten nsys stats reports, nsys 2025.3.1 vs nsighttk
#   readme         tests/gpu/readme_commands.sh: the README's GPU commands, output compared
# Usage (GPU machine, repository root, after ../shared/device/stage.sh and make wheelhouse PYVER=3.12
# EXTRAS=nvtx here): OUT=dir bash tests/gpu/checks.sh SECTION...
source "$(dirname "$0")/lib.sh"
OUT=${OUT:?set OUT}
cd "$(dirname "$0")/../.."
gpu_env
NSYS=${NSIGHTTK_BUNDLED_NSYS:?no nsys found}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }
now() { date +%s.%N; }

section_offline() {
  # the image's own python3 (not gpu-env's PYTHONPATH): the offline path installs what nsighttk needs
  env -u PYTHONPATH bash tests/gpu/offline_install.sh
}

section_orchestration() {
  command -v nsighttk >/dev/null || { echo "nsighttk is not installed here (run the offline section first)"; return 1; }
  local d=/tmp/orch prog=/tmp/orch/matmul_tiled; mkdir -p $d
  nvcc -O3 -lineinfo -arch=sm_90 -o $prog cuda_samples/matmul_tiled.cu || return 1
  "$NSYS" profile -o $d/warm --force-overwrite true $prog > /dev/null 2>&1  # first start of nsys: caches
  for i in 1 2 3; do
    t0=$(now); NSIGHTTK_QUIET=1 nsighttk nsys $prog --reports-dir $d/runs > $d/ours$i.txt 2>&1 || return 1; t1=$(now)
    "$NSYS" profile --stats=true -o $d/theirs$i --force-overwrite true $prog > $d/theirs$i.txt 2>&1 || return 1; t2=$(now)
    echo "run $i: nsighttk nsys $(elapsed "$t0" "$t1") s, nsys profile --stats=true $(elapsed "$t1" "$t2") s"
  done
  echo "--- nsighttk's output of the last run:"; cat $d/ours3.txt
  echo "--- nsighttk's own timings (run.json):"
  for f in $d/runs/*/run.json; do
    python3 -c "import json, sys; r = json.load(open(sys.argv[1])); print(r['wall_s'], r.get('timings_s'))" "$f"
  done
}

section_rules_ref() {
  local tmp=${TMPDIR:-/tmp}
  rm -rf "$tmp/rules_ref"
  OUT="$tmp/rules_ref" NSYS="$NSYS" bash tests/gpu/rules_reference.sh || return 1
  tar -C "$tmp" -czf "$OUT/rules_ref.tar.gz" rules_ref
}

section_names() {
  local d=/tmp/names; mkdir -p $d
  "$NSYS" profile -t cuda,nvtx -s none --cpuctxsw=none --force-overwrite true -o $d/names \
    python3 tests/gpu/kernel_names.py --trace $d/names.pt.trace.json || return 1
  "$NSYS" export --type sqlite --force-overwrite true -o $d/names.sqlite $d/names.nsys-rep > /dev/null || return 1
  python3 - "$d" "$OUT/kernel_names.tar.gz" <<'PY'
import gzip, io, json, sqlite3, sys, tarfile
d, out = sys.argv[1], sys.argv[2]
con = sqlite3.connect(f"{d}/names.sqlite")
nsys = sorted({r[0] for r in con.execute("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                                          "ON s.id = k.demangledName")})
trace = json.load(open(f"{d}/names.pt.trace.json"))
kineto = sorted({e["name"] for e in trace["traceEvents"] if e.get("cat") == "kernel"})
print(f"{len(nsys)} distinct kernel names from nsys, {len(kineto)} from torch.profiler")
with tarfile.open(out, "w:gz") as tar:
    for name, names in (("nsys_kernel_names.txt", nsys), ("kineto_kernel_names.txt", kineto)):
        data = ("\n".join(names) + "\n").encode()
        info = tarfile.TarInfo(name); info.size = len(data); tar.addfile(info, io.BytesIO(data))
PY
}

section_ptstep() {
  command -v nsighttk >/dev/null || { echo "nsighttk is not installed here (run the offline section first)"; return 1; }
  local d=/tmp/pt; mkdir -p $d
  "$NSYS" profile -t cuda,nvtx -s none --cpuctxsw=none --pytorch=autograd-nvtx --force-overwrite true -o $d/pt \
    python3 tests/fixtures/training/gpt2_train.py --steps 6 --torch-profiler $d/pt.json || return 1
  "$NSYS" export --type sqlite --force-overwrite true -o $d/pt.sqlite $d/pt.nsys-rep > /dev/null || return 1
  "$NSYS" stats -r nvtx_sum -f csv -o $d/pt $d/pt.sqlite > /dev/null 2>&1
  grep -E "ProfilerStep|step [0-9]" $d/pt_nvtx_sum.csv > $d/steps.txt  # the loop's `step N` ranges at least
  head -20 $d/steps.txt
  nsighttk analyze --json $d/pt.sqlite | python3 -c "
import json, sys
d = json.load(sys.stdin)
print(d['iterations_source'], [(i['name'], i['duration_ns'], i['warmup']) for i in d['iterations']])"
}

section_stats_speed() { OUT=/tmp/stats_speed bash tests/gpu/stats_speed.sh "$NSYS"; }  # (its CSVs stay there)

section_readme() { bash tests/gpu/readme_commands.sh; }

for s in "$@"; do
  if ! declare -F "section_$s" > /dev/null; then
    check "section $s exists" yes no; continue
  fi
  before=$GPU_FAILURES
  section "$s" "section_$s"
  echo "$s: $([ "$GPU_FAILURES" -eq "$before" ] && echo OK || echo "FAILED (see $s.log)")" | tee -a "$OUT/summary.log"
done
