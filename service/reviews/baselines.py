"""The base's test results, kept for the next review of the same base.

Reviews of one project mostly share a base: every pull request against `main` runs the same
base commit's suite. A trusted baseline is stored under a digest of everything its run
depended on (the repository, the base commit, the install and test commands, the network
policy, the template and its version or the size, the image, and the code that writes and
reads results), per tenant; a review whose digest matches reuses it and runs only the head.

The base's run is the base branch's code, never the head's, so reusing it gives the head no
say; a tenant's baselines are never another tenant's.

A review that finds no kept baseline but another review in this process running the same
base waits for that run (`kept_or_awaited`), up to its own timeout, before any of its head's code
runs, and takes what it kept; a run that ends without a trusted result, or that outlasts the
wait, leaves the waiting review to run the base itself. A run is kept as soon as it ends, not
with the rest of its review.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from service.db.models import ReviewBaseline
from service.db.session import Db
from service.reviews import results
from service.reviews.claimed import Job
from service.reviews.results import TestRun
from service.runtime import images
from service.sandboxes.schemas import Sandbox

# The code that makes and reads a results file: a change to it makes older baselines stale.
_READERS = (
    Path(results.__file__),
    Path(__file__).with_name("results_plugin.py"),
    Path(__file__).with_name("results_unittest.py"),
)


@dataclass
class UnderWay:
    """A run of a base in this process: the review running it, and set once its result is
    kept or given up."""

    review_id: str
    ended: asyncio.Event = field(default_factory=asyncio.Event)


_UNDER_WAY: dict[tuple[str, str], UnderWay] = {}


async def kept_or_awaited(
    db: Db, tenant_id: str, key: str, review_id: str, wait_s: float
) -> tuple[tuple[TestRun, str] | None, str]:
    """The kept run and the review it came from; when none is kept but a review in this
    process runs the same base, what that one kept once its run ended (waiting up to
    `wait_s`). With how long it waited, in words ('' when it did not). None: this review runs
    the base, and until `end` others of the same base wait for it."""
    kept = await find(db, tenant_id, key)
    other = None if kept else _UNDER_WAY.get((tenant_id, key))
    waited = ""
    if other is not None:
        started = time.monotonic()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(other.ended.wait(), wait_s)
        waited = (
            f"after {time.monotonic() - started:.0f} s waiting for review {other.review_id}, "
            "which ran the same base"
        )
        kept = await find(db, tenant_id, key)
    # No await since the lookup: a second review of the base cannot have begun meanwhile.
    if kept is None and (tenant_id, key) not in _UNDER_WAY:
        _UNDER_WAY[(tenant_id, key)] = UnderWay(review_id)
    return kept, waited


def end(review_id: str) -> None:
    """The review's run of a base is over (kept, failed or given up): those waiting go on.
    Called again, or for a review that ran none, it does nothing."""
    for slot, run in list(_UNDER_WAY.items()):
        if run.review_id == review_id:
            del _UNDER_WAY[slot]
            run.ended.set()


def key_of(job: Job, base_commit: str, sandbox: Sandbox) -> str:
    inputs = {
        "repo": job.repo,
        "base_commit": base_commit,
        "install": job.install,
        "test": job.test,
        "timeout_s": job.timeout_s,
        "network": job.network,
        "template": [sandbox.template, sandbox.template_version],
        "size": sandbox.size,
        "image": [sandbox.image, images.build_key()],
        "readers": [hashlib.sha256(path.read_bytes()).hexdigest() for path in _READERS],
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


async def find(db: Db, tenant_id: str, key: str) -> tuple[TestRun, str] | None:
    """The kept run and the review it came from, or None."""
    async with db() as session:
        row = await session.scalar(
            select(ReviewBaseline).where(
                ReviewBaseline.tenant_id == tenant_id, ReviewBaseline.key == key
            )
        )
        if row is None:
            return None
        kept = row.results
        return (
            TestRun(
                outcomes=dict(kept["outcomes"]),
                plugins=list(kept["plugins"]),
                collect_errors=list(kept["collect_errors"]),
            ),
            row.review_id,
        )


async def keep(db: Db, tenant_id: str, key: str, review_id: str, run: TestRun) -> None:
    """Stores a trusted run (a run with any problem is never kept); a second keeper of the same
    key leaves the first one's."""
    if not run.trusted:
        return
    kept = {
        "outcomes": run.outcomes,
        "plugins": run.plugins,
        "collect_errors": run.collect_errors,
    }
    try:
        async with db() as session, session.begin():
            session.add(
                ReviewBaseline(tenant_id=tenant_id, key=key, review_id=review_id, results=kept)
            )
    except IntegrityError:
        return
