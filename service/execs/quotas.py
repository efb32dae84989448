"""The quotas an exec's start is held to, each written once in `QUOTA_RULES`: which quota,
what it limits, and the refusal. PostgreSQL checks them in the statement that writes the start
(service.execs.queries.PG_FACTS_AND_START); elsewhere, and to say why PostgreSQL refused,
`check_quotas` applies them in this order, so the first rule broken is the one answered."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from service.db.base import utcnow
from service.errors import AppError, QuotaExceeded, Unprocessable
from service.execs.recording import Limits, SandboxFacts
from service.tenants.schemas import Quotas


@dataclass(frozen=True)
class QuotaRule:
    """A start is allowed while its `measure` stays below the tenant's `quota` (or, when
    `inclusive`, up to it)."""

    quota: str  # the field of Quotas, and its key in the tenant's stored quotas
    # `timeout_s`, the exec's own; or a count of the start's facts, read as `recent` or
    # `running` (columns of queries.PG_FACTS)
    measure: str
    cast: str  # the quota's type in PostgreSQL
    inclusive: bool
    refusal: Callable[[float, float, SandboxFacts], AppError]


def _too_long(timeout_s: float, limit: float, facts: SandboxFacts) -> AppError:
    return Unprocessable(
        f"timeout_s {timeout_s} exceeds this tenant's maximum of {limit}",
        extra={"max_timeout_s": limit},
    )


def _too_often(count: float, limit: float, facts: SandboxFacts) -> AppError:
    # Counted, not locked: two execs racing at the limit may both pass, which a rate limit
    # tolerates; locking would serialise every exec of a tenant.
    oldest = facts.oldest_recent
    wait_s = 60 - (utcnow() - oldest).total_seconds() if oldest else 60
    return QuotaExceeded(
        f"the tenant started {count} execs in the last minute (limit {limit})",
        retry_after_s=max(1, int(wait_s) + 1),
        extra={"quota": "execs_per_minute", "limit": limit},
    )


def _too_many(running: float, limit: float, facts: SandboxFacts) -> AppError:
    # Each running exec holds its output buffers in this process until it ends.
    return QuotaExceeded(
        f"the tenant has {running} execs running (limit {limit})",
        retry_after_s=2,
        extra={"quota": "max_running_execs", "limit": limit},
    )


QUOTA_RULES = (
    QuotaRule("max_exec_timeout_s", "timeout_s", "float8", inclusive=True, refusal=_too_long),
    QuotaRule("execs_per_minute", "recent", "bigint", inclusive=False, refusal=_too_often),
    QuotaRule("max_running_execs", "running", "bigint", inclusive=False, refusal=_too_many),
)


def default_limits(timeout_s: float, quotas: Quotas) -> Limits:
    """The exec's timeout and the `quotas` a tenant without its own is held to."""
    return Limits(timeout_s, **{rule.quota: getattr(quotas, rule.quota) for rule in QUOTA_RULES})


def check_quotas(quotas: Quotas, timeout_s: float, facts: SandboxFacts) -> None:
    """Refuse a start that breaks a rule, with the first broken rule's error."""
    measured = {
        "timeout_s": timeout_s,
        "recent": facts.recent_execs,
        "running": facts.running_execs,
    }
    for rule in QUOTA_RULES:
        value, limit = measured[rule.measure], getattr(quotas, rule.quota)
        if not (value <= limit if rule.inclusive else value < limit):
            raise rule.refusal(value, limit, facts)
