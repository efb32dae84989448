"""Review bundles stored as ordered pieces of at most 1 MiB (`review_bundle_chunks`), written as
an upload arrives and read back one at a time, instead of one column holding the whole bundle.

Existing bundles are cut into pieces by the database itself (no bundle passes through this
process whole), then `review_bundles.data` goes. Downgrading joins the pieces back, one
bundle at a time.

On SQLite, dropping a column in batch mode rebuilds the table, and dropping the old table
there deletes its rows first, which would cascade to the pieces: so the pieces' table is
made without its foreign key, the column dropped, and the key added after (a rebuild of the
pieces' table, which nothing references).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

PIECE = 1 << 20
FK = "fk_review_bundle_chunks_bundle_id_review_bundles"

# One row per piece of every bundle (a bundle holds at least its 16-byte header).
CUT = f"""
WITH RECURSIVE pieces (bundle_id, seq) AS (
  SELECT id, 0 FROM review_bundles
  UNION ALL
  SELECT p.bundle_id, p.seq + 1 FROM pieces p JOIN review_bundles b ON b.id = p.bundle_id
  WHERE (p.seq + 1) * {PIECE} < length(b.data)
)
INSERT INTO review_bundle_chunks (bundle_id, seq, data)
SELECT p.bundle_id, p.seq, substr(b.data, p.seq * {PIECE} + 1, {PIECE})
FROM pieces p JOIN review_bundles b ON b.id = p.bundle_id
"""  # noqa: S608 (constants)


def upgrade() -> None:
    op.create_table(
        "review_bundle_chunks",
        sa.Column("bundle_id", sa.String(40), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("bundle_id", "seq", name=op.f("pk_review_bundle_chunks")),
    )
    op.execute(CUT)
    with op.batch_alter_table("review_bundles") as batch:
        batch.drop_column("data")
    with op.batch_alter_table("review_bundle_chunks") as batch:
        batch.create_foreign_key(FK, "review_bundles", ["bundle_id"], ["id"], ondelete="CASCADE")


def downgrade() -> None:
    with op.batch_alter_table("review_bundles") as batch:
        batch.add_column(sa.Column("data", sa.LargeBinary(), nullable=True))
    conn = op.get_bind()
    chunks = sa.table(
        "review_bundle_chunks", sa.column("bundle_id"), sa.column("seq"), sa.column("data")
    )
    bundles = sa.table("review_bundles", sa.column("id"), sa.column("data"))
    ids = [row[0] for row in conn.execute(sa.select(bundles.c.id))]
    for bundle_id in ids:
        pieces = conn.execute(
            sa.select(chunks.c.data).where(chunks.c.bundle_id == bundle_id).order_by(chunks.c.seq)
        )
        data = b"".join(bytes(row[0]) for row in pieces)
        conn.execute(bundles.update().where(bundles.c.id == bundle_id).values(data=data))
    op.drop_table("review_bundle_chunks")  # before the rebuild below, which would cascade
    with op.batch_alter_table("review_bundles") as batch:
        batch.alter_column("data", existing_type=sa.LargeBinary(), nullable=False)
