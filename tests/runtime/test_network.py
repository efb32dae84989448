"""Conformance: egress policies. `none` leaves only `lo`; an allowlist lets through exactly the
listed destinations; the host, link-local/metadata and other sandboxes are never reachable;
blocked connections fail at once; a policy changed at run time takes effect; destroy leaves
nothing behind.

The destinations are test hosts in network namespaces this module creates (10.250.x.x, never
an address outside this machine), each serving HTTP with `python3 -m http.server`.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from service.runtime import SandboxRuntime
from service.runtime.errors import InvalidSpec
from service.runtime.gvisor import GVisorRuntime

from .conftest import SandboxFactory
from .helpers import host_processes_mentioning, sh

PROBE = r"""
import json, socket, sys, urllib.request
out = []
for target in json.loads(sys.argv[1]):
    host, port = target.rsplit(":", 1)
    try:
        if port == "http":
            with urllib.request.urlopen(f"http://{host}/", timeout=3) as r:
                out.append(f"http {r.status}")
            continue
        socket.create_connection((host, int(port)), timeout=3).close()
        out.append("open")
    except socket.gaierror:
        out.append("no-name")
    except ConnectionRefusedError:
        out.append("refused")
    except (TimeoutError, socket.timeout):
        out.append("timeout")
    except OSError as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, ConnectionRefusedError):
            out.append("refused")
        elif isinstance(reason, (TimeoutError, socket.timeout)):
            out.append("timeout")
        else:
            out.append(f"error {getattr(reason, 'errno', None)}")
print(json.dumps(out))
"""
# http.server's own HTTPServer looks its address up in DNS first; this one asks nothing.
SERVER = (
    "import socketserver, sys; from http.server import SimpleHTTPRequestHandler as H; "
    "socketserver.TCPServer.allow_reuse_address = True; "
    "socketserver.TCPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()"
)
BLOCKED = {"refused", "error 113", "error 101"}  # reset or unreachable: fast, never a timeout
METADATA = "169.254.169.254"
# The test hosts' addresses are private: sandboxes reach them only where granted.
PEERS = ["10.250.0.0/16"]


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@dataclass
class Peer:
    netns: str
    host_side: str  # an address of this machine (the veth's host end)
    address: str
    servers: list[subprocess.Popen[bytes]]


def _wait_listening(address: str, port: int) -> None:
    for _ in range(400):
        try:
            socket.create_connection((address, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"test server {address}:{port} did not start")


def _make_host(octet: int, ports: tuple[int, ...]) -> Peer:
    tag = secrets.token_hex(3)
    netns, outer, inner = f"alt-{tag}", f"alt{tag}h", f"alt{tag}p"
    host_side, address = f"10.250.{octet}.1", f"10.250.{octet}.2"
    _ip("netns", "add", netns)
    _ip("link", "add", outer, "type", "veth", "peer", "name", inner, "netns", netns)
    _ip("addr", "add", f"{host_side}/30", "dev", outer)
    _ip("link", "set", outer, "up")
    _ip("-n", netns, "addr", "add", f"{address}/30", "dev", inner)
    _ip("-n", netns, "link", "set", inner, "up")
    _ip("-n", netns, "link", "set", "lo", "up")
    _ip("-n", netns, "route", "add", "default", "via", host_side)
    host = Peer(netns, host_side, address, [])
    try:
        for port in ports:
            host.servers.append(
                subprocess.Popen(
                    [
                        "ip",
                        "netns",
                        "exec",
                        netns,
                        sys.executable,
                        "-c",
                        SERVER,
                        address,
                        str(port),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        for port in ports:
            _wait_listening(address, port)
    except BaseException:
        _remove_host(host)
        raise
    return host


def _remove_host(host: Peer) -> None:
    for server in host.servers:
        server.kill()
        server.wait()
    subprocess.run(["ip", "netns", "del", host.netns], check=False)


@pytest.fixture(scope="module")
def hosts() -> Iterator[tuple[Peer, Peer]]:
    """Two test hosts: `a` serves ports 8080 and 8081, `b` serves 8080."""
    base = 4 + secrets.randbelow(120) * 2
    a = _make_host(base, (8080, 8081))
    try:
        b = _make_host(base + 1, (8080,))
    except BaseException:
        _remove_host(a)
        raise
    yield a, b
    _remove_host(a)
    _remove_host(b)


@pytest.fixture(scope="module")
def host_listener(hosts: tuple[Peer, Peer]) -> Iterator[int]:
    """A listener on every address of this machine (loopback, the veth host sides...)."""
    server = socket.create_server(("0.0.0.0", 0))  # noqa: S104 (the point of the test)
    yield server.getsockname()[1]
    server.close()


async def probe(runtime: SandboxRuntime, sandbox_id: str, *targets: str) -> list[str]:
    script = f"python3 -c '{PROBE}' '{json.dumps(list(targets))}'"
    result = await sh(runtime, sandbox_id, script, timeout_s=60)
    assert result.exit_code == 0, result.stderr.decode()
    return json.loads(result.stdout)


def host_state() -> str:
    """Everything on this machine that could mention a sandbox's network."""
    parts = [
        subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
        for cmd in (
            ["ip", "netns", "list"],
            ["ip", "-o", "link"],
            ["ip", "-o", "addr"],
            ["iptables-save"],
        )
    ]
    return "\n".join(parts)


