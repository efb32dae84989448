#!/bin/sh
# The node image's entrypoint: make the sandbox images baked into the image visible in the
# state dir (often a host directory mounted over the image's own), then run `airlock`.
#
# Each baked image becomes a symlink <state_dir>/images/<name> -> /usr/share/airlock/images/<name>;
# the unpacked root filesystem beside it (/usr/share/airlock/rootfs/) is then used in place,
# so a node's first sandbox starts without copying or unpacking anything. An image of the
# same name that the state dir holds as a directory (built or imported there) is left alone.
set -eu
state_dir=${AIRLOCK_STATE_DIR:-/var/lib/airlock}
mkdir -p "$state_dir/images"
for layout in /usr/share/airlock/images/*; do
  [ -f "$layout/index.json" ] || continue
  target="$state_dir/images/$(basename "$layout")"
  if [ -L "$target" ] || [ ! -e "$target" ]; then
    ln -sfn "$layout" "$target"
  fi
done
# Each sandbox's disk is a loop-mounted file, and the kernel hands out loop devices by number
# as they are needed. A container's /dev holds only the device nodes there were when it started
# (outside --privileged, only those it was given; privileged, a copy of the host's, often 8
# loop devices): with /dev/loop-control there (and block major 7 allowed), make the missing
# nodes up to AIRLOCK_LOOP_DEVICES, so `mount -o loop` finds whichever number it is given.
if [ -c /dev/loop-control ]; then
  i=0
  while [ "$i" -lt "${AIRLOCK_LOOP_DEVICES:-256}" ]; do
    if [ ! -e "/dev/loop$i" ] && ! mknod -m 0660 "/dev/loop$i" b 7 "$i" 2>/dev/null; then
      echo "airlock-node: cannot make /dev/loop$i (needs CAP_MKNOD and block major 7" \
        "allowed): sandboxes beyond $i loop devices will not get their disks" >&2
      break
    fi
    i=$((i + 1))
  done
fi
exec /opt/airlock/bin/airlock "$@"
