"""Templates and their versions, warm pool targets, members and requests; sandboxes record the
template version they started from.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
BIGID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "templates",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("owner", sa.String(40), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("latest_version", sa.Integer(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_templates")),
        sa.UniqueConstraint("owner", "name", name="uq_templates_owner_name"),
    )
    op.create_table(
        "template_versions",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("template_id", sa.String(40), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("image", sa.String(200), nullable=False),
        sa.Column("setup", sa.JSON(), nullable=False),
        sa.Column("size", sa.String(16), nullable=False),
        sa.Column("cpus", sa.Integer(), nullable=False),
        sa.Column("memory_mib", sa.Integer(), nullable=False),
        sa.Column("disk_mib", sa.Integer(), nullable=False),
        sa.Column("env", sa.JSON(), nullable=False),
        sa.Column("network", sa.JSON(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("build_log", sa.Text(), nullable=False),
        sa.Column("error", sa.String(500), nullable=True),
        sa.Column("runtime", sa.String(16), nullable=True),
        sa.Column("snapshot_id", sa.String(64), nullable=True),
        sa.Column("snapshot_bytes", sa.BigInteger(), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("started_at", TS, nullable=True),
        sa.Column("finished_at", TS, nullable=True),
        sa.ForeignKeyConstraint(
            ["template_id"],
            ["templates.id"],
            name=op.f("fk_template_versions_template_id_templates"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_template_versions")),
        sa.UniqueConstraint("template_id", "version", name="uq_template_versions_template_id"),
    )
    op.create_index("ix_template_versions_state", "template_versions", ["state"])

    op.create_table(
        "pool_targets",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("template_id", sa.String(40), nullable=False),
        sa.Column("size", sa.String(16), nullable=False),
        sa.Column("target", sa.Integer(), nullable=False),
        sa.Column("last_refill_at", TS, nullable=True),
        sa.Column("last_refill_ms", sa.Integer(), nullable=True),
        sa.Column("updated_at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["template_id"],
            ["templates.id"],
            name=op.f("fk_pool_targets_template_id_templates"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pool_targets")),
        sa.UniqueConstraint("template_id", "size", name="uq_pool_targets_template_id"),
    )
    op.create_table(
        "pool_members",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("pool_id", sa.String(40), nullable=False),
        sa.Column("version_id", sa.String(40), nullable=False),
        sa.Column("host", sa.String(200), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("runtime", sa.String(16), nullable=True),
        sa.Column("runtime_id", sa.String(64), nullable=True),
        sa.Column("from_snapshot", sa.Boolean(), nullable=False),
        sa.Column("sandbox_id", sa.String(40), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("ready_at", TS, nullable=True),
        sa.Column("claimed_at", TS, nullable=True),
        sa.ForeignKeyConstraint(
            ["pool_id"],
            ["pool_targets.id"],
            name=op.f("fk_pool_members_pool_id_pool_targets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pool_members")),
        sa.UniqueConstraint("sandbox_id", name="uq_pool_members_sandbox_id"),
    )
    op.create_index("ix_pool_members_pool_id_state", "pool_members", ["pool_id", "state"])
    op.create_table(
        "pool_requests",
        sa.Column("id", BIGID, autoincrement=True, nullable=False),
        sa.Column("pool_id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("claimed", sa.Boolean(), nullable=False),
        sa.Column("at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["pool_id"],
            ["pool_targets.id"],
            name=op.f("fk_pool_requests_pool_id_pool_targets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pool_requests")),
    )
    op.create_index("ix_pool_requests_pool_id_at", "pool_requests", ["pool_id", "at"])

    with op.batch_alter_table("sandboxes") as batch:
        batch.add_column(sa.Column("template_id", sa.String(40), nullable=True))
        batch.add_column(sa.Column("template_version", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("started_from", sa.String(16), nullable=True))
    op.create_index(op.f("ix_sandboxes_template_id"), "sandboxes", ["template_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_sandboxes_template_id"), table_name="sandboxes")
    with op.batch_alter_table("sandboxes") as batch:
        batch.drop_column("started_from")
        batch.drop_column("template_version")
        batch.drop_column("template_id")
    op.drop_table("pool_requests")
    op.drop_table("pool_members")
    op.drop_table("pool_targets")
    op.drop_table("template_versions")
    op.drop_table("templates")
