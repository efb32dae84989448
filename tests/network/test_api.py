"""The `network` field over HTTP, against a real server on gVisor: an allowlist is enforced,
a running sandbox's policy changes with PATCH, `open` needs the operator's flag, and bad
policies are refused. Destinations are local test hosts (see tests/runtime/test_network.py).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import Airlock, Tenant, audit_events, run_exec
from tests.network.test_snapshots import HOLDER
from tests.runtime.test_network import BLOCKED, METADATA, PROBE, Peer, _make_host, _remove_host

NPROC = 'python3 -c "import resource; print(resource.getrlimit(resource.RLIMIT_NPROC)[0])"'
# The test hosts are on private addresses: tenants reach them only where the operator granted.
PEERS = ["10.250.0.0/16"]


@pytest.fixture(scope="module")
def peer() -> Iterator[Peer]:
    host = _make_host(4 + secrets.randbelow(120) * 2, (8080, 8081))
    yield host
    _remove_host(host)


async def probe(tenant: Tenant, sandbox_id: str, *targets: str) -> list[str]:
    _, ex = await run_exec(
        tenant.client, sandbox_id, cmd=["python3", "-c", PROBE, json.dumps(list(targets))]
    )
    assert ex is not None and ex.exit_code == 0, ex
    return json.loads(ex.stdout)


async def test_default_is_no_network(airlock: Airlock) -> None:
    tenant = await airlock.tenant()
    sandbox = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        body = (await http.get(f"/v1/sandboxes/{sandbox.id}")).json()
    assert body["network"] == {"mode": "none", "allow": []}


async def test_allowlist_is_enforced_and_changes_with_patch(airlock: Airlock, peer: Peer) -> None:
    tenant = await airlock.tenant(network_private_cidrs=PEERS)
    network = {"mode": "allowlist", "allow": [f"{peer.address}:8080"]}
    sandbox = await airlock.sandbox(tenant, network=network)
    targets = (f"{peer.address}:8080:http", f"{peer.address}:8081", f"{METADATA}:80")
    first = await probe(tenant, sandbox.id, *targets)
    assert first[0] == "http 200" and {first[1], first[2]} <= BLOCKED
    changed = {"mode": "allowlist", "allow": [f"{peer.address}:8081"]}
    async with airlock.http(tenant.key) as http:
        r = await http.patch(f"/v1/sandboxes/{sandbox.id}", json={"network": changed})
        assert r.status_code == 200, r.text
        assert r.json()["network"] == changed
    second = await probe(tenant, sandbox.id, f"{peer.address}:8080", f"{peer.address}:8081")
    assert second[0] in BLOCKED and second[1] == "open"
    events = [e for e in await audit_events(airlock, tenant) if e["action"] == "sandbox.network"]
    assert [(e["details"]["from"], e["details"]["to"]) for e in events] == [(network, changed)]


async def test_open_network_needs_the_operators_flag(airlock: Airlock, peer: Peer) -> None:
    tenant = await airlock.tenant(network_private_cidrs=PEERS)
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/sandboxes", json={"network": {"mode": "open"}})
        assert r.status_code == 403, r.text
        assert (await http.get("/v1/sandboxes")).json()["items"] == []
    async with airlock.http(airlock.operator_key) as op:
        r = await op.patch(
            f"/v1/tenants/{tenant.id}", json={"quotas": {"network_open_allowed": True}}
        )
        assert r.status_code == 200, r.text
        assert r.json()["quotas"]["network_open_allowed"] is True
    sandbox = await airlock.sandbox(tenant, network={"mode": "open"})
    # "open" is the public address space: a private host stays out even where it is granted
    # (grants are for allowlists), as does the metadata address.
    outcomes = await probe(tenant, sandbox.id, f"{peer.address}:8081", f"{METADATA}:80")
    assert set(outcomes) <= BLOCKED, outcomes


@pytest.mark.parametrize(
    "network",
    [
        {"mode": "allowlist", "allow": ["not a host"]},
        {"mode": "allowlist", "allow": ["host.example:99999"]},
        {"mode": "none", "allow": ["10.0.0.0/8"]},
        {"mode": "wide"},
        {"mode": "allowlist", "extra": 1},
    ],
)
async def test_bad_policies_are_422_and_write_nothing(
    airlock: Airlock, network: dict[str, object]
) -> None:
    tenant = await airlock.tenant()
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/sandboxes", json={"network": network})
        assert r.status_code == 422, r.text
        assert (await http.get("/v1/sandboxes")).json()["items"] == []


async def test_a_sandbox_without_network_cannot_get_one_later(airlock: Airlock) -> None:
    tenant = await airlock.tenant()
    sandbox = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        r = await http.patch(
            f"/v1/sandboxes/{sandbox.id}",
            json={"network": {"mode": "allowlist", "allow": ["9.9.9.9:53"]}},
        )
        assert r.status_code == 409, r.text
        assert "created without a network" in r.json()["detail"]
        body = (await http.get(f"/v1/sandboxes/{sandbox.id}")).json()
        assert body["network"]["mode"] == "none"


async def test_untrusted_tool_preset_has_no_network_an_unprivileged_user_and_tight_caps(
    airlock: Airlock,
) -> None:
    tenant = await airlock.tenant()
    sandbox = await airlock.sandbox(tenant, preset="untrusted-tool")
    assert (sandbox.cpus, sandbox.memory_mib, sandbox.disk_mib) == (1, 512, 256)
    assert sandbox.network.mode == "none"
    _, ex = await run_exec(
        tenant.client, sandbox.id, cmd=["sh", "-c", f"id -u; {NPROC}; cat /proc/net/dev"]
    )
    assert ex is not None and ex.exit_code == 0, ex
    uid, nproc, *netdev = ex.stdout.splitlines()
    assert (uid, nproc) == ("1000", "64")
    assert [line.split(":")[0].strip() for line in netdev[2:]] == ["lo"]


async def test_ci_preset_brings_its_caps_and_an_explicit_network_wins(
    airlock: Airlock, peer: Peer
) -> None:
    """The preset's own allowlist names public hosts, which tests never contact; an explicit
    `network` replaces it (the preset's list itself is checked in test_policy.py)."""
    tenant = await airlock.tenant(network_private_cidrs=PEERS)
    local = {"mode": "allowlist", "allow": [f"{peer.address}:8080"]}
    sandbox = await airlock.sandbox(tenant, preset="ci", network=local)
    assert (sandbox.size, sandbox.cpus, sandbox.memory_mib) == ("medium", 2, 2048)
    assert sandbox.network.to_dict() == local
    _, ex = await run_exec(tenant.client, sandbox.id, cmd=["sh", "-c", NPROC])
    assert ex is not None and ex.stdout.strip() == "512"
    assert await probe(tenant, sandbox.id, f"{peer.address}:8080", f"{peer.address}:8081") == [
        "open",
        "refused",
    ]
    created = [e for e in await audit_events(airlock, tenant) if e["action"] == "sandbox.create"]
    assert created[0]["details"]["preset"] == "ci"


async def test_unknown_preset_is_422(airlock: Airlock) -> None:
    tenant = await airlock.tenant()
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/sandboxes", json={"preset": "anything-goes"})
        assert r.status_code == 422, r.text


async def test_exec_audit_shows_the_policy_and_what_it_refused(
    airlock: Airlock, peer: Peer
) -> None:
    tenant = await airlock.tenant(network_private_cidrs=PEERS)
    network = {"mode": "allowlist", "allow": [f"{peer.address}:8080"]}
    sandbox = await airlock.sandbox(tenant, network=network)
    result = await probe(tenant, sandbox.id, f"{peer.address}:8080:http", f"{peer.address}:8081")
    assert result[0] == "http 200" and result[1] in BLOCKED
    finished = [
        e
        for e in await audit_events(airlock, tenant)
        if e["action"] == "exec.finish" and "network" in e["details"]
    ]
    assert finished, "no exec.finish event carries network details"
    net = finished[0]["details"]["network"]
    assert net["mode"] == "allowlist" and net["allow"] == network["allow"]
    assert net["allowed_packets"] > 0, net
    assert net["blocked_packets"] > 0


# A connection within the sandbox (loopback): a server echoing, a client that sends a byte
# every 0.1 s and counts the answers in /tmp/loop (or notes the error that ended it).
LOOPBACK = (
    "import os, socket, time\n"
    "srv = socket.create_server(('127.0.0.1', 9100))\n"
    "if os.fork() == 0:\n"
    "    c, _ = srv.accept()\n"
    "    while (b := c.recv(1)):\n"
    "        c.sendall(b)\n"
    "    os._exit(0)\n"
    "def put(text):\n"
    "    open('/tmp/loop.new', 'w').write(text); os.replace('/tmp/loop.new', '/tmp/loop')\n"
    "s = socket.create_connection(('127.0.0.1', 9100))\n"
    "n = 0\n"
    "try:\n"
    "    while True:\n"
    "        s.sendall(b'x'); assert s.recv(1) == b'x'; n += 1\n"
    "        put(str(n)); time.sleep(0.1)\n"
    "except Exception as exc:\n"
    "    put(type(exc).__name__)\n"
)


async def _sh(tenant: Tenant, sandbox_id: str, script: str) -> str:
    _, ex = await run_exec(tenant.client, sandbox_id, cmd=["sh", "-c", script], timeout_s=60)
    assert ex is not None and ex.exit_code == 0, ex
    return str(ex.stdout)


async def test_a_pause_says_which_connections_it_cut(airlock: Airlock, peer: Peer) -> None:
    """A checkpoint cannot carry a TCP connection to a peer outside the sandbox: runsc resets
    it. The pause's answer, the resume's and both audit records name it; a connection within
    the sandbox is kept and not named."""
    tenant = await airlock.tenant(network_private_cidrs=PEERS)
    network = {"mode": "allowlist", "allow": [f"{peer.address}:8081"]}
    sandbox = await airlock.sandbox(tenant, network=network)
    detached = "</dev/null >/dev/null 2>&1 &"
    await _sh(
        tenant,
        sandbox.id,
        f'python3 -c "{HOLDER}" {peer.address} 8081 {detached} '
        f'python3 -c "{LOOPBACK}" {detached} sleep 1; cat /tmp/conn',
    )
    async with airlock.http(tenant.key) as http:
        r = await http.post(f"/v1/sandboxes/{sandbox.id}/pause")
        assert r.status_code == 200, r.text
        cut = r.json()["connections_cut"]
        assert len(cut) == 1 and cut[0].endswith(f" -> {peer.address}:8081"), cut
        r = await http.post(f"/v1/sandboxes/{sandbox.id}/resume")
        assert r.status_code == 200, r.text
        assert r.json()["connections_cut"] == cut
    ended = await _sh(tenant, sandbox.id, "sleep 1; cat /tmp/conn")
    assert ended == "connected\nConnectionAbortedError\n"
    first = await _sh(tenant, sandbox.id, "cat /tmp/loop")
    later = await _sh(tenant, sandbox.id, "sleep 1; cat /tmp/loop")
    assert first.isdigit() and later.isdigit() and int(later) > int(first), (first, later)
    events = {e["action"]: e for e in await audit_events(airlock, tenant)}
    assert events["sandbox.pause"]["details"]["connections_cut"] == cut
    assert events["sandbox.resume"]["details"]["connections_cut"] == cut


async def test_a_fork_says_which_connections_its_checkpoint_cut(
    airlock: Airlock, peer: Peer
) -> None:
    """A fork checkpoints the running parent: its TCP connections to outside are reset there
    (and in the child's copy); the fork's answer, the parent's record and the fork's audit
    event name them."""
    tenant = await airlock.tenant(network_private_cidrs=PEERS)
    network = {"mode": "allowlist", "allow": [f"{peer.address}:8081"]}
    parent = await airlock.sandbox(tenant, network=network)
    holder = f'python3 -c "{HOLDER}" {peer.address} 8081 </dev/null >/dev/null 2>&1 &'
    await _sh(tenant, parent.id, f"{holder} sleep 1; cat /tmp/conn")
    async with airlock.http(tenant.key) as http:
        r = await http.post(f"/v1/sandboxes/{parent.id}/fork", json={})
        assert r.status_code == 201, r.text
        child = r.json()
        tenant.sandboxes.append(child["id"])
        cut = child["connections_cut"]
        assert len(cut) == 1 and cut[0].endswith(f" -> {peer.address}:8081"), cut
        assert (await http.get(f"/v1/sandboxes/{parent.id}")).json()["connections_cut"] == cut
    for sandbox_id in (parent.id, child["id"]):
        ended = await _sh(tenant, sandbox_id, "sleep 1; cat /tmp/conn")
        assert ended == "connected\nConnectionAbortedError\n", (sandbox_id, ended)
    forks = [e for e in await audit_events(airlock, tenant) if e["action"] == "sandbox.fork"]
    assert [e["details"]["connections_cut"] for e in forks] == [cut]
