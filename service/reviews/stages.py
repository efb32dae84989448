"""The record of a review's stages: each one's outcome, duration, detail and the report fields
it produced, written with a `review.<stage>` audit event in one short transaction as it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from service.audit.recorder import record
from service.db.base import utcnow
from service.db.models import Review as ReviewRow
from service.db.session import Db
from service.errors import AppError
from service.reviews.claimed import Job
from service.reviews.fetch import FetchFailed


class StageFailed(Exception):
    """The review cannot go on; the message is its `error`."""


class Stages:
    """Records each stage on the review row, with its audit event, as it ends."""

    def __init__(self, db: Db, job: Job) -> None:
        self.db = db
        self.job = job

    @contextlib.asynccontextmanager
    async def timed(self, name: str) -> Any:
        clock = Clock(name, utcnow(), time.monotonic())
        try:
            yield clock
        except StageFailed as exc:
            await self.done(clock, "failed", str(exc))
            raise
        except asyncio.CancelledError:
            await asyncio.shield(self.done(clock, "error", "the service stopped"))
            raise
        except Exception as exc:
            await self.done(clock, "error", error_text(exc))
            raise
        else:
            await self.done(clock, clock.outcome, clock.detail, clock.entry, **clock.fields)

    async def done(
        self,
        clock: Clock,
        outcome: str,
        detail: str | None = None,
        entry_extra: dict[str, Any] | None = None,
        **fields: Any,
    ) -> None:
        duration = int((time.monotonic() - clock.monotonic) * 1000)
        entry = {
            "name": clock.name,
            "outcome": outcome,
            "started_at": clock.started_at.isoformat(),
            "duration_ms": duration,
            "detail": detail[:1000] if detail else None,
            **(entry_extra or {}),
        }
        await self.update(
            fields,
            stage=entry,
            action=f"review.{clock.name}",
            outcome=outcome,
            details={"duration_ms": duration, "detail": entry["detail"]},
        )

    async def skipped(self, name: str, why: str) -> None:
        await self.done(Clock(name, utcnow(), time.monotonic()), "skipped", why)

    async def update(
        self,
        fields: dict[str, Any],
        *,
        stage: dict[str, Any] | None = None,
        action: str | None = None,
        outcome: str = "ok",
        details: dict[str, Any] | None = None,
    ) -> None:
        async with self.db() as session, session.begin():
            row = await session.get(ReviewRow, self.job.id, with_for_update=True)
            if row is None:
                return
            for key, value in fields.items():
                setattr(row, key, value)
            if stage is not None:
                row.stages = [*row.stages, stage]
            if action is not None:
                await record(
                    session,
                    self.job.ctx,
                    chain=self.job.tenant_id,
                    action=action,
                    target=self.job.id,
                    outcome=outcome,
                    details=details or {},
                )


@dataclass
class Clock:
    name: str
    started_at: datetime
    monotonic: float
    outcome: str = "ok"
    detail: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    # Kept in the stage's own entry (the gate's findings), beside name, outcome and detail.
    entry: dict[str, Any] = field(default_factory=dict)

    def note(self, outcome: str = "ok", detail: str | None = None, **fields: Any) -> None:
        self.outcome, self.detail = outcome, detail
        self.fields.update(fields)

    def record(self, **entry: Any) -> None:
        self.entry.update(entry)


def error_text(exc: BaseException) -> str:
    if isinstance(exc, AppError):
        return exc.detail
    if isinstance(exc, FetchFailed | StageFailed):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
