"""Snapshots of sandboxes with a network on gVisor (netstack, where the runtime's probe found it
works; tests/network/test_stack.py covers the host-stack fallback): a snapshot is taken
while the sandbox keeps running, a sandbox started from it has a namespace, /30 and policy of
its own, a checkpoint restored in place keeps the sandbox's policy and its processes' memory,
and the TCP connections open at the checkpoint are reset. Files still move between sandboxes
through `copy_files`."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from service.runtime import ExecRequest, SandboxInfo, SandboxSpec, images
from service.runtime.errors import SandboxRuntimeError
from service.runtime.gvisor import GVisorRuntime, netstack
from tests.network.hosts import Peer, left_behind, plain_host
from tests.runtime.conftest import gvisor, state_dir
from tests.runtime.test_network import BLOCKED, PROBE

__all__ = ["gvisor", "state_dir"]  # fixtures, used by name

SPEC = SandboxSpec(memory_mib=256, disk_mib=128, pids=64)
PEERS = ["10.250.0.0/16"]
# Counts in memory; the count goes to a file only to be read.
COUNTER = (
    "import os, time\n"
    "n = 0\n"
    "while True:\n"
    "    n += 1\n"
    "    open('/tmp/count.new', 'w').write(f'{os.getpid()} {n}')\n"
    "    os.replace('/tmp/count.new', '/tmp/count')\n"
    "    time.sleep(0.05)\n"
)
# Holds a TCP connection open and notes how it ended.
HOLDER = (
    "import socket, sys\n"
    "s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)\n"
    "open('/tmp/conn', 'w').write('connected\\n')\n"
    "s.settimeout(None)\n"
    "try:\n"
    "    end = 'eof' if not s.recv(1) else 'data'\n"
    "except OSError as exc:\n"
    "    end = type(exc).__name__\n"
    "open('/tmp/conn', 'a').write(end + '\\n')\n"
)


@pytest.fixture(scope="module")
def peers() -> Iterator[tuple[Peer, Peer]]:
    """Two test hosts: `a` serves 8080 and 8081, `b` serves 8080."""
    base = 4 + secrets.randbelow(120) * 2
    with plain_host(base, (8080, 8081)) as a, plain_host(base + 1, (8080,)) as b:
        yield a, b


@pytest.fixture
async def netstack_runtime(gvisor: GVisorRuntime) -> GVisorRuntime:
    if gvisor.platform_choice.net_stack != netstack.NETSTACK:
        pytest.fail(f"netstack must work on test machines: {gvisor.platform_choice.network}")
    return gvisor


@pytest.fixture(params=["leave-running", "restore-in-place"])
async def snapshotting(
    request: pytest.FixtureRequest, netstack_runtime: GVisorRuntime
) -> AsyncIterator[GVisorRuntime]:
    """The runtime, snapshotting with `checkpoint --leave-running` (this runsc) or with a
    checkpoint that stops the sandbox and a restore in place (runsc builds whose
    `--leave-running` does not return; a runsc of unknown version is taken to be one)."""
    if request.param == "leave-running":
        yield netstack_runtime
        return
    version = netstack_runtime.runsc_version
    netstack_runtime.runsc_version = "unknown"
    assert not netstack_runtime.checkpoint_leaves_running
    yield netstack_runtime
    netstack_runtime.runsc_version = version


@pytest.fixture
async def made(netstack_runtime: GVisorRuntime) -> AsyncIterator[list[str]]:
    """Ids of sandboxes the test made; destroyed after it, and nothing of their networks left."""
    ids: list[str] = []
    yield ids
    for sandbox_id in ids:
        await netstack_runtime.destroy(sandbox_id)
    assert left_behind(ids) == []


async def networked(runtime: GVisorRuntime, made: list[str], *allow: str) -> SandboxInfo:
    spec = SandboxSpec(
        memory_mib=256,
        disk_mib=128,
        pids=64,
        network="allowlist",
        network_allow=list(allow),
        network_private=PEERS,
    )
    info = await runtime.create(images.DEFAULT_IMAGE, spec)
    made.append(info.id)
    assert await runtime.agent_ready(info.id)
    return info


async def sh(runtime: GVisorRuntime, sandbox_id: str, script: str) -> tuple[int | None, str]:
    result = await runtime.run(sandbox_id, ExecRequest(argv=["sh", "-c", script], timeout_s=60))
    return result.exit_code, (result.stdout + result.stderr).decode()


async def probe(runtime: GVisorRuntime, sandbox_id: str, *targets: str) -> list[str]:
    code, out = await sh(runtime, sandbox_id, f"python3 -c '{PROBE}' '{json.dumps(targets)}'")
    assert code == 0, out
    return json.loads(out)


async def own_address(runtime: GVisorRuntime, sandbox_id: str, peer: Peer) -> str:
    """The source address the sandbox's packets to `peer` carry."""
    script = (
        "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
        f"s.connect(('{peer.address}', 9)); print(s.getsockname()[0])"
    )
    code, out = await sh(runtime, sandbox_id, f'python3 -c "{script}"')
    assert code == 0, out
    return out.strip()


