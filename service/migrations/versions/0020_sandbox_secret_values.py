"""The secret values each sandbox's execs were given, sealed (`sandbox_secret_values`): masked
in the sandbox's execs for its life, also after a restart of its node's process or on the node
it resumes on; deleted with the sandbox.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-09
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sandbox_secret_values",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("sandbox_id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("key_id", sa.String(16), nullable=False),
        sa.Column("nonce", sa.LargeBinary(), nullable=False),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["sandbox_id"],
            ["sandboxes.id"],
            name=op.f("fk_sandbox_secret_values_sandbox_id_sandboxes"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sandbox_secret_values")),
    )
    op.create_index(
        op.f("ix_sandbox_secret_values_sandbox_id"), "sandbox_secret_values", ["sandbox_id"]
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_sandbox_secret_values_sandbox_id"), table_name="sandbox_secret_values")
    op.drop_table("sandbox_secret_values")
