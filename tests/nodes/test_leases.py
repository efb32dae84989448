"""Nodes hold their place by a lease: renewed in time they stay, late they are lost, and a
process that another start of the same node replaced can no longer renew."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.background import LOST_NODE_REQUEUES
from service.db import models
from service.db.models import Node
from service.errors import ConfigurationError
from service.ids import new_id
from service.nodes.heartbeat import NodeHeartbeat, node_id_for
from service.nodes.leases import DRAINING, LOST, READY, REPLACED, Leases, NodeInfo
from service.nodes.local import describe, local_node_id
from service.nodes.snapshots import forget_unused
from service.nodes.sweep import NodeSweep, sweep_once
from service.runtime.holder import RuntimeHolder
from service.settings import Settings

pytestmark = pytest.mark.sqlite


def info(node_id: str, **changes: object) -> NodeInfo:
    base = {
        "id": node_id,
        "address": "http://10.0.0.5:8081",
        "runtime": "gvisor",
        "platform": "systrap",
        "vcpus": 16.0,
        "memory_mib": 65536,
        "disk_mib": 512000,
        "pids": 100000,
        "version": "test",
        "labels": {"kvm": "false"},
    }
    return NodeInfo(**{**base, **changes})  # type: ignore[arg-type]


async def row(db: async_sessionmaker[AsyncSession], node_id: str) -> Node:
    async with db() as session:
        found = await session.scalar(select(Node).where(Node.id == node_id))
        assert found is not None
        return found


async def age(db: async_sessionmaker[AsyncSession], node_id: str, by: timedelta) -> None:
    """Move the node's lease into the past, as if it had not renewed for `by`."""
    async with db() as session, session.begin():
        lease = (await row(db, node_id)).lease_expires_at
        await session.execute(
            update(Node).where(Node.id == node_id).values(lease_expires_at=lease - by)
        )


async def test_register_renew_and_lose(sessionmaker: async_sessionmaker[AsyncSession]) -> None:
    leases = Leases(sessionmaker, lease_s=15)
    node_id = f"node-{id(leases)}"
    incarnation = await leases.register(info(node_id))
    first = await row(sessionmaker, node_id)
    assert (first.state, first.address, first.vcpus) == (READY, "http://10.0.0.5:8081", 16.0)
    assert first.lease_expires_at > first.registered_at
    await asyncio.sleep(0.01)
    assert await leases.renew(node_id, incarnation) == READY
    assert (await row(sessionmaker, node_id)).lease_expires_at >= first.lease_expires_at

    assert node_id not in await leases.mark_lost()  # still within its lease
    await age(sessionmaker, node_id, timedelta(seconds=60))
    assert node_id in await leases.mark_lost()
    assert (await row(sessionmaker, node_id)).state == LOST
    # late renewals do not bring it back: it must register again (and reconcile)
    assert await leases.renew(node_id, incarnation) == LOST
    again = await leases.register(info(node_id, address="http://10.0.0.6:8081"))
    assert again != incarnation
    back = await row(sessionmaker, node_id)
    assert (back.state, back.address) == (READY, "http://10.0.0.6:8081")


