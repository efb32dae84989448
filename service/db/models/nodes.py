"""The hosts that run sandboxes, and the snapshot copies each holds."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from service.db.base import Base, UTCDateTime


class Node(Base):
    """A host that runs sandboxes (one `airlock` node process per host and state dir).

    It holds its place by a lease it renews (`lease_expires_at`, set from the database's
    clock); `incarnation` changes at every start of the process, so a process that lost its
    place (a restart took it over) can no longer renew it. States: `ready`, `draining` (no
    new sandboxes are placed there), `lost` (the lease ran out)."""

    __tablename__ = "nodes"
    __table_args__ = (sa.Index("ix_nodes_state_lease_expires_at", "state", "lease_expires_at"),)

    id: Mapped[str] = mapped_column(sa.String(200), primary_key=True)
    address: Mapped[str] = mapped_column(sa.String(500), nullable=False)
    runtime: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    platform: Mapped[str | None] = mapped_column(sa.String(32), nullable=True)
    vcpus: Mapped[float] = mapped_column(sa.Float, nullable=False)
    memory_mib: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    disk_mib: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    pids: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    labels: Mapped[dict[str, str]] = mapped_column(sa.JSON, nullable=False)
    version: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    state: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    incarnation: Mapped[str] = mapped_column(sa.String(40), nullable=False)
    registered_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    lease_expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)


class NodeSnapshot(Base):
    """A copy of a template build's snapshot on a node's disk (the build's node, or one that
    fetched it from another and checked its digest)."""

    __tablename__ = "node_snapshots"
    __table_args__ = (sa.Index("ix_node_snapshots_snapshot_id", "snapshot_id"),)

    node_id: Mapped[str] = mapped_column(sa.String(200), primary_key=True)
    snapshot_id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    digest: Mapped[str] = mapped_column(sa.String(80), nullable=False)
    size_bytes: Mapped[int] = mapped_column(sa.BigInteger, nullable=False)
    stored_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
