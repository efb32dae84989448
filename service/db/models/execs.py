"""Execs, their stored output, and the per-second start counts the rate quota reads."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from service.db.base import Base, UTCDateTime, utcnow


class Exec(Base):
    """One command in a sandbox. Holds argv with secrets masked, never a secret value."""

    __tablename__ = "execs"
    __table_args__ = (
        sa.Index("ix_execs_sandbox_id_id", "sandbox_id", "id"),
        sa.Index("ix_execs_tenant_id_created_at", "tenant_id", "created_at"),
        # The running execs of a tenant (what `max_running_execs` counts at each start).
        sa.Index(
            "ix_execs_running",
            "tenant_id",
            postgresql_where=sa.text("state = 'running'"),
            sqlite_where=sa.text("state = 'running'"),
        ),
        # The oldest finished execs of a tenant that still hold output: what a trim deletes.
        sa.Index(
            "ix_execs_tenant_id_stored",
            "tenant_id",
            "created_at",
            postgresql_where=sa.text("stored_bytes > 0"),
            sqlite_where=sa.text("stored_bytes > 0"),
        ),
        sa.UniqueConstraint("sandbox_id", "idempotency_key", name="uq_execs_sandbox_idempotency"),
    )

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
    )
    sandbox_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("sandboxes.id", ondelete="CASCADE"), nullable=False
    )
    state: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    cmd: Mapped[list[str]] = mapped_column(sa.JSON, nullable=False)
    cwd: Mapped[str] = mapped_column(sa.String(1024), nullable=False)
    user: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    env: Mapped[dict[str, str]] = mapped_column(sa.JSON, nullable=False)
    secret_names: Mapped[list[str]] = mapped_column(sa.JSON, nullable=False)
    timeout_s: Mapped[float] = mapped_column(sa.Float, nullable=False)
    has_stdin: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, default=False)
    # It runs under a pseudo-terminal (its stderr merged into stdout).
    tty: Mapped[bool] = mapped_column(
        sa.Boolean, nullable=False, default=False, server_default=sa.text("false")
    )
    runtime_exec_id: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    exit_code: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)
    outcome: Mapped[str | None] = mapped_column(sa.String(16), nullable=True)
    stdout_bytes: Mapped[int] = mapped_column(sa.BigInteger, nullable=False, default=0)
    stderr_bytes: Mapped[int] = mapped_column(sa.BigInteger, nullable=False, default=0)
    stdout_truncated: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, default=False)
    stderr_truncated: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, default=False)
    duration_ms: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(sa.String(500), nullable=True)
    idempotency_key: Mapped[str | None] = mapped_column(sa.String(200), nullable=True)
    request_hash: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # Bytes of this exec's output in `exec_chunks`, counted into its tenant's usage when the
    # exec ended; NULL while it runs (not counted yet).
    stored_bytes: Mapped[int | None] = mapped_column(sa.BigInteger, nullable=True)
    # Its output was deleted (age or the tenant's cap); the record stays.
    output_purged: Mapped[bool] = mapped_column(
        sa.Boolean, nullable=False, default=False, server_default=sa.text("false")
    )


class ExecChunk(Base):
    """Output of an exec in arrival order, secrets already masked; `seq` is the SSE event id."""

    __tablename__ = "exec_chunks"

    exec_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("execs.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=False)
    stream: Mapped[str] = mapped_column(sa.String(8), nullable=False)
    data: Mapped[bytes] = mapped_column(sa.LargeBinary, nullable=False)


class ExecStartBucket(Base):
    """How many execs a tenant started in one second (`second`: whole seconds since the epoch),
    written with each start; `execs_per_minute` is checked against the sum of the last 61, so
    its cost does not grow with the tenant's rate (service/execs/recording.py)."""

    __tablename__ = "exec_start_buckets"

    tenant_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    second: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    starts: Mapped[int] = mapped_column(sa.Integer, nullable=False)
