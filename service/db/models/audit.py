"""The tamper-evident audit log: one hash chain per tenant and its head."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from service.db.base import Base, UTCDateTime


class AuditChainHead(Base):
    """The last link of each tenant's chain; locking this row serialises appends per tenant."""

    __tablename__ = "audit_chain_heads"

    chain: Mapped[str] = mapped_column(sa.String(40), primary_key=True)
    seq: Mapped[int] = mapped_column(sa.BigInteger, nullable=False)
    hash: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    # Events from this seq on are keyed (HMAC under the audit key); older ones plain SHA-256.
    keyed_from_seq: Mapped[int] = mapped_column(
        sa.BigInteger, nullable=False, default=1, server_default=sa.text("1")
    )
    # The last point a verify found the chain whole up to, with the audit key's MAC over it.
    verified_seq: Mapped[int | None] = mapped_column(sa.BigInteger, nullable=True)
    verified_hash: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    verified_mac: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)


class AuditEvent(Base):
    """Append-only. On PostgreSQL a trigger refuses UPDATE and DELETE except the retention purge."""

    __tablename__ = "audit_events"
    __table_args__ = (
        sa.UniqueConstraint("chain", "seq", name="uq_audit_events_chain_seq"),
        sa.Index("ix_audit_events_chain_ts", "chain", "ts"),
        sa.Index("ix_audit_events_chain_action", "chain", "action"),
        sa.Index("ix_audit_events_chain_target", "chain", "target"),
    )

    id: Mapped[int] = mapped_column(
        sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    # The chain is the tenant id, or "_operator" for operator actions that belong to no tenant.
    chain: Mapped[str] = mapped_column(sa.String(40), nullable=False)
    seq: Mapped[int] = mapped_column(sa.BigInteger, nullable=False)
    ts: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    actor: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    action: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    target: Mapped[str | None] = mapped_column(sa.String(200), nullable=True)
    request_id: Mapped[str | None] = mapped_column(sa.String(128), nullable=True)
    client: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    outcome: Mapped[str] = mapped_column(sa.String(32), nullable=False)
    details: Mapped[dict[str, Any]] = mapped_column(sa.JSON, nullable=False, default=dict)
    prev_hash: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    hash: Mapped[str] = mapped_column(sa.String(64), nullable=False)
