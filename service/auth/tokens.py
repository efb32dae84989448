"""JWT issue and verification: EdDSA only, `kid` required, every registered claim required."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt

from service.auth.keyring import KeyRing
from service.errors import Unauthenticated

ALGORITHM = "EdDSA"
REQUIRED_CLAIMS = ("exp", "iat", "nbf", "aud", "iss", "sub", "jti")
# Tolerated clock difference between replicas, in seconds.
LEEWAY_S = 5


@dataclass(frozen=True, slots=True)
class TokenClaims:
    sub: str
    tid: str
    scp: tuple[str, ...]
    jti: str
    sbx: str | None
    exp: datetime


@dataclass(frozen=True, slots=True)
class IssuedToken:
    token: str
    jti: str
    expires_at: datetime


class TokenCodec:
    def __init__(self, keyring: KeyRing, *, issuer: str, audience: str) -> None:
        self.keyring = keyring
        self.issuer = issuer
        self.audience = audience

    def issue(
        self,
        *,
        sub: str,
        tenant_id: str,
        scopes: list[str],
        ttl_s: int,
        sandbox_id: str | None = None,
        now: datetime | None = None,
    ) -> IssuedToken:
        now = (now or datetime.now(UTC)).replace(microsecond=0)
        exp = now + timedelta(seconds=ttl_s)
        jti = f"tok_{secrets.token_hex(16)}"
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": sub,
            "tid": tenant_id,
            "scp": scopes,
            "jti": jti,
            "iat": int(now.timestamp()),
            "nbf": int(now.timestamp()),
            "exp": int(exp.timestamp()),
        }
        if sandbox_id is not None:
            claims["sbx"] = sandbox_id
        return IssuedToken(token=sign(self.keyring, claims), jti=jti, expires_at=exp)

    def verify(self, token: str) -> TokenClaims:
        """Check signature and claims; the caller checks revocation and the tenant."""
        return _typed_claims(
            decode_signed(self.keyring, token, issuer=self.issuer, audience=self.audience)
        )


def sign(keyring: KeyRing, claims: dict[str, Any]) -> str:
    """`claims` as a token signed with the keyring's current key, named by its `kid`."""
    key = keyring.signer()
    return jwt.encode(claims, key.private, algorithm=ALGORITHM, headers={"kid": key.kid})


def decode_signed(
    keyring: KeyRing,
    token: str,
    *,
    issuer: str,
    audience: str,
    required: tuple[str, ...] = REQUIRED_CLAIMS,
) -> dict[str, Any]:
    """The claims of a token signed by one of `keyring`'s keys for `audience`, or
    Unauthenticated saying what is wrong with it."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise Unauthenticated("malformed token") from exc
    # Decide the algorithm from our own configuration, never from the token: this closes
    # `alg: none` and HMAC-with-the-public-key confusion before any key is touched.
    if header.get("alg") != ALGORITHM:
        raise Unauthenticated("token algorithm not accepted")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise Unauthenticated("token has no key id")
    key = keyring.get(kid)
    if key is None:
        raise Unauthenticated("token signed by an unknown key")
    try:
        return jwt.decode(
            token,
            key.public,
            algorithms=[ALGORITHM],
            audience=audience,
            issuer=issuer,
            leeway=LEEWAY_S,
            options={"require": list(required), "strict_aud": True},
        )
    except jwt.ExpiredSignatureError as exc:
        raise Unauthenticated("token expired") from exc
    except jwt.ImmatureSignatureError as exc:
        raise Unauthenticated("token not yet valid") from exc
    except jwt.InvalidAudienceError as exc:
        raise Unauthenticated("token audience not accepted") from exc
    except jwt.InvalidIssuerError as exc:
        raise Unauthenticated("token issuer not accepted") from exc
    except jwt.MissingRequiredClaimError as exc:
        raise Unauthenticated(f"token lacks the {exc.claim!r} claim") from exc
    except jwt.PyJWTError as exc:
        raise Unauthenticated("token signature or structure is invalid") from exc


def _typed_claims(claims: dict[str, Any]) -> TokenClaims:
    tid, scp, sub, jti = claims.get("tid"), claims.get("scp"), claims["sub"], claims["jti"]
    sbx = claims.get("sbx")
    if not isinstance(tid, str) or not tid:
        raise Unauthenticated("token lacks the 'tid' claim")
    if not isinstance(scp, list) or not all(isinstance(s, str) for s in scp):
        raise Unauthenticated("token lacks a valid 'scp' claim")
    if not isinstance(sub, str) or not isinstance(jti, str) or not jti:
        raise Unauthenticated("token 'sub' and 'jti' must be strings")
    if sbx is not None and not isinstance(sbx, str):
        raise Unauthenticated("token 'sbx' must be a string")
    if not isinstance(claims["exp"], int | float):
        raise Unauthenticated("token 'exp' must be a number")
    return TokenClaims(
        sub=sub,
        tid=tid,
        scp=tuple(scp),
        jti=jti,
        sbx=sbx,
        exp=datetime.fromtimestamp(claims["exp"], UTC),
    )
