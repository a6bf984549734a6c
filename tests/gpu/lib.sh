# Shared by the GPU scripts (source it first): strict mode, checks that count failures, one exit status.
#
#   source "$(dirname "$0")/lib.sh"
#
#   check WHAT EXPECTED ACTUAL     EXPECTED and ACTUAL are the same string
#   expect_exit CODE CMD [ARG...]  run CMD (its output goes where the script's goes); its exit code is CODE
#   run CMD [ARG...]               expect_exit 0 CMD ...
#   expect_fail CMD [ARG...]       CMD fails: an exit code from 1 to 125 (126/127: not runnable or not found)
#   check_grep WHAT REGEX FILE     the extended regular expression REGEX matches a line of FILE
#   check_same WHAT FILE1 FILE2    the two files have the same bytes
#   gpu_env                        source .device/gpu-env.sh (the device machine's setup, written for a lax shell)
#   section NAME FUNCTION          run FUNCTION in a child shell with errexit on (also where the caller tests
#                                  the result), its output in $OUT/NAME.log; it must exit 0 and fail no check
#
# The helpers write to stderr (a command's stdout can go to a file: `run nsighttk ... --json > x.json`).
# A command outside these helpers that fails stops the script (set -euo pipefail).  When the script ends,
# for whatever reason, it prints "GPU checks: N run, M failed" and exits non-zero if any check failed or if
# it was stopped by a failing command.  Checks inside `( ... )` or a pipeline run in a child shell: use
# `section` (or end the child with `exit "$GPU_FAILURES"`), never `{ ...; } | tee`; to keep a log, use
# `exec > >(tee FILE) 2>&1` at the top.
set -euo pipefail
GPU_CHECKS=0
GPU_FAILURES=0

log() { echo >&2; echo "### $*" >&2; }

_gpu_fail() {
  GPU_FAILURES=$((GPU_FAILURES + 1))
  echo "CHECK FAILED: $*" >&2
}

check() {  # WHAT EXPECTED ACTUAL
  GPU_CHECKS=$((GPU_CHECKS + 1))
  if [ "$2" == "$3" ]; then
    echo "ok: $1" >&2
  else
    _gpu_fail "$1: expected '$2', got '$3'"
  fi
}

expect_exit() {  # CODE CMD [ARG...]
  local want=$1 rc=0
  shift
  log "$*"
  "$@" || rc=$?
  check "exit code of: $*" "$want" "$rc"
}

run() { expect_exit 0 "$@"; }

expect_fail() {  # CMD [ARG...]
  local rc=0
  log "$* (must fail)"
  "$@" || rc=$?
  GPU_CHECKS=$((GPU_CHECKS + 1))
  if [ "$rc" -ge 1 ] && [ "$rc" -le 125 ]; then
    echo "ok: $* failed (exit code $rc)" >&2
  else
    _gpu_fail "$*: expected a failure (exit code 1 to 125), got $rc"
  fi
}

check_grep() {  # WHAT REGEX FILE
  GPU_CHECKS=$((GPU_CHECKS + 1))
  if grep -qE -- "$2" "$3" 2>/dev/null; then
    echo "ok: $1" >&2
  else
    _gpu_fail "$1: /$2/ not found in $3"
  fi
}

check_same() {  # WHAT FILE1 FILE2
  GPU_CHECKS=$((GPU_CHECKS + 1))
  if cmp -s -- "$2" "$3"; then
    echo "ok: $1" >&2
  else
    _gpu_fail "$1: $2 and $3 differ"
    diff -- "$2" "$3" 2>&1 | head -10 >&2 || true
  fi
}

section() {  # NAME FUNCTION [ARG...]
  local name=$1 rc=0
  shift
  echo "=== $name ($(date +%T))" >&2
  # In the background the child keeps errexit (bash turns it off inside `if`, `||` and `&&` tests).
  ( trap - EXIT; set -euo pipefail; GPU_FAILURES=0; "$@"; exit $((GPU_FAILURES > 0)) ) > "$OUT/$name.log" 2>&1 &
  wait $! || rc=$?
  tail -5 "$OUT/$name.log" >&2 || true
  check "section $name (see $name.log)" 0 "$rc"
}

gpu_env() {
  set +eu
  # shellcheck disable=SC1091
  source .device/gpu-env.sh > /dev/null
  set -eu
}

_gpu_finish() {
  local rc=$?
  trap - EXIT
  echo "GPU checks: $GPU_CHECKS run, $GPU_FAILURES failed$([ "$rc" -ne 0 ] && echo ", stopped by a failing command (exit code $rc)")" >&2
  if [ "$rc" -ne 0 ]; then exit "$rc"; fi
  if [ "$GPU_FAILURES" -ne 0 ]; then exit 1; fi
  exit 0
}
trap _gpu_finish EXIT
