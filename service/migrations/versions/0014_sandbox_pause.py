"""Pause and idle sleep of sandboxes (when one was paused, the size of its checkpoint, when a
paused one ends, its idle timeout and its last activity), and template versions made from a
sandbox (`template_versions.source_sandbox_id`).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sandboxes") as batch:
        batch.add_column(sa.Column("paused_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("pause_bytes", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("pause_expires_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("idle_timeout_s", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("last_activity_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("template_versions") as batch:
        batch.add_column(sa.Column("source_sandbox_id", sa.String(40), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("template_versions") as batch:
        batch.drop_column("source_sandbox_id")
    with op.batch_alter_table("sandboxes") as batch:
        for column in (
            "last_activity_at",
            "idle_timeout_s",
            "pause_expires_at",
            "pause_bytes",
            "paused_at",
        ):
            batch.drop_column(column)
