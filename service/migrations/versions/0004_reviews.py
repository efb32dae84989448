"""Pull-request reviews and the git bundles tenants upload for them.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "reviews",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("created_by", sa.String(64), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("repo", sa.String(2048), nullable=False),
        sa.Column("base", sa.String(256), nullable=False),
        sa.Column("head", sa.String(256), nullable=False),
        sa.Column("template", sa.String(100), nullable=True),
        sa.Column("size", sa.String(16), nullable=False),
        sa.Column("install", sa.JSON(), nullable=True),
        sa.Column("test", sa.JSON(), nullable=False),
        sa.Column("timeout_s", sa.Integer(), nullable=False),
        sa.Column("network", sa.JSON(), nullable=False),
        sa.Column("model", sa.String(200), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("stages", sa.JSON(), nullable=False),
        sa.Column("base_commit", sa.String(64), nullable=True),
        sa.Column("head_commit", sa.String(64), nullable=True),
        sa.Column("sandbox_id", sa.String(40), nullable=True),
        sa.Column("diff_stat", sa.JSON(), nullable=True),
        sa.Column("install_exit_code", sa.Integer(), nullable=True),
        sa.Column("install_outcome", sa.String(16), nullable=True),
        sa.Column("test_exit_code", sa.Integer(), nullable=True),
        sa.Column("test_outcome", sa.String(16), nullable=True),
        sa.Column("test_output", sa.Text(), nullable=True),
        sa.Column("verdict", sa.String(20), nullable=True),
        sa.Column("reasoning", sa.Text(), nullable=True),
        sa.Column("model_used", sa.String(200), nullable=True),
        sa.Column("model_verdict", sa.String(20), nullable=True),
        sa.Column("error", sa.String(1000), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("started_at", TS, nullable=True),
        sa.Column("finished_at", TS, nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_reviews_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reviews")),
    )
    op.create_index("ix_reviews_tenant_id_id", "reviews", ["tenant_id", "id"])
    op.create_index("ix_reviews_state", "reviews", ["state"])
    op.create_table(
        "review_bundles",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_review_bundles_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_review_bundles")),
    )
    op.create_index("ix_review_bundles_tenant_id_id", "review_bundles", ["tenant_id", "id"])


def downgrade() -> None:
    op.drop_table("review_bundles")
    op.drop_table("reviews")
