from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import PoolMember, PoolTarget, Sandbox, Template, TemplateVersion
from service.errors import Conflict, NotFound, Unprocessable
from service.sandboxes.schemas import SandboxCreate
from service.sandboxes.sizes import asks_other_caps
from service.sandboxes.states import ACTIVE

OPERATOR_OWNER = "_operator"


class TemplateRepository:
    """Templates visible to one owner: its own, plus the operator's (shared) ones.

    `owner` is a tenant id, or `_operator` for the operator, who sees only the shared ones.
    """

    def __init__(self, session: AsyncSession, owner: str) -> None:
        self.session = session
        self.owner = owner

    async def own(self, name: str, *, for_update: bool = False) -> Template | None:
        stmt = select(Template).where(Template.owner == self.owner, Template.name == name)
        if for_update:
            stmt = stmt.with_for_update()
        return await self.session.scalar(stmt.execution_options(populate_existing=True))

    async def resolve(self, name: str) -> Template | None:
        """The caller's own template of that name, else the shared one."""
        rows = (
            await self.session.scalars(
                select(Template).where(
                    Template.name == name, Template.owner.in_([self.owner, OPERATOR_OWNER])
                )
            )
        ).all()
        return next((r for r in rows if r.owner == self.owner), rows[0] if rows else None)

    async def list(self) -> list[Template]:
        stmt = (
            select(Template)
            .where(Template.owner.in_([self.owner, OPERATOR_OWNER]))
            .order_by(Template.name, Template.owner)
        )
        return list((await self.session.scalars(stmt)).all())

    async def versions(self, template_id: str) -> list[TemplateVersion]:
        stmt = (
            select(TemplateVersion)
            .where(TemplateVersion.template_id == template_id)
            .order_by(TemplateVersion.version.desc())
        )
        return list((await self.session.scalars(stmt)).all())

    async def in_use(self, template_id: str) -> tuple[int, int]:
        """(active sandboxes started from it, pool members holding it), across all tenants."""
        sandboxes = await self.session.scalar(
            select(func.count(Sandbox.id)).where(
                Sandbox.template_id == template_id, Sandbox.state.in_(list(ACTIVE))
            )
        )
        members = await self.session.scalar(
            select(func.count(PoolMember.id))
            .join(PoolTarget, PoolTarget.id == PoolMember.pool_id)
            .where(
                PoolTarget.template_id == template_id,
                PoolMember.state.in_(["starting", "ready"]),
            )
        )
        return int(sandboxes or 0), int(members or 0)


async def ready_version(session: AsyncSession, template_id: str) -> TemplateVersion | None:
    """The newest ready build of a template: what sandboxes and pool members start from."""
    return await session.scalar(
        select(TemplateVersion)
        .where(TemplateVersion.template_id == template_id, TemplateVersion.state == "ready")
        .order_by(TemplateVersion.version.desc())
        .limit(1)
    )


async def template_for(
    session: AsyncSession, tenant_id: str, data: SandboxCreate
) -> tuple[Template, TemplateVersion]:
    """The template a create names and its newest ready build; its size and caps are fixed
    by the build (the snapshot holds them), so a create may repeat them but not change them."""
    assert data.template is not None
    if data.image is not None:
        raise Unprocessable("give image or template, not both")
    template = await TemplateRepository(session, tenant_id).resolve(data.template)
    if template is None:
        raise NotFound(f"no template {data.template}")
    version = await ready_version(session, template.id)
    if version is None:
        raise Conflict(
            f"template {data.template} has no successful build yet",
            extra={"template": data.template},
        )
    if asks_other_caps(data, version.size, (version.cpus, version.memory_mib, version.disk_mib)):
        raise Unprocessable(
            f"template {data.template} is built for size {version.size}",
            extra={"size": version.size},
        )
    return template, version
