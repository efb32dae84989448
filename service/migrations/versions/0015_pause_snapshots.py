"""A paused sandbox's checkpoint as a snapshot other nodes can fetch: its id, the node whose
runtime took it, and, once that node has read it through, its digest
(`sandboxes.pause_snapshot_id`, `pause_node_id`, `pause_digest`).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sandboxes") as batch:
        batch.add_column(sa.Column("pause_snapshot_id", sa.String(64), nullable=True))
        batch.add_column(sa.Column("pause_digest", sa.String(80), nullable=True))
        batch.add_column(sa.Column("pause_node_id", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sandboxes") as batch:
        batch.drop_column("pause_node_id")
        batch.drop_column("pause_digest")
        batch.drop_column("pause_snapshot_id")
