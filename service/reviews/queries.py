"""The review runner's statements, by name (service.reviews.job): its look at the queue and the
pick of the next review in fair order across tenants (service.sandboxes.queues)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import aliased

from service.db.models import Review
from service.sandboxes.queues import fair_order, owner_turns

# Whether any review waits to run (a cheap look before a claim's transaction).
ANY_QUEUED_REVIEW = "SELECT 1 FROM reviews WHERE state = 'queued' LIMIT 1"


def next_review() -> Select[Any]:
    """The id of the queued review whose tenant's turn it is: the fewest running, then the
    longest since its last start, then the oldest."""
    past = aliased(Review)
    waiting = select(Review.tenant_id).where(Review.state == "queued").distinct()
    turns = owner_turns(
        select().select_from(past).where(past.tenant_id.in_(waiting)),
        past.tenant_id,
        past.state,
        past.started_at,
        "running",
    )
    return (
        select(Review.id)
        .join(turns, turns.c.owner == Review.tenant_id)
        .where(Review.state == "queued")
        .order_by(*fair_order(turns, Review.created_at))
        .limit(1)
    )
