#!/usr/bin/env bash
# Build the container images of the service, offline apart from the package registries:
#
#   localhost/airlock-base:<version>        Debian trixie (python3, venv) made by mmdebstrap
#   localhost/airlock-base:<version>-node   the same plus runsc (with systrap) and the
#                                           tools of sandbox disks and networks
#   localhost/airlock-api:<version>         the service in a venv, uid 10001, `serve` as api
#   localhost/airlock-node:<version>        the service, runsc and the default sandbox image
#   localhost/airlock-proxy:<version>       nginx for the chart's proxy sidecar, any uid
#   localhost/airlock-postgres:<version>    PostgreSQL for one host (compose.yaml)
#
# No registry is needed: the base layers are root filesystems from mmdebstrap imported with
# `podman import`, the Python dependencies a wheelhouse built on this host with pip, and
# container/Containerfile is built with `podman build --network=none`.
#
# Every step is skipped when its inputs have not changed (a base image carries the hash of
# its recipe as a label, the service's images the hash of their build context), so a second
# run on an unchanged tree spends its half minute on the wheel and asking PyPI for the
# wheelhouse. The dependencies are an image of their own (localhost/airlock-base:<version>-deps,
# keyed by their wheels), so a change to the service's code reinstalls only its own wheels.
#
# Environment: AIRLOCK_IMAGES_REFRESH=1 makes the base images again (Debian's security and
# point-release updates are taken only then); AIRLOCK_IMAGES_WORK (default
# /var/tmp/airlock-images) holds the build context; AIRLOCK_STATE_DIR (default .airlock) is
# where the default sandbox image is built on the host.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/steps.sh
. scripts/podman-env.sh
[[ -x .venv/bin/python ]] || scripts/python-env.sh