def ipv6_addresses(where: str, name: str) -> str:
    """`ip -6 addr` of a namespace (`-n NAME`) or of a host interface (`dev NAME`)."""
    argv = ["ip", "-n", name, "-6", "-o", "addr"] if where == "-n" else [
        "ip", "-6", "-o", "addr", "show", "dev", name]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def needs_policy_changes(runtime: SandboxRuntime) -> None:
    if not hasattr(runtime, "update_network"):
        pytest.skip(f"{runtime.name} cannot change a running sandbox's network policy")


def tag(sandbox_id: str) -> str:
    return sandbox_id.rsplit("-", 1)[-1]


async def test_none_leaves_only_loopback(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory
) -> None:
    info = await make_sandbox()
    assert info.spec.network == "none"
    result = await sh(runtime, info.id, "cat /proc/net/dev")
    interfaces = [line.split(":")[0].strip() for line in result.stdout.decode().splitlines()[2:]]
    assert interfaces == ["lo"]
    assert tag(info.id) not in host_state()  # no namespace, veth or rule for it


async def test_allowlist_lets_through_only_listed_destinations(
    runtime: SandboxRuntime,
    make_sandbox: SandboxFactory,
    hosts: tuple[Peer, Peer],
    host_listener: int,
) -> None:
    a, b = hosts
    info = await make_sandbox(
        network="allowlist", network_private=PEERS, network_allow=[f"{a.address}:8080"]
    )
    counters = getattr(runtime, "network_counters", None)
    before = await counters(info.id) if counters else None
    outcomes = await probe(
        runtime,
        info.id,
        f"{a.address}:8080:http",
        f"{a.address}:8081",  # a port not on the list
        f"{b.address}:8080",  # a host not on the list
        f"{METADATA}:80",
        f"127.0.0.1:{host_listener}",  # the sandbox's own loopback, not the host's
        "127.0.0.1:54329",  # the test PostgreSQL on the host's loopback
        f"{a.host_side}:{host_listener}",  # an address of the host itself
    )
    assert outcomes[0] == "http 200"
    for target, outcome in zip(
        ("a:8081", "b:8080", "metadata", "loopback", "postgres", "host"), outcomes[1:], strict=True
    ):
        assert outcome in BLOCKED, (target, outcome)
    if counters is not None:  # gVisor: the sandbox's chain counts what it allowed and blocked
        after = await counters(info.id)
        assert after["allowed_packets"] > before["allowed_packets"]
        assert after["blocked_packets"] >= before["blocked_packets"] + 4  # a, b, metadata, host