async def test_a_clone_of_a_networked_sandbox_has_a_network_and_policy_of_its_own(
    snapshotting: GVisorRuntime, peers: tuple[Peer, Peer], made: list[str]
) -> None:
    runtime, (a, b) = snapshotting, peers
    source = await networked(runtime, made, f"{a.address}:8080")
    snapshot = await runtime.snapshot(source.id)
    try:
        clone = await runtime.create_from_snapshot(snapshot.id)
        made.append(clone.id)
        assert clone.spec.network_allow == [f"{a.address}:8080"]  # the source's policy
        address = await own_address(runtime, clone.id, a)
        clone_net = runtime.store.load(clone.id).meta["net"]
        assert address == clone_net["sandbox_ip"] != await own_address(runtime, source.id, a)
        before = await runtime.network_counters(clone.id)
        assert await probe(runtime, clone.id, f"{a.address}:8080", f"{b.address}:8080") == [
            "open",
            "refused",
        ]
        after = await runtime.network_counters(clone.id)
        assert before is not None and after is not None
        assert after["allowed_packets"] > before["allowed_packets"]
        assert after["blocked_packets"] > before["blocked_packets"]
        # The clone's policy is its own: changing it leaves the source's as it was.
        await runtime.update_network(clone.id, "allowlist", [f"{b.address}:8080"])
        targets = (f"{a.address}:8080", f"{b.address}:8080")
        clone_sees, source_sees = await asyncio.gather(
            probe(runtime, clone.id, *targets), probe(runtime, source.id, *targets)
        )
        assert clone_sees[0] in BLOCKED and clone_sees[1] == "open", clone_sees
        assert source_sees[0] == "open" and source_sees[1] in BLOCKED, source_sees
        code, out = await sh(runtime, clone.id, "hostname")
        assert (code, out.strip()) == (0, "sbx-" + clone.id[-12:])
    finally:
        await runtime.delete_snapshot(snapshot.id)


async def test_a_clone_is_given_the_grants_of_now_not_those_of_its_snapshot(
    netstack_runtime: GVisorRuntime, peers: tuple[Peer, Peer], made: list[str]
) -> None:
    """The snapshot holds the private ranges granted when it was taken; a clone started with
    the ranges granted now (none: the operator took them away since) does not reach what only
    the old grant allowed. Here through an allowed name that resolves to a granted private
    address and a public one: the public one is kept, the private one is not."""
    runtime, (a, _) = netstack_runtime, peers
    networks = runtime.networks
    original = networks.resolver
    names = {"mixed.airlock.test": [a.address, "1.1.1.1"]}  # no packet goes to the public one
    networks.resolver = lambda name: names.get(name, [])
    try:
        source = await networked(runtime, made, "mixed.airlock.test:8080")
        assert await probe(runtime, source.id, f"{a.address}:8080") == ["open"]
        snapshot = await runtime.snapshot(source.id)
        try:
            granted = await runtime.create_from_snapshot(snapshot.id)
            made.append(granted.id)
            revoked = await runtime.create_from_snapshot(snapshot.id, [])
            made.append(revoked.id)
        finally:
            await runtime.delete_snapshot(snapshot.id)
        assert revoked.spec.network_private == [] and granted.spec.network_private == PEERS
        assert await probe(runtime, granted.id, f"{a.address}:8080") == ["open"]
        outcome = await probe(runtime, revoked.id, f"{a.address}:8080")
        assert set(outcome) <= BLOCKED, outcome
    finally:
        networks.resolver = original


