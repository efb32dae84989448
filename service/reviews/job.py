"""The review runner: claims queued reviews and runs them, a few at a time per replica.

A review is claimed with `UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED LIMIT 1)`
(PostgreSQL; SQLite transactions take the write lock up front), so two replicas never run the
same one. Reviews a restart cut off are put back in the queue when the runner starts (their
sandboxes, labelled with the review id, are destroyed when the review runs again); after
`MAX_ATTEMPTS` cut-off runs a review fails.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.recorder import AuditContext, record
from service.db.base import on_node, utcnow
from service.db.models import Review
from service.db.reads import finds_a_row
from service.jobs.claims import take_first
from service.periodic import PeriodicJob
from service.reviews.pipeline import Db, Deps, run_review
from service.reviews.queries import ANY_QUEUED_REVIEW, next_review
from service.tenants.suspension import (
    REASON,
    cancel_queued_reviews,
    finish_review_event,
    suspended_tenants,
)

log = logging.getLogger("airlock.jobs.reviews")

MAX_ATTEMPTS = 3
CONCURRENCY = 2
REPORT_FIELDS = (
    "base_commit",
    "head_commit",
    "sandbox_id",
    "diff_stat",
    "install_exit_code",
    "install_outcome",
    "test_exit_code",
    "test_outcome",
    "test_output",
    "model_used",
    "model_verdict",
)
SYSTEM = AuditContext(actor="system:review-runner", request_id=None, client=None)


async def claim_next(db: Db, node_id: str | None = None) -> str | None:
    """The next review in fair order (service.sandboxes.queues), marked running on `node_id`."""
    if not await finds_a_row(db.kw["bind"], ANY_QUEUED_REVIEW):
        return None
    async with db() as session, session.begin():
        # Reviews queued beside a suspension are not run: they fail, saying why.
        await cancel_queued_reviews(session, SYSTEM, suspended_tenants())
        return await take_first(session, Review, next_review(), "running", node_id)


async def requeue_interrupted(
    db: Db | None = None,
    node_id: str | None = None,
    *,
    session: AsyncSession | None = None,
    unowned: bool = True,
) -> int:
    """Reviews a crash of `node_id` cut off (at its start, or when the node was lost) go back in
    the queue, or fail after MAX_ATTEMPTS; other nodes' running reviews are theirs. `unowned`:
    with the ones from before nodes were recorded. In `session`'s transaction when given."""
    if session is None:
        assert db is not None
        async with db() as own, own.begin():
            return await requeue_interrupted(node_id=node_id, session=own, unowned=unowned)
    which = on_node(Review.node_id, node_id, unowned=unowned)
    rows = (await session.scalars(select(Review).where(Review.state == "running", which))).all()
    for row in rows:
        if row.attempts >= MAX_ATTEMPTS:
            row.state, row.finished_at = "failed", utcnow()
            row.error = f"gave up after {MAX_ATTEMPTS} runs cut off by restarts"
        else:
            # Stages stay as history; the report is made again by the next run.
            row.state, row.node_id = "queued", None
            for name in REPORT_FIELDS:
                setattr(row, name, None)
        await record(
            session,
            SYSTEM,
            chain=row.tenant_id,
            action="review.requeue" if row.state == "queued" else "review.finish",
            target=row.id,
            outcome=row.state,
            details={"attempts": row.attempts, "error": row.error},
        )
    return len(rows)


async def _stop(db: Db, review_id: str) -> str:
    """Record a review its tenant's suspension stopped: failed, saying why."""
    async with db() as session, session.begin():
        row = await session.get(Review, review_id, with_for_update=True)
        if row is None or row.state != "running":
            return row.state if row else "gone"
        row.state, row.error, row.finished_at = "failed", REASON, utcnow()
        await finish_review_event(session, SYSTEM, row.tenant_id, row.id)
    return "failed"


class ReviewRunner(PeriodicJob):
    name = "review-runner"

    def __init__(
        self,
        deps: Deps,
        interval_s: float = 1.0,
        concurrency: int = CONCURRENCY,
        *,
        node_id: str,
    ) -> None:
        """`node_id`: the node this process runs, whose interrupted reviews it takes back."""
        super().__init__(interval_s)
        self.deps = deps
        self.concurrency = concurrency
        self.running: set[asyncio.Task[str]] = set()
        # The running reviews' tasks by review id, and those a suspension stopped.
        self.tasks: dict[str, asyncio.Task[str]] = {}
        self.stopped: set[str] = set()
        self._recovered = False
        self.node_id = node_id

    async def run_once(self) -> bool:
        if not self._recovered:
            requeued = await requeue_interrupted(self.deps.db, self.node_id)
            if requeued:
                log.warning("%d reviews cut off by a restart were put back in the queue", requeued)
            self._recovered = True
        if len(self.running) >= self.concurrency:
            return False
        review_id = await claim_next(self.deps.db, self.node_id)
        if review_id is None:
            return False
        task = asyncio.create_task(self._run(review_id), name=f"review-{review_id}")
        self.running.add(task)
        self.tasks[review_id] = task
        task.add_done_callback(self.running.discard)
        task.add_done_callback(lambda _: self._forget(review_id))
        return True

    async def _run(self, review_id: str) -> str:
        try:
            state = await run_review(self.deps, review_id)
        except asyncio.CancelledError:
            if review_id not in self.stopped:
                raise  # the service is stopping: the review goes back in the queue
            state = await _stop(self.deps.db, review_id)
        log.info("review %s: %s", review_id, state)
        return state

    def _forget(self, review_id: str) -> None:
        self.tasks.pop(review_id, None)
        self.stopped.discard(review_id)

    async def stop_suspended(self) -> None:
        """Stop the running reviews of tenants suspended now (their sandboxes are destroyed
        on the way out, as when a review fails); they are not put back in the queue."""
        running = [review_id for review_id in self.tasks if review_id not in self.stopped]
        if not running:
            return
        async with self.deps.db() as session:
            stopping = await session.scalars(
                select(Review.id).where(
                    Review.id.in_(running), Review.tenant_id.in_(suspended_tenants())
                )
            )
            for review_id in stopping:
                task = self.tasks.get(review_id)
                if task is not None:  # once only: a second cancel would cut its record short
                    self.stopped.add(review_id)
                    task.cancel()

    async def stop(self) -> None:
        await super().stop()
        tasks = list(self.running)
        for task in tasks:
            task.cancel()
        for task in tasks:
            try:
                await task
            except asyncio.CancelledError:
                pass
            except Exception:
                log.exception("review task failed while stopping")
