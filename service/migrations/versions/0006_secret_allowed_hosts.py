"""The hosts each tenant secret may be sent to.

Secrets stored before this revision get none: they are sent nowhere until their owner names
the hosts (`PUT /v1/secrets/{name}` with `allowed_hosts`).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tenant_secrets") as batch:
        batch.add_column(
            sa.Column("allowed_hosts", sa.JSON(), nullable=False, server_default=sa.text("'[]'"))
        )


def downgrade() -> None:
    with op.batch_alter_table("tenant_secrets") as batch:
        batch.drop_column("allowed_hosts")
