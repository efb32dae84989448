from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Select, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import Sandbox, SandboxTransition
from service.sandboxes.quotas import Usage
from service.sandboxes.states import ACTIVE

_ACTIVE = ", ".join(sorted(f"'{state.value}'" for state in ACTIVE))  # fixed names


def held_by_sandboxes(tenant: str) -> str:
    """What the tenant's active sandboxes hold, as SQL of one row (sandboxes, cpus, memory_mib,
    disk_mib), `tenant` being the tenant's parameter: written once, for `active_usage` and for
    the warm pool's claim, which reads it within its own one statement."""
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


class SandboxRepository:
    """A tenant's sandboxes; with a sandbox-bound token, only that one sandbox exists."""

    def __init__(
        self, session: AsyncSession, tenant_id: str, only_sandbox: str | None = None
    ) -> None:
        self.session = session
        self.tenant_id = tenant_id
        self.only_sandbox = only_sandbox

    def _scoped(self, stmt: Select[tuple[Sandbox]]) -> Select[tuple[Sandbox]]:
        stmt = stmt.where(Sandbox.tenant_id == self.tenant_id)
        if self.only_sandbox is not None:
            stmt = stmt.where(Sandbox.id == self.only_sandbox)
        return stmt

    async def get(self, sandbox_id: str, *, for_update: bool = False) -> Sandbox | None:
        stmt = self._scoped(select(Sandbox)).where(Sandbox.id == sandbox_id)
        if for_update:
            stmt = stmt.with_for_update()
        return await self.session.scalar(stmt.execution_options(populate_existing=True))

    async def get_by_idempotency_key(self, key: str) -> Sandbox | None:
        return await self.session.scalar(
            self._scoped(select(Sandbox)).where(Sandbox.idempotency_key == key)
        )

    async def list(
        self,
        *,
        limit: int,
        after_id: str | None,
        states: Sequence[str],
        labels: dict[str, str],
    ) -> list[Sandbox]:
        stmt = self._scoped(select(Sandbox))
        if after_id is not None:
            stmt = stmt.where(Sandbox.id > after_id)
        if states:
            stmt = stmt.where(Sandbox.state.in_(states))
        for key, value in labels.items():
            stmt = stmt.where(Sandbox.labels[key].as_string() == value)
        return list((await self.session.scalars(stmt.order_by(Sandbox.id).limit(limit))).all())

    async def active_usage(self, except_build: str | None = None) -> Usage:
        """What the tenant's active sandboxes and the sandboxes of its running template builds
        (other than `except_build`) hold together."""
        builds, params = held_by_builds(":tenant"), {"tenant": self.tenant_id}
        if except_build is not None:
            builds += " AND v.id <> :except_build"
            params["except_build"] = except_build
        held = (await self.session.execute(text(held_by_sandboxes(":tenant")), params)).one()
        building = (await self.session.execute(text(builds), params)).one()
        return Usage(*(int(held._mapping[k]) + int(building._mapping[k]) for k in Usage._fields))

    async def transitions(self, sandbox_id: str) -> list[SandboxTransition]:
        stmt = (
            select(SandboxTransition)
            .join(Sandbox, Sandbox.id == SandboxTransition.sandbox_id)
            .where(Sandbox.tenant_id == self.tenant_id, Sandbox.id == sandbox_id)
            .order_by(SandboxTransition.id)
        )
        return list((await self.session.scalars(stmt)).all())

    def add(self, sandbox: Sandbox) -> None:
        if sandbox.tenant_id != self.tenant_id:
            raise ValueError("sandbox belongs to another tenant")
        self.session.add(sandbox)
