"""What an exec's records are made of, in both forms (service.execs.records): the facts a start
is checked against, the audit event written with a record, and a unit of record writes."""

from __future__ import annotations

import contextlib
import math
from datetime import UTC, datetime
from typing import Any, NamedTuple

from service.audit.recorder import AuditContext

# Every column of an exec's start row, in the order both forms write them.
START_COLUMNS = (
    "id",
    "tenant_id",
    "sandbox_id",
    "state",
    "cmd",
    "cwd",
    "user",
    "env",
    "secret_names",
    "timeout_s",
    "has_stdin",
    "tty",
    "stdout_bytes",
    "stderr_bytes",
    "stdout_truncated",
    "stderr_truncated",
    "idempotency_key",
    "request_hash",
    "created_at",
    "started_at",
    "runtime_exec_id",
)
# The columns an exec's finish sets.
FINISH_COLUMNS = (
    "state",
    "finished_at",
    "duration_ms",
    "error",
    "exit_code",
    "outcome",
    "stdout_bytes",
    "stderr_bytes",
    "stdout_truncated",
    "stderr_truncated",
    "stored_bytes",
)


# `execs_per_minute` counts starts in one-second buckets (`exec_start_buckets`): a start at `t`
# counts in the bucket of `floor(t)`, and a check at `now` sums the buckets from the one of
# `now - 60` on, 61 at most. A start is counted for 60 to 61 seconds, never less than a
# minute, and the sum costs the same whatever the tenant's rate.


def rate_second(at: datetime) -> int:
    """The bucket a start at `at` counts in (and, for `since`, the first one a check sums)."""
    return math.floor(at.timestamp())


def rate_oldest(second: int | None) -> datetime | None:
    """When the oldest start counted in `second`'s bucket may have happened at the latest: a
    minute after it, that bucket is no longer summed."""
    return None if second is None else datetime.fromtimestamp(second + 1, UTC)


class SandboxFacts(NamedTuple):
    """What starting an exec needs to know, read in one statement."""

    id: str
    state: str
    runtime_id: str | None
    failure_reason: str | None
    env: dict[str, str] | None
    network: dict[str, Any] | None
    quotas: dict[str, Any]
    recent_execs: int
    oldest_recent: datetime | None
    running_execs: int


class Event(NamedTuple):
    """An audit event to append in the same transaction."""

    ctx: AuditContext
    chain: str
    action: str
    target: str
    outcome: str
    details: dict[str, Any]

    def what(self) -> dict[str, Any]:
        """The event's own fields, as `record` and `next_event` take them."""
        return {
            "chain": self.chain,
            "action": self.action,
            "target": self.target,
            "outcome": self.outcome,
            "details": self.details,
        }


class RecordTx:
    """A unit of record writes; `LiteTx` (service.execs.records_sqlite) and `PgTx`
    (service.execs.records_pg) are its two forms."""

    async def facts(
        self, tenant_id: str, sandbox_id: str, only_sandbox: str | None, since: datetime
    ) -> SandboxFacts | None:
        raise NotImplementedError

    async def replay_of(
        self, tenant_id: str, sandbox_id: str, key: str
    ) -> tuple[str, str | None] | None:
        """(exec id, request hash) of the exec started with this Idempotency-Key."""
        raise NotImplementedError

    async def insert_started(self, values: dict[str, Any], event: Event) -> None:
        raise NotImplementedError

    async def facts_and_start(
        self,
        facts: tuple[str, str, str | None, datetime],
        limits: tuple[float, int, float, int],
        values: dict[str, Any],
        event: Event,
    ) -> tuple[SandboxFacts | None, bool]:
        """`facts(*facts)`, and the start written at once when the sandbox runs and the
        exec is within `limits` (its timeout, the default rate, maximum timeout and running
        execs); True when it was. False leaves the checks and, unless `decides_start`,
        `insert_started` to the caller (always, in this plain form, where the transaction
        holds the database's one write lock from its start)."""
        return await self.facts(*facts), False

    # Whether `facts_and_start` itself refuses what the checks refuse (then a False from it
    # is a refusal, and no start is to be inserted after it).
    decides_start = False

    async def finish(self, exec_id: str, values: dict[str, Any], event: Event) -> int | None:
        """Write the end of a running exec (a finished one is left as it is) and its event,
        and add its `stored_bytes` to its tenant's stored output. Returns the tenant's stored
        output after, when this exec added to it."""
        raise NotImplementedError

    async def insert_chunks(self, rows: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def atomic(self, wanted: bool) -> contextlib.AbstractAsyncContextManager[object]:
        """When `wanted`, what follows commits as one (a start and its secret values)."""
        return contextlib.nullcontext()

    async def insert_secret_values(self, rows: list[dict[str, Any]]) -> None:
        """The sealed values an exec brings its sandbox (service.execs.sandbox_secrets)."""
        raise NotImplementedError
