"""Where sandboxes' cgroups go (AIRLOCK_CGROUP_PARENT): the default `/airlock`, or `self`,
below the cgroup the node runs in, so what contains the node (a pod) contains its sandboxes.

On the real runtime (this host's cgroup v1 or hybrid controllers): a node process placed in
a cgroup made here, standing for its pod's. cgroup v2's path arithmetic and leaf move run on
a directory standing for the cgroup2 tree, with the kernel's rules for the two writes that
mean something there (a process moving, a controller enabled).
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import secrets
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from service.runtime import RuntimeUnavailable, SandboxSpec, images
from service.runtime.gvisor import GVisorRuntime, cgroups, sandbox_cgroups

from .conftest import REPO, runsc_platform

MIB = 1 << 20
HELD_MIB = 192  # what a process in the sandbox writes and holds

# A node of a pod: placed in the pod's cgroup (as its container runtime would place it), it
# opens the runtime with AIRLOCK_CGROUP_PARENT=self and answers the test line by line.
NODE = """
import asyncio, json, os, sys
from service.runtime import ExecRequest, SandboxSpec, images
from service.runtime.gvisor import GVisorRuntime

state_dir, pod, controllers, platform = sys.argv[1], sys.argv[2], sys.argv[3:-1], sys.argv[-1]
for controller in controllers:
    with open(f"/sys/fs/cgroup/{controller}/{pod}/cgroup.procs", "w") as procs:
        procs.write(str(os.getpid()))
HOG = "b = b'x' * (%d << 20); open('/tmp/held', 'w').close(); import time; time.sleep(600)"
HOLD = "python3 -c \\"$0\\" >/dev/null 2>&1 & while [ ! -e /tmp/held ]; do sleep 0.1; done"

def say(**what):
    print(json.dumps(what), flush=True)

async def main():
    rt = await GVisorRuntime.open(state_dir, platform or None, cgroup_parent="self")
    say(parent=rt.cgroup_parent)
    for line in sys.stdin:
        step = line.split()
        if step[0] == "create":
            box = await rt.create(images.DEFAULT_IMAGE, SandboxSpec(memory_mib=512, disk_mib=32))
            say(id=box.id, cgroup=rt.cgroup_path(box.id))
        elif step[0] == "hold":
            held = await rt.run(step[1], ExecRequest(argv=["sh", "-c", HOLD, HOG], timeout_s=60))
            say(outcome=held.outcome)
        elif step[0] == "pause":
            await rt.pause(step[1])
            say(paused=step[1])
        elif step[0] == "resume":
            await rt.resume(step[1])
            said = await rt.run(step[1], ExecRequest(argv=["echo", "back"], timeout_s=30))
            say(stdout=said.stdout.decode())
        elif step[0] == "destroy":
            await rt.destroy(step[1])
            say(destroyed=step[1])
        elif step[0] == "reap":
            say(reaped=await rt.reap_orphans())
            await rt.close()
            return
        elif step[0] == "crash":
            os._exit(0)  # no destroy, no clean-up: its sandboxes are left running

