"""How an API replica calls a node: a short-lived token signed with the cluster's key for the
audience `airlock-node`, carrying the caller the replica authenticated.

Tenants' tokens carry the API's audience and API keys are not tokens, so a tenant credential
sent to a node is refused (401), and a node token sent to the API is refused the same way. The
node trusts the caller in the token as the replica established it: the replica has checked
the credential (revocation, tenant status) and the node checks scopes and the sandbox binding
again with its own guard. Tokens are reused for the same caller while they have more than
REUSE_S left and verified once per token, so a routed call costs no signature on the hot path.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jwt

from service.auth.keyring import KeyRing
from service.auth.principal import Principal, PrincipalKind
from service.auth.tokens import decode_signed, sign
from service.errors import Unauthenticated

NODE_AUDIENCE = "airlock-node"
REPLICA = "api-replica"
TTL_S = 120
REUSE_S = 60
# Entries either cache keeps before it starts again (callers beyond it are minted afresh).
CACHE_MAX = 4096
_KINDS = (PrincipalKind.API_KEY, PrincipalKind.TOKEN)


@dataclass(frozen=True, slots=True)
class Forwarded:
    """A call an API replica routed to this node: the caller, and the address it came from."""

    principal: Principal
    client: str | None
    expires_at: float


class NodeCredentials:
    def __init__(self, keyring: KeyRing, *, issuer: str, node_id: str | None = None) -> None:
        self.keyring = keyring
        self.issuer = issuer
        # The node this process is: a token for another node is refused here.
        self.node_id = node_id
        self._minted: dict[tuple[Principal, str | None, str], tuple[str, float]] = {}
        self._verified: dict[str, Forwarded] = {}

    def mint(self, principal: Principal, client: str | None, node: str) -> str:
        """A token for a call to `node` made on `principal`'s behalf (a replica's side)."""
        if principal.kind is not PrincipalKind.NODE and (
            principal.kind not in _KINDS or principal.tenant_id is None
        ):
            raise ValueError("only a tenant's calls are routed to nodes")
        now = time.time()
        hit = self._minted.get((principal, client, node))
        if hit is not None and hit[1] - now > REUSE_S:
            return hit[0]
        exp = int(now) + TTL_S
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": NODE_AUDIENCE,
            "sub": f"node:{principal.actor}" if principal.kind is PrincipalKind.NODE else REPLICA,
            "jti": f"node_{secrets.token_hex(12)}",
            "iat": int(now),
            "nbf": int(now),
            "exp": exp,
            "prn": None if principal.kind is PrincipalKind.NODE else _principal_claim(principal),
            "cli": client,
            "nod": node,
        }
        token = sign(self.keyring, claims)
        if len(self._minted) >= CACHE_MAX:
            self._minted.clear()
        self._minted[(principal, client, node)] = (token, float(exp))
        return token

    def mint_node(self, caller: str, node: str) -> str:
        """A token for `caller`'s own call to the internal routes of `node`."""
        return self.mint(node_principal(caller), None, node)

    def verify(self, token: str) -> Forwarded:
        """The call a token carries (a node's side); Unauthenticated for anything else,
        a tenant's own credential included."""
        hit = self._verified.get(token)
        if hit is not None and hit.expires_at > time.time():
            return hit
        try:
            claims = decode_signed(self.keyring, token, issuer=self.issuer, audience=NODE_AUDIENCE)
        except Unauthenticated as exc:
            raise Unauthenticated(
                f"a node accepts only calls routed by an API replica ({exc.detail})"
            ) from None
        if self.node_id is not None and claims.get("nod") != self.node_id:
            raise Unauthenticated(f"this token is for another node, not {self.node_id}")
        subject = claims["sub"]
        if subject != REPLICA and not (isinstance(subject, str) and subject.startswith("node:")):
            raise Unauthenticated("a node accepts calls from the API replicas only")
        client = claims.get("cli")
        if client is not None and not isinstance(client, str):
            raise Unauthenticated("token 'cli' must be a string")
        forwarded = Forwarded(
            principal=(
                node_principal(subject.removeprefix("node:"))
                if subject != REPLICA
                else _principal_of(claims.get("prn"))
            ),
            client=client,
            expires_at=float(claims["exp"]),
        )
        if len(self._verified) >= CACHE_MAX:
            self._verified.clear()
        self._verified[token] = forwarded
        return forwarded


def node_principal(node_id: str) -> Principal:
    return Principal(kind=PrincipalKind.NODE, actor=node_id, tenant_id=None, scopes=frozenset())


def looks_like_node_token(credential: str) -> bool:
    """Whether a bearer credential says it is for the nodes' audience (unverified: which
    verification it gets is all this decides)."""
    if credential.count(".") != 2:  # API keys and the operator key: not a JWT at all
        return False
    try:
        claims = jwt.decode(credential, options={"verify_signature": False})
    except jwt.PyJWTError:
        return False
    return claims.get("aud") == NODE_AUDIENCE


def _principal_claim(principal: Principal) -> dict[str, Any]:
    return {
        "kind": principal.kind.value,
        "actor": principal.actor,
        "tid": principal.tenant_id,
        "scp": sorted(principal.scopes),
        "key": principal.key_id,
        "sbx": principal.sandbox_id,
        "exp": int(principal.expires_at.timestamp()) if principal.expires_at else None,
    }


def _principal_of(claim: object) -> Principal:
    if not isinstance(claim, dict):
        raise Unauthenticated("token lacks the 'prn' claim")
    try:
        kind = PrincipalKind(claim["kind"])
        actor, tenant, key = claim["actor"], claim["tid"], claim["key"]
        scopes, sandbox, exp = claim["scp"], claim.get("sbx"), claim.get("exp")
    except (KeyError, ValueError) as exc:
        raise Unauthenticated("token 'prn' claim is malformed") from exc
    if (
        kind not in _KINDS
        or not all(isinstance(v, str) and v for v in (actor, tenant, key))
        or not isinstance(scopes, list)
        or not all(isinstance(s, str) for s in scopes)
        or not (sandbox is None or isinstance(sandbox, str))
        or not (exp is None or isinstance(exp, int))
    ):
        raise Unauthenticated("token 'prn' claim is malformed")
    return Principal(
        kind=kind,
        actor=actor,
        tenant_id=tenant,
        scopes=frozenset(scopes),
        key_id=key,
        sandbox_id=sandbox,
        expires_at=datetime.fromtimestamp(exp, UTC) if exp is not None else None,
    )
