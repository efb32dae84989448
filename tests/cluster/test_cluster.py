"""Two nodes and two API replicas on one database (tests/cluster/conftest.py), on real gVisor:
placement spreads sandboxes, either replica answers every sandbox route, bodies stream
through, nodes refuse tenants' credentials, a drained node gets nothing new, and a node killed
with SIGKILL is lost (its sandboxes failed `node_lost`, its execs interrupted) while the other
node goes on untouched; restarted, it leaves nothing of them running."""

from __future__ import annotations

import hashlib
import io
import secrets
import subprocess
import tarfile
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from service.auth.cache import TTL_S
from service.auth.keyring import KeyRing
from service.auth.principal import Principal, PrincipalKind
from service.nodes.credentials import NodeCredentials
from tests.cluster.conftest import LEASE_S, Cluster, wait_for

MIB = 1 << 20
# Under a terminal: says so, waits for a resize (SIGWINCH) and prints the new size.
WAIT_FOR_RESIZE = (
    "import os, signal; signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGWINCH]); "
    "print('ready', flush=True); "
    "signal.sigwait([signal.SIGWINCH]); print('size %dx%d' % tuple(os.get_terminal_size()))"
)


async def test_creates_spread_over_both_nodes(cluster: Cluster) -> None:
    key = await cluster.tenant()
    made = [await cluster.sandbox(key, via=i % 2) for i in range(4)]
    nodes = [await cluster.node_of(s) for s in made]
    assert sorted(nodes) == ["node-1", "node-1", "node-2", "node-2"], nodes
    async with cluster.http(cluster.apis[1], cluster.operator_key) as op:
        listed = {n["id"]: n for n in (await op.get("/v1/nodes")).json()["items"]}
    assert {listed[n]["sandboxes"] for n in ("node-1", "node-2")} == {2}
    assert listed["node-1"]["allocated"]["memory_mib"] > 0


async def test_every_sandbox_route_is_answered_by_either_replica(cluster: Cluster) -> None:
    key = await cluster.tenant()
    for first, second in ((0, 1), (1, 0)):
        sandbox = await cluster.sandbox(key, via=first)
        async with (
            cluster.http(cluster.apis[first], key) as a,
            cluster.http(cluster.apis[second], key) as b,
        ):
            base = f"/v1/sandboxes/{sandbox}"
            r = await b.post(f"{base}/execs", json={"cmd": ["sh", "-c", "echo $((6*7))"]})
            assert (r.status_code, r.json()["stdout"]) == (200, "42\n"), r.text
            # Started through one replica, streamed and read back through the other.
            r = await a.post(
                f"{base}/execs",
                json={"cmd": ["sh", "-c", "echo one; sleep 0.3; echo two"], "wait": False},
            )
            assert r.status_code == 202, r.text
            exec_id = r.json()["id"]
            async with b.stream("GET", f"{base}/execs/{exec_id}/events") as events:
                body = "".join([chunk async for chunk in events.aiter_text()])
            assert "one" in body and "two" in body and "event: exit" in body, body
            r = await a.get(f"{base}/execs/{exec_id}")
            assert (r.json()["state"], r.json()["stdout"]) == ("finished", "one\ntwo\n")
            # Kill through the replica that did not start it.
            r = await a.post(f"{base}/execs", json={"cmd": ["sleep", "60"], "wait": False})
            exec_id = r.json()["id"]
            r = await b.post(f"{base}/execs/{exec_id}/kill")
            assert r.status_code == 200, r.text
            path = f"{base}/execs/{exec_id}"
            done = await wait_for(lambda path=path: _state(a, path, "finished"))
            assert done and done["outcome"] == "killed", done
            # Stdin written through the replica that did not start the exec.
            body = {"cmd": ["cat"], "wait": False, "stdin_open": True}
            exec_id = (await a.post(f"{base}/execs", json=body)).json()["id"]
            r = await b.post(f"{base}/execs/{exec_id}/stdin", content=b"via b\n")
            assert r.status_code == 200 and r.json()["written"] == 6, r.text
            r = await a.post(f"{base}/execs/{exec_id}/stdin?close=true", content=b"via a\n")
            assert r.status_code == 200 and r.json()["closed"] is True, r.text
            path = f"{base}/execs/{exec_id}"
            done = await wait_for(lambda path=path: _state(b, path, "finished"))
            assert done and done["stdout"] == "via b\nvia a\n", done
            # A terminal resized through the replica that did not start the exec.
            body = {"cmd": ["python3", "-c", WAIT_FOR_RESIZE], "wait": False, "tty": True}
            exec_id = (await a.post(f"{base}/execs", json=body)).json()["id"]
            path = f"{base}/execs/{exec_id}"
            await wait_for(lambda path=path: _output(a, path, "ready"))
            r = await b.post(f"{path}/resize", json={"rows": 42, "cols": 132})
            assert r.status_code == 200 and r.json() == {"rows": 42, "cols": 132}, r.text
            done = await wait_for(lambda path=path: _state(a, path, "finished"))
            assert done and "size 132x42" in done["stdout"], done
            # Files and archives.
            r = await a.put(f"{base}/files/work/hello.txt", content=b"hello cluster")
            assert r.status_code == 201, r.text
            r = await b.get(f"{base}/files/work/hello.txt")
            assert (r.status_code, r.content) == (200, b"hello cluster")
            r = await b.get(f"{base}/files", params={"dir": "/work"})
            assert "hello.txt" in [e["name"] for e in r.json()["items"]], r.text
            r = await b.put(
                f"{base}/archive",
                params={"dir": "/work/in"},
                content=_tar({"a.txt": b"A"}),
                headers={"Content-Type": "application/x-tar"},
            )
            assert r.status_code == 201, r.text
            r = await a.get(f"{base}/archive", params={"dir": "/work/in"})
            assert r.status_code == 200, r.text
            with tarfile.open(fileobj=io.BytesIO(r.content)) as tar:
                assert any(m.name.endswith("a.txt") for m in tar.getmembers())
            # TTL, then delete through the other replica.
            r = await b.patch(base, json={"ttl_s": 1200})
            assert r.status_code == 200 and r.json()["ttl_s"] == 1200, r.text
            r = await b.delete(base)
            assert r.status_code == 204, r.text
            r = await a.get(base)
            assert r.json()["state"] == "stopped", r.text