asyncio.run(main())
""".replace("%d", str(HELD_MIB))


def v1_controllers() -> list[str]:
    """The v1 hierarchies mounted here (systemd's named one too, where runsc makes dirs)."""
    return [c for c in cgroups.V1_HIERARCHIES if (cgroups.ROOT / c).is_dir()]


@pytest.fixture
def pods() -> Iterator[Callable[[], str]]:
    """Cgroups standing for pods', in every v1 hierarchy; removed afterwards."""
    if cgroups.detect() not in ("v1", "hybrid"):
        pytest.skip("the live nesting test needs cgroup v1 controllers (the v2 tests below)")
    made = []

    def make() -> str:
        name = f"airlock-test-pod-{secrets.token_hex(4)}"
        for controller in v1_controllers():
            (cgroups.ROOT / controller / name).mkdir()
        made.append(name)
        cgroups.Cgroup(f"/{name}/x").fill_cpuset_parents()  # (a new cpuset has no CPUs)
        return name

    yield make
    left = [d for name in made for d in cgroups.Cgroup(f"/{name}").remove()]
    assert not left, f"the pods' cgroups could not be removed: {left}"


@pytest.fixture
def pod(pods: Callable[[], str]) -> str:
    return pods()


class Node:
    """A node process in the pod: one line in, one JSON answer out."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls, state_dir: Path, pod: str) -> tuple[Node, str]:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            NODE,
            str(state_dir),
            pod,
            *v1_controllers(),
            runsc_platform() or "",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=REPO,
        )
        node = cls(process)
        return node, (await node.answer())["parent"]

    async def answer(self) -> dict:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 120)
        assert line, f"the node ended (exit {await self.process.wait()})"
        return json.loads(line)

    async def ask(self, *step: str) -> dict:
        assert self.process.stdin is not None
        self.process.stdin.write(" ".join(step).encode() + b"\n")
        await self.process.stdin.drain()
        return await self.answer()

    async def crash(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"crash\n")
        await self.process.stdin.drain()
        assert await self.process.wait() == 0


def memory_usage(path: str) -> int:
    return int((cgroups.ROOT / "memory" / path.lstrip("/") / "memory.usage_in_bytes").read_text())


def sandbox_dirs(pod: str) -> list[Path]:
    """Sandbox cgroups left anywhere below the pod's cgroup, in any hierarchy."""
    found = []
    for controller in v1_controllers():
        found += (cgroups.ROOT / controller / pod).rglob("alk-*")
    return found


def cgroups_below(path: str) -> list[Path]:
    found = []
    for controller in v1_controllers():
        found += [d for d in (cgroups.ROOT / controller / path).rglob("*") if d.is_dir()]
    return found


def processes_in(pod: str) -> list[str]:
    procs = []
    for controller in v1_controllers():
        for listing in (cgroups.ROOT / controller / pod).rglob("cgroup.procs"):
            procs += listing.read_text().split()
    return procs


async def test_sandboxes_nest_in_the_cgroup_of_their_node(state_dir: Path, pod: str) -> None:
    """A node whose pod is a cgroup: its sandboxes' cgroups are below the pod's in every
    controller, the memory their processes write is the pod's, and destroy and reaping
    leave the pod's cgroup with no sandbox cgroup and no sandbox process."""
    node, parent = await Node.start(state_dir, pod)
    assert parent.startswith(f"/{pod}/sandboxes/")
    box = await node.ask("create")
    assert box["cgroup"] == f"{parent}/{box['id']}"
    made = {c: cgroups.ROOT / c / box["cgroup"].lstrip("/") for c in v1_controllers()}
    print("the sandbox's cgroups:", *made.values(), sep="\n  ")
    missing = [c for c, directory in made.items() if not directory.is_dir()]
    assert not missing, f"controllers without the sandbox's cgroup: {missing}"
    for controller in ("memory", "cpu", "pids"):  # the sandbox kernel and its gofer run there
        assert (made[controller] / "cgroup.procs").read_text().split(), controller

    before = memory_usage(f"/{pod}"), memory_usage(box["cgroup"])
    assert (await node.ask("hold", box["id"]))["outcome"] == "exited"
    during = memory_usage(f"/{pod}"), memory_usage(box["cgroup"])
    print(f"pod {pod}: before {before[0] / MIB:.0f} MiB, holding {during[0] / MIB:.0f} MiB;")
    print(f"its sandbox: before {before[1] / MIB:.0f} MiB, holding {during[1] / MIB:.0f} MiB")
    assert during[1] - before[1] >= (HELD_MIB - 16) * MIB  # the sandbox's own cgroup
    assert during[0] - before[0] >= (HELD_MIB - 16) * MIB  # and the pod's, above it
    assert during[0] >= during[1]

    await node.ask("destroy", box["id"])
    assert sandbox_dirs(pod) == []
    assert cgroups_below(f"{pod}/sandboxes") == []
    after = memory_usage(f"/{pod}")
    print(f"pod after destroy: {after / MIB:.0f} MiB")
    assert during[0] - after >= (HELD_MIB - 16) * MIB  # the memory went with the sandbox

    orphan = (await node.ask("create"))["id"]
    await node.crash()  # its sandbox runs on in the pod, its owner gone
    assert any(p.name == orphan for p in sandbox_dirs(pod))
    assert processes_in(pod)
    reaper, again = await Node.start(state_dir, pod)
    assert again == parent  # the same pod and state dir: the same parent
    assert orphan in (await reaper.ask("reap"))["reaped"]
    assert await reaper.process.wait() == 0
    assert sandbox_dirs(pod) == []
    assert cgroups_below(f"{pod}/sandboxes") == []  # the state dir's own cgroup went too
    assert processes_in(pod) == []


async def test_a_paused_sandbox_wakes_below_the_node_that_resumes_it(
    state_dir: Path, pods: Callable[[], str]
) -> None:
    """A node started again in a new pod has a cgroup of its own: a sandbox paused by the
    node before comes back below the new one, not at the old pod's path."""
    first, second = pods(), pods()
    node, _ = await Node.start(state_dir, first)
    box_id = (await node.ask("create"))["id"]
    await node.ask("pause", box_id)
    await node.crash()
    assert sandbox_dirs(first) == []  # paused: no cgroup at all
    woken, parent = await Node.start(state_dir, second)
    assert parent.startswith(f"/{second}/sandboxes/")
    try:
        assert (await woken.ask("resume", box_id))["stdout"] == "back\n"
        assert [p.name for p in sandbox_dirs(second)] == [box_id] * len(v1_controllers())
        assert sandbox_dirs(first) == []
        record = json.loads(
            (state_dir / "gvisor" / "sandboxes" / box_id / "sandbox.json").read_text()
        )
        assert record["cgroup"] == f"{parent}/{box_id}"
    finally:
        await woken.ask("destroy", box_id)
        await woken.ask("reap")
        assert await woken.process.wait() == 0
    assert sandbox_dirs(second) == [] and processes_in(second) == []


def own_cgroup() -> str:
    lines = sandbox_cgroups.parse(Path("/proc/self/cgroup").read_text())
    return lines.get("" if cgroups.detect() == "v2" else "memory", "/")


async def test_sandboxes_go_below_airlock_by_default(gvisor: GVisorRuntime) -> None:
    box = await gvisor.create(images.DEFAULT_IMAGE, SandboxSpec(memory_mib=128, disk_mib=32))
    try:
        path = gvisor.cgroup_path(box.id)
        assert path.startswith("/airlock/") and path.endswith(f"/{box.id}")
        assert cgroups.Cgroup(path).exists()
        assert not path.startswith(f"{own_cgroup().rstrip('/')}/sandboxes/")
    finally:
        await gvisor.destroy(box.id)
    assert not cgroups.Cgroup(path).exists()


async def test_self_is_refused_where_the_controllers_disagree(
    state_dir: Path, tmp_path: Path
) -> None:
    """A process whose memory cgroup is not its cpu and pids cgroup (a systemd unit without
    Delegate=yes) would leave its sandboxes' CPU outside what contains it."""
    proc = tmp_path / "cgroup"
    proc.write_text("4:memory:/system.slice/airlock.service\n2:cpu:/\n1:pids:/\n0::/\n")
    root = tmp_path / "fs"
    (root / "memory" / "system.slice" / "airlock.service").mkdir(parents=True)
    with pytest.raises(RuntimeUnavailable, match="cpu at /, pids at /"):
        sandbox_cgroups.resolve("self", root, proc, pid=os.getpid())


def fake_cgroup1(tmp_path: Path, own: str, pid: int) -> tuple[Path, Path]:
    """A directory standing for the v1 hierarchies, with `pid` in `own` in each; and a
    /proc/self/cgroup naming `own`."""
    root = tmp_path / "fs"
    for controller in ("memory", "cpu", "cpuacct", "pids"):
        directory = root / controller / own.lstrip("/")
        directory.mkdir(parents=True)
        (directory / "cgroup.procs").write_text(f"{pid}\n")
    (root / "memory" / own.lstrip("/") / "memory.use_hierarchy").write_text("1\n")
    proc = tmp_path / "cgroup"
    lines = ["4:memory", "3:cpu", "2:cpuacct", "1:pids"]
    proc.write_text("".join(f"{line}:{own}\n" for line in lines))
    return root, proc


def test_v1_sandboxes_go_below_the_memory_controllers_cgroup(tmp_path: Path) -> None:
    own = "/kubepods/burstable/pod1/ctr1"
    root, proc = fake_cgroup1(tmp_path, own, pid=41)
    assert sandbox_cgroups.resolve("self", root, proc, pid=41) == f"{own}/sandboxes"
    (root / "memory" / own.lstrip("/") / "memory.use_hierarchy").write_text("0\n")
    with pytest.raises(RuntimeUnavailable, match=r"memory\.use_hierarchy is 0"):
        sandbox_cgroups.resolve("self", root, proc, pid=41)


def test_v1_a_cgroup_namespace_over_the_hosts_tree(tmp_path: Path) -> None:
    """`/` in every line (a cgroup namespace of its own) while the host's tree is mounted:
    the cgroup that lists the process, in each accounting hierarchy."""
    own = "/kubepods/burstable/pod1/ctr1"
    root, proc = fake_cgroup1(tmp_path, own, pid=41)
    proc.write_text("4:memory:/\n3:cpu:/\n2:cpuacct:/\n1:pids:/\n")
    assert sandbox_cgroups.resolve("self", root, proc, pid=41) == f"{own}/sandboxes"
    (root / "pids" / own.lstrip("/") / "cgroup.procs").write_text("")
    with pytest.raises(RuntimeUnavailable, match="its pids cgroup is another"):
        sandbox_cgroups.resolve("self", root, proc, pid=41)


class FakeCgroup2:
    """A directory standing for a cgroup2 tree, with the kernel's rules for what resolve()
    writes: a new cgroup is offered its parent's enabled controllers; a process moves out
    of every other cgroup; a controller can be enabled only where no process is (but the
    root) and where the parent offers it."""

    def __init__(self, root: Path, namespace_root: bool = False) -> None:
        self.root = root
        self.real_root = not namespace_root
        root.mkdir()
        (root / "cgroup.procs").write_text("")
        if namespace_root:  # (the real root has no cgroup.type)
            (root / "cgroup.type").write_text("domain\n")
        (root / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids rdma\n")
        (root / "cgroup.subtree_control").write_text("cpuset cpu io memory pids\n")

    def make(self, path: str, procs: list[int]) -> Path:
        directory = self.root
        for part in path.strip("/").split("/"):
            self.enable_all(directory)
            directory = directory / part
            self.mkdir(directory)
        (directory / "cgroup.procs").write_text("".join(f"{p}\n" for p in procs))
        return directory

    def enable_all(self, directory: Path) -> None:
        offered = (directory / "cgroup.controllers").read_text()
        (directory / "cgroup.subtree_control").write_text(offered)
        for child in directory.iterdir():
            if child.is_dir():
                (child / "cgroup.controllers").write_text(offered)

    def mkdir(self, path: Path) -> None:
        if path.is_dir():
            return
        path.mkdir()
        (path / "cgroup.type").write_text("domain\n")
        (path / "cgroup.procs").write_text("")
        (path / "cgroup.subtree_control").write_text("")
        (path / "cgroup.controllers").write_text(
            (path.parent / "cgroup.subtree_control").read_text()
        )

    def write(self, path: Path, text: str) -> None:
        if path.name == "cgroup.procs":
            for listing in self.root.rglob("cgroup.procs"):
                kept = [p for p in listing.read_text().split() if p != text]
                listing.write_text("".join(f"{p}\n" for p in kept))
            path.write_text(path.read_text() + f"{text}\n")
        elif path.name == "cgroup.subtree_control":
            controller = text.removeprefix("+")
            directory = path.parent
            busy = (directory / "cgroup.procs").read_text().split()
            if busy and not (directory == self.root and self.real_root):
                raise OSError(errno.EBUSY, "Device or resource busy")
            if controller not in (directory / "cgroup.controllers").read_text().split():
                raise OSError(errno.ENOENT, "No such file or directory")
            enabled = set(path.read_text().split()) | {controller}
            path.write_text(" ".join(sorted(enabled)) + "\n")
            for child in directory.iterdir():
                if child.is_dir():
                    (child / "cgroup.controllers").write_text(path.read_text())
        else:
            path.write_text(text)

    def resolve(self, own: str, pid: int) -> str:
        proc = self.root.parent / "proc-self-cgroup"
        proc.write_text(f"0::{own}\n")
        return sandbox_cgroups.resolve("self", self.root, proc, pid=pid)


def fake_cgroup2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, namespace_root: bool = False
) -> FakeCgroup2:
    tree = FakeCgroup2(tmp_path / "cgroup", namespace_root)
    monkeypatch.setattr(sandbox_cgroups, "_write", tree.write)
    monkeypatch.setattr(sandbox_cgroups, "_mkdir", tree.mkdir)
    return tree


@pytest.fixture
def cgroup2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCgroup2:
    return fake_cgroup2(tmp_path, monkeypatch)


POD_V2 = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-1.scope"


def test_v2_the_node_moves_to_a_leaf_and_sandboxes_nest_beside_it(cgroup2: FakeCgroup2) -> None:
    """As the container's cgroup (`0::<path>` in the host's cgroup namespace): its processes
    (the node and, say, its shell) move to `<own>/node`; `<own>` then enables the
    controllers for `<own>/sandboxes`, which enables them for the per-state-dir cgroups."""
    container = cgroup2.make(POD_V2, [41, 42])
    parent = cgroup2.resolve(POD_V2, pid=41)
    assert parent == f"{POD_V2}/sandboxes"
    assert (container / "cgroup.procs").read_text().split() == []
    assert (container / "node" / "cgroup.procs").read_text().split() == ["41", "42"]
    for directory in (container, container / "sandboxes"):
        enabled = set((directory / "cgroup.subtree_control").read_text().split())
        assert {"cpu", "memory", "pids", "cpuset", "io"} <= enabled, directory
    # Started again in the same container (a restarted node process): the same parent, no
    # second leaf inside the first.
    assert cgroup2.resolve(f"{POD_V2}/node", pid=41) == parent
    assert not (container / "node" / "node").exists()


def test_v2_a_private_namespace_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A container with a cgroup namespace and its own cgroup2 mount reads `0::/`, and
    /sys/fs/cgroup is its own cgroup: the namespace's root is not the real root (it has a
    cgroup.type), so its processes move to a leaf there too."""
    tree = fake_cgroup2(tmp_path, monkeypatch, namespace_root=True)
    (tree.root / "cgroup.procs").write_text("1\n7\n")
    assert tree.resolve("/", pid=7) == "/sandboxes"
    assert (tree.root / "cgroup.procs").read_text().split() == []
    assert (tree.root / "node" / "cgroup.procs").read_text().split() == ["1", "7"]
    assert "memory" in (tree.root / "sandboxes" / "cgroup.subtree_control").read_text()


def test_v2_the_hosts_tree_seen_from_a_private_namespace(cgroup2: FakeCgroup2) -> None:
    """`0::/` with the host's tree mounted (a hostPath): the root's cgroup.procs does not
    list this process, so its cgroup is the one of the mount that does, and nothing is
    moved at the host's root."""
    container = cgroup2.make(POD_V2, [41])
    cgroup2.make("/kubepods.slice/other.scope", [0, 0])  # (others' pids, seen from here)
    (cgroup2.root / "cgroup.procs").write_text("0\n0\n")
    assert cgroup2.resolve("/", pid=41) == f"{POD_V2}/sandboxes"
    assert (container / "node" / "cgroup.procs").read_text().split() == ["41"]
    assert not (cgroup2.root / "node").exists()
    assert not (cgroup2.root / "sandboxes").exists()


