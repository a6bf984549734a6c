#!/usr/bin/env bash
# Debian packages the tests need beyond Python: Chromium (the HTML reports are opened in it headless)
# and Slurm + munge (nsighttk submit runs against a real single-node cluster: tests/tools/slurm.sh).
# Needs root and apt when something is missing (stops with one line saying so otherwise); idempotent.
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"  # slurmctld, slurmd and munged live there; a root PATH may lack it
need=()
command -v chromium >/dev/null || need+=(chromium)
for exe in slurmctld slurmd sbatch munged; do
  command -v "$exe" >/dev/null || { need+=(munge slurmctld slurmd slurm-client); break; }
done
if [ ${#need[@]} -eq 0 ]; then echo "system packages: chromium and Slurm already installed"; exit 0; fi
if ! command -v apt-get >/dev/null; then
  echo "system packages: ${need[*]} missing and there is no apt here: install Chromium and Slurm (slurmctld, slurmd, sbatch, munge) yourself, or run make test NO_APT=1 (their tests skip)" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "system packages: ${need[*]} missing; installing them needs root: run sudo make system-deps once, or make test NO_APT=1 (their tests skip)" >&2
  exit 1
fi
timeout 300 apt-get update -qq
DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "system packages: installed ${need[*]}"
