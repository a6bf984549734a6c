#!/usr/bin/env bash
# The offline install path on a GPU machine without a package index.
#
# On a connected machine (here), once, in the checkout's root:
#   make wheelhouse PYVER=3.12 EXTRAS=nvtx          # -> build/wheelhouse (96 MB: llvmlite 60, numpy, pandas, ...)
# On the GPU machine, in a copy of the checkout with build/wheelhouse beside it:
#   bash tests/gpu/offline_install.sh [WHEELHOUSE]  # default build/wheelhouse; everything goes to stdout
# With the device tool (from the lead's checkout, after ../shared/device/stage.sh and make wheelhouse):
#   set -o pipefail; bash tests/gpu/offline_install.sh 2>&1 | tee $OUT/offline_install.log
#   (carry: build/wheelhouse and .device; the device tool carries 64 MiB at most, wheelhouse included.)
#
# What it checks, stopping with a non-zero exit at the first failure:
#  1. pip reaches no index here (PIP_NO_INDEX=1 for everything below, so nothing can fall back to one);
#  2. the wheel alone, as a user without the checkout installs it: a fresh virtual environment,
#     `pip install --no-index --find-links WHEELHOUSE nsighttk[nvtx]`, then from an unrelated folder
#     build --list, build add (nvcc), analyze of a shipped capture, arch H100, doctor;
#  3. the checkout: `make install WHEELS=WHEELHOUSE EXTRAS=nvtx` (python3 there is a virtual
#     environment's, which holds torch: nsighttk is installed into it), then `make demo`, which profiles
#     the add sample with nsys, then `nsighttk bench add` on the GPU and on the CPU (default sizes).
source "$(dirname "$0")/lib.sh"  # set -euo pipefail, and the exit status reported at the end
cd "$(dirname "$0")/../.."
WHEELS=$(realpath "${1:-build/wheelhouse}")
work=$(mktemp -d /tmp/nsighttk-offline.XXXX)  # run directories and scratch files
step() { echo; echo "=== $* ($(date +%T))"; }
fail() { echo "offline_install: FAILED: $*" >&2; exit 1; }
ls "$WHEELS"/nsighttk-*.whl >/dev/null 2>&1 || fail "no nsighttk wheel in $WHEELS (make wheelhouse PYVER=3.12 EXTRAS=nvtx here first)"

unset PYTHONPATH NSIGHTTK_KERNELS NSIGHTTK_SAMPLES  # nothing but the installs below may provide nsighttk
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 NSIGHTTK_REPORTS="$work/reports"
# nsys' importer needs libdw.so.1, which the image lacks (shared/device/README.md): unpack it as a user would.
if ls .device/libdw1_*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/nsighttk-libs
  for d in .device/libdw1_*.deb .device/libelf1_*.deb; do dpkg -x "$d" /tmp/nsighttk-libs; done
  export LD_LIBRARY_PATH="/tmp/nsighttk-libs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

step "machine"
python3 --version; command -v python3
python3 -c 'import sys; print("python3 is a virtual environment:", sys.prefix != sys.base_prefix, sys.prefix)'
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
ls "$WHEELS"
(cd / && python3 -c 'import sys, nsighttk; sys.exit(nsighttk.__file__ is None)' 2>/dev/null) && fail "nsighttk is already installed in python3 (this checks a first install)"

step "2. the wheel alone, into a fresh virtual environment"
venv=/tmp/nsighttk-wheel-venv; rm -rf "$venv"
if python3 -m venv "$venv" 2>/dev/null && "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  "$venv/bin/python" -m pip install -q --no-index --find-links "$WHEELS" "nsighttk[nvtx]"
else  # no ensurepip: the image's pip installs into the new environment
  rm -rf "$venv"; python3 -m venv --without-pip "$venv"
  python3 -m pip --python "$venv/bin/python" install -q --no-index --find-links "$WHEELS" "nsighttk[nvtx]"
fi
away=$(mktemp -d); capture=$(realpath tests/fixtures/h200-nsys2025.3/streams_demo.sqlite)
(
  cd "$away"
  "$venv/bin/python" -c 'import nsighttk, sys; print(nsighttk.__file__); sys.exit(not nsighttk.__file__.startswith(sys.prefix))' \
    || fail "nsighttk was not imported from the fresh environment"
  listed=$("$venv/bin/nsighttk" build --list) || fail "build --list"
  echo "$listed"
  grep -qw add <<<"$listed" || fail "build --list does not list the add sample"
  "$venv/bin/nsighttk" build add || fail "build add"
  ls build/*/add || fail "build add wrote no binary"
  "$venv/bin/nsighttk" analyze "$capture" | tail -15 || fail "analyze"
  "$venv/bin/nsighttk" arch H100 | head -15 || fail "arch H100"
  "$venv/bin/nsighttk" doctor || fail "doctor"
)

step "3. the checkout: make install WHEELS=... then make demo (no network)"
make install WHEELS="$WHEELS" EXTRAS=nvtx
(cd / && python3 -c 'import nsighttk, sqlite_utils, ijson, nvtx, torch; print("nsighttk", nsighttk.__file__, "torch", torch.__version__)')
time make demo 2>&1 | tee "$work/make-demo.txt" || fail "make demo"
grep -q "pip install" "$work/make-demo.txt" && fail "make demo ran pip again after make install"
nsighttk runs list

step "bench on the GPU and on the CPU (default sizes; the CPU ones should take seconds)"
time nsighttk bench add --sizes 2^20,2^24 --variants torch_add,operator,triton || fail "bench add on the GPU"
time nsighttk bench add --device cpu || fail "bench add --device cpu"
echo; echo "offline_install: OK"
