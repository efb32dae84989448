"""Whether an exec runs under a pseudo-terminal (`execs.tty`); every earlier exec did not.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("execs") as batch:
        batch.add_column(
            sa.Column("tty", sa.Boolean(), nullable=False, server_default=sa.text("false"))
        )


def downgrade() -> None:
    with op.batch_alter_table("execs") as batch:
        batch.drop_column("tty")
