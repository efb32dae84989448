"""Snapshots across nodes: the sha256 of each template build's snapshot
(`template_versions.snapshot_digest`, of the tar stream it moves as), which nodes hold a copy
(`node_snapshots`), and the node each running review is on (`reviews.node_id`).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("template_versions") as batch:
        batch.add_column(sa.Column("snapshot_digest", sa.String(80), nullable=True))
    op.create_table(
        "node_snapshots",
        sa.Column("node_id", sa.String(200), nullable=False),
        sa.Column("snapshot_id", sa.String(64), nullable=False),
        sa.Column("digest", sa.String(80), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("stored_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("node_id", "snapshot_id", name=op.f("pk_node_snapshots")),
    )
    op.create_index("ix_node_snapshots_snapshot_id", "node_snapshots", ["snapshot_id"])
    with op.batch_alter_table("reviews") as batch:
        batch.add_column(sa.Column("node_id", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("reviews") as batch:
        batch.drop_column("node_id")
    op.drop_index("ix_node_snapshots_snapshot_id", table_name="node_snapshots")
    op.drop_table("node_snapshots")
    with op.batch_alter_table("template_versions") as batch:
        batch.drop_column("snapshot_digest")