async def test_a_replaced_process_cannot_renew(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    leases = Leases(sessionmaker, lease_s=15)
    node_id = f"node-{id(leases)}-r"
    old = await leases.register(info(node_id))
    new = await leases.register(info(node_id))  # the node restarted
    assert await leases.renew(node_id, old) == REPLACED
    assert await leases.renew(node_id, new) == READY


async def test_drain_survives_a_restart(sessionmaker: async_sessionmaker[AsyncSession]) -> None:
    leases = Leases(sessionmaker, lease_s=15)
    node_id = f"node-{id(leases)}-d"
    incarnation = await leases.register(info(node_id))
    assert await leases.set_state(node_id, DRAINING)
    assert await leases.renew(node_id, incarnation) == DRAINING
    await leases.register(info(node_id))
    assert (await row(sessionmaker, node_id)).state == DRAINING
    assert not await leases.set_state("no-such-node", DRAINING)


def test_node_ids_are_url_safe_and_per_state_dir(tmp_path: Path) -> None:
    a = node_id_for(tmp_path / "a", "Build.Host_01.example.org")
    b = node_id_for(tmp_path / "b", "Build.Host_01.example.org")
    assert a.startswith("build-host-01-example-org-") and a != b
    assert node_id_for(tmp_path / "a", "Build.Host_01.example.org") == a
    assert re.fullmatch(r"[a-z0-9-]+", a)


async def test_the_heartbeat_registers_again_when_lost_and_stops_when_replaced(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    leases = Leases(sessionmaker, lease_s=15)
    node_id = f"node-{id(leases)}-h"
    registered: list[str] = []

    async def describe() -> NodeInfo:
        return info(node_id)

    async def on_registered(found: str) -> None:
        registered.append(found)

    beat = NodeHeartbeat(leases, describe, 5, on_registered)
    await beat.run_once()
    assert (beat.state, registered) == (READY, [node_id])
    first = beat.incarnation
    await beat.run_once()  # a plain renewal
    assert (beat.incarnation, registered) == (first, [node_id])
    await age(sessionmaker, node_id, timedelta(seconds=60))
    assert node_id in await leases.mark_lost()
    await beat.run_once()  # lost: registers again (and the runtime reconciles)
    assert beat.incarnation != first and registered == [node_id, node_id]
    assert beat.state == READY
    other = await leases.register(info(node_id))  # another process started as this node
    await beat.run_once()
    assert beat.retired and registered == [node_id, node_id]
    assert await leases.renew(node_id, other) == READY  # the newer start keeps the place


def test_this_hosts_node_describes_itself(settings: Settings) -> None:
    described = describe(settings, RuntimeHolder.of(None), "9.9.9")  # type: ignore[arg-type]
    assert described.id == local_node_id(settings) == node_id_for(settings.state_dir)
    assert described.address == f"http://{settings.host}:{settings.port}"
    assert described.vcpus >= 1 and described.memory_mib >= 256 and described.pids > 0
    assert described.disk_mib > 0 and described.version == "9.9.9"


@pytest.mark.parametrize(
    "env",
    [
        {"AIRLOCK_NODE_ID": "Has/Slash"},
        {"AIRLOCK_NODE_ID": "-dash-first"},
        {"AIRLOCK_NODE_HEARTBEAT_S": "20", "AIRLOCK_NODE_LEASE_S": "15"},
        {"AIRLOCK_NODE_HEARTBEAT_S": "0"},
    ],
)
def test_node_settings_are_checked(env: dict[str, str]) -> None:
    with pytest.raises(ConfigurationError):
        Settings.from_env(env)


async def test_a_lost_nodes_sandboxes_fail_with_node_lost(
    api: Any, tenant: Any, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    leases = Leases(sessionmaker, lease_s=15)
    node_id = f"node-{id(leases)}-s"
    await leases.register(info(node_id))
    other = f"node-{id(leases)}-t"
    await leases.register(info(other))
    now = datetime.now(UTC)
    ids = {}
    async with sessionmaker() as session, session.begin():
        for name, on, state in (
            ("held", node_id, "running"),
            ("elsewhere", other, "running"),
            ("done", node_id, "stopped"),
        ):
            row = models.Sandbox(
                id=new_id("sbx"), tenant_id=tenant.id, node_id=on, state=state, image="default",
                size="small", cpus=1, memory_mib=512, disk_mib=1024, network={"mode": "none"},
                env={}, labels={}, ttl_s=60, created_at=now, updated_at=now, expires_at=now,
            )  # fmt: skip
            session.add(row)
            ids[name] = row.id
    assert not set(ids.values()) & set(
        await sweep_once(sessionmaker, leases, requeues=LOST_NODE_REQUEUES)
    )  # none is late
    await age(sessionmaker, node_id, timedelta(seconds=60))
    failed = set(await sweep_once(sessionmaker, leases, requeues=LOST_NODE_REQUEUES))
    # (another process's sweep may have failed it first: the states below are what counts)
    assert not {ids["elsewhere"], ids["done"]} & failed
    async with sessionmaker() as session:
        states = dict(
            (await session.execute(select(models.Sandbox.id, models.Sandbox.state))).all()
        )
        reason = await session.scalar(
            select(models.Sandbox.failure_reason).where(models.Sandbox.id == ids["held"])
        )
    assert (states[ids["held"]], reason) == ("failed", "node_lost")
    assert states[ids["elsewhere"]] == "running" and states[ids["done"]] == "stopped"
    assert ids["held"] not in await sweep_once(
        sessionmaker, leases, requeues=LOST_NODE_REQUEUES
    )  # nothing twice
    # A process never calls its own node lost: it runs, so its lease is only late.
    await age(sessionmaker, other, timedelta(seconds=60))
    assert ids["elsewhere"] not in await sweep_once(
        sessionmaker, leases, own_node=other, requeues=LOST_NODE_REQUEUES
    )
    async with sessionmaker() as session:
        assert (await session.get(Node, other)).state == READY  # type: ignore[union-attr]
    r = await api.client.get("/v1/audit", headers=tenant.headers, params={"limit": 5})
    assert any(
        e["action"] == "sandbox.fail" and e["target"] == ids["held"] for e in r.json()["items"]
    )


async def test_a_lost_nodes_paused_sandbox_moves_to_a_node_holding_its_checkpoint(
    api: Any, tenant: Any, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    leases = Leases(sessionmaker, lease_s=15)
    lost, holder, bystander = (f"node-{id(leases)}-{n}" for n in ("p", "q", "r"))
    for node in (lost, holder, bystander):
        await leases.register(info(node))
    now = datetime.now(UTC)
    ids = {}
    async with sessionmaker() as session, session.begin():
        paused = (("copied", "sha256:aa"), ("uncopied", None), ("mismatch", "sha256:bb"))
        for name, digest in paused:
            row = models.Sandbox(
                id=new_id("sbx"), tenant_id=tenant.id, node_id=lost, state="paused",
                image="default", size="small", cpus=1, memory_mib=512, disk_mib=1024,
                network={"mode": "none"}, env={}, labels={}, ttl_s=60, created_at=now,
                updated_at=now, expires_at=now, pause_snapshot_id=f"snap_{name}",
                pause_digest=digest,
            )  # fmt: skip
            session.add(row)
            ids[name] = row.id
        # A verified copy of the first on `holder`; of the third, one whose digest differs.
        for snapshot, digest in (("snap_copied", "sha256:aa"), ("snap_mismatch", "sha256:00")):
            copy = models.NodeSnapshot(
                node_id=holder, snapshot_id=snapshot, digest=digest, size_bytes=1, stored_at=now
            )
            session.add(copy)
    await age(sessionmaker, lost, timedelta(seconds=60))
    failed = set(await sweep_once(sessionmaker, leases, requeues=LOST_NODE_REQUEUES))
    assert ids["copied"] not in failed
    async with sessionmaker() as session:
        rows = {
            r.id: (r.state, r.node_id, r.failure_reason)
            for r in await session.scalars(
                select(models.Sandbox).where(models.Sandbox.id.in_(ids.values()))
            )
        }
    assert rows[ids["copied"]] == ("paused", holder, None)
    assert rows[ids["uncopied"]] == ("failed", lost, "node_lost")
    assert rows[ids["mismatch"]] == ("failed", lost, "node_lost")
    r = await api.client.get("/v1/audit", headers=tenant.headers, params={"limit": 10})
    moves = [e for e in r.json()["items"] if e["action"] == "sandbox.move"]
    assert [(e["target"], e["details"]) for e in moves] == [
        (ids["copied"], {"from_node": lost, "to_node": holder, "reason": "node_lost"})
    ]


async def test_a_lost_nodes_builds_go_back_in_the_queue(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    """Another node builds them again; what other nodes are building stays theirs."""
    leases = Leases(sessionmaker, lease_s=15)
    lost, alive = f"node-{id(leases)}-b", f"node-{id(leases)}-c"
    for node in (lost, alive):
        await leases.register(info(node))
    now = datetime.now(UTC)
    versions = {}
    async with sessionmaker() as session, session.begin():
        template = models.Template(
            id=new_id("tpl"), owner="operator", name=f"t-{id(leases)}", latest_version=2,
            created_at=now, updated_at=now,
        )  # fmt: skip
        session.add(template)
        await session.flush()
        for number, node in ((1, lost), (2, alive)):
            row = models.TemplateVersion(
                id=new_id("tpv"), template_id=template.id, version=number, state="building",
                image="default", setup=[], size="small", cpus=1, memory_mib=512, disk_mib=1024,
                env={}, network={"mode": "none"}, attempts=1, node_id=node, created_at=now,
            )  # fmt: skip
            session.add(row)
            versions[node] = row.id
    await age(sessionmaker, lost, timedelta(seconds=60))
    await sweep_once(sessionmaker, leases, requeues=LOST_NODE_REQUEUES)
    async with sessionmaker() as session:
        rows = {
            v.id: (v.state, v.node_id)
            for v in await session.scalars(
                select(models.TemplateVersion).where(
                    models.TemplateVersion.id.in_(list(versions.values()))
                )
            )
        }
    assert rows[versions[lost]] == ("queued", None)
    assert rows[versions[alive]] == ("building", alive)


async def test_copies_of_deleted_templates_snapshots_are_dropped(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    """At a node's start: its copies no template version refers to go (the runtime is asked to
    delete exactly those), the others stay."""
    node = f"node-{id(sessionmaker)}-g"
    now = datetime.now(UTC)
    kept, dropped = f"snap-{id(node):024x}"[:29], f"snap-{id(now):024x}"[:29]
    async with sessionmaker() as session, session.begin():
        template = models.Template(
            id=new_id("tpl"), owner="operator", name=f"g-{id(node)}", latest_version=1,
            created_at=now, updated_at=now,
        )  # fmt: skip
        session.add(template)
        await session.flush()
        session.add(
            models.TemplateVersion(
                id=new_id("tpv"), template_id=template.id, version=1, state="ready",
                image="default", setup=[], size="small", cpus=1, memory_mib=512, disk_mib=1024,
                env={}, network={"mode": "none"}, attempts=1, snapshot_id=kept, created_at=now,
            )
        )  # fmt: skip
        for snapshot_id in (kept, dropped):
            session.add(
                models.NodeSnapshot(
                    node_id=node, snapshot_id=snapshot_id, digest="sha256:x", size_bytes=1,
                    stored_at=now,
                )
            )  # fmt: skip

    class Deletes:
        asked: list[str] = []

        async def delete_snapshot(self, snapshot_id: str) -> None:
            self.asked.append(snapshot_id)

    runtime = Deletes()
    assert await forget_unused(sessionmaker, runtime, node) == 1  # type: ignore[arg-type]
    assert runtime.asked == [dropped]
    async with sessionmaker() as session:
        left = set(
            await session.scalars(
                select(models.NodeSnapshot.snapshot_id).where(models.NodeSnapshot.node_id == node)
            )
        )
    assert left == {kept}


async def test_no_node_is_judged_until_the_database_answered_for_a_lease(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    """After the database was out of reach (a failover), no node could renew: the sweep waits
    a whole lease of reaching it before it calls anyone lost."""
    leases = Leases(sessionmaker, lease_s=15)
    node = f"node-{id(leases)}-o"
    await leases.register(info(node))
    await age(sessionmaker, node, timedelta(seconds=60))
    sweep = NodeSweep(sessionmaker, leases, interval_s=1, requeues=LOST_NODE_REQUEUES)
    await sweep.run_once()  # the first pass only starts the clock
    assert (await row(sessionmaker, node)).state == READY
    assert sweep.reachable_since is not None
    sweep.reachable_since -= 16  # as if it had reached the database for a whole lease
    await sweep.run_once()
    assert (await row(sessionmaker, node)).state == LOST
