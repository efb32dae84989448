"""A network grant the operator takes away reaches the sandboxes that run under it.

Births check a tenant's grants as they are then (service.sandboxes.service.check_network);
this job brings the running sandboxes of this node under the grants of now when they narrow:
when the operator takes `network_open_allowed` or a range of `network_private_cidrs` away,
within a pass or two each running sandbox of that tenant here that had it loses it:

- an `open` sandbox whose tenant may no longer be open becomes an empty allowlist (a sandbox
  with a network keeps its interface; an empty allowlist reaches nothing);
- allowlist entries that lead only where the tenant may no longer go are dropped;
- the policy is applied again with the ranges granted now, so names resolve only to addresses
  still allowed (the runtime's iptables chain of the sandbox is rewritten in one go).

The sandbox's record then shows the narrowed policy, and the tenant's audit chain has a
`sandbox.network` event (actor `system:grants`) with what it was and why it changed. Grants
that widen change nothing running: a sandbox gets a wider policy only when asked (PATCH).

Each pass reads this node's running sandboxes with their tenants' grants (one query); only a
networked sandbox not seen running here before (new, resumed in place after a pause, moved
here, or any after this process starts) or whose tenant's grants narrowed since is looked at in
the runtime.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, NamedTuple

import msgspec
from sqlalchemy import select

from service.audit.recorder import AuditContext, record
from service.db.base import on_node, utcnow
from service.db.models import Sandbox, Tenant
from service.db.session import Db
from service.periodic import PeriodicJob
from service.runtime import SandboxRuntimeError, egress
from service.runtime.errors import InvalidSpec
from service.runtime.holder import RuntimeHolder
from service.runtime.types import SandboxSpec
from service.sandboxes.states import State
from service.tenants.schemas import Quotas
from service.tenants.service import quotas_from

log = logging.getLogger("airlock.jobs.grants")

SYSTEM = AuditContext(actor="system:grants", request_id=None, client=None)
INTERVAL_S = 2.0


class Grants(NamedTuple):
    open_allowed: bool
    private: frozenset[str]

    @classmethod
    def of(cls, quotas: Quotas) -> Grants:
        return cls(quotas.network_open_allowed, frozenset(quotas.network_private_cidrs))

    def within(self, other: Grants) -> bool:
        """Nothing here that `other` does not grant too."""
        return (other.open_allowed or not self.open_allowed) and self.private <= other.private


class Narrowed(NamedTuple):
    mode: str
    allow: list[str]


def narrowed(spec: SandboxSpec, quotas: Quotas, resolver: egress.Resolver) -> Narrowed | None:
    """The policy `spec` keeps under `quotas`, or None when nothing of it was taken away (blocking
    work: names are resolved)."""
    mode, allow = spec.network, list(spec.network_allow)
    if mode == "open" and not quotas.network_open_allowed:
        mode, allow = "allowlist", []
    private = list(quotas.network_private_cidrs)
    kept = [entry for entry in allow if _reachable(entry, private, resolver)]
    if (mode, kept) == (spec.network, spec.network_allow) and set(spec.network_private) <= set(
        private
    ):
        return None
    return Narrowed(mode, kept)


def _reachable(entry: str, private: list[str], resolver: egress.Resolver) -> bool:
    try:
        egress.check([entry], private)
        if egress.has_names([entry]):
            egress.check_names([entry], private, resolver)
    except InvalidSpec:
        return False
    return True


class NarrowedGrants(PeriodicJob):
    name = "narrowed-grants"

    def __init__(
        self,
        db: Db,
        holder: RuntimeHolder,
        node_id: str | None,
        interval_s: float = INTERVAL_S,
        resolver: egress.Resolver = egress.system_resolver,
    ) -> None:
        super().__init__(interval_s)
        self.db = db
        self.holder = holder
        self.node_id = node_id
        self.resolver = resolver
        # The grants each running sandbox here was last seen to be under.
        self._verified: dict[str, Grants] = {}

    async def run_once(self) -> bool:
        async with self.db() as session:
            rows = (
                await session.execute(
                    select(
                        Sandbox.id,
                        Sandbox.tenant_id,
                        Sandbox.runtime_id,
                        Sandbox.network,
                        Tenant.quotas,
                    )
                    .join(Tenant, Tenant.id == Sandbox.tenant_id)
                    .where(Sandbox.state == State.RUNNING.value)
                    .where(on_node(Sandbox.node_id, self.node_id))
                )
            ).all()
        verified: dict[str, Grants] = {}
        quotas_of: dict[str, Quotas] = {}
        for row in rows:
            sandbox_id, tenant_id, runtime_id = row.id, row.tenant_id, row.runtime_id
            if runtime_id is None or (row.network or {}).get("mode", "none") == "none":
                continue
            quotas = quotas_of.get(tenant_id) or quotas_of.setdefault(
                tenant_id, quotas_from(row.quotas)
            )
            grants, seen = Grants.of(quotas), self._verified.get(sandbox_id)
            if seen is None or not seen.within(grants):
                # Not seen running here before (new, resumed, moved here), or its tenant's
                # grants narrowed since.
                try:
                    await self._bring_under(tenant_id, sandbox_id, runtime_id, row.network, quotas)
                except Exception:  # the next pass tries again
                    log.exception("bringing sandbox %s under its grants failed", sandbox_id)
                    continue
            verified[sandbox_id] = grants
        self._verified = verified
        return False

    async def _bring_under(
        self,
        tenant_id: str,
        sandbox_id: str,
        runtime_id: str,
        network: dict[str, Any],
        quotas: Quotas,
    ) -> None:
        runtime = await self.holder.get()
        if not runtime.supports("update_network"):
            return  # a runtime that cannot change a running sandbox's network: births only
        try:
            spec = (await runtime.get(runtime_id)).spec
        except SandboxRuntimeError:  # gone meanwhile: the reconciler records it
            return
        if spec.network == "none":
            return
        kept = await asyncio.to_thread(narrowed, spec, quotas, self.resolver)
        if kept is None:
            return
        await runtime.update_network(
            runtime_id, kept.mode, kept.allow, list(quotas.network_private_cidrs)
        )
        await self._record(tenant_id, sandbox_id, network, kept)

    async def _record(
        self, tenant_id: str, sandbox_id: str, before: dict[str, Any], kept: Narrowed
    ) -> None:
        after = msgspec.to_builtins({"mode": kept.mode, "allow": kept.allow})
        async with self.db() as session, session.begin():
            row = await session.get(Sandbox, sandbox_id, with_for_update=True)
            if row is None:
                return
            row.network = after
            row.updated_at = utcnow()
            await record(
                session,
                SYSTEM,
                chain=tenant_id,
                action="sandbox.network",
                target=sandbox_id,
                details={
                    "from": before,
                    "to": after,
                    "reason": "the operator took a network grant away",
                },
            )
        log.info("sandbox %s brought under its tenant's grants: %s", sandbox_id, after)
