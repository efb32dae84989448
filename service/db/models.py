"""The record: every table the service owns. Alembic migrations are built from this metadata."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from service.db.base import Base, Timestamped, UTCDateTime, utcnow


class Tenant(Timestamped, Base):
    __tablename__ = "tenants"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(100), nullable=False, unique=True)
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="active")
    quotas: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), nullable=False, default=utcnow, onupdate=utcnow
    )


class ApiKey(Timestamped, Base):
    __tablename__ = "api_keys"
    __table_args__ = (Index("ix_api_keys_tenant_id_id", "tenant_id", "id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
    )
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    # SHA-256 of the whole key; keys carry 256 random bits, so a fast hash is the right one.
    key_hash: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    prefix: Mapped[str] = mapped_column(String(16), nullable=False)
    scopes: Mapped[list[str]] = mapped_column(JSON, nullable=False)
    created_by: Mapped[str] = mapped_column(String(64), nullable=False)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class RevokedToken(Base):
    __tablename__ = "revoked_tokens"

    jti: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False, index=True
    )
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, index=True)
    revoked_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    revoked_by: Mapped[str] = mapped_column(String(64), nullable=False)


class AuditChainHead(Base):
    """The last link of each tenant's chain; locking this row serialises appends per tenant."""

    __tablename__ = "audit_chain_heads"

    chain: Mapped[str] = mapped_column(String(40), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, nullable=False)
    hash: Mapped[str] = mapped_column(String(64), nullable=False)
    # Events from this seq on are keyed (HMAC under the audit key); older ones plain SHA-256.
    keyed_from_seq: Mapped[int] = mapped_column(
        BigInteger, nullable=False, default=1, server_default=text("1")
    )
    # The last point a verify found the chain whole up to, with the audit key's MAC over it.
    verified_seq: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    verified_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    verified_mac: Mapped[str | None] = mapped_column(String(64), nullable=True)


class AuditEvent(Base):
    """Append-only. On PostgreSQL a trigger refuses UPDATE and DELETE except the retention purge."""

    __tablename__ = "audit_events"
    __table_args__ = (
        UniqueConstraint("chain", "seq", name="uq_audit_events_chain_seq"),
        Index("ix_audit_events_chain_ts", "chain", "ts"),
        Index("ix_audit_events_chain_action", "chain", "action"),
        Index("ix_audit_events_chain_target", "chain", "target"),
    )

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    # The chain is the tenant id, or "_operator" for operator actions that belong to no tenant.
    chain: Mapped[str] = mapped_column(String(40), nullable=False)
    seq: Mapped[int] = mapped_column(BigInteger, nullable=False)
    ts: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    actor: Mapped[str] = mapped_column(String(64), nullable=False)
    action: Mapped[str] = mapped_column(String(64), nullable=False)
    target: Mapped[str | None] = mapped_column(String(200), nullable=True)
    request_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    client: Mapped[str | None] = mapped_column(String(64), nullable=True)
    outcome: Mapped[str] = mapped_column(String(32), nullable=False)
    details: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    prev_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    hash: Mapped[str] = mapped_column(String(64), nullable=False)


class Node(Base):
    """A host that runs sandboxes (one `airlock` node process per host and state dir).

    It holds its place by a lease it renews (`lease_expires_at`, set from the database's
    clock); `incarnation` changes at every start of the process, so a process that lost its
    place (a restart took it over) can no longer renew it. States: `ready`, `draining` (no
    new sandboxes are placed there), `lost` (the lease ran out)."""

    __tablename__ = "nodes"
    __table_args__ = (Index("ix_nodes_state_lease_expires_at", "state", "lease_expires_at"),)

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    address: Mapped[str] = mapped_column(String(500), nullable=False)
    runtime: Mapped[str] = mapped_column(String(16), nullable=False)
    platform: Mapped[str | None] = mapped_column(String(32), nullable=True)
    vcpus: Mapped[float] = mapped_column(Float, nullable=False)
    memory_mib: Mapped[int] = mapped_column(Integer, nullable=False)
    disk_mib: Mapped[int] = mapped_column(Integer, nullable=False)
    pids: Mapped[int] = mapped_column(Integer, nullable=False)
    labels: Mapped[dict[str, str]] = mapped_column(JSON, nullable=False)
    version: Mapped[str] = mapped_column(String(64), nullable=False)
    state: Mapped[str] = mapped_column(String(16), nullable=False)
    incarnation: Mapped[str] = mapped_column(String(40), nullable=False)
    registered_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    lease_expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)


