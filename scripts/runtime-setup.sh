#!/usr/bin/env bash
# Prepare this machine for the sandbox runtimes: host packages, then the default image.
# Idempotent: installs only what is missing; the image build is instant when up to date.
# Uses the state dir of the service (AIRLOCK_STATE_DIR, default .airlock in the repo).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v runsc >/dev/null 2>&1 || need+=(runsc)
command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
[[ -e /usr/lib/x86_64-linux-gnu/libc.a ]] || need+=(libc6-dev)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v iptables-restore >/dev/null 2>&1 || need+=(iptables)  # egress policy of sandboxes
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
command -v gzip >/dev/null 2>&1 || need+=(gzip)
command -v patchelf >/dev/null 2>&1 || need+=(patchelf)  # links the image's statx shim
command -v readelf >/dev/null 2>&1 || need+=(binutils)

if ((${#need[@]})); then
  echo "==> installing ${need[*]}" >&2
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need[@]}" >&2
fi

echo "==> default sandbox image" >&2
state_dir="${AIRLOCK_STATE_DIR:-.airlock}"
.venv/bin/python -m service.runtime.images --state-dir "$state_dir" build
