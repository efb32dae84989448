"""Tenant secrets: named values a tenant stores once and refers to by name (a private
repository's token for reviews). Values are sealed before they reach the session and opened
only on the host, by the code that hands them on; no response, log, trace, audit event or
error carries one."""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.recorder import AuditContext, record
from service.auth.principal import Principal
from service.db.base import utcnow
from service.db.models import TenantSecret
from service.errors import Conflict, NotFound, Unprocessable
from service.ids import new_id
from service.pagination import decode_cursor, page_of
from service.secrets import hosts
from service.secrets.crypto import Sealed, box_for
from service.secrets.repository import SecretRepository
from service.secrets.schemas import MAX_VALUE_BYTES, NAME_PATTERN, Secret, SecretPage, SecretPut
from service.settings import Settings

_NAME = re.compile(NAME_PATTERN)


def check_name(name: str) -> None:
    if not _NAME.fullmatch(name):
        raise Unprocessable(
            "a secret's name is 1 to 100 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit",
            extra={"pattern": NAME_PATTERN},
        )


def to_schema(row: TenantSecret) -> Secret:
    return Secret(
        name=row.name,
        allowed_hosts=list(row.allowed_hosts),
        created_at=row.created_at,
        updated_at=row.updated_at,
        created_by=row.created_by,
    )


def tenant_of(principal: Principal) -> str:
    # The guard refuses sandbox-bound tokens (no `bound_token` route) and the operator.
    assert principal.tenant_id is not None
    return principal.tenant_id


async def put_secret(
    session: AsyncSession,
    settings: Settings,
    principal: Principal,
    ctx: AuditContext,
    name: str,
    data: SecretPut,
) -> tuple[Secret, bool]:
    """Create or replace; returns the secret and whether it was created."""
    tenant_id = tenant_of(principal)
    check_name(name)
    size = len(data.value.encode())
    if size == 0 or size > MAX_VALUE_BYTES:
        raise Unprocessable(
            f"a secret's value is 1 to {MAX_VALUE_BYTES} bytes (this one is {size})",
            extra={"max_bytes": MAX_VALUE_BYTES},
        )
    allowed_hosts = hosts.normalize(data.allowed_hosts)
    sealed = box_for(settings.secrets_key_path).seal(tenant_id, name, data.value)
    repo = SecretRepository(session, tenant_id)
    row = await repo.get(name, for_update=True)
    now = utcnow()
    created = row is None
    if row is None:
        row = TenantSecret(
            id=new_id("sec"),
            tenant_id=tenant_id,
            name=name,
            created_by=ctx.actor,
            created_at=now,
        )
        repo.add(row)
    row.key_id, row.nonce, row.ciphertext = sealed.key_id, sealed.nonce, sealed.ciphertext
    row.allowed_hosts = allowed_hosts
    row.updated_at = now
    try:
        await session.flush()
    except IntegrityError as exc:
        raise Conflict(f"the secret {name} was created at the same time; retry") from exc
    await record(
        session,
        ctx,
        chain=tenant_id,
        action="secret.create" if created else "secret.replace",
        target=row.id,
        details={"name": name, "allowed_hosts": allowed_hosts},
    )
    return to_schema(row), created


async def list_secrets(
    session: AsyncSession, principal: Principal, *, limit: int, cursor: str | None
) -> SecretPage:
    after = decode_cursor(cursor, str)
    rows = await SecretRepository(session, tenant_of(principal)).list(
        limit=limit + 1, after_name=after
    )
    items, next_cursor = page_of(rows, limit, key=lambda r: r.name)
    return SecretPage(items=[to_schema(r) for r in items], next_cursor=next_cursor)


async def delete_secret(
    session: AsyncSession, principal: Principal, ctx: AuditContext, name: str
) -> None:
    tenant_id = tenant_of(principal)
    repo = SecretRepository(session, tenant_id)
    row = await repo.get(name)
    if row is None:
        raise NotFound(f"no secret {name}")
    await session.delete(row)
    await record(
        session, ctx, chain=tenant_id, action="secret.delete", target=row.id, details={"name": name}
    )


async def check_usable(session: AsyncSession, tenant_id: str, name: str, url: str) -> None:
    """A 404 unless the secret exists, a 403 unless it may be sent to the host of `url`."""
    row = await SecretRepository(session, tenant_id).get(name)
    if row is None:
        raise NotFound(
            f"no secret named {name!r} (PUT /v1/secrets/{{name}})", extra={"secret": name}
        )
    hosts.check(name, list(row.allowed_hosts), url)


async def reveal(
    session: AsyncSession, key_file: Path, tenant_id: str, name: str, *, url: str
) -> str | None:
    """The value, for the host code that sends it to `url`; None when there is no such secret.
    A 403 (`SecretHostRefused`) when the secret may not go to that URL's host, checked again
    here because the secret's hosts may have changed since the request that named it. Raises
    Undecryptable when the row does not open for this tenant and name."""
    row = await SecretRepository(session, tenant_id).get(name)
    if row is None:
        return None
    hosts.check(name, list(row.allowed_hosts), url)
    sealed = Sealed(row.key_id, row.nonce, row.ciphertext)
    return box_for(key_file).open(tenant_id, name, sealed)
