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
# Each sandbox's disk is a loop-mounted file. Outside --privileged, a container's /dev holds
# only the devices it was given: with /dev/loop-control passed in (and block major 7 allowed),
# make the loop device nodes that the kernel hands out, so `mount -o loop` finds them.
if [ -c /dev/loop-control ] && [ ! -e /dev/loop0 ]; then
  i=0
  while [ "$i" -lt "${AIRLOCK_LOOP_DEVICES:-256}" ]; do
    if ! mknod -m 0660 "/dev/loop$i" b 7 "$i" 2>/dev/null; then
      [ "$i" -gt 0 ] || echo "airlock-node: cannot make /dev/loop0 (needs CAP_MKNOD and" \
        "block major 7 allowed): sandboxes will not get their disks" >&2
      break
    fi
    i=$((i + 1))
  done
fi
exec /opt/airlock/bin/airlock "$@"
