"""Stored exec output counted per tenant: each exec's stored bytes and whether its output was
purged, and a `tenant_usage` row per tenant holding their sum.

Existing rows are counted from `exec_chunks`: a finished exec's stored bytes are its chunks'
bytes (running ones stay uncounted until they end), and a finished exec that printed something
but holds no chunk any more had its output purged by age.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("execs") as batch:
        batch.add_column(sa.Column("stored_bytes", sa.BigInteger(), nullable=True))
        batch.add_column(
            sa.Column(
                "output_purged", sa.Boolean(), nullable=False, server_default=sa.text("false")
            )
        )
    op.create_table(
        "tenant_usage",
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column(
            "stored_output_bytes", sa.BigInteger(), nullable=False, server_default=sa.text("0")
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_tenant_usage_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_tenant_usage")),
    )
    # length() of a bytea/blob is its size in bytes on both PostgreSQL and SQLite.
    op.execute(
        "UPDATE execs SET stored_bytes = (SELECT coalesce(sum(length(c.data)), 0) "
        "FROM exec_chunks c WHERE c.exec_id = execs.id) WHERE state <> 'running'"
    )
    op.execute(
        "UPDATE execs SET output_purged = true WHERE state <> 'running' AND stored_bytes = 0 "
        "AND stdout_bytes + stderr_bytes > 0"
    )
    op.execute(
        "INSERT INTO tenant_usage (tenant_id, stored_output_bytes) "
        "SELECT t.id, (SELECT coalesce(sum(e.stored_bytes), 0) FROM execs e "
        "WHERE e.tenant_id = t.id) FROM tenants t"
    )
    op.create_index(
        "ix_execs_tenant_id_stored",
        "execs",
        ["tenant_id", "created_at"],
        postgresql_where=sa.text("stored_bytes > 0"),
        sqlite_where=sa.text("stored_bytes > 0"),
    )


def downgrade() -> None:
    op.drop_index("ix_execs_tenant_id_stored", table_name="execs")
    op.drop_table("tenant_usage")
    with op.batch_alter_table("execs") as batch:
        batch.drop_column("output_purged")
        batch.drop_column("stored_bytes")
