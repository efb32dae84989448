"""Sandboxes, their transitions, execs and exec output.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
BIGID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "sandboxes",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("failure_reason", sa.String(500), nullable=True),
        sa.Column("runtime", sa.String(16), nullable=True),
        sa.Column("runtime_id", sa.String(64), nullable=True),
        sa.Column("image", sa.String(200), nullable=False),
        sa.Column("template", sa.String(100), nullable=True),
        sa.Column("size", sa.String(16), nullable=False),
        sa.Column("cpus", sa.Integer(), nullable=False),
        sa.Column("memory_mib", sa.Integer(), nullable=False),
        sa.Column("disk_mib", sa.Integer(), nullable=False),
        sa.Column("network", sa.JSON(), nullable=False),
        sa.Column("env", sa.JSON(), nullable=False),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("ttl_s", sa.Integer(), nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=True),
        sa.Column("request_hash", sa.String(64), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=False),
        sa.Column("stopped_at", TS, nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_sandboxes_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sandboxes")),
        sa.UniqueConstraint("tenant_id", "idempotency_key", name="uq_sandboxes_tenant_idempotency"),
    )
    op.create_index("ix_sandboxes_tenant_id_id", "sandboxes", ["tenant_id", "id"])
    op.create_index("ix_sandboxes_state_expires_at", "sandboxes", ["state", "expires_at"])
    op.create_index(op.f("ix_sandboxes_runtime_id"), "sandboxes", ["runtime_id"])

    op.create_table(
        "sandbox_transitions",
        sa.Column("id", BIGID, autoincrement=True, nullable=False),
        sa.Column("sandbox_id", sa.String(40), nullable=False),
        sa.Column("from_state", sa.String(16), nullable=True),
        sa.Column("to_state", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(500), nullable=True),
        sa.Column("at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["sandbox_id"],
            ["sandboxes.id"],
            name=op.f("fk_sandbox_transitions_sandbox_id_sandboxes"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sandbox_transitions")),
    )
    op.create_index(
        op.f("ix_sandbox_transitions_sandbox_id"), "sandbox_transitions", ["sandbox_id"]
    )

    op.create_table(
        "execs",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("sandbox_id", sa.String(40), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("cmd", sa.JSON(), nullable=False),
        sa.Column("cwd", sa.String(1024), nullable=False),
        sa.Column("user", sa.String(64), nullable=True),
        sa.Column("env", sa.JSON(), nullable=False),
        sa.Column("secret_names", sa.JSON(), nullable=False),
        sa.Column("timeout_s", sa.Float(), nullable=False),
        sa.Column("has_stdin", sa.Boolean(), nullable=False),
        sa.Column("runtime_exec_id", sa.String(64), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("outcome", sa.String(16), nullable=True),
        sa.Column("stdout_bytes", sa.BigInteger(), nullable=False),
        sa.Column("stderr_bytes", sa.BigInteger(), nullable=False),
        sa.Column("stdout_truncated", sa.Boolean(), nullable=False),
        sa.Column("stderr_truncated", sa.Boolean(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("error", sa.String(500), nullable=True),
        sa.Column("idempotency_key", sa.String(200), nullable=True),
        sa.Column("request_hash", sa.String(64), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("started_at", TS, nullable=True),
        sa.Column("finished_at", TS, nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_execs_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["sandbox_id"],
            ["sandboxes.id"],
            name=op.f("fk_execs_sandbox_id_sandboxes"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_execs")),
        sa.UniqueConstraint("sandbox_id", "idempotency_key", name="uq_execs_sandbox_idempotency"),
    )
    op.create_index("ix_execs_sandbox_id_id", "execs", ["sandbox_id", "id"])
    op.create_index("ix_execs_tenant_id_created_at", "execs", ["tenant_id", "created_at"])
    op.create_index("ix_execs_state", "execs", ["state"])

    op.create_table(
        "exec_chunks",
        sa.Column("exec_id", sa.String(40), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("stream", sa.String(8), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["exec_id"], ["execs.id"], name=op.f("fk_exec_chunks_exec_id_execs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("exec_id", "seq", name=op.f("pk_exec_chunks")),
    )


def downgrade() -> None:
    op.drop_table("exec_chunks")
    op.drop_table("execs")
    op.drop_table("sandbox_transitions")
    op.drop_table("sandboxes")
