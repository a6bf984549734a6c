#!/usr/bin/env bash
# Debian packages the tests need beyond Python: Chromium (the HTML reports are opened in it headless)
# and Slurm + munge (nsighttk submit runs against a real single-node cluster: tests/tools/slurm.sh).
# Needs root and apt; idempotent; skips (with a line saying so) where there is no apt.
set -euo pipefail
need=()
command -v chromium >/dev/null || need+=(chromium)
for exe in slurmctld slurmd sbatch munged; do
  command -v "$exe" >/dev/null || { need+=(munge slurmctld slurmd slurm-client); break; }
done
if [ ${#need[@]} -eq 0 ]; then echo "system packages: chromium and Slurm already installed"; exit 0; fi
if ! command -v apt-get >/dev/null || [ "$(id -u)" != 0 ]; then
  echo "system packages: cannot install ${need[*]} here (needs root and apt); their tests will skip" >&2
  exit 0
fi
timeout 300 apt-get update -qq
DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "system packages: installed ${need[*]}"
