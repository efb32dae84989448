from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import Sandbox, SandboxTransition
from service.sandboxes.queries import (
    HELD_BY_SANDBOXES,
    held_by_builds_besides,
)
from service.sandboxes.quotas import Usage


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
        params = {"tenant": self.tenant_id}
        if except_build is not None:
            params["except_build"] = except_build
        held = (await self.session.execute(HELD_BY_SANDBOXES, params)).one()._mapping
        builds = held_by_builds_besides(except_build)
        building = (await self.session.execute(builds, params)).one()._mapping
        return Usage(*(int(held[k]) + int(building[k]) for k in Usage._fields))

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
