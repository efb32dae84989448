#!/usr/bin/env bash
# Prepare this machine for the sandbox runtimes: host packages, runsc, then the default image.
# Idempotent: installs only what is missing; the image build is instant when up to date.
# Uses the state dir of the service (AIRLOCK_STATE_DIR, default .airlock in the repo).
#
# runsc: on Debian bookworm, whose own runsc (0.0~20221219) has only the ptrace platform, the
# bookworm-backports suite (added to apt's sources when missing, on the mirror and with the
# keyring of the host's bookworm source) gives one with systrap. When that cannot be had, the
# runsc already installed is kept (ptrace) and the script says so.
#
# --dry-run: say what would be written and installed, change nothing, build no image.
# AIRLOCK_APT_DIR: where apt's sources are read (default /etc/apt; for trying the script).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/steps.sh

dry_run=0
[[ ${1:-} == --dry-run ]] && dry_run=1
apt_dir=${AIRLOCK_APT_DIR:-/etc/apt}

# `act WHAT CMD...`: a step, or in a dry run the line that says what it would run.
act() {
  if ((dry_run)); then
    echo "would run: ${*:2}" >&2
  else
    step "$@"
  fi
}

# (No `grep -q` or `head` on runsc's output: an early exit would SIGPIPE runsc, and with
# pipefail that is a failure.)
runsc_has_systrap() { runsc flags 2>&1 | grep 'which platform to use:.*systrap' >/dev/null; }
runsc_version() {
  local out
  out=$(runsc --version 2>/dev/null) || true
  echo "${out%%$'\n'*}"
}

# Why runsc needs installing ("" when the installed one is fine).
runsc_wanted=
if ! command -v runsc >/dev/null 2>&1; then
  runsc_wanted="no runsc on PATH"
elif ! runsc_has_systrap; then
  runsc_wanted="$(runsc_version) has no systrap (ptrace only)"
fi
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}") || codename=

need=()
[[ -n $runsc_wanted && $codename != bookworm ]] && ! command -v runsc >/dev/null && need+=(runsc)
command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
[[ -e /usr/lib/x86_64-linux-gnu/libc.a ]] || need+=(libc6-dev)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v iptables-restore >/dev/null 2>&1 || need+=(iptables)  # egress policy of sandboxes
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
command -v gzip >/dev/null 2>&1 || need+=(gzip)
# each gVisor sandbox's disk: a file allocated in full, ext4, loop-mounted (gvisor/disk.py)
command -v fallocate >/dev/null 2>&1 || need+=(util-linux)
command -v mkfs.ext4 >/dev/null 2>&1 || need+=(e2fsprogs)
command -v mount >/dev/null 2>&1 || need+=(mount)
command -v patchelf >/dev/null 2>&1 || need+=(patchelf)  # links the image's statx shim
command -v readelf >/dev/null 2>&1 || need+=(binutils)

SUDO=
can_install() {
  [[ $(id -u) -eq 0 ]] && return 0
  ((dry_run)) && { SUDO=sudo; return 0; }
  command -v sudo >/dev/null && sudo -v && SUDO=sudo
}

if ((${#need[@]})); then
  if ! can_install; then
    echo "airlock: sandboxes need ${need[*]} from Debian's packages, and this user is not root" \
      "and cannot use sudo; run scripts/runtime-setup.sh as root (or have root run:" \
      "apt-get install ${need[*]})" >&2
    exit 1
  fi
  act "updating the package index (apt-get update)" $SUDO apt-get update -q
  act "installing ${need[*]} (apt-get install)" $SUDO env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${need[@]}"
fi

# runsc from bookworm-backports (systrap); what is installed stays when that fails.
install_backports_runsc() {
  local sources file=$apt_dir/sources.list.d/debian-backports.sources
  sources=$(.venv/bin/python -m service.runtime.apt backports --apt-dir "$apt_dir") || return 1
  if [[ -n $sources ]]; then
    if ((dry_run)); then
      printf 'would write %s:\n%s\n' "$file" "$sources" >&2
    else
      printf '%s\n' "$sources" | $SUDO tee "$file" >/dev/null || return 1
      echo "==> added the bookworm-backports suite to apt's sources ($file)" >&2
    fi
  fi
  act "updating the package index with bookworm-backports (apt-get update)" \
    $SUDO apt-get update -q || return 1
  act "installing runsc with systrap from bookworm-backports (apt-get install)" \
    $SUDO env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends -t bookworm-backports runsc
}

if [[ -n $runsc_wanted && $codename == bookworm ]]; then
  if ! can_install; then
    if command -v runsc >/dev/null; then
      echo "airlock: $runsc_wanted; keeping it: not root and no sudo to install the" \
        "newer one (scripts/runtime-setup.sh as root does)" >&2
    else
      echo "airlock: sandboxes need runsc, and this user is not root and cannot use sudo;" \
        "run scripts/runtime-setup.sh as root" >&2
      exit 1
    fi
  elif echo "==> $runsc_wanted: runsc with systrap comes from bookworm-backports" >&2 &&
    ! install_backports_runsc; then
    if command -v runsc >/dev/null; then
      echo "airlock: bookworm-backports could not be reached or installed from; keeping" \
        "$(runsc_version) (ptrace only): sandboxes work, syscall-heavy" \
        "work runs slower" >&2
    else
      act "installing runsc from bookworm (ptrace only; apt-get install)" \
        $SUDO env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends runsc
    fi
  fi
fi

if ((dry_run)); then
  exit 0
fi

state_dir="${AIRLOCK_STATE_DIR:-.airlock}"
step "default sandbox image in $state_dir/images (a build takes minutes, once)" \
  .venv/bin/python -m service.runtime.images --state-dir "$state_dir" build