version=$(.venv/bin/python -c \
  'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
work=$(realpath -m "${AIRLOCK_IMAGES_WORK:-/var/tmp/airlock-images}")
state_dir=${AIRLOCK_STATE_DIR:-.airlock}
context=$work/context
# One build at a time per work dir: two share its build context and would empty each other's.
mkdir -p "$work"
exec {build_lock}>"$work/.lock"
if ! flock --nonblock "$build_lock"; then
  echo "==> another build-images.sh is using $work: waiting for it" >&2
  flock "$build_lock"
fi
# The containers' own Debian. Not bookworm: its Python (3.11.2) predates the tarfile
# extraction filters the service relies on (3.11.4); trixie has Python 3.13 and the same runsc
# (0.0~20240729, with systrap) that bookworm takes from bookworm-backports. The sandbox image
# stays bookworm (service/runtime/image_build.py).
suite=trixie

api_packages=(python3 python3-venv ca-certificates)
# runsc and what the gVisor runtime runs beside it: sandbox disks (fallocate, mkfs.ext4,
# loop mounts), sandbox networks (ip, iptables, nsenter) and the doctor's checks.
node_packages=("${api_packages[@]}" runsc e2fsprogs mount util-linux
  iptables iproute2 procps)
proxy_packages=(nginx)
postgres_packages=(postgresql)

scripts/podman-setup.sh

mirror=$(.venv/bin/python -c 'from service.runtime import apt; print(apt.host_mirror())')
# Security updates live beside the main archive on Debian's own mirrors.
security=${AIRLOCK_SECURITY_MIRROR:-${mirror%/debian}/debian-security}

mkdir -p "$work"
rm -rf "$context"
mkdir -p "$context"/wheels "$context"/wheelhouse "$context"/sandbox

# 1. The base images: Debian root filesystems from mmdebstrap, imported into podman.
base_image() {  # TAG PACKAGE... [--mmdebstrap-option...]
  local tag=$1 key rootfs arg packages=() options=()
  shift
  for arg in "$@"; do
    if [[ $arg == --* ]]; then options+=("$arg"); else packages+=("$arg"); fi
  done
  key=$(printf '%s\n' 3 "$suite" "$mirror" "$security" "$@" | sha256sum | cut -c1-16)
  if [[ -z ${AIRLOCK_IMAGES_REFRESH:-} && $(podman image inspect \
    --format '{{index .Labels "dev.airlock.base-key"}}' "$tag" 2>/dev/null) == "$key" ]]; then
    echo "==> $tag is up to date (recipe $key)" >&2
    return 0
  fi
  rootfs=$work/$(echo "$tag" | tr -c 'a-z0-9.\n-' _).tar
  local IFS=,
  step "$tag: a $suite root filesystem (mmdebstrap)" env -i \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 \
    mmdebstrap --mode=root --variant=minbase --format=tar --include="${packages[*]}" \
    '--aptopt=APT::Install-Recommends "false"' \
    '--dpkgopt=path-exclude=/usr/share/doc/*' '--dpkgopt=path-include=/usr/share/doc/*/copyright' \
    '--dpkgopt=path-exclude=/usr/share/man/*' '--dpkgopt=path-exclude=/usr/share/locale/*' \
    '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/apt/*' \
    '--customize-hook=: > "$1"/etc/resolv.conf; : > "$1"/etc/hostname; rm -f "$1"/etc/machine-id' \
    "${options[@]}" \
    "$suite" "$rootfs" \
    "deb $mirror $suite main" "deb $mirror $suite-updates main" \
    "deb $security $suite-security main"
  unset IFS
  step "$tag: podman import" podman import \
    --change "LABEL dev.airlock.base-key=$key" \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' \
    "$rootfs" "$tag"
  rm -f "$rootfs"
}
# The four are made side by side (each its own root filesystem and apt cache): most of a
# build waits for the mirror and for dpkg, so together they take about as long as the largest
# alone (~45 s here, against ~100 s one after another). Each one's progress lines are shown
# whole once all have stopped; a failure of any ends the script then.
bases=()
in_background() {  # NAME CMD...: CMD in the background, its progress lines kept for later
  "${@:2}" 2>"$work/$1.progress" &
  bases+=("$!:$1")
}
in_background base base_image "localhost/airlock-base:$version" "${api_packages[@]}"
in_background base-node base_image "localhost/airlock-base:$version-node" "${node_packages[@]}"
in_background base-proxy base_image "localhost/airlock-base:$version-proxy" "${proxy_packages[@]}"
# Without the cluster Debian's package makes (the image makes its own at first start) and
# without LLVM, the JIT's compiler (175 of the image's 408 MB): postgres runs with jit=off.
in_background base-postgres base_image "localhost/airlock-base:$version-postgres" \
  "${postgres_packages[@]}" \
  '--customize-hook=rm -rf "$1"/var/lib/postgresql/*/main "$1"/etc/postgresql/*/main' \
  '--customize-hook=rm -rf "$1"/usr/lib/postgresql/*/lib/bitcode "$1"/usr/lib/postgresql/*/lib/llvmjit*' \
  '--customize-hook=rm -f "$1"/usr/lib/x86_64-linux-gnu/libLLVM* "$1"/usr/lib/x86_64-linux-gnu/libz3.*'
failed=0
for job in "${bases[@]}"; do
  wait "${job%%:*}" || failed=1
  cat "$work/${job#*:}.progress" >&2
  rm -f "$work/${job#*:}.progress"
done
((failed == 0)) || { echo "airlock: a base image failed (above)" >&2; exit 1; }


# 2. The service's wheel (and the client's, for the mcp extra), then every dependency as a
#    wheel, so the image build installs with --no-index.
# A fixed timestamp in the wheels' zip entries: an unchanged tree gives the same bytes, so the
# image build below is a cache hit.
export SOURCE_DATE_EPOCH=315532800
build_wheels() {
  if ! scripts/build-wheels.sh "$context/wheels" >/dev/null; then
    echo "airlock: scripts/build-wheels.sh failed; building the service's wheel alone" >&2
    rm -f "$context"/wheels/*
    .venv/bin/pip wheel -q --disable-pip-version-check --no-deps -w "$context/wheels" .
  fi
}
step "the service's wheel ($version)" build_wheels
wheel_requirements() {
  local service client
  service=$(ls "$context"/wheels/airlock-"$version"-*.whl)
  client=$(ls "$context"/wheels/airlock_client-*.whl 2>/dev/null || true)
  if [[ -n $client ]]; then
    printf '%s\n' "$service[mcp]" "$client"
  else
    printf '%s\n' "$service"
  fi
}
mapfile -t requirements < <(wheel_requirements)
# Wheels for the image's Python and C library, not this host's: pip asks PyPI for those tags.
read -r py_version glibc < <(podman run --rm --network=none "localhost/airlock-base:$version" \
  python3 -c 'import platform, sys; print("%d.%d" % sys.version_info[:2], platform.libc_ver()[1])')
platforms=()
for ((minor = ${glibc#2.}; minor >= 17; minor--)); do platforms+=(--platform "manylinux_2_${minor}_x86_64"); done
platforms+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64
  --platform manylinux1_x86_64 --platform linux_x86_64)
abi=cp${py_version/./}
step "its dependencies as wheels for Python $py_version, glibc $glibc (pip download)" \
  .venv/bin/pip download -q --disable-pip-version-check --only-binary=:all: \
  --python-version "$py_version" --implementation cp --abi "$abi" --abi abi3 --abi none \
  "${platforms[@]}" --dest "$context/wheelhouse" --find-links "$context/wheels" \
  "${requirements[@]}"
# The dependencies apart from the project's own wheels: their image (below) is rebuilt only
# when one of them changes.
mkdir -p "$context/deps"
for wheel in "$context"/wheelhouse/*.whl; do
  [[ -e $context/wheels/$(basename "$wheel") ]] || mv "$wheel" "$context/deps/"
done
rm -rf "$context/wheelhouse"
if [[ -n ${requirements[1]:-} ]]; then echo "airlock[mcp]==$version" >"$context/requirement.txt"
else echo "airlock==$version" >"$context/requirement.txt"; fi

# 3. The default sandbox image, built on the host (instant when up to date), packed with its
#    unpacked root filesystem so a node's first sandbox does not wait for an unpack.
step "the default sandbox image in $state_dir/images (minutes, once)" \
  .venv/bin/python -m service.runtime.images --state-dir "$state_dir" build
pack_sandbox_image() {
  local digest hex
  digest=$(.venv/bin/python -m service.runtime.images --state-dir "$state_dir" list |
    awk '$1 == "default" {print $2}')
  hex=${digest#sha256:}
  [[ -e $state_dir/rootfs/$hex.complete ]] ||
    .venv/bin/python -c 'import sys; from pathlib import Path
from service.runtime.images import ensure_rootfs
ensure_rootfs(Path(sys.argv[1]), "default")' "$state_dir"
  # One tar with numeric owners: ADD keeps them (COPY would make everything root's, and the
  # sandbox user owns /opt/venv and /work in the image).
  tar --create --file "$context/sandbox/default.tar" --numeric-owner --sort=name \
    -C "$state_dir" "images/default" "rootfs/$hex" "rootfs/$hex.complete"
}
step "packing the default sandbox image into the build context" pack_sandbox_image
cp container/node-entrypoint.sh container/postgres-entrypoint.sh "$context/"

# 4. The images, from one Containerfile; no network inside the build. Each image carries the
#    hash of what it is built from; an image whose hash matches is not rebuilt. The API and
#    the node are built from the whole context; the proxy and PostgreSQL from their base image
#    and their stage's files alone, so a change to the service does not rebuild them.
(
  cd "$context"
  find . -type f -print0 | sort -z | xargs -0 sha256sum
  sha256sum <"$OLDPWD/container/Containerfile" | sed 's|-$|Containerfile|'
) >"$work/context.sha256"
context_key=$(sha256sum <"$work/context.sha256" | cut -c1-16)
own_key() {  # BASE FILE...: the hash of a base image and files
  { podman image inspect --format '{{.Id}}' "$1" && shift && sha256sum "$@"; } |
    sha256sum | cut -c1-16
}
declare -A keys=(
  [deps]=$(own_key "localhost/airlock-base:$version" container/Containerfile "$context"/deps/*.whl)
  [api]=$context_key
  [node]=$context_key
  [proxy]=$(own_key "localhost/airlock-base:$version-proxy" container/Containerfile)
  [postgres]=$(own_key "localhost/airlock-base:$version-postgres" container/Containerfile \
    container/postgres-entrypoint.sh)
)
# The dependencies' image is a base image of the API's and the node's (their venv starts from
# it), so it is built first and tagged as one.
declare -A tags=([deps]=localhost/airlock-base:$version-deps)
for target in deps api node proxy postgres; do
  tag=${tags[$target]:-localhost/airlock-$target:$version}
  if [[ $(podman image inspect --format '{{index .Labels "dev.airlock.context-key"}}' \
    "$tag" 2>/dev/null) == "${keys[$target]}" ]]; then
    echo "==> $tag is up to date (context ${keys[$target]})" >&2
    continue
  fi
  step "$tag (podman build --target $target)" \
    podman build --quiet --pull=never --network=none \
    --build-arg "VERSION=$version" --target "$target" \
    --build-arg "CONTEXT_KEY=${keys[$target]}" \
    --label "org.opencontainers.image.version=$version" \
    --file container/Containerfile --tag "$tag" "$context"
done
# Images of earlier builds (replaced tags, the venv stage) left untagged, and no others.
mapfile -t stale < <(podman images --quiet --filter dangling=true \
  --filter "since=localhost/airlock-base:$version")
((${#stale[@]} == 0)) || podman rmi --force "${stale[@]}" >/dev/null 2>&1 || true
podman image ls --format '{{.Repository}}:{{.Tag}}\t{{.Size}}' | grep -E 'localhost/airlock-' >&2
