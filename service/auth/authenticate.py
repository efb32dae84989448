"""Turn a bearer credential into a Principal: an API key, the operator key or a JWT."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from service.auth.cache import AuthCache
from service.auth.principal import OPERATOR, Principal, PrincipalKind
from service.auth.tokens import TokenClaims, TokenCodec
from service.db import sqlite
from service.db.base import utcnow
from service.db.models import ApiKey, RevokedToken, Tenant
from service.db.pg import driver_connection, is_postgres
from service.db.sqlite import Codec
from service.errors import Unauthenticated

API_KEY_PREFIX = "alk_"
# `last_used_at` is written at most this often per key, so reads do not become writes (and a
# cached key is looked up again every TTL_S of service/auth/cache.py: it is at most the sum of
# the two behind).
LAST_USED_RESOLUTION = timedelta(seconds=30)


_API_KEY_SQL = """
SELECT k.id, k.tenant_id, k.scopes, k.revoked_at, k.last_used_at, t.status
FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE k.key_hash = $1
"""
_API_KEY_SQLITE = _API_KEY_SQL.replace("$1", "?")
# How SQLite gives the columns that are not text (service.db.sqlite.Codec).
_API_KEY_CODEC = Codec(ApiKey.__table__, ("scopes", "revoked_at", "last_used_at"))


def hash_api_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class Authenticator:
    # Core statements on a pooled connection, not ORM sessions: this runs on every request.
    def __init__(
        self,
        engine: AsyncEngine,
        codec: TokenCodec,
        operator_key: str,
        cache: AuthCache | None = None,
    ) -> None:
        self.engine = engine
        self.codec = codec
        self._operator_digest = hashlib.sha256(operator_key.encode()).digest()
        self.postgres = is_postgres(engine)
        # On only while revocations reach this process (service/auth/cache.py).
        self.cache = cache or AuthCache()

    async def authenticate(self, authorization: str | None) -> Principal:
        credential = bearer_credential(authorization)
        digest = hashlib.sha256(credential.encode()).digest()
        if hmac.compare_digest(digest, self._operator_digest):
            return OPERATOR
        cached = self.cache.get(digest)
        if cached is not None:
            return cached
        mark = self.cache.mark()
        if credential.startswith(API_KEY_PREFIX):
            principal = await self._from_api_key(credential)
        else:
            principal = await self._from_token(credential)
        self.cache.put(digest, principal, mark)
        return principal

    async def refusal(self, principal: Principal) -> str | None:
        """Why a caller accepted earlier no longer is (its token expired or was revoked, its key
        revoked, its tenant suspended), or None while it holds: for what outlives its request,
        like an event stream. Asked of the principal, not the credential, so it holds the same
        on a node, which sees the caller only through the API replica's call."""
        if principal.is_operator:
            return None
        if principal.expires_at is not None and principal.expires_at <= utcnow():
            return "token expired"
        async with self._reader() as conn:
            if principal.kind is PrincipalKind.TOKEN:
                revoked = await conn.scalar(
                    select(RevokedToken.jti).where(RevokedToken.jti == principal.actor)
                )
                if revoked is not None:
                    return "token revoked"
            row = (
                await conn.execute(
                    select(ApiKey.revoked_at, Tenant.status)
                    .join(Tenant, Tenant.id == ApiKey.tenant_id)
                    .where(ApiKey.id == principal.key_id)
                )
            ).one_or_none()
        if row is None or row.revoked_at is not None:
            if principal.kind is PrincipalKind.TOKEN:
                return "the API key that issued this token was revoked"
            return "API key revoked"
        if row.status != "active":
            return "tenant suspended"
        return None

    @contextlib.asynccontextmanager
    async def _reader(self) -> AsyncIterator[AsyncConnection]:
        """A connection for single-statement reads and writes: on PostgreSQL in autocommit, which
        spares the BEGIN and COMMIT round trips on every request."""
        if self.engine.dialect.name != "postgresql":
            async with self.engine.begin() as conn:
                yield conn
            return
        async with self.engine.connect() as conn:
            yield await conn.execution_options(isolation_level="AUTOCOMMIT")

    async def _from_api_key(self, credential: str) -> Principal:
        digest = hash_api_key(credential)
        if self.postgres:  # fixed SQL on the driver: this runs on every request
            async with driver_connection(self.engine) as conn:
                principal, touch = _api_key_principal(await conn.fetchrow(_API_KEY_SQL, digest))
                if touch is not None:
                    await conn.execute(
                        "UPDATE api_keys SET last_used_at = $2 WHERE id = $1",
                        principal.key_id,
                        touch,
                    )
                return principal
        # SQLite: fixed SQL on the database's reader and writer (service.db.sqlite.Direct).
        direct = sqlite.direct(self.engine)
        row = direct.reader.execute(_API_KEY_SQLITE, (digest,)).fetchone()
        if row is not None:
            row = (*row[:2], *_API_KEY_CODEC.row(row[2:5]), row[5])
        principal, touch = _api_key_principal(row)
        if touch is not None:
            async with direct.write() as conn:
                conn.execute(
                    "UPDATE api_keys SET last_used_at = ? WHERE id = ?",
                    (_API_KEY_CODEC.one("last_used_at", touch), principal.key_id),
                )
        return principal

    async def _from_token(self, credential: str) -> Principal:
        return await self.principal_of(self.codec.verify(credential))

    async def principal_of(self, claims: TokenClaims, minted_by: str | None = None) -> Principal:
        """The caller a verified token (or preview link) stands for, once its key and tenant
        are checked: revoked, a key revoked or a tenant suspended is Unauthenticated. A
        credential made with a token (`minted_by`, its jti) ends with that token: both are
        looked up in one statement."""
        jtis = [claims.jti] if minted_by is None else [claims.jti, minted_by]
        async with self._reader() as conn:
            revoked = await conn.scalar(
                select(RevokedToken.jti).where(RevokedToken.jti.in_(jtis)).limit(1)
            )
            if revoked is not None:
                raise Unauthenticated("token revoked")
            row = (
                await conn.execute(
                    select(ApiKey.revoked_at, ApiKey.tenant_id, Tenant.status)
                    .join(Tenant, Tenant.id == ApiKey.tenant_id)
                    .where(ApiKey.id == claims.sub)
                )
            ).one_or_none()
        # A token lives no longer than the key that minted it.
        if row is None or row.tenant_id != claims.tid:
            raise Unauthenticated("token subject unknown")
        if row.revoked_at is not None:
            raise Unauthenticated("the API key that issued this token was revoked")
        if row.status != "active":
            raise Unauthenticated("tenant suspended")
        return Principal(
            kind=PrincipalKind.TOKEN,
            actor=claims.jti,
            tenant_id=claims.tid,
            scopes=frozenset(claims.scp),
            key_id=claims.sub,
            sandbox_id=claims.sbx,
            expires_at=claims.exp,
        )


def bearer_credential(authorization: str | None) -> str:
    """The credential of an `Authorization: Bearer <credential>` header."""
    if not authorization:
        raise Unauthenticated("no bearer credential")
    scheme, _, credential = authorization.partition(" ")
    credential = credential.strip()
    if scheme.lower() != "bearer" or not credential:
        raise Unauthenticated("expected `Authorization: Bearer <credential>`")
    return credential


def _api_key_principal(row: Any) -> tuple[Principal, datetime | None]:
    """The principal of an API key row (id, tenant id, scopes, revoked at, last used at, tenant
    status), and the time to record as its last use when the stored one is stale (else None)."""
    if row is None:
        raise Unauthenticated("unknown API key")
    key_id, tenant_id, scopes, revoked_at, last_used_at, status = row
    if revoked_at is not None:
        raise Unauthenticated("API key revoked")
    if status != "active":
        raise Unauthenticated("tenant suspended")
    now = utcnow()
    touch = now if last_used_at is None or now - last_used_at > LAST_USED_RESOLUTION else None
    principal = Principal(
        kind=PrincipalKind.API_KEY,
        actor=key_id,
        tenant_id=tenant_id,
        scopes=frozenset(scopes),
        key_id=key_id,
    )
    return principal, touch
