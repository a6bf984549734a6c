#!/usr/bin/env bash
# Unpack Debian's Nsight Systems 2022.4 (non-free: nsight-systems-target) into tests/tools/nsys2022/
# so the tests can compare `nsighttk stats` with a real `nsys stats` on a machine without a GPU.
# Needs apt (Debian bookworm), and root to add the contrib/non-free source (stops with one line
# saying so otherwise).  Idempotent: nothing to do once unpacked.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="$here/nsys2022"
nsys="$dest/usr/lib/x86_64-linux-gnu/nsight-systems/target-linux-x64/nsys"
if [ -x "$nsys" ]; then echo "nsys 2022.4 already unpacked: $nsys"; exit 0; fi
src=/etc/apt/sources.list.d/nsighttk-nonfree.sources
if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then
  echo "nsys 2022.4: not unpacked and there is no apt here (it is Debian's nsight-systems-target): set NSIGHTTK_REF_NSYS to an nsys 2022.4, or run make test NO_APT=1 (its tests skip)" >&2
  exit 1
fi
policy=$(apt-cache policy nsight-systems-target 2>/dev/null || true)  # (grep -q on a pipe: SIGPIPE under pipefail)
if ! grep -q "Candidate:" <<<"$policy" || grep -q "Candidate: (none)" <<<"$policy"; then
  if [ "$(id -u)" != 0 ]; then
    echo "nsys 2022.4: adding Debian's contrib/non-free source needs root: run sudo make system-deps once, or make test NO_APT=1 (its tests skip)" >&2
    exit 1
  fi
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
