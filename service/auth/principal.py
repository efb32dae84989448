"""Who is calling, and what they may do."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

SCOPES: tuple[str, ...] = (
    "sandboxes:read",
    "sandboxes:write",
    "exec",
    "files:read",
    "files:write",
    "templates:read",
    "templates:write",
    "reviews:read",
    "reviews:write",
    "secrets:read",
    "secrets:write",
    "audit:read",
    "keys:write",
    "ports",
)


class PrincipalKind(StrEnum):
    OPERATOR = "operator"
    API_KEY = "api_key"
    TOKEN = "token"  # noqa: S105 (a kind of credential, not a secret)
    NODE = "node"  # another node of the deployment, on the internal routes only


@dataclass(frozen=True, slots=True)
class Principal:
    kind: PrincipalKind
    # The key id for an API key, the jti for a token, "operator" for the operator.
    actor: str
    tenant_id: str | None
    scopes: frozenset[str]
    # The key that minted a token (the token's `sub`), or the key itself.
    key_id: str | None = None
    sandbox_id: str | None = None
    # When the credential stops being valid on its own (a token's `exp`); None for keys.
    expires_at: datetime | None = None

    @property
    def is_operator(self) -> bool:
        return self.kind is PrincipalKind.OPERATOR

    def has_scope(self, scope: str) -> bool:
        return self.is_operator or scope in self.scopes


OPERATOR = Principal(
    kind=PrincipalKind.OPERATOR, actor="operator", tenant_id=None, scopes=frozenset(SCOPES)
)
