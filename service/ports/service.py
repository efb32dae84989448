"""Ports of sandboxes: preview links, and opening a connection to a port for the proxy.

A connection is looked up like any sandbox call (tenant, token binding, running; a paused
sandbox is woken), opened by the runtime through its own channel into the sandbox, and
audited once when it opens (`port.open`), never per byte.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.recorder import AuditContext, record
from service.auth.principal import Principal, PrincipalKind
from service.db.base import utcnow
from service.db.session import Db
from service.errors import AppError, Conflict, NotFound, Unprocessable
from service.files.target import SandboxCall, audit
from service.ports.links import LINK_ACTION, PARAM, SCOPE, PreviewLinks
from service.ports.schemas import PreviewLink, PreviewLinkCreate
from service.runtime import NotSupported, PortConnection, PortNotListening
from service.sandboxes import activity
from service.sandboxes.repository import SandboxRepository
from service.tenants.service import get_tenant, quotas_of

OPEN_ACTION = "port.open"


class NothingListening(AppError):
    status, code, title = 502, "port_not_listening", "Nothing listens on this port in the sandbox"


class PortsUnsupported(Conflict):
    code, title = "ports_unsupported", "This sandbox's ports cannot be reached"


class BadUpstream(AppError):
    status, code, title = 502, "port_bad_response", "The sandbox's server did not answer HTTP"


@dataclass(frozen=True, slots=True)
class Opened:
    tenant_id: str
    sandbox_id: str
    port: int
    connection: PortConnection


def parse_port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise Unprocessable(f"port must be a number from 1 to 65535, not {text[:20]!r}")
    return int(text)


def upstream_host(sandbox_id: str, port: int, domain: str) -> str:
    """The Host the sandbox's server is asked for: the port's preview name when there is a
    preview domain, else the sandbox's id and the port."""
    return f"{port}-{sandbox_id}.{domain}" if domain else f"{sandbox_id}:{port}"


async def open_port(call: SandboxCall, port_text: str, protocol: str) -> Opened:
    port = parse_port(port_text)
    # The operator has no sandboxes; a principal without the scope never reaches a port.
    principal, sandbox_id = call.principal, call.sandbox_id
    if principal.tenant_id is None or not principal.has_scope(SCOPE):
        raise NotFound(f"no sandbox {sandbox_id}")
    target = await call.target()
    runtime = await call.holder.get()
    db, ctx = call.db, call.ctx
    if not runtime.supports("ports"):
        raise PortsUnsupported(f"the {runtime.name} runtime cannot reach ports inside sandboxes")
    try:
        connection = await runtime.open_port(target.runtime_id, port)
    except PortNotListening as exc:
        await audit(db, ctx, target, OPEN_ACTION, outcome="not_listening", port=port,
                          protocol=protocol)  # fmt: skip
        raise NothingListening(
            f"sandbox {sandbox_id}: {exc}; start a server on port {port} there first",
            extra={"port": port},
        ) from exc
    except NotSupported as exc:
        raise PortsUnsupported(exc.public()) from exc
    try:
        await audit(db, ctx, target, OPEN_ACTION, port=port, protocol=protocol)
    except BaseException:
        await connection.close()
        raise
    kept = ActiveConnection(connection, db, target.sandbox_id)
    return Opened(target.tenant_id, target.sandbox_id, port, kept)


class ActiveConnection:
    """A port connection that counts as its sandbox's activity while it is open, so a long
    WebSocket or download is not put to sleep under its user (idle sleep)."""

    def __init__(self, connection: PortConnection, db: Db, sandbox_id: str) -> None:
        self._connection = connection
        self._awake = asyncio.ensure_future(_keep_active(db, sandbox_id))

    async def read(self) -> bytes:
        return await self._connection.read()

    async def write(self, data: bytes) -> None:
        await self._connection.write(data)

    async def write_eof(self) -> None:
        await self._connection.write_eof()

    async def close(self) -> None:
        self._awake.cancel()
        await self._connection.close()


async def _keep_active(db: Db, sandbox_id: str) -> None:
    while True:
        await asyncio.sleep(activity.EVERY_S)
        with contextlib.suppress(Exception):  # a missed mark only makes sleep come sooner
            await activity.touch(db, sandbox_id)


async def create_link(
    session: AsyncSession,
    ctx: AuditContext,
    links: PreviewLinks,
    principal: Principal,
    sandbox_id: str,
    data: PreviewLinkCreate,
    base_url: str,
    domain: str,
) -> PreviewLink:
    assert principal.tenant_id is not None and principal.key_id is not None
    repository = SandboxRepository(session, principal.tenant_id, principal.sandbox_id)
    if await repository.get(sandbox_id) is None:
        raise NotFound(f"no sandbox {sandbox_id}")
    max_ttl = quotas_of(await get_tenant(session, principal.tenant_id)).max_token_ttl_s
    ttl = data.ttl_s if data.ttl_s is not None else max_ttl
    if ttl > max_ttl:
        raise Unprocessable(
            f"ttl_s {ttl} exceeds this tenant's maximum token lifetime of {max_ttl} s",
            extra={"max_ttl_s": max_ttl},
        )
    if principal.expires_at is not None:
        # A link made with a short-lived token ends with that token, not later.
        left = int((principal.expires_at - utcnow()).total_seconds())
        ttl = max(1, min(ttl, left))
    link = links.issue(
        tenant_id=principal.tenant_id,
        key_id=principal.key_id,
        sandbox_id=sandbox_id,
        port=data.port,
        ttl_s=ttl,
        # A link made with a token is refused once that token is revoked.
        minted_by=principal.actor if principal.kind is PrincipalKind.TOKEN else None,
    )
    await record(
        session,
        ctx,
        chain=principal.tenant_id,
        action=LINK_ACTION,
        target=sandbox_id,
        details={"port": data.port, "jti": link.jti, "expires_at": link.expires_at.isoformat()},
    )
    query = f"?{PARAM}={quote(link.token)}"
    base = urlsplit(base_url)
    on_port = f":{base.port}" if base.port else ""
    return PreviewLink(
        sandbox_id=sandbox_id,
        port=data.port,
        url=f"{base_url.rstrip('/')}/v1/sandboxes/{sandbox_id}/ports/{data.port}/{query}",
        host_url=f"{base.scheme}://{upstream_host(sandbox_id, data.port, domain)}{on_port}/{query}"
        if domain
        else None,
        expires_at=link.expires_at,
        jti=link.jti,
    )
