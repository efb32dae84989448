"""The node each template build ran on (`template_versions.node_id`): its snapshot lives there,
and only that node puts the build back in the queue when it restarts.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("template_versions") as batch:
        batch.add_column(sa.Column("node_id", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("template_versions") as batch:
        batch.drop_column("node_id")
