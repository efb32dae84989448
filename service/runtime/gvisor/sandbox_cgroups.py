"""Where sandboxes' cgroups go (`AIRLOCK_CGROUP_PARENT`): below a fixed path of the host's
tree (`/airlock`, the default), or below the cgroup this process runs in (`self`), so that what
contains the node (a Kubernetes pod, a systemd unit, a podman container) contains and accounts
its sandboxes too: its memory limit caps them, its usage counts them, its eviction sees them.

`resolve` turns the setting into the sandboxes' parent, an absolute cgroup path; each sandbox
is then at `<parent>/<state dir key>/<sandbox id>` (runtime.py), so one service's leftovers
are never another's.

- cgroup v1 (and hybrid, whose controllers are v1): every controller has its own tree. The
  node's cgroup is its memory controller's line of /proc/self/cgroup, and the controllers
  that account and cap a sandbox (memory, cpu, cpuacct, pids) must name the same path. v1
  lets a cgroup hold processes and children at once: the parent is `<own>/sandboxes`, beside
  the node's own processes. `memory.use_hierarchy` must be 1 there, or a child's memory is
  not charged to its parents.
- cgroup v2: one tree, in which a cgroup that enables controllers for its children may hold
  no processes. The processes of the node's cgroup move into a leaf `<own>/node` first, then
  the controllers are enabled in `<own>` and `<own>/sandboxes` (as docker-in-docker
  entrypoints do). A process that finds itself in `…/node` beside `…/sandboxes` (a node
  started again in the same container) takes the cgroup above as its own.

/proc/self/cgroup is read in this process's cgroup namespace, while /sys/fs/cgroup may be
another namespace's view: a container with a namespace of its own reads `0::/`, and the
host's tree mounted into it (a hostPath) puts `/` at the host's root. So the path read is
taken only when that directory's `cgroup.procs` lists this process; otherwise the one cgroup
of the mounted tree that lists it is (the kernel lists pids as the reader's pid namespace
sees them, so no other cgroup lists this pid). runsc joins the sandbox's cgroup path to the
same mount, so the path found there is the one to nest under. Where no cgroup of the mount
lists the process (the mount is some other subtree), the runtime refuses to start rather
than nest sandboxes in a cgroup that is not the node's.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
from pathlib import Path, PurePosixPath

from ..errors import RuntimeUnavailable
from .cgroups import ROOT, detect

log = logging.getLogger(__name__)

DEFAULT = "/airlock"
SELF = "self"
SANDBOXES = "sandboxes"  # the node's sandboxes, under its own cgroup
NODE_LEAF = "node"  # cgroup v2: where the node's own processes move
PROC_SELF_CGROUP = Path("/proc/self/cgroup")
# v1: the controllers whose paths must agree with the memory controller's.
ACCOUNTING_V1 = ("memory", "cpu", "cpuacct", "pids")
# v2: the controllers enabled for the sandboxes, where the node's cgroup has them; the
# first ones are needed (a sandbox's caps are written there).
NEEDED_V2 = ("memory", "pids", "cpu")
WANTED_V2 = (*NEEDED_V2, "cpuset", "io")
MOVE_PASSES = 10  # processes forking while they are moved may take a few passes


def resolve(
    setting: str,
    root: Path = ROOT,
    proc_cgroup: Path = PROC_SELF_CGROUP,
    pid: int | None = None,
) -> str:
    """The sandboxes' parent cgroup for the setting; RuntimeUnavailable says why `self`
    cannot be honoured here. On cgroup v2, `self` moves this cgroup's processes into a leaf."""
    if setting != SELF:
        return setting
    pid = os.getpid() if pid is None else pid
    try:
        lines = parse(proc_cgroup.read_text())
    except OSError as exc:
        raise _refused(f"{proc_cgroup} cannot be read ({exc})") from exc
    layout = detect(root)
    try:
        if layout == "v2":
            return _nest_v2(root, _own(lines, ""), pid)
        if layout in ("v1", "hybrid"):
            return _nest_v1(root, _own_v1(lines), pid)
    except OSError as exc:  # (a read-only mount, a cgroup gone meanwhile)
        raise _refused(str(exc)) from exc
    raise _refused(f"no cgroup filesystem at {root}")


def parse(text: str) -> dict[str, str]:
    """/proc/<pid>/cgroup as {controller: path}; the v2 (unified) line's controller is ''."""
    paths: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def _own(lines: dict[str, str], controller: str) -> str:
    path = lines.get(controller)
    if path is None:
        what = f"the {controller} controller" if controller else "the cgroup v2 (0::) hierarchy"
        raise _refused(f"/proc/self/cgroup has no line for {what}")
    return path


def _own_v1(lines: dict[str, str]) -> str:
    own = _own(lines, "memory")
    differ = [f"{c} at {lines[c]}" for c in ACCOUNTING_V1 if lines.get(c, own) != own]
    if differ:
        raise _refused(
            f"this process's memory cgroup is {own} but its {', '.join(differ)}: sandboxes "
            "would be accounted in part outside it (a systemd unit needs Delegate=yes)"
        )
    return own