async def test_a_checkpoint_restored_in_place_keeps_policy_and_memory(
    netstack_runtime: GVisorRuntime, peers: tuple[Peer, Peer], made: list[str], tmp_path: Path
) -> None:
    runtime, (a, b) = netstack_runtime, peers
    info = await networked(runtime, made, f"{a.address}:8080")
    code, out = await sh(runtime, info.id, f'python3 -c "{COUNTER}" </dev/null >/dev/null 2>&1 &')
    assert code == 0, out
    await asyncio.sleep(1.0)
    pid, counted = await read_count(runtime, info.id)
    sandbox = runtime.store.usable(info.id)
    image = tmp_path / "image"
    image.mkdir()
    async with sandbox.lock:  # as a pause does: new work waits until the sandbox runs again
        sandbox.ready.clear()
        try:
            await runtime.snapshots.check_quiet(sandbox)
            code, out = await runtime.lifecycle.checkpoint_to_dir(sandbox, image)
            assert code == 0, out
            assert await runtime.execs.state(info.id) is None  # stopped: its container is gone
            code, out = await runtime.lifecycle.restore_in_place(sandbox, image)
            assert code == 0, out
        finally:
            sandbox.ready.set()
    assert (await runtime.get(info.id)).state == "running"
    await asyncio.sleep(0.3)
    # The same process, counting on from its memory (a fresh one would be far below).
    now_pid, now = await read_count(runtime, info.id)
    assert now_pid == pid and now > counted > 10, (pid, counted, now_pid, now)
    assert await own_address(runtime, info.id, a) == sandbox.meta["net"]["sandbox_ip"]
    outcomes = await probe(runtime, info.id, f"{a.address}:8080", f"{b.address}:8080")
    assert outcomes[0] == "open" and outcomes[1] in BLOCKED, outcomes


async def read_count(runtime: GVisorRuntime, sandbox_id: str) -> tuple[int, int]:
    code, out = await sh(runtime, sandbox_id, "cat /tmp/count")
    assert code == 0, out
    pid, count = out.split()
    return int(pid), int(count)


async def test_open_connections_are_reset_by_a_snapshot(
    snapshotting: GVisorRuntime, peers: tuple[Peer, Peer], made: list[str]
) -> None:
    runtime, (a, _) = snapshotting, peers
    info = await networked(runtime, made, f"{a.address}:8081", f"{a.address}:8080")
    script = f'python3 -c "{HOLDER}" {a.address} 8081 </dev/null >/dev/null 2>&1 &'
    code, out = await sh(runtime, info.id, script + " sleep 1; cat /tmp/conn")
    assert (code, out) == (0, "connected\n")
    snapshot = await runtime.snapshot(info.id)
    try:
        clone = await runtime.create_from_snapshot(snapshot.id)
        made.append(clone.id)
        for sandbox_id in (info.id, clone.id):
            # The connection was aborted at the checkpoint, in the source as in the clone
            # (where the holder came back blocked on it)...
            code, out = await sh(runtime, sandbox_id, "sleep 1; cat /tmp/conn")
            assert (code, out) == (0, "connected\nConnectionAbortedError\n")
            # ...and new connections work at once.
            assert await probe(runtime, sandbox_id, f"{a.address}:8080") == ["open"]
    finally:
        await runtime.delete_snapshot(snapshot.id)


async def test_files_move_from_a_networked_sandbox_to_one_without(
    netstack_runtime: GVisorRuntime, peers: tuple[Peer, Peer], made: list[str]
) -> None:
    runtime, (a, _) = netstack_runtime, peers
    source = await networked(runtime, made, a.address)
    target = await runtime.create(images.DEFAULT_IMAGE, SPEC)
    made.append(target.id)
    code, out = await sh(
        runtime,
        source.id,
        "set -e; cd /work; mkdir -p a/b; echo one > a/b/f; chmod 700 a; ln -s a/b/f link;"
        " printf '#!/bin/sh\\necho ran\\n' > run.sh; chmod 755 run.sh;"
        " echo two > /tmp/t; echo three > ~/.h",
    )
    assert code == 0, out
    assert await runtime.copy_files(source.id, target.id) > 0
    code, out = await sh(
        runtime,
        target.id,
        "cd /work && cat link /tmp/t ~/.h && ./run.sh && find a -maxdepth 0 -printf '%m\\n'"
        " && find /tmp -maxdepth 0 -printf '%m %u\\n' && cat /proc/net/dev | tail -n +3",
    )
    assert code == 0, out
    lines = out.splitlines()
    assert lines[:6] == ["one", "two", "three", "ran", "700", "1777 root"]
    assert [line.split(":")[0].strip() for line in lines[6:]] == ["lo"]


async def test_a_failed_copy_says_why(gvisor: GVisorRuntime) -> None:
    source = await gvisor.create(images.DEFAULT_IMAGE, SPEC)
    target = await gvisor.create(images.DEFAULT_IMAGE, SPEC)
    try:
        code, out = await sh(gvisor, source.id, "echo secret > /work/f && chmod 000 /work/f")
        assert code == 0, out
        with pytest.raises(SandboxRuntimeError, match="Permission denied"):
            await gvisor.copy_files(source.id, target.id)
    finally:
        await gvisor.destroy(source.id)
        await gvisor.destroy(target.id)