async def test_forbidden_destinations_stay_blocked_when_listed(
    runtime: SandboxRuntime,
    make_sandbox: SandboxFactory,
    hosts: tuple[Peer, Peer],
    host_listener: int,
) -> None:
    """The host and other sandboxes are blocked even inside a granted range the allowlist
    names; link-local and loopback cannot be listed at all."""
    a, _ = hosts
    broad = ["10.0.0.0/8"]
    for never in (["169.254.0.0/16"], ["127.0.0.0/8"], ["169.254.169.254:80"]):
        with pytest.raises(InvalidSpec):
            await make_sandbox(network="allowlist", network_allow=never, network_private=broad)
    first = await make_sandbox(network="allowlist", network_allow=broad, network_private=broad)
    second = await make_sandbox(network="allowlist", network_allow=broad, network_private=broad)
    await sh(
        runtime,
        second.id,
        "cd /tmp && nohup python3 -m http.server 8000 </dev/null >/dev/null 2>&1 &",
        timeout_s=10,
    )
    where = await sh(
        runtime,
        second.id,
        "python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
        f's.connect(("{a.address}", 9)); print(s.getsockname()[0])\'',
    )
    second_ip = where.stdout.decode().strip()
    assert second_ip and second_ip != a.address
    # It does listen, once the server is up (it starts in the background: slow on ptrace).
    for _ in range(100):
        if await probe(runtime, second.id, "127.0.0.1:8000") == ["open"]:
            break
        await asyncio.sleep(0.2)
    assert await probe(runtime, second.id, "127.0.0.1:8000") == ["open"]
    outcomes = await probe(
        runtime,
        first.id,
        f"{a.address}:8081",  # inside the broad allowance: reachable
        f"{second_ip}:8000",
        f"{METADATA}:80",
        f"{a.host_side}:{host_listener}",
    )
    assert outcomes[0] == "open"
    assert all(o in BLOCKED for o in outcomes[1:]), outcomes


async def test_policy_change_takes_effect_while_running(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory, hosts: tuple[Peer, Peer]
) -> None:
    needs_policy_changes(runtime)
    a, b = hosts
    info = await make_sandbox(
        network="allowlist", network_private=PEERS, network_allow=[f"{a.address}:8081"]
    )
    targets = (f"{a.address}:8080", f"{a.address}:8081", f"{b.address}:8080", f"{METADATA}:80")
    first = await probe(runtime, info.id, *targets)
    assert first[1] == "open" and {first[0], first[2], first[3]} <= BLOCKED
    await runtime.update_network(info.id, "allowlist", [f"{a.address}:8080"])  # type: ignore[attr-defined]
    second = await probe(runtime, info.id, *targets)
    assert second[0] == "open" and {second[1], second[2], second[3]} <= BLOCKED
    updated = await runtime.update_network(info.id, "open")  # type: ignore[attr-defined]
    assert updated.spec.network == "open"
    third = await probe(runtime, info.id, *targets)
    # "open" is the public address space: the private test hosts are out of it, granted or not.
    assert set(third) <= BLOCKED, third
    assert (await runtime.get(info.id)).spec.network == "open"


async def test_only_allowed_names_resolve(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory, hosts: tuple[Peer, Peer]
) -> None:
    """Allowed names are resolved on the host (here by a resolver mapping test names to the
    test hosts, so no real DNS is asked) and answer inside; other names fail at once, and a
    name with no address reaches nothing."""
    a, b = hosts
    names = {
        "pkgs.airlock.test": [a.address],
        "git.airlock.test": [b.address],
        "meta.airlock.test": [METADATA],
    }
    networks = getattr(runtime, "networks", None)
    if networks is None:
        pytest.skip(f"{runtime.name} resolves allowed names itself")
    original = networks.resolver
    networks.resolver = lambda name: names[name] if name in names else []
    try:
        info = await make_sandbox(
            network="allowlist", network_private=PEERS, network_allow=["pkgs.airlock.test:8080"]
        )
        first = await probe(
            runtime, info.id, "pkgs.airlock.test:8080:http", "git.airlock.test:8080"
        )
        assert first == ["http 200", "no-name"]
        await runtime.update_network(info.id, "allowlist", ["git.airlock.test:8080"])  # type: ignore[attr-defined]
        second = await probe(
            runtime, info.id, "pkgs.airlock.test:8080", "git.airlock.test:8080:http"
        )
        assert second == ["no-name", "http 200"]
        # A name with no address now is not refused: it reaches nothing.
        await runtime.update_network(info.id, "allowlist", ["unknown.airlock.test:8080"])  # type: ignore[attr-defined]
        assert await probe(runtime, info.id, "unknown.airlock.test:8080") == ["no-name"]
        with pytest.raises(InvalidSpec, match="meta"):  # resolves to metadata only
            await runtime.update_network(info.id, "allowlist", ["meta.airlock.test"])  # type: ignore[attr-defined]
    finally:
        networks.resolver = original


