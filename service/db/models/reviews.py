"""Pull-request reviews, their baselines and uploaded bundles."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from service.db.base import Base, UTCDateTime, utcnow


class Review(Base):
    """A pull-request review: `queued` → `running` → `finished` | `failed`, run as a job.

    `stages` is the ordered list of what ran, each with its outcome and duration; the rest is
    the report. Test output and diff stats are capped before they are stored."""

    __tablename__ = "reviews"
    __table_args__ = (
        sa.Index("ix_reviews_tenant_id_id", "tenant_id", "id"),
        sa.Index("ix_reviews_state", "state"),
    )

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
    )
    created_by: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    state: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    # The node running it (its sandbox is there); it puts the review back when it restarts.
    node_id: Mapped[str | None] = mapped_column(sa.String(200), nullable=True)
    repo: Mapped[str] = mapped_column(sa.String(2048), nullable=False)
    base: Mapped[str] = mapped_column(sa.String(256), nullable=False)
    head: Mapped[str] = mapped_column(sa.String(256), nullable=False)
    template: Mapped[str | None] = mapped_column(sa.String(100), nullable=True)
    size: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    install: Mapped[list[str] | None] = mapped_column(sa.JSON, nullable=True)
    test: Mapped[list[str]] = mapped_column(sa.JSON, nullable=False)
    timeout_s: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    network: Mapped[dict[str, Any]] = mapped_column(sa.JSON, nullable=False)
    model: Mapped[str | None] = mapped_column(sa.String(200), nullable=True)
    # A reference to a tenant secret for a private repository (`secret`, `username`), never
    # the value.
    credentials: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON, nullable=True)
    attempts: Mapped[int] = mapped_column(sa.Integer, nullable=False, default=0)
    stages: Mapped[list[dict[str, Any]]] = mapped_column(sa.JSON, nullable=False, default=list)
    base_commit: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    head_commit: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    sandbox_id: Mapped[str | None] = mapped_column(sa.String(40), nullable=True)
    diff_stat: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON, nullable=True)
    install_exit_code: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)
    install_outcome: Mapped[str | None] = mapped_column(sa.String(16), nullable=True)
    test_exit_code: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)
    test_outcome: Mapped[str | None] = mapped_column(sa.String(16), nullable=True)
    test_output: Mapped[str | None] = mapped_column(sa.Text, nullable=True)
    verdict: Mapped[str | None] = mapped_column(sa.String(20), nullable=True)
    reasoning: Mapped[str | None] = mapped_column(sa.Text, nullable=True)
    model_used: Mapped[str | None] = mapped_column(sa.String(200), nullable=True)
    model_verdict: Mapped[str | None] = mapped_column(sa.String(20), nullable=True)
    error: Mapped[str | None] = mapped_column(sa.String(1000), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class ReviewBaseline(Base):
    """The base's test results of a finished review, kept for the next review of the same base:
    its `key` is a digest of everything the run depended on (repository, base commit, install
    and test commands, template or size and image, the results plugin), so a match ran the same
    tests on the same code. Only trusted results are kept."""

    __tablename__ = "review_baselines"
    __table_args__ = (
        sa.UniqueConstraint("tenant_id", "key", name="uq_review_baselines_tenant_key"),
    )

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    tenant_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
    )
    key: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    # The review whose run these results are.
    review_id: Mapped[str] = mapped_column(sa.String(40), nullable=False)
    # {"outcomes": {test id: outcome}, "plugins": [...], "collect_errors": [...]}
    results: Mapped[dict[str, Any]] = mapped_column(sa.JSON, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class ReviewBundle(Base):
    """A git bundle a tenant uploaded, to be reviewed without the host fetching anything."""

    __tablename__ = "review_bundles"
    __table_args__ = (sa.Index("ix_review_bundles_tenant_id_id", "tenant_id", "id"),)

    id: Mapped[str] = mapped_column(sa.String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
    )
    size: Mapped[int] = mapped_column(sa.BigInteger, nullable=False)
    sha256: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class ReviewBundleChunk(Base):
    """A bundle's bytes in order, in pieces of at most `reviews.repository.BUNDLE_PIECE` bytes:
    written as the upload arrives and read back one at a time, never the whole bundle."""

    __tablename__ = "review_bundle_chunks"

    bundle_id: Mapped[str] = mapped_column(
        sa.String(40), sa.ForeignKey("review_bundles.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=False)
    data: Mapped[bytes] = mapped_column(sa.LargeBinary, nullable=False)
