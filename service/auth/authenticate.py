"""Turn a bearer credential into a Principal: an API key, the operator key or a JWT."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import sqlite3
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from service.auth.cache import AuthCache
from service.auth.principal import OPERATOR, Principal, PrincipalKind
from service.auth.queries import (
    LITE_API_KEY,
    LITE_API_KEY_CODEC,
    LITE_TOUCH_API_KEY,
    PG_API_KEY,
    PG_TOUCH_API_KEY,
    ApiKeyFacts,
)
from service.auth.tokens import TokenClaims, TokenCodec
from service.db import sqlite
from service.db.base import utcnow
from service.db.models import ApiKey, RevokedToken, Tenant
from service.db.pg import driver_connection, is_postgres
from service.errors import Unauthenticated

API_KEY_PREFIX = "alk_"
# `last_used_at` is written at most this often per key, so reads do not become writes (and a
# cached key is looked up again every TTL_S of service/auth/cache.py: it is at most the sum of
# the two behind).
LAST_USED_RESOLUTION = timedelta(seconds=30)


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
        if self.postgres:  # fixed SQL on the driver (service.auth.queries): every request
            async with driver_connection(self.engine) as conn:
                found = await conn.fetchrow(PG_API_KEY, digest)
                key = None if found is None else ApiKeyFacts.read(found)
                principal, touch = _api_key_principal(key)
                if touch is not None:
                    await conn.execute(PG_TOUCH_API_KEY, principal.key_id, touch)
                return principal
        # SQLite: fixed SQL on the database's reader and writer (service.db.sqlite.Direct).
        direct = sqlite.direct(self.engine)
        cursor = direct.reader.cursor()
        cursor.row_factory = sqlite3.Row
        row = cursor.execute(LITE_API_KEY, (digest,)).fetchone()
        facts = None if row is None else ApiKeyFacts.read(row, LITE_API_KEY_CODEC)
        principal, touch = _api_key_principal(facts)
        if touch is not None:
            async with direct.write() as conn:
                conn.execute(
                    LITE_TOUCH_API_KEY,
                    (LITE_API_KEY_CODEC.one("last_used_at", touch), principal.key_id),
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


def _api_key_principal(key: ApiKeyFacts | None) -> tuple[Principal, datetime | None]:
    """The principal of an API key, and the time to record as its last use when the stored
    one is stale (else None)."""
    if key is None:
        raise Unauthenticated("unknown API key")
    if key.revoked_at is not None:
        raise Unauthenticated("API key revoked")
    if key.status != "active":
        raise Unauthenticated("tenant suspended")
    now = utcnow()
    stale = key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION
    principal = Principal(
        kind=PrincipalKind.API_KEY,
        actor=key.id,
        tenant_id=key.tenant_id,
        scopes=frozenset(key.scopes),
        key_id=key.id,
    )
    return principal, now if stale else None