async def test_network_cannot_be_added_to_a_sandbox_made_without(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory
) -> None:
    needs_policy_changes(runtime)
    info = await make_sandbox()
    with pytest.raises(InvalidSpec):
        await runtime.update_network(info.id, "open")  # type: ignore[attr-defined]
    with pytest.raises(InvalidSpec):
        await make_sandbox(network="allowlist", network_private=PEERS, network_allow=["not a host"])


async def test_destroy_leaves_nothing_behind(
    runtime: SandboxRuntime, hosts: tuple[Peer, Peer]
) -> None:
    from service.runtime import SandboxSpec, images

    a, _ = hosts
    spec = SandboxSpec(
        memory_mib=256,
        disk_mib=64,
        pids=64,
        network="allowlist",
        network_private=PEERS,
        network_allow=[a.address],
    )
    info = await runtime.create(images.DEFAULT_IMAGE, spec)
    try:
        assert await probe(runtime, info.id, f"{a.address}:8080") == ["open"]
        assert tag(info.id) in host_state()
        if runtime.name == "gvisor":
            # IPv4 only: no IPv6 address, not even link-local, that could reach the host's `::`.
            assert ipv6_addresses("-n", info.id) == ""
            assert ipv6_addresses("dev", "alh" + tag(info.id)[-12:]) == ""
    finally:
        await runtime.destroy(info.id)
    left = [line for line in host_state().splitlines() if tag(info.id) in line]
    assert left == []


async def test_reaping_a_dead_owners_sandbox_removes_its_network(
    gvisor: GVisorRuntime, hosts: tuple[Peer, Peer]
) -> None:
    """After a crash the next process reaps what the dead one left, its network included,
    even when the sandbox's record of its network is gone."""
    from service.runtime import SandboxSpec, images

    a, _ = hosts
    spec = SandboxSpec(
        memory_mib=256,
        disk_mib=64,
        pids=64,
        network="allowlist",
        network_private=PEERS,
        network_allow=[a.address],
    )
    info = await gvisor.create(images.DEFAULT_IMAGE, spec)
    record = gvisor.root / "sandboxes" / info.id / "sandbox.json"
    meta = json.loads(record.read_text())
    meta["owner"] = {"pid": 999_999_999, "start": 1}  # a process that is gone
    del meta["net"]
    record.write_text(json.dumps(meta))
    gvisor.store.live.pop(info.id, None)
    assert tag(info.id) in host_state()
    assert info.id in await gvisor.reap_orphans()
    assert [line for line in host_state().splitlines() if tag(info.id) in line] == []
    assert not host_processes_mentioning(info.id)


async def test_sandboxes_created_at_once_get_networks_of_their_own(
    runtime: SandboxRuntime, make_sandbox: SandboxFactory, hosts: tuple[Peer, Peer]
) -> None:
    a, _ = hosts
    made = await asyncio.gather(
        *(
            make_sandbox(
                network="allowlist", network_private=PEERS, network_allow=[f"{a.address}:8080"]
            )
            for _ in range(3)
        )
    )
    results = await asyncio.gather(*(probe(runtime, i.id, f"{a.address}:8080") for i in made))
    assert results == [["open"]] * 3
