"""A tenant's sandbox quotas, checked before anything is recorded or started.

Both ways a sandbox is made (the general create and the warm pool's claim) read the tenant's
`Usage` their own way and check it here, so each rule lives in this one place."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from service.db.base import utcnow
from service.errors import QuotaExceeded, Unprocessable
from service.tenants.schemas import Quotas


class Usage(NamedTuple):
    """What the tenant's active sandboxes and running template builds hold together."""

    sandboxes: int
    cpus: int
    memory_mib: int
    disk_mib: int


class Caps(NamedTuple):
    """What one more sandbox asks for."""

    cpus: int
    memory_mib: int
    disk_mib: int


def over(
    quota: str, limit: int, in_use: int, detail: str, retry_after_s: int = 10
) -> QuotaExceeded:
    """The 429 of a tenant quota, naming it, its limit and what is in use."""
    return QuotaExceeded(
        detail,
        retry_after_s=retry_after_s,
        extra={"quota": quota, "limit": limit, "in_use": in_use},
    )


class LifetimeExceeded(Unprocessable):
    code, title = "lifetime_exceeded", "The sandbox would outlive the tenant's maximum lifetime"


def check_ttl(quotas: Quotas, ttl_s: int) -> None:
    """One TTL, as a create or an extension asks it, within the tenant's maximum."""
    if ttl_s > quotas.max_sandbox_ttl_s:
        raise Unprocessable(
            f"ttl_s {ttl_s} exceeds this tenant's maximum of {quotas.max_sandbox_ttl_s}",
            extra={"max_ttl_s": quotas.max_sandbox_ttl_s},
        )


def check_lifetime(quotas: Quotas, created_at: datetime, now: datetime, ttl_s: int) -> None:
    """A TTL asked `now` for a sandbox made at `created_at`: its whole life, to the expiry this
    TTL gives, within the tenant's `max_lifetime_s` (extending a TTL again and again does not
    keep a sandbox for ever)."""
    end_of_life = created_at + timedelta(seconds=quotas.max_lifetime_s)
    if now + timedelta(seconds=ttl_s) <= end_of_life:
        return
    raise LifetimeExceeded(
        f"ttl_s {ttl_s} would keep the sandbox past this tenant's maximum lifetime of "
        f"{quotas.max_lifetime_s} s from its creation",
        extra={
            "max_lifetime_s": quotas.max_lifetime_s,
            "longest_ttl_s": max(0, int((end_of_life - now).total_seconds())),
        },
    )


def check_quotas(quotas: Quotas, ttl_s: int, usage: Usage, caps: Caps) -> None:
    """Raise unless one more sandbox of these caps and TTL fits beside `usage`."""
    check_ttl(quotas, ttl_s)
    now = utcnow()
    check_lifetime(quotas, now, now, ttl_s)
    check_room(quotas, usage, caps)


class _Room(NamedTuple):
    quota: str  # the Quotas field
    held: str  # the Usage field (and the Caps field one more sandbox adds to it, if any)
    detail: str  # formatted with `more`, `limit` and `in_use`


# Each room a tenant's sandboxes share, checked in this order.
_ROOMS = (
    _Room("max_sandboxes", "sandboxes", "the tenant has {in_use} of {limit} sandboxes"),
    _Room("max_vcpus", "cpus", "{more} more vCPUs would exceed the tenant's {limit}"),
    _Room("max_memory_mib", "memory_mib", "{more} MiB more would exceed the tenant's {limit} MiB"),
    _Room("max_disk_mib", "disk_mib", "{more} MiB more disk would exceed the tenant's {limit} MiB"),
)


def check_room(quotas: Quotas, usage: Usage, caps: Caps) -> None:
    """Raise unless one more sandbox of these caps fits beside `usage` (a template build's
    sandbox is checked with this too: it has no TTL of the tenant's)."""
    for room in _ROOMS:
        limit, in_use = getattr(quotas, room.quota), getattr(usage, room.held)
        more = getattr(caps, room.held) if room.held in Caps._fields else 1
        if in_use + more > limit:
            detail = room.detail.format(more=more, limit=limit, in_use=in_use)
            raise over(room.quota, limit, in_use, detail)


def idle_timeout(quotas: Quotas, asked: int | None) -> int | None:
    """A new sandbox's idle timeout: what it asked (within the tenant's maximum), else the
    tenant's default; None: it never sleeps."""
    if asked is None:
        return quotas.default_idle_timeout_s or None
    if asked > quotas.max_idle_timeout_s:
        raise Unprocessable(
            f"idle_timeout_s {asked} exceeds this tenant's maximum of {quotas.max_idle_timeout_s}",
            extra={"max_idle_timeout_s": quotas.max_idle_timeout_s},
        )
    return asked
