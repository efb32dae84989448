"""What an exec's records are made of, in both forms (service.execs.records): the start row and
what a finish sets on it, the facts a start is checked against, the audit event written with a
record, and a unit of record writes."""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any, NamedTuple

from service.audit.recorder import AuditContext


@dataclass(frozen=True, slots=True)
class ExecRow:
    """An exec's row as its start writes it (secrets masked in `cmd`, `cwd` and `env`)."""

    id: str
    tenant_id: str
    sandbox_id: str
    state: str
    cmd: list[str]
    cwd: str
    user: str | None
    env: dict[str, str]
    secret_names: list[str]
    timeout_s: float
    has_stdin: bool
    tty: bool
    stdout_bytes: int
    stderr_bytes: int
    stdout_truncated: bool
    stderr_truncated: bool
    idempotency_key: str | None
    request_hash: str
    created_at: datetime
    started_at: datetime
    # Chosen before the process starts and recorded with the start: after a crash the
    # reconciler can find and kill the process with no further write on the way.
    runtime_exec_id: str

    def values(self) -> dict[str, Any]:
        """The row by column name."""
        return {c: getattr(self, c) for c in START_COLUMNS}


@dataclass(frozen=True, slots=True)
class ExecEnd:
    """What an exec's finish sets on its row."""

    state: str
    finished_at: datetime
    duration_ms: int
    error: str | None
    exit_code: int | None
    outcome: str | None
    stdout_bytes: int
    stderr_bytes: int
    stdout_truncated: bool
    stderr_truncated: bool
    stored_bytes: int

    def values(self) -> dict[str, Any]:
        """The columns it sets, by name."""
        return {c: getattr(self, c) for c in FINISH_COLUMNS}


# Every column of an exec's start row, in the order both forms write them.
START_COLUMNS = tuple(f.name for f in fields(ExecRow))
# The columns an exec's finish sets.
FINISH_COLUMNS = tuple(f.name for f in fields(ExecEnd))


class Lookup(NamedTuple):
    """Which sandbox a start is for, and from when its starts are counted."""

    tenant_id: str
    sandbox_id: str
    only_sandbox: str | None  # the sandbox a bound token is limited to
    since: datetime


class Limits(NamedTuple):
    """The exec's timeout and the defaults of the quotas it is checked against
    (service.execs.quotas), for a tenant that stored none of its own."""

    timeout_s: float
    execs_per_minute: int
    max_exec_timeout_s: float
    max_running_execs: int


class Replay(NamedTuple):
    """The exec started with an Idempotency-Key, and the hash of the request that started it."""

    exec_id: str
    request_hash: str | None


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

    async def replay_of(self, tenant_id: str, sandbox_id: str, key: str) -> Replay | None:
        """The exec started with this Idempotency-Key."""
        raise NotImplementedError

    async def insert_started(self, row: ExecRow, event: Event) -> None:
        raise NotImplementedError

    async def facts_and_start(
        self,
        facts: Lookup,
        limits: Limits,
        row: ExecRow,
        event: Event,
    ) -> tuple[SandboxFacts | None, bool]:
        """`facts(*facts)`, and the start written at once when the sandbox runs and the
        exec is within `limits` (its timeout, the default rate, maximum timeout and running
        execs, as `Limits`); True when it was. False leaves the checks and, unless `decides_start`,
        `insert_started` to the caller (always, in this plain form, where the transaction
        holds the database's one write lock from its start)."""
        return await self.facts(*facts), False

    # Whether `facts_and_start` itself refuses what the checks refuse (then a False from it
    # is a refusal, and no start is to be inserted after it).
    decides_start = False

    async def finish(self, exec_id: str, end: ExecEnd, event: Event) -> int | None:
        """Write the `end` of a running exec (a finished one is left as it is) and its event,
        and add its `stored_bytes` to its tenant's stored output. Returns the tenant's stored
        output after, when this exec added to it."""
        raise NotImplementedError

    async def append(self, event: Event) -> None:
        """The event alone, for a call that writes no row of its own (a context's run)."""
        raise NotImplementedError

    async def insert_chunks(self, rows: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def atomic(self, wanted: bool) -> contextlib.AbstractAsyncContextManager[object]:
        """When `wanted`, what follows commits as one (a start and its secret values)."""
        return contextlib.nullcontext()

    async def insert_secret_values(self, rows: list[dict[str, Any]]) -> None:
        """The sealed values an exec brings its sandbox (service.execs.sandbox_secrets)."""
        raise NotImplementedError
