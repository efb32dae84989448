from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import Sandbox, SandboxTransition, Template, TemplateVersion
from service.sandboxes.quotas import Usage
from service.sandboxes.states import ACTIVE


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
        sandboxes = select(
            func.count(Sandbox.id),
            func.coalesce(func.sum(Sandbox.cpus), 0),
            func.coalesce(func.sum(Sandbox.memory_mib), 0),
            func.coalesce(func.sum(Sandbox.disk_mib), 0),
        ).where(Sandbox.tenant_id == self.tenant_id, Sandbox.state.in_(list(ACTIVE)))
        builds = (
            select(
                func.count(TemplateVersion.id),
                func.coalesce(func.sum(TemplateVersion.cpus), 0),
                func.coalesce(func.sum(TemplateVersion.memory_mib), 0),
                func.coalesce(func.sum(TemplateVersion.disk_mib), 0),
            )
            .join(Template, Template.id == TemplateVersion.template_id)
            .where(Template.owner == self.tenant_id, TemplateVersion.state == "building")
        )
        if except_build is not None:
            builds = builds.where(TemplateVersion.id != except_build)
        held = (await self.session.execute(sandboxes)).one()
        building = (await self.session.execute(builds)).one()
        return Usage(*(int(a) + int(b) for a, b in zip(held, building, strict=True)))

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
