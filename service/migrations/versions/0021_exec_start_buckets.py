"""Execs started per tenant and second (`exec_start_buckets`), written with each start, so that
`execs_per_minute` sums at most 61 rows instead of counting every exec of the last minute. The
starts of the last 61 seconds are counted into it from `execs`, so an upgrade lets no tenant
past its rate.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-10
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

_FILL = {
    "postgresql": """
        INSERT INTO exec_start_buckets (tenant_id, second, starts)
        SELECT tenant_id, floor(extract(epoch FROM created_at))::bigint, count(*) FROM execs
        WHERE created_at >= now() - interval '61 seconds'
        GROUP BY 1, 2
    """,
    "sqlite": """
        INSERT INTO exec_start_buckets (tenant_id, second, starts)
        SELECT tenant_id, CAST(strftime('%s', created_at) AS INTEGER) AS second, count(*)
        FROM execs
        WHERE second >= CAST(strftime('%s', 'now') AS INTEGER) - 61
        GROUP BY 1, 2
    """,
}


def upgrade() -> None:
    op.create_table(
        "exec_start_buckets",
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("second", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("starts", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_exec_start_buckets_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "second", name=op.f("pk_exec_start_buckets")),
    )
    op.execute(_FILL[op.get_bind().dialect.name])


def downgrade() -> None:
    op.drop_table("exec_start_buckets")
