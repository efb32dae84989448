"""A paused sandbox resumes on another node when its own is full, or lost: its checkpoint is a
snapshot the other node fetches (or already holds a copy of), verified by its digest. Real
gVisor on two nodes, through both API replicas.

Each node may promise 3 GiB of host memory here, so two sandboxes of 1 GiB fill one."""

from __future__ import annotations

import secrets
from pathlib import Path

import httpx
from airlock_sdk import AsyncSandbox

from tests.cluster.conftest import Cluster, wait_for
from tests.e2e.test_pause import count, pause, start_counter

CLUSTER_ENV = {"AIRLOCK_HOST_MEMORY_MIB": "3072", "AIRLOCK_PAUSE_COPIES_INTERVAL_S": "1"}
BIG = {"memory_mib": 1600, "disk_mib": 256}  # two do not fit a node's 3072 MiB


async def _row(cluster: Cluster, sandbox_id: str) -> dict:
    rows = await cluster.fetch(
        "SELECT node_id, state, runtime_id, pause_snapshot_id, pause_digest FROM sandboxes "
        "WHERE id = $1",
        sandbox_id,
    )
    return dict(rows[0])


def _runtime_dir(cluster: Cluster, node: str, runtime_id: str) -> Path:
    return Path(cluster.process(node)["state_dir"]) / "gvisor" / "sandboxes" / runtime_id


async def _set_node(cluster: Cluster, node: str, state: str) -> None:
    async with cluster.http(cluster.apis[0], cluster.operator_key) as op:
        r = await op.post(f"/v1/nodes/{node}/{'drain' if state == 'draining' else 'ready'}")
        assert (r.status_code, r.json()["state"]) == (200, state), r.text


async def _events(cluster: Cluster, key: str, sandbox_id: str) -> list[dict]:
    async with cluster.http(cluster.apis[0], key) as http:
        r = await http.get("/v1/audit", params={"limit": 200})
    assert r.status_code == 200, r.text
    return [e for e in r.json()["items"] if e["target"] == sandbox_id]


async def _paused_with_work(cluster: Cluster, http: httpx.AsyncClient, key: str) -> tuple:
    sid = await cluster.sandbox(key, **BIG)
    r = await http.put(f"/v1/sandboxes/{sid}/files/work/note.txt", content=b"kept")
    assert r.status_code == 201, r.text
    await start_counter(http, sid)
    token, before = await count(http, sid)
    await pause(http, sid)
    return sid, token, before


async def test_a_sandbox_paused_on_a_full_node_resumes_on_the_other(
    cluster: Cluster, tmp_path: Path
) -> None:
    key = await cluster.tenant(max_memory_mib=16384, max_disk_mib=16384, max_vcpus=16)
    await _set_node(cluster, "node-2", "draining")
    try:
        async with cluster.http(cluster.apis[0], key) as http:
            sid, token, before = await _paused_with_work(cluster, http, key)
            assert (await _row(cluster, sid))["node_id"] == "node-1"
            # node-1 fills up while it is paused: one more of its size, and no room for another.
            await cluster.sandbox(key, **BIG)
            r = await http.post("/v1/sandboxes", json={"ttl_s": 900, **BIG})
            assert r.status_code == 503, r.text
    finally:
        await _set_node(cluster, "node-2", "ready")
    old = await _row(cluster, sid)

    # Any call wakes it; node-1 has no room, so it moves to node-2 and starts there from its
    # checkpoint. Here an upload through the SDK and the other replica: streamed (over 64 KiB),
    # so the replica cannot send it on itself; it answers `sandbox_moved` and the SDK sends
    # it again, to node-2.
    local = tmp_path / "upload.bin"
    local.write_bytes(secrets.token_bytes(256 << 10))
    box = await AsyncSandbox.connect(sid, url=cluster.apis[1], api_key=key)
    try:
        assert await box.files.upload(local, "/work/upload.bin") == 256 << 10
    finally:
        await box.close()
    async with cluster.http(cluster.apis[1], key) as http:
        r = await http.post(f"/v1/sandboxes/{sid}/execs", json={"cmd": ["cat", "/work/note.txt"]})
        assert r.status_code == 200, r.text
        assert r.json()["stdout"] == "kept", r.json()
        r = await http.get(f"/v1/sandboxes/{sid}/files/work/upload.bin")
        assert r.content == local.read_bytes()
        again, _ = await count(http, sid, at_least=before + 5)
        assert again == token, "the counting process was restarted, not resumed"
    now = await _row(cluster, sid)
    assert (now["node_id"], now["state"]) == ("node-2", "running"), now
    # The first replica still has node-1 cached for it: node-1 says where it is now, and the
    # call goes on there.
    async with cluster.http(cluster.apis[0], key) as http:
        r = await http.get(f"/v1/sandboxes/{sid}/files/work/note.txt")
        assert (r.status_code, r.content) == (200, b"kept"), r.text
    assert now["runtime_id"] != old["runtime_id"] and now["pause_snapshot_id"] is None
    events = {e["action"]: e for e in await _events(cluster, key, sid)}
    assert events["sandbox.move"]["details"]["from_node"] == "node-1"
    assert events["sandbox.move"]["details"]["to_node"] == "node-2"
    assert events["sandbox.resume"]["details"]["from_checkpoint"] == old["pause_snapshot_id"]

    # node-1 lets go of its paused copy once the sandbox runs elsewhere.
    async def dropped() -> bool:
        rows = await cluster.fetch(
            "SELECT count(*) AS n FROM node_snapshots WHERE snapshot_id = $1",
            old["pause_snapshot_id"],
        )
        gone = not _runtime_dir(cluster, "node-1", old["runtime_id"]).exists()
        return rows[0]["n"] == 0 and gone

    assert await wait_for(dropped, 30), "the old node kept the checkpoint"


