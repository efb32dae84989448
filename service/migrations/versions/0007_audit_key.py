"""The audit chain keyed with the server's audit key, and the last verified point of each chain.

Chains that exist now stay plain SHA-256 up to their head: `keyed_from_seq` is the first event
hashed with the key. New chains are keyed from their first event.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("audit_chain_heads") as batch:
        batch.add_column(
            sa.Column(
                "keyed_from_seq", sa.BigInteger(), nullable=False, server_default=sa.text("1")
            )
        )
        batch.add_column(sa.Column("verified_seq", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("verified_hash", sa.String(64), nullable=True))
        batch.add_column(sa.Column("verified_mac", sa.String(64), nullable=True))
    op.execute("UPDATE audit_chain_heads SET keyed_from_seq = seq + 1")


def downgrade() -> None:
    with op.batch_alter_table("audit_chain_heads") as batch:
        batch.drop_column("verified_mac")
        batch.drop_column("verified_hash")
        batch.drop_column("verified_seq")
        batch.drop_column("keyed_from_seq")