def test_v2_a_mount_without_the_nodes_cgroup_is_refused(cgroup2: FakeCgroup2) -> None:
    """A cgroup filesystem in which no cgroup lists this process (some other subtree): the
    start is refused, naming the fixes, and nothing is moved or made."""
    cgroup2.make("/kubepods.slice/other.scope", [5])
    with pytest.raises(RuntimeUnavailable, match="no cgroup under") as refused:
        cgroup2.resolve("/", pid=41)
    assert "AIRLOCK_CGROUP_PARENT to an absolute path" in refused.value.diagnosis
    assert not (cgroup2.root / "node").exists()
    assert not (cgroup2.root / "sandboxes").exists()


def test_v2_a_node_not_given_the_memory_controller_is_refused(cgroup2: FakeCgroup2) -> None:
    container = cgroup2.make("/system.slice/airlock.service", [9])
    (container / "cgroup.controllers").write_text("cpu pids\n")
    with pytest.raises(RuntimeUnavailable, match="memory controller"):
        cgroup2.resolve("/system.slice/airlock.service", pid=9)


def test_an_absolute_parent_is_kept_as_given() -> None:
    assert sandbox_cgroups.resolve("/airlock") == "/airlock"
    assert sandbox_cgroups.resolve("/system.slice/airlock") == "/system.slice/airlock"
