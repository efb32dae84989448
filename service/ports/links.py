"""Preview links: a signed, expiring grant to one port of one sandbox, carried in a URL.

A link is a JWT signed with the service's own keys (EdDSA, `kid`), for its own audience, so
no API token is ever accepted as a link nor a link as an API token. It names the tenant, the
API key that made it (a revoked key ends its links), the token it was made with if any (`via`:
revoking that token ends its links too), the sandbox and the port; its `jti` is revoked as a
token's is (`DELETE /v1/tokens/{jti}`). A link made with a token never outlives it. A browser
presents it once as the `airlock_preview` query parameter; the answer sets it as a cookie
scoped to that port's path (or to the preview host), so the page's own requests carry it.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from service.auth.keyring import KeyRing
from service.auth.tokens import TokenClaims, decode_signed, sign
from service.errors import Unauthenticated
from service.redaction import PREVIEW_PARAM

AUDIENCE = "airlock-preview"
# A link's jti, and the audit action that records it being made (its target is the sandbox;
# the jti is in its details).
JTI_PREFIX = "lnk_"
LINK_ACTION = "port.link"
# The query parameter and the cookie that carry a link; never passed on to the sandbox.
PARAM = PREVIEW_PARAM
SCOPE = "ports"
CLAIMS = ("exp", "iat", "aud", "iss", "sub", "jti", "tid", "sbx", "prt")


@dataclass(frozen=True, slots=True)
class Link:
    token: str
    jti: str
    tenant_id: str
    key_id: str
    sandbox_id: str
    port: int
    expires_at: datetime
    # The jti of the token the link was made with (None: made with the API key itself).
    minted_by: str | None = None

    def as_token_claims(self) -> TokenClaims:
        """What the link grants, as a token's claims: `ports` on its sandbox, until it ends."""
        return TokenClaims(
            sub=self.key_id,
            tid=self.tenant_id,
            scp=(SCOPE,),
            jti=self.jti,
            sbx=self.sandbox_id,
            exp=self.expires_at,
        )


class PreviewLinks:
    def __init__(self, keyring: KeyRing, *, issuer: str) -> None:
        self.keyring = keyring
        self.issuer = issuer

    def issue(
        self,
        *,
        tenant_id: str,
        key_id: str,
        sandbox_id: str,
        port: int,
        ttl_s: int,
        minted_by: str | None = None,
    ) -> Link:
        now = datetime.now(UTC).replace(microsecond=0)
        expires = now + timedelta(seconds=ttl_s)
        jti = f"{JTI_PREFIX}{secrets.token_hex(8)}"
        claims = {
            "iss": self.issuer,
            "aud": AUDIENCE,
            "sub": key_id,
            "tid": tenant_id,
            "sbx": sandbox_id,
            "prt": port,
            "jti": jti,
            "iat": int(now.timestamp()),
            "exp": int(expires.timestamp()),
        }
        if minted_by is not None:
            claims["via"] = minted_by
        token = sign(self.keyring, claims)
        return Link(token, jti, tenant_id, key_id, sandbox_id, port, expires, minted_by)

    def verify(self, token: str) -> Link:
        """The link, or Unauthenticated (401) when it is expired, tampered with or not one."""
        claims = decode_signed(
            self.keyring, token, issuer=self.issuer, audience=AUDIENCE, required=CLAIMS
        )
        tid, sub, sbx, prt, jti = (claims[k] for k in ("tid", "sub", "sbx", "prt", "jti"))
        if not all(isinstance(v, str) and v for v in (tid, sub, sbx, jti)):
            raise Unauthenticated("preview link claims are malformed")
        if not isinstance(prt, int) or not 0 < prt < 65536:
            raise Unauthenticated("preview link names no valid port")
        via = claims.get("via")
        if via is not None and not (isinstance(via, str) and via):
            raise Unauthenticated("preview link names no valid token")
        expires = datetime.fromtimestamp(claims["exp"], UTC)
        return Link(token, jti, tid, sub, sbx, prt, expires, via)
