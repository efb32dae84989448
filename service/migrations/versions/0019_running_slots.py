"""Slots of work in flight shared by the API's processes on PostgreSQL (`running_slots`: one row
per transfer or port connection a process holds for a tenant, with a lease the process renews).
UNLOGGED there: a slot is worth nothing after a crash, and taking one then commits without
waiting for the WAL.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-08
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    unlogged = ["UNLOGGED"] if op.get_bind().dialect.name == "postgresql" else []
    op.create_table(
        "running_slots",
        sa.Column("holder", sa.String(32), nullable=False),
        sa.Column("seq", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("holder", "seq", name=op.f("pk_running_slots")),
        prefixes=unlogged,
    )
    op.create_index("ix_running_slots_tenant_id_kind", "running_slots", ["tenant_id", "kind"])


def downgrade() -> None:
    op.drop_index("ix_running_slots_tenant_id_kind", table_name="running_slots")
    op.drop_table("running_slots")
