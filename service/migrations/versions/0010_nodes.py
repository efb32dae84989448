"""Nodes: the hosts that run sandboxes, each holding its place by a renewed lease, and the
node each sandbox is on (`sandboxes.node_id`, empty for sandboxes made before).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "nodes",
        sa.Column("id", sa.String(200), nullable=False),
        sa.Column("address", sa.String(500), nullable=False),
        sa.Column("runtime", sa.String(16), nullable=False),
        sa.Column("platform", sa.String(32), nullable=True),
        sa.Column("vcpus", sa.Float(), nullable=False),
        sa.Column("memory_mib", sa.Integer(), nullable=False),
        sa.Column("disk_mib", sa.Integer(), nullable=False),
        sa.Column("pids", sa.Integer(), nullable=False),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("incarnation", sa.String(40), nullable=False),
        sa.Column("registered_at", TS, nullable=False),
        sa.Column("lease_expires_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_nodes")),
    )
    op.create_index(
        "ix_nodes_state_lease_expires_at", "nodes", ["state", "lease_expires_at"], unique=False
    )
    with op.batch_alter_table("sandboxes") as batch:
        batch.add_column(sa.Column("node_id", sa.String(200), nullable=True))
        batch.create_index(batch.f("ix_sandboxes_node_id"), ["node_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("sandboxes") as batch:
        batch.drop_index(batch.f("ix_sandboxes_node_id"))
        batch.drop_column("node_id")
    op.drop_index("ix_nodes_state_lease_expires_at", table_name="nodes")
    op.drop_table("nodes")
