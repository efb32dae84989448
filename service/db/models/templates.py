"""Templates and their built versions, and the warm pools of their sandboxes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from service.db.base import Base, UTCDateTime, utcnow


class Template(Base):
    """A named recipe (image + setup steps) owned by a tenant, or by the operator (`owner` is
    `_operator`) and then shared with every tenant. Each build is a `TemplateVersion`."""

    __tablename__ = "templates"
    __table_args__ = (sa.UniqueConstraint("owner", "name", name="uq_templates_owner_name"),)

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)
    owner: Mapped[str] = mapped_column(sa.String(40), nullable=False)
    name: Mapped[str] = mapped_column(sa.String(100), nullable=False)
    latest_version: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class TemplateVersion(Base):
    """One build of a template: `queued` → `building` → `ready` | `failed`; the job claims it."""

    __tablename__ = "template_versions"
    __table_args__ = (
        sa.UniqueConstraint("template_id", "version", name="uq_template_versions_template_id"),
        sa.Index("ix_template_versions_state", "state"),
    )

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)
    template_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("templates.id", ondelete="CASCADE"), nullable=False
    )
    version: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    state: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    image: Mapped[str] = mapped_column(sa.String(200), nullable=False)
    setup: Mapped[list[list[str]]] = mapped_column(sa.JSON, nullable=False)
    size: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    cpus: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    memory_mib: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    disk_mib: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    env: Mapped[dict[str, str]] = mapped_column(sa.JSON, nullable=False)
    network: Mapped[dict[str, Any]] = mapped_column(sa.JSON, nullable=False)
    attempts: Mapped[int] = mapped_column(sa.Integer, nullable=False, default=0)
    build_log: Mapped[str] = mapped_column(sa.Text, nullable=False, default="")
    error: Mapped[str | None] = mapped_column(sa.String(500), nullable=True)
    runtime: Mapped[str | None] = mapped_column(sa.String(16), nullable=True)
    # None when the runtime could not snapshot: sandboxes then start from the image + setup.
    snapshot_id: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    # The node that ran the build (its snapshot is on that node's disk), and the sha256 of the
    # snapshot as it moves to other nodes (None: it cannot move; sandboxes start on that node).
    node_id: Mapped[str | None] = mapped_column(sa.String(200), nullable=True)
    snapshot_digest: Mapped[str | None] = mapped_column(sa.String(80), nullable=True)
    # A version made from a sandbox's state (POST /v1/templates with from_sandbox): built on
    # that sandbox's node, by a snapshot of it, with no setup steps.
    source_sandbox_id: Mapped[str | None] = mapped_column(sa.String(40), nullable=True)
    snapshot_bytes: Mapped[int | None] = mapped_column(sa.BigInteger, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class PoolTarget(Base):
    """How many started sandboxes of a template (its newest ready version) and size to keep."""

    __tablename__ = "pool_targets"
    __table_args__ = (
        sa.UniqueConstraint("template_id", "size", name="uq_pool_targets_template_id"),
    )

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)
    template_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("templates.id", ondelete="CASCADE"), nullable=False
    )
    size: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    target: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    last_refill_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    last_refill_ms: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class PoolMember(Base):
    """A started sandbox waiting to be claimed: `starting` → `ready` → `claimed` (or removed).

    Members live on one runtime host (`host`); only that host claims and refills them.
    """

    __tablename__ = "pool_members"
    __table_args__ = (
        sa.Index("ix_pool_members_pool_id_state", "pool_id", "state"),
        sa.UniqueConstraint("sandbox_id", name="uq_pool_members_sandbox_id"),
    )

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)
    pool_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("pool_targets.id", ondelete="CASCADE"), nullable=False
    )
    version_id: Mapped[str] = mapped_column(sa.String(40), nullable=False)
    host: Mapped[str] = mapped_column(sa.String(200), nullable=False)
    state: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    runtime: Mapped[str | None] = mapped_column(sa.String(16), nullable=True)
    runtime_id: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    from_snapshot: Mapped[bool] = mapped_column(sa.Boolean, nullable=False)
    sandbox_id: Mapped[str | None] = mapped_column(sa.String(40), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    ready_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    claimed_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class PoolRequest(Base):
    """One create that matched a pool, claimed or not: the record behind fair shares and the
    claim/miss figures (kept a day)."""

    __tablename__ = "pool_requests"
    __table_args__ = (sa.Index("ix_pool_requests_pool_id_at", "pool_id", "at"),)

    id: Mapped[int] = mapped_column(
        sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    pool_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("pool_targets.id", ondelete="CASCADE"), nullable=False
    )
    tenant_id: Mapped[str] = mapped_column(sa.String(40), nullable=False)
    claimed: Mapped[bool] = mapped_column(sa.Boolean, nullable=False)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
