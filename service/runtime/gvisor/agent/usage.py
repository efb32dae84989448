"""What a sandbox holds now, as seen from inside it: its processes and its writable space."""

import os


def usage(paths):
    """The processes in the sandbox besides the agent (PID 1), and for each of `paths` that is
    a mount point here, [bytes used, bytes in all]."""
    mine = os.getpid()
    processes = 0
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != mine:
            processes += 1
    mounts = {}
    for path in paths:
        try:
            if not os.path.ismount(path):
                continue
            st = os.statvfs(path)
        except OSError:
            continue
        mounts[path] = [(st.f_blocks - st.f_bfree) * st.f_frsize, st.f_blocks * st.f_frsize]
    return {"processes": processes, "mounts": mounts}
