"""Tenants, their API keys and secrets, and what limits their requests."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from service.db.base import Base, Timestamped, UTCDateTime, utcnow


class Tenant(Timestamped, Base):
    __tablename__ = "tenants"

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(100), nullable=False, unique=True)
    status: Mapped[str] = mapped_column(sa.String(16), nullable=False, default="active")
    quotas: Mapped[dict[str, Any]] = mapped_column(sa.JSON, nullable=False, default=dict)
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), nullable=False, default=utcnow, onupdate=utcnow
    )


class ApiKey(Timestamped, Base):
    __tablename__ = "api_keys"
    __table_args__ = (sa.Index("ix_api_keys_tenant_id_id", "tenant_id", "id"),)

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
    )
    name: Mapped[str] = mapped_column(sa.String(100), nullable=False)
    # SHA-256 of the whole key; keys carry 256 random bits, so a fast hash is the right one.
    key_hash: Mapped[str] = mapped_column(sa.String(64), nullable=False, unique=True)
    prefix: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    scopes: Mapped[list[str]] = mapped_column(sa.JSON, nullable=False)
    created_by: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class RevokedToken(Base):
    __tablename__ = "revoked_tokens"

    jti: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False, index=True
    )
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, index=True)
    revoked_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    revoked_by: Mapped[str] = mapped_column(sa.String(64), nullable=False)


class TenantSecret(Base):
    """A tenant's named secret, its value sealed with AES-GCM (`service.secrets.crypto`):
    the tenant id and the name are bound in, so a copied row does not decrypt."""

    __tablename__ = "tenant_secrets"
    __table_args__ = (
        sa.UniqueConstraint("tenant_id", "name", name="uq_tenant_secrets_tenant_id_name"),
    )

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
    )
    name: Mapped[str] = mapped_column(sa.String(100), nullable=False)
    key_id: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    nonce: Mapped[bytes] = mapped_column(sa.LargeBinary, nullable=False)
    ciphertext: Mapped[bytes] = mapped_column(sa.LargeBinary, nullable=False)
    # The hosts the value may be sent to (`service.secrets.hosts`); none: sent nowhere.
    allowed_hosts: Mapped[list[str]] = mapped_column(sa.JSON, nullable=False, default=list)
    created_by: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class RequestBucket(Base):
    """A request-rate bucket the API's processes share on PostgreSQL (service/ratelimit/
    shared.py): its tokens as of `refilled_at` (the database's clock, seconds since the epoch)
    and how many the last claim took. On SQLite, where one process counts in memory, unused."""

    __tablename__ = "request_buckets"

    key: Mapped[str] = mapped_column(sa.String(120), primary_key=True)
    tokens: Mapped[float] = mapped_column(sa.Float, nullable=False)
    refilled_at: Mapped[float] = mapped_column(sa.Float, nullable=False)
    granted: Mapped[int] = mapped_column(sa.Integer, nullable=False)


class RunningSlot(Base):
    """A piece of a tenant's work in flight (a transfer, a port connection) held by one API
    process, on PostgreSQL (service/ratelimit/slots.py): `holder` is the process, `seq` its
    count; the slot counts against the tenant's quota for `kind` until it is released or
    `lease_until` passes (the holder renews it while the work runs). On SQLite, where one
    process counts in memory, unused."""

    __tablename__ = "running_slots"
    __table_args__ = (sa.Index("ix_running_slots_tenant_id_kind", "tenant_id", "kind"),)

    holder: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    seq: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    tenant_id: Mapped[str] = mapped_column(sa.String(40), nullable=False)
    kind: Mapped[str] = mapped_column(sa.String(32), nullable=False)
    lease_until: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