async def test_a_paused_sandbox_outlives_its_node(cluster: Cluster) -> None:
    key = await cluster.tenant(max_memory_mib=16384, max_disk_mib=16384, max_vcpus=16)
    async with cluster.http(cluster.apis[0], key) as http:
        sid, token, before = await _paused_with_work(cluster, http, key)
    row = await _row(cluster, sid)
    owner = row["node_id"]
    other = "node-2" if owner == "node-1" else "node-1"

    async def copied() -> bool:
        rows = await cluster.fetch(
            "SELECT n.node_id FROM node_snapshots n JOIN sandboxes s "
            "ON s.pause_snapshot_id = n.snapshot_id AND s.pause_digest = n.digest "
            "WHERE s.id = $1",
            sid,
        )
        return other in {r["node_id"] for r in rows}

    assert await wait_for(copied, 60), "no copy of the checkpoint reached the other node"

    cluster.kill(owner)

    async def moved() -> dict | None:
        now = await _row(cluster, sid)
        return now if now["node_id"] == other else None

    now = await wait_for(moved, 60)
    assert now and now["state"] == "paused", now
    # Through the replica that had the lost node cached for it.
    async with cluster.http(cluster.apis[0], key) as http:
        again, _ = await count(http, sid, at_least=before + 5)
        assert again == token, "the counting process was restarted, not resumed"
        r = await http.get(f"/v1/sandboxes/{sid}/files/work/note.txt")
        assert (r.status_code, r.content) == (200, b"kept")
        r = await http.get(f"/v1/sandboxes/{sid}")
        assert (r.json()["state"], r.json()["node_id"]) == ("running", other), r.json()
    events = {e["action"]: e for e in await _events(cluster, key, sid)}
    assert events["sandbox.move"]["details"]["reason"] == "node_lost"

    # The lost node comes back and drops what it held for the sandbox.
    cluster.restart(owner)
    old_dir = _runtime_dir(cluster, owner, row["runtime_id"])

    async def gone() -> bool:
        return not old_dir.exists()

    assert await wait_for(gone, 60), f"{old_dir} is still there"


async def test_a_paused_open_sandbox_is_not_resumed_open_elsewhere_after_open_was_revoked(
    cluster: Cluster,
) -> None:
    """A resume on another node starts a new runtime sandbox from the checkpoint: a birth, under
    the tenant's rules of now. The operator took `open` away while the sandbox was paused, so
    it stays paused there instead of coming back with an open network."""
    key = await cluster.tenant(network_open_allowed=True)
    async with cluster.http(cluster.apis[0], key) as http:
        sid = await cluster.sandbox(key, network={"mode": "open"})
        await pause(http, sid)
    row = await _row(cluster, sid)
    owner = row["node_id"]
    other = "node-2" if owner == "node-1" else "node-1"
    tenant_id = (await cluster.fetch("SELECT tenant_id FROM sandboxes WHERE id = $1", sid))[0][0]

    async def copied() -> bool:
        rows = await cluster.fetch(
            "SELECT n.node_id FROM node_snapshots n JOIN sandboxes s "
            "ON s.pause_snapshot_id = n.snapshot_id WHERE s.id = $1",
            sid,
        )
        return other in {r["node_id"] for r in rows}

    assert await wait_for(copied, 60), "no copy of the checkpoint reached the other node"
    async with cluster.http(cluster.apis[0], cluster.operator_key) as op:
        r = await op.patch(
            f"/v1/tenants/{tenant_id}", json={"quotas": {"network_open_allowed": False}}
        )
        assert r.status_code == 200, r.text
    cluster.kill(owner)
    try:

        async def moved() -> dict | None:
            now = await _row(cluster, sid)
            return now if now["node_id"] == other else None

        assert await wait_for(moved, 60), "the paused sandbox was not given to the other node"
        async with cluster.http(cluster.apis[0], key) as http:
            r = await http.post(f"/v1/sandboxes/{sid}/resume")
            assert r.status_code == 403, r.text
            assert "open network" in r.json()["detail"], r.text
        after = await _row(cluster, sid)
        assert (after["node_id"], after["state"]) == (other, "paused"), after
    finally:
        cluster.restart(owner)
