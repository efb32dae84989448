"""The running execs of a tenant through an index of only those (`ix_execs_running`, partial on
`state = 'running'`), in place of an index of every exec's state (`ix_execs_state`).

Each start counts its tenant's running execs (`max_running_execs`). Through the state index
that count read every tenant's running execs and kept those of one; the new index reads that
tenant's only. It holds only the rows that are running, where the state index held an entry
for every exec ever recorded and took a new one at every finish.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

_RUNNING = sa.text("state = 'running'")


def upgrade() -> None:
    op.create_index(
        "ix_execs_running",
        "execs",
        ["tenant_id"],
        postgresql_where=_RUNNING,
        sqlite_where=_RUNNING,
    )
    op.drop_index("ix_execs_state", table_name="execs")


def downgrade() -> None:
    op.create_index("ix_execs_state", "execs", ["state"])
    op.drop_index("ix_execs_running", table_name="execs")