def _nest_v1(root: Path, own: str, pid: int) -> str:
    own = _locate(root / "memory", own, pid)
    here = root / "memory" / own.lstrip("/")
    for controller in ACCOUNTING_V1:  # the same cgroup, as this mount shows each hierarchy
        top = root / controller
        if top.is_dir() and not _lists(top / own.lstrip("/"), pid):
            raise _refused(
                f"this process's memory cgroup is {own} but its {controller} cgroup is "
                "another: sandboxes would be accounted in part outside it"
            )
    with contextlib.suppress(OSError):
        if (here / "memory.use_hierarchy").read_text().strip() == "0":
            raise _refused(
                f"memory.use_hierarchy is 0 in {here}: sandboxes' memory would not be "
                "charged to the node's cgroup"
            )
    return _join(own, SANDBOXES)


def _nest_v2(root: Path, own: str, pid: int) -> str:
    own = _locate(root, own, pid)
    here = root / own.lstrip("/")
    if here.name == NODE_LEAF and (here.parent / SANDBOXES).is_dir():
        return _join(str(PurePosixPath(own).parent), SANDBOXES)  # moved there before
    if (here / "cgroup.type").exists():  # (the real root has none, and no rule to follow)
        _move_processes(here, here / NODE_LEAF)
    _enable_controllers(here)
    sandboxes = here / SANDBOXES
    _mkdir(sandboxes)
    _enable_controllers(sandboxes)
    return _join(own, SANDBOXES)


def _locate(top: Path, own: str, pid: int) -> str:
    """This process's cgroup as the tree mounted at `top` shows it: where /proc/self/cgroup
    says when that directory lists the process, else the one directory whose cgroup.procs
    does (a cgroup namespace's `/` over the host's tree: pids are listed as this process's
    pid namespace sees them, so only its own cgroup lists its pid)."""
    if _lists(top / own.lstrip("/"), pid):
        return own
    for directory, _, files in os.walk(top):
        if "cgroup.procs" in files and _lists(Path(directory), pid):
            relative = Path(directory).relative_to(top)
            found = "/" if relative == Path(".") else f"/{relative}"
            log.info("this process's cgroup: %s in %s (%s in its own namespace)", found, top, own)
            return found
    raise _refused(
        f"/proc/self/cgroup puts this process in {own}, but no cgroup under {top} lists it: "
        "the cgroup filesystem mounted there does not hold this process's cgroup (another "
        "cgroup namespace's subtree). Mount the host's cgroup tree or the container's own, "
        "or set AIRLOCK_CGROUP_PARENT to an absolute path"
    )


def _lists(directory: Path, pid: int) -> bool:
    try:
        return str(pid) in (directory / "cgroup.procs").read_text().split()
    except OSError:
        return False


def _move_processes(here: Path, leaf: Path) -> None:
    """Every process of `here` into `leaf`, so `here` may enable controllers for children."""
    _mkdir(leaf)
    for _ in range(MOVE_PASSES):
        left = (here / "cgroup.procs").read_text().split()
        if not left:
            return
        for pid in left:
            try:
                _write(leaf / "cgroup.procs", pid)
            except OSError as exc:
                if exc.errno != errno.ESRCH:  # (one that exited meanwhile is gone anyway)
                    why = f"process {pid} cannot move from {here} to {leaf}: {exc}"
                    raise _refused(why) from exc
    raise _refused(f"processes keep appearing in {here} while they are moved to {leaf}")


def _enable_controllers(directory: Path) -> None:
    try:
        offered = set((directory / "cgroup.controllers").read_text().split())
    except OSError as exc:
        raise _refused(f"{directory}/cgroup.controllers cannot be read ({exc})") from exc
    missing = [c for c in NEEDED_V2 if c not in offered]
    if missing:
        raise _refused(
            f"{directory} is not given the {', '.join(missing)} controller(s) by its parent: "
            "sandboxes could not be capped there"
        )
    for controller in (c for c in WANTED_V2 if c in offered):
        try:
            _write(directory / "cgroup.subtree_control", f"+{controller}")
        except OSError as exc:
            if controller in NEEDED_V2:
                raise _refused(
                    f"the {controller} controller cannot be enabled in {directory} ({exc})"
                ) from exc


# The two writes the kernel gives meaning to (a process moves; a controller is enabled for the
# children), one place each.
def _write(path: Path, text: str) -> None:
    path.write_text(text)


def _mkdir(path: Path) -> None:
    path.mkdir(exist_ok=True)


def _join(own: str, name: str) -> str:
    return f"{own.rstrip('/')}/{name}"


def _refused(why: str) -> RuntimeUnavailable:
    return RuntimeUnavailable("gvisor", f"AIRLOCK_CGROUP_PARENT=self: {why}")
