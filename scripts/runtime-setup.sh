#!/usr/bin/env bash
# Prepare this machine for the sandbox runtimes: host packages, then the default image.
# Idempotent: installs only what is missing; the image build is instant when up to date.
# Uses the state dir of the service (AIRLOCK_STATE_DIR, default .airlock in the repo).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/steps.sh

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
  SUDO=
  if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null || ! sudo -v; then
      echo "airlock: sandboxes need ${need[*]} from Debian's packages, and this user is not root" \
        "and cannot use sudo; run scripts/runtime-setup.sh as root (or have root run:" \
        "apt-get install ${need[*]})" >&2
      exit 1
    fi
    SUDO=sudo
  fi
  step "updating the package index (apt-get update)" $SUDO apt-get update -q
  step "installing ${need[*]} (apt-get install)" $SUDO env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${need[@]}"
fi

state_dir="${AIRLOCK_STATE_DIR:-.airlock}"
step "default sandbox image in $state_dir/images (a build takes minutes, once)" \
  .venv/bin/python -m service.runtime.images --state-dir "$state_dir" build
