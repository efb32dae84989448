"""Snapshots across nodes: content-addressed, fetched on demand, verified, cached. Template
builds' snapshots, and paused sandboxes' checkpoints (service.nodes.moves), alike.

A build's snapshot is made on the node that ran the build. Its digest is the sha256 of the tar
stream the runtime exports it as (the same bytes every time: runtime/snapshot_files.py), kept
on the template version; each node that holds a copy has a `node_snapshots` row. When a node
is asked to start a sandbox from a snapshot it does not have (a create placed there, a warm pool
member of its share), it fetches the snapshot from a node that has one, over that node's
internal route, checks the digest as the bytes arrive, and only a copy whose digest matches
becomes usable (runtime.import_snapshot keeps nothing of a stream that fails). One fetch per
snapshot at a time in a node; the next start finds it on disk.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import aiohttp
from sqlalchemy import delete, select

from service.db.base import utcnow
from service.db.models import Node, NodeSnapshot, Sandbox, TemplateVersion
from service.db.session import Db
from service.errors import NotFound
from service.nodes.credentials import NodeCredentials
from service.nodes.leases import LOST, db_now
from service.runtime import SandboxRuntime, SandboxRuntimeError, SnapshotInfo, SnapshotNotFound
from service.streaming import Body

log = logging.getLogger("airlock.nodes.snapshots")

ROUTE = "/internal/v1/snapshots"
# The states in which a sandbox's checkpoint is still needed.
PAUSE_HELD = ["pausing", "paused", "resuming"]
FETCH_CONNECT_S = 5.0


class DigestMismatch(SandboxRuntimeError):
    def __init__(self, snapshot_id: str, source: str, got: str, want: str) -> None:
        super().__init__(f"snapshot {snapshot_id} from {source} has digest {got}, not {want}")


async def digest_of(runtime: SandboxRuntime, snapshot_id: str) -> str:
    sha = hashlib.sha256()
    async for chunk in runtime.export_snapshot(snapshot_id):
        sha.update(chunk)
    return f"sha256:{sha.hexdigest()}"


async def record_copy(db: Db, node_id: str, snapshot_id: str, digest: str, size: int) -> None:
    async with db() as session, session.begin():
        await session.execute(
            delete(NodeSnapshot).where(
                NodeSnapshot.node_id == node_id, NodeSnapshot.snapshot_id == snapshot_id
            )
        )
        session.add(
            NodeSnapshot(
                node_id=node_id,
                snapshot_id=snapshot_id,
                digest=digest,
                size_bytes=size,
                stored_at=utcnow(),
            )
        )


async def forget_unused(db: Db, runtime: SandboxRuntime, node_id: str) -> int:
    """Delete this node's copies of snapshots nothing refers to any more: no template version
    (their template was deleted while this node could not be told), no paused sandbox (it
    was resumed or deleted); how many."""
    async with db() as session:
        unused = list(
            await session.scalars(
                select(NodeSnapshot.snapshot_id).where(
                    NodeSnapshot.node_id == node_id,
                    NodeSnapshot.snapshot_id.not_in(
                        select(TemplateVersion.snapshot_id).where(
                            TemplateVersion.snapshot_id.is_not(None)
                        )
                    ),
                    NodeSnapshot.snapshot_id.not_in(
                        select(Sandbox.pause_snapshot_id).where(
                            Sandbox.pause_snapshot_id.is_not(None),
                            Sandbox.state.in_(PAUSE_HELD),
                        )
                    ),
                )
            )
        )
    for snapshot_id in unused:
        try:
            await runtime.delete_snapshot(snapshot_id)
        except SandboxRuntimeError as exc:
            log.warning("snapshot copy %s left: %s", snapshot_id, exc)
            continue
        async with db() as session, session.begin():
            await session.execute(
                delete(NodeSnapshot).where(
                    NodeSnapshot.node_id == node_id, NodeSnapshot.snapshot_id == snapshot_id
                )
            )
    return len(unused)


class SnapshotFetcher:
    def __init__(self, db: Db, credentials: NodeCredentials, node_id: str) -> None:
        self.db = db
        self.credentials = credentials
        self.node_id = node_id
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}  # and how many calls use it

    async def fetch(self, runtime: SandboxRuntime, snapshot_id: str) -> bool:
        """Bring the snapshot to this node; False when no node can give a verified copy (or
        it cannot move at all)."""
        if not runtime.supports("move_snapshots"):
            return False
        lock, users = self._locks.get(snapshot_id, (asyncio.Lock(), 0))
        self._locks[snapshot_id] = (lock, users + 1)
        try:
            async with lock:
                return await self._fetch_one(runtime, snapshot_id)
        finally:
            lock, users = self._locks[snapshot_id]
            if users == 1:  # the last call for it: every pause makes a new id, so none stay
                del self._locks[snapshot_id]
            else:
                self._locks[snapshot_id] = (lock, users - 1)

    async def _fetch_one(self, runtime: SandboxRuntime, snapshot_id: str) -> bool:
        digest, sources = await self._sources(snapshot_id)
        if digest is None:
            return False
        for node_id, address in sources:
            try:
                info = await self._fetch_from(runtime, snapshot_id, digest, node_id, address)
            except (aiohttp.ClientError, TimeoutError, SandboxRuntimeError, OSError) as exc:
                log.warning("snapshot %s from node %s: %s", snapshot_id, node_id, exc)
                continue
            await record_copy(self.db, self.node_id, snapshot_id, digest, info.size_bytes)
            log.info(
                "snapshot %s fetched from node %s (%d bytes, %s verified)",
                snapshot_id,
                node_id,
                info.size_bytes,
                digest,
            )
            return True
        return False

    async def _sources(self, snapshot_id: str) -> tuple[str | None, list[tuple[str, str]]]:
        async with self.db() as session:
            digest = await session.scalar(
                select(TemplateVersion.snapshot_digest)
                .where(TemplateVersion.snapshot_id == snapshot_id)
                .limit(1)
            ) or await session.scalar(
                select(Sandbox.pause_digest)
                .where(Sandbox.pause_snapshot_id == snapshot_id)
                .limit(1)
            )
            rows = (
                await session.execute(
                    select(Node.id, Node.address)
                    .join(NodeSnapshot, NodeSnapshot.node_id == Node.id)
                    .where(
                        NodeSnapshot.snapshot_id == snapshot_id,
                        NodeSnapshot.digest == digest,
                        Node.id != self.node_id,
                        Node.state != LOST,
                        Node.lease_expires_at > db_now(session),
                    )
                )
            ).all()
        sources = [(r[0], r[1]) for r in rows]
        random.shuffle(sources)  # spread the fetches of many nodes over the copies
        return digest, sources

    async def _fetch_from(
        self, runtime: SandboxRuntime, snapshot_id: str, digest: str, node_id: str, address: str
    ) -> SnapshotInfo:
        url = f"{address.rstrip('/')}{ROUTE}/{snapshot_id}"
        headers = {"Authorization": f"Bearer {self.credentials.mint_node(self.node_id, node_id)}"}
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=FETCH_CONNECT_S, sock_read=60)
        async with (
            aiohttp.ClientSession(timeout=timeout, auto_decompress=False) as http,
            http.get(url, headers=headers) as response,
        ):
            if response.status != 200:
                raise SandboxRuntimeError(f"{url} answered {response.status}")
            return await runtime.import_snapshot(
                snapshot_id, _verified(response.content.iter_chunked(1 << 20), snapshot_id,
                                       node_id, digest)
            )  # fmt: skip


async def _verified(
    chunks: AsyncIterable[bytes], snapshot_id: str, source: str, digest: str
) -> AsyncIterator[bytes]:
    """The chunks, and at their end an error unless their sha256 is `digest` (the import then
    keeps nothing)."""
    sha = hashlib.sha256()
    async for chunk in chunks:
        sha.update(chunk)
        yield chunk
    got = f"sha256:{sha.hexdigest()}"
    if got != digest:
        raise DigestMismatch(snapshot_id, source, got, digest)


class FetchingRuntime:
    """The node's runtime, with snapshots it lacks fetched from other nodes when a start from
    one is asked; everything else goes straight to the runtime."""

    def __init__(self, runtime: SandboxRuntime, fetcher: SnapshotFetcher) -> None:
        self._runtime = runtime
        self._fetcher = fetcher

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runtime, name)

    async def create_from_snapshot(self, snapshot_id: str, private: list[str] | None = None) -> Any:
        try:
            return await self._runtime.create_from_snapshot(snapshot_id, private)
        except SnapshotNotFound:
            if not await self._fetcher.fetch(self._runtime, snapshot_id):
                raise
        return await self._runtime.create_from_snapshot(snapshot_id, private)


async def export(runtime: SandboxRuntime, snapshot_id: str) -> Body:
    """A snapshot this node holds, as the tar another node fetches; NotFound if it has none."""
    chunks = runtime.export_snapshot(snapshot_id)
    try:
        first = await anext(chunks)
    except (SnapshotNotFound, StopAsyncIteration):
        raise NotFound(f"no snapshot {snapshot_id} on this node") from None
    return Body(first, chunks)
