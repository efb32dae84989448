"""The sandboxes' hand-written SQL, by name: what a tenant's active sandboxes and running
template builds hold, written once for `SandboxRepository.active_usage` and for the warm
pool's claim (service.pool.queries), which reads it within its own one statement. Each result
column has a name (`sandboxes`, `cpus`, `memory_mib`, `disk_mib`, as `Usage` has them), and
rows are read by it."""

from __future__ import annotations

from sqlalchemy import TextClause, text

from service.sandboxes.states import ACTIVE

_ACTIVE = ", ".join(sorted(f"'{state.value}'" for state in ACTIVE))  # fixed names


def held_by_sandboxes(tenant: str) -> str:
    """What the tenant's active sandboxes hold, as SQL of one row (sandboxes, cpus, memory_mib,
    disk_mib), `tenant` being the tenant's parameter."""
    return f"""SELECT count(*) AS sandboxes, coalesce(sum(s.cpus), 0) AS cpus,
    coalesce(sum(s.memory_mib), 0) AS memory_mib, coalesce(sum(s.disk_mib), 0) AS disk_mib
  FROM sandboxes s WHERE s.tenant_id = {tenant} AND s.state IN ({_ACTIVE})"""  # noqa: S608


def held_by_builds(tenant: str) -> str:
    """What the sandboxes of the tenant's running template builds hold, as `held_by_sandboxes`
    has it."""
    return f"""SELECT count(*) AS sandboxes, coalesce(sum(v.cpus), 0) AS cpus,
    coalesce(sum(v.memory_mib), 0) AS memory_mib, coalesce(sum(v.disk_mib), 0) AS disk_mib
  FROM template_versions v JOIN templates bt ON bt.id = v.template_id
  WHERE bt.owner = {tenant} AND v.state = 'building'"""  # noqa: S608


# What the tenant's active sandboxes hold: :tenant.
HELD_BY_SANDBOXES = text(held_by_sandboxes(":tenant"))
# What its running builds hold: :tenant.
HELD_BY_BUILDS = text(held_by_builds(":tenant"))
# What its running builds other than one hold: :tenant, :except_build.
HELD_BY_OTHER_BUILDS = text(held_by_builds(":tenant") + " AND v.id <> :except_build")


def held_by_builds_besides(except_build: str | None) -> TextClause:
    """HELD_BY_BUILDS, or HELD_BY_OTHER_BUILDS when a build is left out."""
    return HELD_BY_BUILDS if except_build is None else HELD_BY_OTHER_BUILDS