class NodeSnapshot(Base):
    """A copy of a template build's snapshot on a node's disk (the build's node, or one that
    fetched it from another and checked its digest)."""

    __tablename__ = "node_snapshots"
    __table_args__ = (Index("ix_node_snapshots_snapshot_id", "snapshot_id"),)

    node_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    snapshot_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    digest: Mapped[str] = mapped_column(String(80), nullable=False)
    size_bytes: Mapped[int] = mapped_column(BigInteger, nullable=False)
    stored_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)


class Sandbox(Base):
    """A tenant's sandbox. The row is the record; the runtime's sandbox is a cache of it."""

    __tablename__ = "sandboxes"
    __table_args__ = (
        Index("ix_sandboxes_tenant_id_id", "tenant_id", "id"),
        Index("ix_sandboxes_state_expires_at", "state", "expires_at"),
        UniqueConstraint("tenant_id", "idempotency_key", name="uq_sandboxes_tenant_idempotency"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
    )
    state: Mapped[str] = mapped_column(String(16), nullable=False)
    failure_reason: Mapped[str | None] = mapped_column(String(500), nullable=True)
    runtime: Mapped[str | None] = mapped_column(String(16), nullable=True)
    runtime_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    # The node that holds it (None: made before nodes were recorded, or never placed).
    node_id: Mapped[str | None] = mapped_column(String(200), nullable=True, index=True)
    image: Mapped[str] = mapped_column(String(200), nullable=False)
    template: Mapped[str | None] = mapped_column(String(100), nullable=True)
    size: Mapped[str] = mapped_column(String(16), nullable=False)
    cpus: Mapped[int] = mapped_column(Integer, nullable=False)
    memory_mib: Mapped[int] = mapped_column(Integer, nullable=False)
    disk_mib: Mapped[int] = mapped_column(Integer, nullable=False)
    network: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    env: Mapped[dict[str, str]] = mapped_column(JSON, nullable=False)
    labels: Mapped[dict[str, str]] = mapped_column(JSON, nullable=False)
    # The template build it started from, and how: "image", "snapshot" or "pool".
    template_id: Mapped[str | None] = mapped_column(String(40), nullable=True, index=True)
    template_version: Mapped[int | None] = mapped_column(Integer, nullable=True)
    started_from: Mapped[str | None] = mapped_column(String(16), nullable=True)
    ttl_s: Mapped[int] = mapped_column(Integer, nullable=False)
    idempotency_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    request_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    stopped_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # Paused: since when, its checkpoint's size on the node's disk, and when it ends if it is
    # not resumed by then (the tenant's max_paused_s; `expires_at` stays the hard end).
    paused_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    pause_bytes: Mapped[int | None] = mapped_column(BigInteger(), nullable=True)
    pause_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # The TCP connections to outside that its last checkpoint (a pause, a fork) cut (`local ->
    # remote`): kept after the resume, so its answer says what was lost, until the next.
    pause_cut: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    # The checkpoint as a snapshot another node can start it from, the node whose runtime took
    # it (and holds the paused runtime sandbox: `node_id` differs once it moved), and its
    # digest once that node read it through (copies are `node_snapshots` rows).
    pause_snapshot_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    pause_node_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    pause_digest: Mapped[str | None] = mapped_column(String(80), nullable=True)
    # Paused after this long without activity (None: never); the last activity seen.
    idle_timeout_s: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_activity_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class SandboxTransition(Base):
    """Every state change of a sandbox, in order."""

    __tablename__ = "sandbox_transitions"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    sandbox_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("sandboxes.id", ondelete="CASCADE"), nullable=False, index=True
    )
    from_state: Mapped[str | None] = mapped_column(String(16), nullable=True)
    to_state: Mapped[str] = mapped_column(String(16), nullable=False)
    reason: Mapped[str | None] = mapped_column(String(500), nullable=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class Exec(Base):
    """One command in a sandbox. Holds argv with secrets masked, never a secret value."""

    __tablename__ = "execs"
    __table_args__ = (
        Index("ix_execs_sandbox_id_id", "sandbox_id", "id"),
        Index("ix_execs_tenant_id_created_at", "tenant_id", "created_at"),
        Index("ix_execs_state", "state"),
        # The oldest finished execs of a tenant that still hold output: what a trim deletes.
        Index(
            "ix_execs_tenant_id_stored",
            "tenant_id",
            "created_at",
            postgresql_where=text("stored_bytes > 0"),
            sqlite_where=text("stored_bytes > 0"),
        ),
        UniqueConstraint("sandbox_id", "idempotency_key", name="uq_execs_sandbox_idempotency"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
    )
    sandbox_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("sandboxes.id", ondelete="CASCADE"), nullable=False
    )
    state: Mapped[str] = mapped_column(String(16), nullable=False)
    cmd: Mapped[list[str]] = mapped_column(JSON, nullable=False)
    cwd: Mapped[str] = mapped_column(String(1024), nullable=False)
    user: Mapped[str | None] = mapped_column(String(64), nullable=True)
    env: Mapped[dict[str, str]] = mapped_column(JSON, nullable=False)
    secret_names: Mapped[list[str]] = mapped_column(JSON, nullable=False)
    timeout_s: Mapped[float] = mapped_column(Float, nullable=False)
    has_stdin: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    # It runs under a pseudo-terminal (its stderr merged into stdout).
    tty: Mapped[bool] = mapped_column(
        Boolean, nullable=False, default=False, server_default=text("false")
    )
    runtime_exec_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    outcome: Mapped[str | None] = mapped_column(String(16), nullable=True)
    stdout_bytes: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    stderr_bytes: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    stdout_truncated: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    stderr_truncated: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    duration_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(String(500), nullable=True)
    idempotency_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    request_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # Bytes of this exec's output in `exec_chunks`, counted into its tenant's usage when the
    # exec ended; NULL while it runs (not counted yet).
    stored_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # Its output was deleted (age or the tenant's cap); the record stays.
    output_purged: Mapped[bool] = mapped_column(
        Boolean, nullable=False, default=False, server_default=text("false")
    )


class ExecChunk(Base):
    """Output of an exec in arrival order, secrets already masked; `seq` is the SSE event id."""

    __tablename__ = "exec_chunks"

    exec_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("execs.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    stream: Mapped[str] = mapped_column(String(8), nullable=False)
    data: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)


class TenantUsage(Base):
    """What a tenant holds, kept by the paths that write and delete it; a row of its own so
    that counting never waits on the tenant row's lock (sandbox creates hold it)."""

    __tablename__ = "tenant_usage"

    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    # The sum of `execs.stored_bytes`: finished execs' output in `exec_chunks`.
    stored_output_bytes: Mapped[int] = mapped_column(
        BigInteger, nullable=False, default=0, server_default=text("0")
    )


class ExecStartBucket(Base):
    """How many execs a tenant started in one second (`second`: whole seconds since the epoch),
    written with each start; `execs_per_minute` is checked against the sum of the last 61, so
    its cost does not grow with the tenant's rate (service/execs/recording.py)."""

    __tablename__ = "exec_start_buckets"

    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True
    )
    second: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    starts: Mapped[int] = mapped_column(Integer, nullable=False)


