#!/usr/bin/env bash
# Install what building and running the container images needs, from Debian's packages: podman,
# buildah, mmdebstrap, the OCI runtime that scripts/podman-env.sh picks for this host, catatonit
# (the process that holds a pod's namespaces: podman builds its pause image from it, where no
# registry is reachable) and CNI's dnsname plugin (containers on a network of podman's CNI
# backend find each other by name, as compose files expect).
# Idempotent: installs only what is missing, and says nothing then.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/steps.sh
. scripts/podman-env.sh

need=()
command -v podman >/dev/null || need+=(podman)
command -v buildah >/dev/null || need+=(buildah)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
[[ -x /usr/bin/catatonit || -x /usr/libexec/podman/catatonit ]] || need+=(catatonit)
[[ -x /usr/lib/cni/dnsname || -x /usr/lib/podman/netavark ]] ||
  need+=(golang-github-containernetworking-plugin-dnsname)
command -v "$PODMAN_RUNTIME" >/dev/null || need+=("$PODMAN_RUNTIME")
if ((${#need[@]})); then
  step "updating the package index (apt-get update)" apt-get update -q
  step "installing ${need[*]} for the container images (apt-get install)" \
    env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"
fi
