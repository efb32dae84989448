from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Select, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import Review, ReviewBundle, ReviewBundleChunk

# A stored bundle's pieces (review_bundle_chunks): what a request or a fetch holds at a time.
BUNDLE_PIECE = 1 << 20


class ReviewRepository:
    """A tenant's reviews and bundles: every statement is scoped to the tenant."""

    def __init__(self, session: AsyncSession, tenant_id: str) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def _scoped(self, stmt: Select[tuple[Review]]) -> Select[tuple[Review]]:
        return stmt.where(Review.tenant_id == self.tenant_id)

    async def get(self, review_id: str) -> Review | None:
        return await self.session.scalar(self._scoped(select(Review)).where(Review.id == review_id))

    async def list(
        self, *, limit: int, after_id: str | None, states: Sequence[str]
    ) -> list[Review]:
        stmt = self._scoped(select(Review))
        if after_id is not None:
            stmt = stmt.where(Review.id < after_id)
        if states:
            stmt = stmt.where(Review.state.in_(list(states)))
        # Newest first: ids sort by creation time.
        return list(
            (await self.session.scalars(stmt.order_by(Review.id.desc()).limit(limit))).all()
        )

    async def queued(self) -> int:
        """The tenant's reviews waiting for a runner."""
        stmt = select(func.count(Review.id)).where(
            Review.tenant_id == self.tenant_id, Review.state == "queued"
        )
        return int(await self.session.scalar(stmt) or 0)

    async def bundles(self, *, besides: str | None = None) -> int:
        """The tenant's bundles (other than `besides`, one being uploaded)."""
        stmt = select(func.count(ReviewBundle.id)).where(ReviewBundle.tenant_id == self.tenant_id)
        if besides is not None:
            stmt = stmt.where(ReviewBundle.id != besides)
        return int(await self.session.scalar(stmt) or 0)

    async def bundle(self, bundle_id: str) -> ReviewBundle | None:
        return await self.session.scalar(
            select(ReviewBundle).where(
                ReviewBundle.tenant_id == self.tenant_id, ReviewBundle.id == bundle_id
            )
        )

    async def has_bundle(self, bundle_id: str) -> bool:
        found = await self.session.scalar(
            select(ReviewBundle.id).where(
                ReviewBundle.tenant_id == self.tenant_id, ReviewBundle.id == bundle_id
            )
        )
        return found is not None

    async def add_piece(self, bundle_id: str, seq: int, data: bytes) -> None:
        """One piece of a bundle the tenant is uploading (Core, so the session keeps no copy)."""
        await self.session.execute(
            insert(ReviewBundleChunk).values(bundle_id=bundle_id, seq=seq, data=data)
        )

    async def piece(self, bundle_id: str, seq: int) -> bytes | None:
        """The bundle's `seq`th piece; None past its end (or for another tenant's bundle)."""
        return await self.session.scalar(
            select(ReviewBundleChunk.data)
            .join(ReviewBundle, ReviewBundle.id == ReviewBundleChunk.bundle_id)
            .where(
                ReviewBundle.tenant_id == self.tenant_id,
                ReviewBundleChunk.bundle_id == bundle_id,
                ReviewBundleChunk.seq == seq,
            )
        )

    def add(self, row: Review | ReviewBundle) -> None:
        self.session.add(row)