class Template(Base):
    """A named recipe (image + setup steps) owned by a tenant, or by the operator (`owner` is
    `_operator`) and then shared with every tenant. Each build is a `TemplateVersion`."""

    __tablename__ = "templates"
    __table_args__ = (UniqueConstraint("owner", "name", name="uq_templates_owner_name"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    owner: Mapped[str] = mapped_column(String(40), nullable=False)
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    latest_version: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class TemplateVersion(Base):
    """One build of a template: `queued` → `building` → `ready` | `failed`; the job claims it."""

    __tablename__ = "template_versions"
    __table_args__ = (
        UniqueConstraint("template_id", "version", name="uq_template_versions_template_id"),
        Index("ix_template_versions_state", "state"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    template_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("templates.id", ondelete="CASCADE"), nullable=False
    )
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    state: Mapped[str] = mapped_column(String(16), nullable=False)
    image: Mapped[str] = mapped_column(String(200), nullable=False)
    setup: Mapped[list[list[str]]] = mapped_column(JSON, nullable=False)
    size: Mapped[str] = mapped_column(String(16), nullable=False)
    cpus: Mapped[int] = mapped_column(Integer, nullable=False)
    memory_mib: Mapped[int] = mapped_column(Integer, nullable=False)
    disk_mib: Mapped[int] = mapped_column(Integer, nullable=False)
    env: Mapped[dict[str, str]] = mapped_column(JSON, nullable=False)
    network: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    build_log: Mapped[str] = mapped_column(Text, nullable=False, default="")
    error: Mapped[str | None] = mapped_column(String(500), nullable=True)
    runtime: Mapped[str | None] = mapped_column(String(16), nullable=True)
    # None when the runtime could not snapshot: sandboxes then start from the image + setup.
    snapshot_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # The node that ran the build (its snapshot is on that node's disk), and the sha256 of the
    # snapshot as it moves to other nodes (None: it cannot move; sandboxes start on that node).
    node_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    snapshot_digest: Mapped[str | None] = mapped_column(String(80), nullable=True)
    # A version made from a sandbox's state (POST /v1/templates with from_sandbox): built on
    # that sandbox's node, by a snapshot of it, with no setup steps.
    source_sandbox_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    snapshot_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class PoolTarget(Base):
    """How many started sandboxes of a template (its newest ready version) and size to keep."""

    __tablename__ = "pool_targets"
    __table_args__ = (UniqueConstraint("template_id", "size", name="uq_pool_targets_template_id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    template_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("templates.id", ondelete="CASCADE"), nullable=False
    )
    size: Mapped[str] = mapped_column(String(16), nullable=False)
    target: Mapped[int] = mapped_column(Integer, nullable=False)
    last_refill_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    last_refill_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class PoolMember(Base):
    """A started sandbox waiting to be claimed: `starting` → `ready` → `claimed` (or removed).

    Members live on one runtime host (`host`); only that host claims and refills them.
    """

    __tablename__ = "pool_members"
    __table_args__ = (
        Index("ix_pool_members_pool_id_state", "pool_id", "state"),
        UniqueConstraint("sandbox_id", name="uq_pool_members_sandbox_id"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    pool_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("pool_targets.id", ondelete="CASCADE"), nullable=False
    )
    version_id: Mapped[str] = mapped_column(String(40), nullable=False)
    host: Mapped[str] = mapped_column(String(200), nullable=False)
    state: Mapped[str] = mapped_column(String(16), nullable=False)
    runtime: Mapped[str | None] = mapped_column(String(16), nullable=True)
    runtime_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    from_snapshot: Mapped[bool] = mapped_column(Boolean, nullable=False)
    sandbox_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    ready_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    claimed_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class PoolRequest(Base):
    """One create that matched a pool, claimed or not: the record behind fair shares and the
    claim/miss figures (kept a day)."""

    __tablename__ = "pool_requests"
    __table_args__ = (Index("ix_pool_requests_pool_id_at", "pool_id", "at"),)

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    pool_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("pool_targets.id", ondelete="CASCADE"), nullable=False
    )
    tenant_id: Mapped[str] = mapped_column(String(40), nullable=False)
    claimed: Mapped[bool] = mapped_column(Boolean, nullable=False)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class Review(Base):
    """A pull-request review: `queued` → `running` → `finished` | `failed`, run as a job.

    `stages` is the ordered list of what ran, each with its outcome and duration; the rest is
    the report. Test output and diff stats are capped before they are stored."""

    __tablename__ = "reviews"
    __table_args__ = (
        Index("ix_reviews_tenant_id_id", "tenant_id", "id"),
        Index("ix_reviews_state", "state"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
    )
    created_by: Mapped[str] = mapped_column(String(64), nullable=False)
    state: Mapped[str] = mapped_column(String(16), nullable=False)
    # The node running it (its sandbox is there); it puts the review back when it restarts.
    node_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    repo: Mapped[str] = mapped_column(String(2048), nullable=False)
    base: Mapped[str] = mapped_column(String(256), nullable=False)
    head: Mapped[str] = mapped_column(String(256), nullable=False)
    template: Mapped[str | None] = mapped_column(String(100), nullable=True)
    size: Mapped[str] = mapped_column(String(16), nullable=False)
    install: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    test: Mapped[list[str]] = mapped_column(JSON, nullable=False)
    timeout_s: Mapped[int] = mapped_column(Integer, nullable=False)
    network: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    # A reference to a tenant secret for a private repository (`secret`, `username`), never
    # the value.
    credentials: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    stages: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False, default=list)
    base_commit: Mapped[str | None] = mapped_column(String(64), nullable=True)
    head_commit: Mapped[str | None] = mapped_column(String(64), nullable=True)
    sandbox_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    diff_stat: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    install_exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    install_outcome: Mapped[str | None] = mapped_column(String(16), nullable=True)
    test_exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    test_outcome: Mapped[str | None] = mapped_column(String(16), nullable=True)
    test_output: Mapped[str | None] = mapped_column(Text, nullable=True)
    verdict: Mapped[str | None] = mapped_column(String(20), nullable=True)
    reasoning: Mapped[str | None] = mapped_column(Text, nullable=True)
    model_used: Mapped[str | None] = mapped_column(String(200), nullable=True)
    model_verdict: Mapped[str | None] = mapped_column(String(20), nullable=True)
    error: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class ReviewBaseline(Base):
    """The base's test results of a finished review, kept for the next review of the same base:
    its `key` is a digest of everything the run depended on (repository, base commit, install
    and test commands, template or size and image, the results plugin), so a match ran the same
    tests on the same code. Only trusted results are kept."""

    __tablename__ = "review_baselines"
    __table_args__ = (UniqueConstraint("tenant_id", "key", name="uq_review_baselines_tenant_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
    )
    key: Mapped[str] = mapped_column(String(64), nullable=False)
    # The review whose run these results are.
    review_id: Mapped[str] = mapped_column(String(40), nullable=False)
    # {"outcomes": {test id: outcome}, "plugins": [...], "collect_errors": [...]}
    results: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class ReviewBundle(Base):
    """A git bundle a tenant uploaded, to be reviewed without the host fetching anything."""

    __tablename__ = "review_bundles"
    __table_args__ = (Index("ix_review_bundles_tenant_id_id", "tenant_id", "id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
    )
    size: Mapped[int] = mapped_column(BigInteger, nullable=False)
    sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class ReviewBundleChunk(Base):
    """A bundle's bytes in order, in pieces of at most `reviews.repository.BUNDLE_PIECE` bytes:
    written as the upload arrives and read back one at a time, never the whole bundle."""

    __tablename__ = "review_bundle_chunks"

    bundle_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("review_bundles.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    data: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)


class TenantSecret(Base):
    """A tenant's named secret, its value sealed with AES-GCM (`service.secrets.crypto`):
    the tenant id and the name are bound in, so a copied row does not decrypt."""

    __tablename__ = "tenant_secrets"
    __table_args__ = (
        UniqueConstraint("tenant_id", "name", name="uq_tenant_secrets_tenant_id_name"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
    )
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    key_id: Mapped[str] = mapped_column(String(16), nullable=False)
    nonce: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    ciphertext: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    # The hosts the value may be sent to (`service.secrets.hosts`); none: sent nowhere.
    allowed_hosts: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    created_by: Mapped[str] = mapped_column(String(64), nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class SandboxSecretValue(Base):
    """A secret value an exec of the sandbox was given (`service.execs.sandbox_secrets`), sealed
    like a tenant's secrets with the tenant and the sandbox bound in: every exec of the sandbox
    masks it for the sandbox's life, also on another node or after a restart. Gone with the
    sandbox's row. A value may appear twice (two execs bringing it at once): read as a set."""

    __tablename__ = "sandbox_secret_values"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    sandbox_id: Mapped[str] = mapped_column(
        String(40), ForeignKey("sandboxes.id", ondelete="CASCADE"), nullable=False, index=True
    )
    tenant_id: Mapped[str] = mapped_column(String(40), nullable=False)
    key_id: Mapped[str] = mapped_column(String(16), nullable=False)
    nonce: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    ciphertext: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class RequestBucket(Base):
    """A request-rate bucket the API's processes share on PostgreSQL (service/ratelimit/
    shared.py): its tokens as of `refilled_at` (the database's clock, seconds since the epoch)
    and how many the last claim took. On SQLite, where one process counts in memory, unused."""

    __tablename__ = "request_buckets"

    key: Mapped[str] = mapped_column(String(120), primary_key=True)
    tokens: Mapped[float] = mapped_column(Float, nullable=False)
    refilled_at: Mapped[float] = mapped_column(Float, nullable=False)
    granted: Mapped[int] = mapped_column(Integer, nullable=False)


class RunningSlot(Base):
    """A piece of a tenant's work in flight (a transfer, a port connection) held by one API
    process, on PostgreSQL (service/ratelimit/slots.py): `holder` is the process, `seq` its
    count; the slot counts against the tenant's quota for `kind` until it is released or
    `lease_until` passes (the holder renews it while the work runs). On SQLite, where one
    process counts in memory, unused."""

    __tablename__ = "running_slots"
    __table_args__ = (Index("ix_running_slots_tenant_id_kind", "tenant_id", "kind"),)

    holder: Mapped[str] = mapped_column(String(32), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    tenant_id: Mapped[str] = mapped_column(String(40), nullable=False)
    kind: Mapped[str] = mapped_column(String(32), nullable=False)
    lease_until: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