async def test_mcp_on_either_replica_runs_code_on_the_node_of_the_sandbox(cluster: Cluster) -> None:
    key = await cluster.tenant()
    # An API replica holds no sandbox: each tool's exec is forwarded to the sandbox's node.
    sandboxes = [await cluster.sandbox(key, via=0) for _ in range(2)]
    for via, sandbox in enumerate(sandboxes):
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120)
        transport = streamable_http_client(f"{cluster.apis[via]}/mcp", http_client=http)
        async with Client(transport) as client:
            code = "import socket; print(socket.gethostname() != '', 6 * 7)"
            ran = await client.call_tool("run_python", {"sandbox_id": sandbox, "code": code})
            assert not ran.is_error and ran.structured_content["stdout"] == "True 42\n", ran


async def test_a_100_mib_file_streams_through_the_replicas(cluster: Cluster) -> None:
    """Uploaded through one replica and read back through the other, and through the other's
    nginx; neither replica's memory grows with the file. Through nginx, the replica hands the
    download over (its span `airlock.offload`, none for forwarding it) and nginx fetches it
    from the node, whose server span continues the replica's."""
    assert cluster.traces is not None
    key = await cluster.tenant()
    sandbox = await cluster.sandbox(key, memory_mib=512, disk_mib=1024)
    pids = [cluster.pid("api-1"), cluster.pid("api-2")]
    sampler = _RssSampler(pids)
    sent = hashlib.sha256()

    async def chunks() -> AsyncIterator[bytes]:
        block = hashlib.sha256(b"seed").digest() * (MIB // 32)
        for i in range(100):
            piece = bytes([i]) + block[1:]
            sent.update(piece)
            yield piece

    trace_id = secrets.token_bytes(16)
    traced = {"traceparent": f"00-{trace_id.hex()}-{secrets.token_bytes(8).hex()}-01"}
    with sampler:
        async with cluster.http(cluster.apis[0], key) as a:
            r = await a.put(f"/v1/sandboxes/{sandbox}/files/work/big.bin", content=chunks())
        assert r.status_code == 201 and r.json()["size"] == 100 * MIB, r.text
        for url, headers in ((cluster.apis[1], {}), (cluster.proxies[1], traced)):
            got = hashlib.sha256()
            size = 0
            async with (
                cluster.http(url, key) as b,
                b.stream(
                    "GET", f"/v1/sandboxes/{sandbox}/files/work/big.bin", headers=headers
                ) as download,
            ):
                assert download.status_code == 200
                assert "x-accel-redirect" not in download.headers
                assert "airlock-offload-authorization" not in download.headers
                async for chunk in download.aiter_raw():
                    got.update(chunk)
                    size += len(chunk)
            assert (size, got.hexdigest()) == (100 * MIB, sent.hexdigest()), url
    for pid in pids:
        grew = sampler.peak[pid] - sampler.start[pid]
        assert grew < 40 * MIB, f"replica {pid} grew by {grew / MIB:.0f} MiB for a 100 MiB file"

    def spans() -> list[Any]:
        return cluster.traces.of_trace(trace_id)  # type: ignore[union-attr]

    def node_server() -> list[Any]:
        handed = [s.span_id for s in spans() if s.name == "airlock.offload"]
        return [s for s in spans() if handed and s.parent_span_id == handed[0]]

    async def seen() -> bool:  # each process exports its spans when they end, in batches
        return bool(node_server()) and "airlock.files.read" in {s.name for s in spans()}

    assert await wait_for(seen, timeout_s=15), spans()
    assert "airlock.route" not in {s.name for s in spans()}
    assert [s.kind for s in node_server()] == [Span.SPAN_KIND_SERVER], spans()


async def test_a_replica_hands_downloads_only_to_its_own_proxy(cluster: Cluster) -> None:
    """A client that sends the proxy's mark to a replica itself gets the file from the
    replica, never the redirect (which carries a node token); through nginx, the node's own
    answers (a 404 here) reach the client as they are. Neither path takes a client's word for
    its address: the audit records the address the proxy or the replica saw."""
    key = await cluster.tenant()
    sandbox = await cluster.sandbox(key)
    path = f"/v1/sandboxes/{sandbox}/files/etc/hostname"
    claimed = {"X-Forwarded-For": "203.0.113.9"}
    async with cluster.http(cluster.apis[0], key) as direct:
        r = await direct.get(path, headers={"Airlock-Offload": "1", **claimed})
    assert r.status_code == 200 and r.content.strip(), r.text
    assert not {"x-accel-redirect", "airlock-offload-url", "airlock-offload-authorization"} & set(
        r.headers
    ), r.headers
    async with cluster.http(cluster.proxies[0], key) as proxied:
        r = await proxied.get(path, headers=claimed)
        assert r.status_code == 200 and r.content.strip(), r.text
        r = await proxied.get("/v1/audit", params={"limit": 20})
        reads = [e for e in r.json()["items"] if e["action"] == "file.read"]
        assert len(reads) == 2 and {e["client"] for e in reads} == {"127.0.0.1"}, reads
        r = await proxied.get(f"/v1/sandboxes/{sandbox}/files/etc/no-such-file")
        assert r.status_code == 404, r.text
        assert r.headers["content-type"] == "application/problem+json", r.headers
        # Another tenant's sandbox is refused by the replica, before any node is named.
        other = await cluster.tenant()
        r = await proxied.get(path, headers={"Authorization": f"Bearer {other}"})
        assert r.status_code == 404 and "airlock-offload-url" not in r.headers, r.text


async def test_a_node_refuses_tenant_credentials(cluster: Cluster) -> None:
    key = await cluster.tenant()
    sandbox = await cluster.sandbox(key)
    node = cluster.process(await cluster.node_of(sandbox))
    async with cluster.http(cluster.apis[0], key) as a:
        r = await a.post("/v1/tokens", json={"scopes": ["exec"], "ttl_s": 300})
        token = r.json()["token"]
    for credential in (key, token, cluster.operator_key):
        async with cluster.http(node["url"], credential) as direct:
            r = await direct.post(f"/v1/sandboxes/{sandbox}/execs", json={"cmd": ["id"]})
            assert r.status_code == 401, r.text
            assert "routed by an API replica" in r.json()["detail"]
    # And the other way: a node token is not an API credential.
    ring = KeyRing(Path(cluster.info["env"]["AIRLOCK_JWT_KEYS_DIR"]))
    rows = await cluster.fetch("SELECT tenant_id FROM sandboxes WHERE id = $1", sandbox)
    principal = Principal(
        kind=PrincipalKind.API_KEY,
        actor="k",
        tenant_id=rows[0]["tenant_id"],
        scopes=frozenset({"exec"}),
        key_id="k",
    )
    credentials = NodeCredentials(ring, issuer="airlock")
    node_token = credentials.mint(principal, None, node["name"])
    async with cluster.http(cluster.apis[0], node_token) as replica:
        r = await replica.post(f"/v1/sandboxes/{sandbox}/execs", json={"cmd": ["id"]})
        assert r.status_code == 401, r.text
    # A caller a replica routes cannot reach a node's internal routes, nor a node's own call
    # the tenants' routes.
    async with cluster.http(node["url"], node_token) as routed:
        r = await routed.get("/internal/v1/snapshots/snap-000000000000000000000000")
        assert r.status_code == 403, r.text
    # A token made for one node is refused by another.
    other = "node-2" if node["name"] == "node-1" else "node-1"
    async with cluster.http(node["url"], credentials.mint(principal, None, other)) as elsewhere:
        r = await elsewhere.post(f"/v1/sandboxes/{sandbox}/execs", json={"cmd": ["id"]})
        assert r.status_code == 401 and "for another node" in r.json()["detail"], r.text
    async with cluster.http(node["url"], credentials.mint_node("node-9", node["name"])) as peer:
        r = await peer.post(f"/v1/sandboxes/{sandbox}/execs", json={"cmd": ["id"]})
        assert r.status_code == 403, r.text
        r = await peer.get("/internal/v1/snapshots/snap-000000000000000000000000")
        assert r.status_code == 404, r.text


async def test_a_revocation_through_one_replica_is_refused_by_the_other(
    cluster: Cluster,
) -> None:
    """Each replica caches who a credential is (service/auth/cache.py): a key revoked through
    one replica is refused by the other once its notification arrives, well before a cached
    entry would lapse on its own."""
    key = await cluster.tenant()
    async with cluster.http(cluster.apis[0], key) as a:
        made = await a.post("/v1/api-keys", json={"name": "short", "scopes": ["sandboxes:read"]})
        assert made.status_code == 201, made.text
        short, short_id = made.json()["key"], made.json()["api_key"]["id"]
        async with cluster.http(cluster.apis[1], short) as b:
            for _ in range(3):  # looked up once, then answered from the cache
                assert (await b.get("/v1/sandboxes")).status_code == 200
            assert (await a.delete(f"/v1/api-keys/{short_id}")).status_code == 204

            async def refused() -> bool:
                return (await b.get("/v1/sandboxes")).status_code == 401

            assert await wait_for(refused, timeout_s=TTL_S / 4)


async def test_one_request_is_traced_from_the_replica_through_the_node_into_the_runtime(
    cluster: Cluster,
) -> None:
    """The caller's trace context goes on from the replica's server span, through its span for
    the call to the node, into the node's server span and the exec's span in the runtime."""
    assert cluster.traces is not None
    key = await cluster.tenant()
    sandbox = await cluster.sandbox(key)
    trace_id = secrets.token_bytes(16)
    caller_span = secrets.token_bytes(8)
    parent = f"00-{trace_id.hex()}-{caller_span.hex()}-01"
    async with cluster.http(cluster.apis[0], key) as http:
        r = await http.post(
            f"/v1/sandboxes/{sandbox}/execs",
            json={"cmd": ["echo", "traced"]},
            headers={"traceparent": parent},
        )
        assert r.status_code == 200 and r.json()["stdout"] == "traced\n", r.text

    def names() -> set[str]:
        return {s.name for s in cluster.traces.of_trace(trace_id)}  # type: ignore[union-attr]

    async def complete() -> bool:
        return {"airlock.route", "airlock.exec"} <= names()

    assert await wait_for(complete, timeout_s=15), names()
    spans = cluster.traces.of_trace(trace_id)
    by_id = {s.span_id: s for s in spans}
    route = next(s for s in spans if s.name == "airlock.route")
    replica = by_id[route.parent_span_id]
    assert replica.kind == replica.SPAN_KIND_SERVER and replica.parent_span_id == caller_span
    # Server spans are named by the route, not by a path with ids in it.
    assert replica.name == "POST /v1/sandboxes/{sandbox_id}/execs", replica.name
    node_server = next(
        s for s in spans if s.kind == s.SPAN_KIND_SERVER and s.parent_span_id == route.span_id
    )
    exec_span = next(s for s in spans if s.name == "airlock.exec")
    # The exec ran under the node's request: its parents lead back to the node's server span.
    ancestor = exec_span
    while ancestor.parent_span_id in by_id and ancestor.span_id != node_server.span_id:
        ancestor = by_id[ancestor.parent_span_id]
    assert ancestor.span_id == node_server.span_id
    attributes = {a.key: a.value.string_value for a in exec_span.attributes}
    assert attributes["airlock.sandbox_id"] == sandbox


async def test_a_drained_node_gets_no_new_sandboxes(cluster: Cluster) -> None:
    key = await cluster.tenant()
    async with cluster.http(cluster.apis[0], cluster.operator_key) as op:
        r = await op.post("/v1/nodes/node-2/drain")
        assert (r.status_code, r.json()["state"]) == (200, "draining"), r.text
    try:
        made = [await cluster.sandbox(key, via=i % 2) for i in range(3)]
        assert {await cluster.node_of(s) for s in made} == {"node-1"}
    finally:
        async with cluster.http(cluster.apis[1], cluster.operator_key) as op:
            r = await op.post("/v1/nodes/node-2/ready")
            assert (r.status_code, r.json()["state"]) == (200, "ready"), r.text


async def _state(http: httpx.AsyncClient, path: str, want: str) -> dict | None:
    r = await http.get(path)
    body = r.json()
    return body if body.get("state") == want else None


async def _output(http: httpx.AsyncClient, path: str, text: str) -> dict | None:
    body = (await http.get(path)).json()
    return body if text in (body.get("stdout") or "") else None


def _leftovers(runtime_ids: list[str], state_dir: str) -> list[str]:
    """Host processes and network namespaces still carrying one of these runtime sandboxes."""
    ps = subprocess.run(["ps", "-eww", "-o", "pid=,args="], capture_output=True, text=True)
    found = [
        line.strip()
        for line in ps.stdout.splitlines()
        if any(rid in line for rid in runtime_ids) and "ps -eww" not in line
    ]
    netns = _netns()
    found += [f"netns {rid}" for rid in runtime_ids if rid in netns]
    runsc_root = Path(state_dir) / "gvisor" / "sandboxes"
    if runsc_root.exists():
        found += [f"sandbox dir {p.name}" for p in runsc_root.iterdir() if p.name in runtime_ids]
    return found


def _netns() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def _tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class _RssSampler:
    """The resident memory of some processes, sampled every 20 ms while in use."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.start = {pid: _rss(pid) for pid in pids}
        self.peak = dict(self.start)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            for pid in self.pids:
                self.peak[pid] = max(self.peak[pid], _rss(pid))

    def __enter__(self) -> _RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


async def test_a_template_built_on_one_node_starts_sandboxes_on_the_other(
    cluster: Cluster,
) -> None:
    """The snapshot moves: fetched by the other node on its first start, checked against the
    build's digest, recorded as that node's copy; the warm pool then spreads over both."""
    name = f"cl-{secrets.token_hex(4)}"
    async with cluster.http(cluster.apis[0], cluster.operator_key) as op:
        r = await op.post(
            "/v1/templates",
            json={"name": name, "setup": [["sh", "-c", "echo built > /work/built"]]},
        )
        assert r.status_code == 202, r.text

        async def built() -> dict | None:
            got = (await op.get(f"/v1/templates/{name}")).json()
            return got if got["versions"][0]["state"] in ("ready", "failed") else None

        template = await wait_for(built, timeout_s=180)
        assert template and template["versions"][0]["state"] == "ready", template
    rows = await cluster.fetch(
        "SELECT node_id, snapshot_id, snapshot_digest FROM template_versions v "
        "JOIN templates t ON t.id = v.template_id WHERE t.name = $1",
        name,
    )
    builder, snapshot_id, digest = rows[0]["node_id"], rows[0]["snapshot_id"], rows[0][2]
    assert builder in ("node-1", "node-2") and snapshot_id and digest.startswith("sha256:")
    other = "node-2" if builder == "node-1" else "node-1"
    key = await cluster.tenant()
    # With the builder drained, the only place for the sandbox is the other node.
    async with cluster.http(cluster.apis[0], cluster.operator_key) as op:
        assert (await op.post(f"/v1/nodes/{builder}/drain")).status_code == 200
    try:
        sandbox = await cluster.sandbox(key, template=name)
        assert await cluster.node_of(sandbox) == other
        async with cluster.http(cluster.apis[1], key) as b:
            r = await b.post(f"/v1/sandboxes/{sandbox}/execs", json={"cmd": ["cat", "/work/built"]})
            assert r.json()["stdout"] == "built\n", r.text
    finally:
        async with cluster.http(cluster.apis[0], cluster.operator_key) as op:
            assert (await op.post(f"/v1/nodes/{builder}/ready")).status_code == 200
    copies = await cluster.fetch(
        "SELECT node_id, digest FROM node_snapshots WHERE snapshot_id = $1 ORDER BY node_id",
        snapshot_id,
    )
    assert [(c["node_id"], c["digest"]) for c in copies] == [
        ("node-1", digest),
        ("node-2", digest),
    ]
    assert f"snapshot {snapshot_id} fetched from node {builder}" in cluster.log(other)

    # A warm pool of two for it: one member on each node.
    async with cluster.http(cluster.apis[1], cluster.operator_key) as op:
        r = await op.put(f"/v1/pool/{name}", json={"size": "small", "target": 2})
        assert r.status_code == 200, r.text

        async def spread() -> dict | None:
            pools = (await op.get("/v1/pool")).json()["pools"]
            status = next(p for p in pools if p["template"] == name)
            return status if status["ready_by_node"] == {"node-1": 1, "node-2": 1} else None

        assert await wait_for(spread, timeout_s=120), (await op.get("/v1/pool")).json()
        claimed = [await cluster.sandbox(key, via=i % 2, template=name) for i in range(2)]
        rows = await cluster.fetch(
            "SELECT started_from, node_id FROM sandboxes WHERE id = ANY($1::text[])", claimed
        )
        assert sorted((r["started_from"], r["node_id"]) for r in rows) == [
            ("pool", "node-1"),
            ("pool", "node-2"),
        ], rows
        # Deleted through a replica: each node destroys its members and its snapshot copy.
        assert await wait_for(spread, timeout_s=120)
        members = [
            r["runtime_id"]
            for r in await cluster.fetch(
                "SELECT runtime_id FROM pool_members WHERE state = 'ready' AND runtime_id "
                "IS NOT NULL AND pool_id IN (SELECT p.id FROM pool_targets p JOIN templates t "
                "ON t.id = p.template_id WHERE t.name = $1)",
                name,
            )
        ]
        assert len(members) == 2
        r = await op.delete(f"/v1/templates/{name}", params={"force": "true"})
        assert r.status_code == 204, r.text
    dirs = [cluster.process(n)["state_dir"] for n in ("node-1", "node-2")]

    async def cleaned() -> bool:
        return not _leftovers(members, dirs[0]) + _leftovers(members, dirs[1]) and not any(
            (Path(d) / "gvisor" / "snapshots" / snapshot_id).exists() for d in dirs
        )

    assert await wait_for(cleaned, timeout_s=30)
    assert not await cluster.fetch(
        "SELECT 1 FROM node_snapshots WHERE snapshot_id = $1", snapshot_id
    )


async def test_a_killed_node_is_lost_and_the_other_goes_on(cluster: Cluster) -> None:
    key = await cluster.tenant()
    on: dict[str, list[str]] = {"node-1": [], "node-2": []}
    while not (on["node-1"] and on["node-2"]):
        sandbox = await cluster.sandbox(key)
        on[await cluster.node_of(sandbox)].append(sandbox)
    doomed, survivor = on["node-1"][0], on["node-2"][0]
    # One with a network on the node to kill, so its namespace is there to be cleaned up.
    async with cluster.http(cluster.apis[0], cluster.operator_key) as op:
        assert (await op.post("/v1/nodes/node-2/drain")).status_code == 200
        try:
            networked = await cluster.sandbox(
                key, network={"mode": "allowlist", "allow": ["1.1.1.1:443"]}
            )
        finally:
            assert (await op.post("/v1/nodes/node-2/ready")).status_code == 200
    assert await cluster.node_of(networked) == "node-1"
    (row,) = await cluster.fetch("SELECT runtime_id FROM sandboxes WHERE id = $1", networked)
    assert row["runtime_id"] in _netns()  # (the check after the restart is not a vacuous one)
    runtime_ids = [
        r["runtime_id"]
        for r in await cluster.fetch(
            "SELECT runtime_id FROM sandboxes WHERE node_id = 'node-1' AND state = 'running'"
        )
    ]
    async with cluster.http(cluster.apis[0], key) as a:
        r = await a.post(
            f"/v1/sandboxes/{doomed}/execs", json={"cmd": ["sleep", "300"], "wait": False}
        )
        assert r.status_code == 202, r.text
        cut = r.json()["id"]
        r = await a.post(f"/v1/sandboxes/{survivor}/execs", json={"cmd": ["sleep", "300"],
                                                               "wait": False})  # fmt: skip
        kept = r.json()["id"]

        cluster.kill("node-1")
        killed_at = time.monotonic()
        # A download through nginx meanwhile: the node cannot be reached, and the replica
        # answers with its problem, not nginx with an error page of its own.
        async with cluster.http(cluster.proxies[0], key) as proxied:
            r = await proxied.get(f"/v1/sandboxes/{doomed}/files/etc/hostname")
        assert r.status_code in (409, 503), r.text
        assert r.headers["content-type"] == "application/problem+json", r.text
        failed = await wait_for(
            lambda: _state(a, f"/v1/sandboxes/{doomed}", "failed"), timeout_s=LEASE_S * 4
        )
        took = time.monotonic() - killed_at
        assert failed, f"not failed {took:.1f} s after the kill"
        assert (failed["failure_reason"], failed["node_id"]) == ("node_lost", "node-1"), failed
        r = await a.get(f"/v1/sandboxes/{doomed}/execs/{cut}")
        assert r.json()["state"] == "interrupted", r.json()
        async with cluster.http(cluster.apis[1], cluster.operator_key) as op:
            nodes = {n["id"]: n["state"] for n in (await op.get("/v1/nodes")).json()["items"]}
            assert nodes == {"node-1": "lost", "node-2": "ready"}, nodes
        # Nothing on the surviving node was touched: its sandbox runs, its exec still runs.
        r = await a.get(f"/v1/sandboxes/{survivor}")
        assert r.json()["state"] == "running", r.json()
        r = await a.get(f"/v1/sandboxes/{survivor}/execs/{kept}")
        assert r.json()["state"] == "running", r.json()
        r = await a.post(f"/v1/sandboxes/{survivor}/execs", json={"cmd": ["echo", "still"]})
        assert r.json()["stdout"] == "still\n", r.text
        # New sandboxes land on the node that is left.
        fresh = [await cluster.sandbox(key, via=i % 2) for i in range(2)]
        assert {await cluster.node_of(s) for s in fresh} == {"node-2"}
        # The tenant reads why in its own audit chain.
        r = await a.get("/v1/audit", params={"limit": 100})
        assert any(
            e["action"] == "sandbox.fail"
            and e["target"] == doomed
            and e["details"]["reason"] == "node_lost"
            for e in r.json()["items"]
        ), r.json()
        assert any(e["action"] == "exec.interrupted" and e["target"] == cut for e in
                   r.json()["items"])  # fmt: skip

        # What the lost node held answers from the record, through either replica.
        async with cluster.http(cluster.apis[1], key) as b:
            r = await b.post(f"/v1/sandboxes/{doomed}/execs", json={"cmd": ["true"]})
            assert (r.status_code, r.json()["reason"]) == (409, "node_lost"), r.text
            r = await b.delete(f"/v1/sandboxes/{doomed}")
            assert r.status_code == 204, r.text
        r = await a.get(f"/v1/sandboxes/{doomed}")
        assert r.json()["state"] == "stopped", r.json()

        # Restarted, the node reconciles: nothing of its lost sandboxes is left on the host.
        cluster.restart("node-1")
        state_dir = cluster.process("node-1")["state_dir"]

        async def cleared() -> bool:
            return not _leftovers(runtime_ids, state_dir)

        assert await wait_for(cleared, timeout_s=60), _leftovers(runtime_ids, state_dir)
        async with cluster.http(cluster.apis[0], cluster.operator_key) as op:
            nodes = {n["id"]: n["state"] for n in (await op.get("/v1/nodes")).json()["items"]}
        assert nodes == {"node-1": "ready", "node-2": "ready"}, nodes
        later = [await cluster.sandbox(key) for _ in range(2)]
        assert "node-1" in {await cluster.node_of(s) for s in later}
