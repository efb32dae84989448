# What podman needs on this kind of host, as a containers.conf of the project's own (sourced by
# build-images.sh and the image tests; `. scripts/podman-env.sh` in a shell gives its podman
# the same). Written under AIRLOCK_IMAGES_WORK, exported as CONTAINERS_CONF.
#
# - podman asks for RLIMIT_NOFILE and RLIMIT_NPROC of 1048576 by default. A host without
#   CAP_SYS_RESOURCE (itself a container) cannot raise its hard limits, so crun and runc fail
#   with "setrlimit: Operation not permitted"; and an RLIMIT_NPROC above kernel.pid_max is
#   refused too. Ask for this host's hard limits, the second capped at pid_max.
# - crun refuses a hybrid cgroup layout (cgroup v1 with a cgroup2 mount that has controllers:
#   "cgroups in hybrid mode not supported"); runc accepts it.
_podman_limit() {
  local value
  value=$(ulimit -H "$1")
  [[ $value == unlimited ]] && value=1048576
  echo "$value"
}
_podman_conf() {
  local nofile nproc pid_max runtime=crun
  nofile=$(_podman_limit -n)
  nproc=$(_podman_limit -u)
  pid_max=$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo "$nproc")
  ((nproc > pid_max)) && nproc=$pid_max
  local unified
  unified=$(awk '$3 == "cgroup2" && $2 != "/sys/fs/cgroup" {print $2; exit}' /proc/mounts)
  if [[ -n $unified && -n $(cat "$unified/cgroup.controllers" 2>/dev/null) ]] ||
    ! command -v crun >/dev/null; then
    runtime=runc
  fi
  printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n\n' \
    "$nofile" "$nofile" "$nproc" "$nproc"
  printf '[engine]\nruntime = "%s"\n' "$runtime"
}
_podman_conf_dir=$(realpath -m "${AIRLOCK_IMAGES_WORK:-/var/tmp/airlock-images}")
mkdir -p "$_podman_conf_dir"
_podman_conf >"$_podman_conf_dir/containers.conf"
export CONTAINERS_CONF=$_podman_conf_dir/containers.conf
# The OCI runtime that containers.conf names, installed from Debian's packages when missing.
PODMAN_RUNTIME=$(sed -n 's/^runtime = "\(.*\)"/\1/p' "$CONTAINERS_CONF")
