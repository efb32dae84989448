"""Sandboxes, their state transitions, usage samples, and the secret values their processes
were given."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from service.db.base import Base, UTCDateTime, utcnow


class Sandbox(Base):
    """A tenant's sandbox. The row is the record; the runtime's sandbox is a cache of it."""

    __tablename__ = "sandboxes"
    __table_args__ = (
        sa.Index("ix_sandboxes_tenant_id_id", "tenant_id", "id"),
        sa.Index("ix_sandboxes_state_expires_at", "state", "expires_at"),
        sa.UniqueConstraint("tenant_id", "idempotency_key", name="uq_sandboxes_tenant_idempotency"),
    )

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
    )
    state: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    failure_reason: Mapped[str | None] = mapped_column(sa.String(500), nullable=True)
    runtime: Mapped[str | None] = mapped_column(sa.String(16), nullable=True)
    runtime_id: Mapped[str | None] = mapped_column(sa.String(64), nullable=True, index=True)
    # The node that holds it (None: made before nodes were recorded, or never placed).
    node_id: Mapped[str | None] = mapped_column(sa.String(200), nullable=True, index=True)
    image: Mapped[str] = mapped_column(sa.String(200), nullable=False)
    template: Mapped[str | None] = mapped_column(sa.String(100), nullable=True)
    size: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    cpus: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    memory_mib: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    disk_mib: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    network: Mapped[dict[str, Any]] = mapped_column(sa.JSON, nullable=False)
    env: Mapped[dict[str, str]] = mapped_column(sa.JSON, nullable=False)
    labels: Mapped[dict[str, str]] = mapped_column(sa.JSON, nullable=False)
    # The template build it started from, and how: "image", "snapshot" or "pool".
    template_id: Mapped[str | None] = mapped_column(sa.String(40), nullable=True, index=True)
    template_version: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)
    started_from: Mapped[str | None] = mapped_column(sa.String(16), nullable=True)
    ttl_s: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    idempotency_key: Mapped[str | None] = mapped_column(sa.String(200), nullable=True)
    request_hash: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    stopped_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # Paused: since when, its checkpoint's size on the node's disk, and when it ends if it is
    # not resumed by then (the tenant's max_paused_s; `expires_at` stays the hard end).
    paused_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    pause_bytes: Mapped[int | None] = mapped_column(sa.BigInteger(), nullable=True)
    pause_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # The TCP connections to outside that its last checkpoint (a pause, a fork) cut (`local ->
    # remote`): kept after the resume, so its answer says what was lost, until the next.
    pause_cut: Mapped[list[str] | None] = mapped_column(sa.JSON, nullable=True)
    # The checkpoint as a snapshot another node can start it from, the node whose runtime took
    # it (and holds the paused runtime sandbox: `node_id` differs once it moved), and its
    # digest once that node read it through (copies are `node_snapshots` rows).
    pause_snapshot_id: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    pause_node_id: Mapped[str | None] = mapped_column(sa.String(200), nullable=True)
    pause_digest: Mapped[str | None] = mapped_column(sa.String(80), nullable=True)
    # Paused after this long without activity (None: never); the last activity seen.
    idle_timeout_s: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)
    last_activity_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class SandboxTransition(Base):
    """Every state change of a sandbox, in order."""

    __tablename__ = "sandbox_transitions"

    id: Mapped[int] = mapped_column(
        sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    sandbox_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("sandboxes.id", ondelete="CASCADE"), nullable=False, index=True
    )
    from_state: Mapped[str | None] = mapped_column(sa.String(16), nullable=True)
    to_state: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    reason: Mapped[str | None] = mapped_column(sa.String(500), nullable=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class TenantUsage(Base):
    """What a tenant holds, kept by the paths that write and delete it; a row of its own so
    that counting never waits on the tenant row's lock (sandbox creates hold it)."""

    __tablename__ = "tenant_usage"

    tenant_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    # The sum of `execs.stored_bytes`: finished execs' output in `exec_chunks`.
    stored_output_bytes: Mapped[int] = mapped_column(
        sa.BigInteger, nullable=False, default=0, server_default=sa.text("0")
    )


class SandboxSecretValue(Base):
    """A secret value an exec of the sandbox was given (`service.execs.sandbox_secrets`), sealed
    like a tenant's secrets with the tenant and the sandbox bound in: every exec of the sandbox
    masks it for the sandbox's life, also on another node or after a restart. Gone with the
    sandbox's row. A value may appear twice (two execs bringing it at once): read as a set."""

    __tablename__ = "sandbox_secret_values"

    id: Mapped[int] = mapped_column(
        sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    sandbox_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("sandboxes.id", ondelete="CASCADE"), nullable=False, index=True
    )
    tenant_id: Mapped[str] = mapped_column(sa.String(40), nullable=False)
    key_id: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    nonce: Mapped[bytes] = mapped_column(sa.LargeBinary, nullable=False)
    ciphertext: Mapped[bytes] = mapped_column(sa.LargeBinary, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
