#!/usr/bin/env bash
# Unpack Debian's Nsight Systems 2022.4 (non-free: nsight-systems-target) into tests/tools/nsys2022/
# so the tests can compare `nsighttk stats` with a real `nsys stats` on a machine without a GPU.
# Needs apt (Debian bookworm) and root to add the contrib/non-free source.  Idempotent.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="$here/nsys2022"
nsys="$dest/usr/lib/x86_64-linux-gnu/nsight-systems/target-linux-x64/nsys"
if [ -x "$nsys" ]; then echo "nsys 2022.4 already unpacked: $nsys"; exit 0; fi
src=/etc/apt/sources.list.d/nsighttk-nonfree.sources
if ! apt-cache policy nsight-systems-target 2>/dev/null | grep -q Candidate: ||
   apt-cache policy nsight-systems-target | grep -q "Candidate: (none)"; then
  if [ ! -f "$src" ]; then
    cat > "$src" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  apt-get update -qq
fi
tmp=$(mktemp -d)
(cd "$tmp" && apt-get download -qq nsight-systems-target)
mkdir -p "$dest"
dpkg -x "$tmp"/nsight-systems-target_*.deb "$dest"
rm -rf "$tmp"
"$nsys" --version
