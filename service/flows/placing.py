"""What a create asks of placement (service.nodes.placement), read from its body before it is
forwarded: a replica picks a node by it. Handed to the node router where the app is put
together."""

from __future__ import annotations

import msgspec
from sqlalchemy import select

from service.db.models import NodeSnapshot, PoolMember
from service.db.session import Db
from service.nodes.placement import Ask
from service.sandboxes import sizes
from service.sandboxes.schemas import SandboxCreate
from service.templates.repository import template_for


async def asked(db: Db, tenant_id: str, body: bytes) -> Ask:
    """What a create asks for. A body that does not decode asks for the default size (the
    node's answer then says what is wrong with it)."""
    try:
        data = msgspec.json.decode(body, type=SandboxCreate)
    except (msgspec.DecodeError, msgspec.ValidationError):
        data = SandboxCreate()
    if data.template is None:
        _, cpus, memory, disk = sizes.caps_of(data)
        return Ask(float(cpus), memory, disk)
    async with db() as session:
        _, version = await template_for(session, tenant_id, data)
        warm = set(
            await session.scalars(
                select(PoolMember.host)
                .where(PoolMember.version_id == version.id, PoolMember.state == "ready")
                .distinct()
            )
        )
        holding = (
            set(
                await session.scalars(
                    select(NodeSnapshot.node_id).where(
                        NodeSnapshot.snapshot_id == version.snapshot_id
                    )
                )
            )
            if version.snapshot_id is not None
            else set()
        )
    # A snapshot that cannot move is on the disk of the node that built it alone.
    only_on = (
        version.node_id
        if version.snapshot_id is not None and version.snapshot_digest is None
        else None
    )
    return Ask(
        float(version.cpus),
        version.memory_mib,
        version.disk_mib,
        only_on,
        frozenset(warm),
        frozenset(holding),
        # A snapshot restores on the runtime that took it.
        version.runtime if version.snapshot_id is not None else None,
    )
