/* LD_PRELOAD shim for gVisor releases that reject statx(..., AT_NO_AUTOMOUNT).
 *
 * Debian bookworm's coreutils pass AT_NO_AUTOMOUNT to statx; older runsc answers EINVAL,
 * which breaks `ls PATH`, `ls -l` and `stat`. The flag has no meaning inside a sandbox
 * (there are no automounts), so retry without it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *buf) {
    long rc = syscall(SYS_statx, dirfd, path, flags, mask, buf);
    if (rc < 0 && errno == EINVAL && (flags & AT_NO_AUTOMOUNT)) {
        rc = syscall(SYS_statx, dirfd, path, flags & ~AT_NO_AUTOMOUNT, mask, buf);
    }
    return (int)rc;
}
