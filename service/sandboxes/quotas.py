"""A tenant's sandbox quotas, checked before anything is recorded or started."""

from __future__ import annotations

from service.errors import QuotaExceeded, Unprocessable
from service.tenants.schemas import Quotas


def check_quotas(
    quotas: Quotas, ttl_s: int, usage: tuple[int, int, int], cpus: int, memory_mib: int
) -> None:
    """Raise unless one more sandbox of this size and TTL fits; `usage` is the tenant's active
    (sandboxes, vCPUs, memory MiB)."""
    if ttl_s > quotas.max_sandbox_ttl_s:
        raise Unprocessable(
            f"ttl_s {ttl_s} exceeds this tenant's maximum of {quotas.max_sandbox_ttl_s}",
            extra={"max_ttl_s": quotas.max_sandbox_ttl_s},
        )
    count, used_cpus, used_memory = usage
    if count + 1 > quotas.max_sandboxes:
        raise QuotaExceeded(
            f"the tenant has {count} of {quotas.max_sandboxes} sandboxes",
            retry_after_s=10,
            extra={"quota": "max_sandboxes", "limit": quotas.max_sandboxes},
        )
    if used_cpus + cpus > quotas.max_vcpus:
        raise QuotaExceeded(
            f"{cpus} more vCPUs would exceed the tenant's {quotas.max_vcpus}",
            retry_after_s=10,
            extra={"quota": "max_vcpus", "limit": quotas.max_vcpus, "in_use": used_cpus},
        )
    if used_memory + memory_mib > quotas.max_memory_mib:
        raise QuotaExceeded(
            f"{memory_mib} MiB more would exceed the tenant's {quotas.max_memory_mib} MiB",
            retry_after_s=10,
            extra={
                "quota": "max_memory_mib",
                "limit": quotas.max_memory_mib,
                "in_use": used_memory,
            },
        )
