"""Request-rate buckets shared by the API's processes on PostgreSQL (`request_buckets`: a key
per tenant and class of route or per address, its tokens, when they were counted, and the last
claim's size). UNLOGGED there: a bucket is worth nothing after a crash (all start full again),
and a claim then commits without waiting for the WAL.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    unlogged = ["UNLOGGED"] if op.get_bind().dialect.name == "postgresql" else []
    op.create_table(
        "request_buckets",
        sa.Column("key", sa.String(120), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("refilled_at", sa.Float(), nullable=False),
        sa.Column("granted", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_request_buckets")),
        prefixes=unlogged,
    )


def downgrade() -> None:
    op.drop_table("request_buckets")
