"""Every malformed, forged, expired or withdrawn credential is a 401 problem, never a 200 or 500."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from service.auth.keyring import KeyRing
from tests.conftest import Api, Tenant

# The route used to probe: needs a valid credential with `audit:read`.
PROBE = "/v1/audit"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned(header: dict[str, Any], claims: dict[str, Any], signature: str = "") -> str:
    return ".".join([b64(json.dumps(header).encode()), b64(json.dumps(claims).encode()), signature])


class Forge:
    """Builds tokens the way an attacker would, from a valid tenant and the real key ring."""

    def __init__(self, api: Api, tenant: Tenant, key_id: str) -> None:
        self.ring = KeyRing(api.settings.keys_dir)
        self.settings = api.settings
        self.tenant = tenant
        self.key_id = key_id

    def claims(self, **changes: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.settings.jwt_issuer,
            "aud": self.settings.jwt_audience,
            "sub": self.key_id,
            "tid": self.tenant.id,
            "scp": ["audit:read"],
            "jti": f"tok_forged{now}{id(changes)}",
            "iat": now,
            "nbf": now,
            "exp": now + 300,
        }
        for name, value in changes.items():
            if value is DROP:
                claims.pop(name)
            else:
                claims[name] = value
        return claims

    def signed(self, headers: dict[str, Any] | None = None, **changes: Any) -> str:
        key = self.ring.signer()
        return jwt.encode(
            self.claims(**changes),
            key.private,
            algorithm="EdDSA",
            headers={"kid": key.kid, **(headers or {})},
        )

    @property
    def kid(self) -> str:
        return self.ring.signer().kid

    def public_raw(self) -> bytes:
        return self.ring.signer().public.public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )

    def public_pem(self) -> bytes:
        return self.ring.signer().public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


DROP = object()


def hmac_token(f: Forge, alg: str, secret: bytes) -> str:
    # PyJWT refuses to sign HMAC with PEM-looking secrets; build the token by hand as an
    # attacker would.
    import hashlib
    import hmac

    digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}[alg]
    head = b64(json.dumps({"alg": alg, "typ": "JWT", "kid": f.kid}).encode())
    body = b64(json.dumps(f.claims()).encode())
    sig = hmac.new(secret, f"{head}.{body}".encode(), digest).digest()
    return f"{head}.{body}.{b64(sig)}"


def tampered(f: Forge) -> str:
    head, _, sig = f.signed().split(".")
    body = b64(json.dumps(f.claims(scp=["audit:read", "keys:write"])).encode())
    return f"{head}.{body}.{sig}"


def other_key_same_kid(f: Forge) -> str:
    return jwt.encode(
        f.claims(), Ed25519PrivateKey.generate(), algorithm="EdDSA", headers={"kid": f.kid}
    )


def rsa_token(f: Forge) -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return jwt.encode(f.claims(), key, algorithm="RS256", headers={"kid": f.kid})


def ec_token(f: Forge) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    return jwt.encode(f.claims(), key, algorithm="ES256", headers={"kid": f.kid})


Variant = Callable[[Forge], str]

TOKEN_VARIANTS: dict[str, Variant] = {
    "garbage": lambda f: "not-a-token",
    "two segments": lambda f: "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0",
    "bad base64 header": lambda f: "%%%." + f.signed().split(".", 1)[1],
    "header not json": lambda f: b64(b"nope") + "." + f.signed().split(".", 1)[1],
    "alg none": lambda f: unsigned({"alg": "none", "typ": "JWT", "kid": f.kid}, f.claims()),
    "alg None": lambda f: unsigned({"alg": "None", "kid": f.kid}, f.claims()),
    "alg NONE with a signature": lambda f: unsigned(
        {"alg": "NONE", "kid": f.kid}, f.claims(), signature=b64(b"x" * 64)
    ),
    "no alg": lambda f: unsigned({"kid": f.kid}, f.claims(), signature=b64(b"x" * 64)),
    "HS256 keyed with the raw public key": lambda f: hmac_token(f, "HS256", f.public_raw()),
    "HS256 keyed with the PEM public key": lambda f: hmac_token(f, "HS256", f.public_pem()),
    "HS384 keyed with the PEM public key": lambda f: hmac_token(f, "HS384", f.public_pem()),
    "HS512 keyed with the raw public key": lambda f: hmac_token(f, "HS512", f.public_raw()),
    "RS256": rsa_token,
    "ES256": ec_token,
    "unknown kid": lambda f: f.signed(headers={"kid": "0000000000000000"}),
    "no kid": lambda f: jwt.encode(f.claims(), f.ring.signer().private, algorithm="EdDSA"),
    "signed by another key under our kid": other_key_same_kid,
    "signature of another token": lambda f: ".".join(
        [*f.signed().split(".")[:2], f.signed(jti="other").split(".")[2]]
    ),
    "truncated signature": lambda f: f.signed()[:-10],
    "tampered payload": tampered,
    "missing exp": lambda f: f.signed(exp=DROP),
    "missing iat": lambda f: f.signed(iat=DROP),
    "missing nbf": lambda f: f.signed(nbf=DROP),
    "missing aud": lambda f: f.signed(aud=DROP),
    "missing iss": lambda f: f.signed(iss=DROP),
    "missing sub": lambda f: f.signed(sub=DROP),
    "missing jti": lambda f: f.signed(jti=DROP),
    "missing tid": lambda f: f.signed(tid=DROP),
    "missing scp": lambda f: f.signed(scp=DROP),
    "scp not a list": lambda f: f.signed(scp="audit:read"),
    "expired": lambda f: f.signed(iat=int(time.time()) - 600, exp=int(time.time()) - 60),
    "not yet valid": lambda f: f.signed(nbf=int(time.time()) + 300),
    "issued in the future": lambda f: f.signed(iat=int(time.time()) + 300),
    "wrong audience": lambda f: f.signed(aud="someone-else"),
    "audience list without ours": lambda f: f.signed(aud=["a", "b"]),
    "wrong issuer": lambda f: f.signed(iss="https://evil.example"),
    "unknown subject key": lambda f: f.signed(sub="key_doesnotexist"),
    "subject key of another tenant": lambda f: f.signed(tid="ten_other"),
}


@pytest.fixture
async def forge(api: Api, tenant: Tenant) -> Forge:
    r = await api.client.get("/v1/api-keys", headers=tenant.headers)
    key_id = r.json()["items"][0]["id"]
    return Forge(api, tenant, key_id)


def assert_401(r: Any) -> None:
    assert r.status_code == 401, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert body["code"] == "unauthenticated"
    assert body["status"] == 401
    assert r.headers["www-authenticate"].startswith("Bearer")


async def test_forged_token_control_is_accepted(api: Api, forge: Forge) -> None:
    # The forge builds valid tokens when nothing is changed, so each rejection below is caused
    # by the one thing its variant changes.
    r = await api.client.get(PROBE, headers=api.bearer(forge.signed()))
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("variant", list(TOKEN_VARIANTS), ids=list(TOKEN_VARIANTS))
async def test_rejected_token(api: Api, forge: Forge, variant: str) -> None:
    token = TOKEN_VARIANTS[variant](forge)
    assert_401(await api.client.get(PROBE, headers=api.bearer(token)))


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Token abc", "alk_without_scheme"],
    ids=["absent", "empty", "scheme only", "scheme and space", "basic", "other scheme", "bare"],
)
async def test_missing_or_malformed_authorization(api: Api, header: str | None) -> None:
    headers = {} if header is None else {"Authorization": header}
    assert_401(await api.client.get(PROBE, headers=headers))


async def test_unknown_api_key(api: Api) -> None:
    assert_401(await api.client.get(PROBE, headers=api.bearer("alk_" + "A" * 43)))


async def test_revoked_jti(api: Api, tenant: Tenant) -> None:
    issued = await api.token(tenant.key, scopes=["audit:read"])
    assert (await api.client.get(PROBE, headers=api.bearer(issued["token"]))).status_code == 200
    r = await api.client.delete(f"/v1/tokens/{issued['jti']}", headers=tenant.headers)
    assert r.status_code == 204, r.text
    assert_401(await api.client.get(PROBE, headers=api.bearer(issued["token"])))


async def test_suspended_tenant(api: Api, tenant: Tenant) -> None:
    issued = await api.token(tenant.key, scopes=["audit:read"])
    r = await api.client.patch(
        f"/v1/tenants/{tenant.id}", json={"status": "suspended"}, headers=api.operator
    )
    assert r.status_code == 200, r.text
    assert_401(await api.client.get(PROBE, headers=api.bearer(issued["token"])))
    assert_401(await api.client.get(PROBE, headers=tenant.headers))
    # Reinstated, the same credentials work again.
    await api.client.patch(
        f"/v1/tenants/{tenant.id}", json={"status": "active"}, headers=api.operator
    )
    assert (await api.client.get(PROBE, headers=api.bearer(issued["token"]))).status_code == 200


async def test_token_dies_with_its_api_key(api: Api, tenant: Tenant) -> None:
    key = await api.key(tenant, ["audit:read"])
    issued = await api.token(key)
    assert (await api.client.get(PROBE, headers=api.bearer(issued["token"]))).status_code == 200
    keys = (await api.client.get("/v1/api-keys", headers=tenant.headers)).json()["items"]
    key_id = next(k["id"] for k in keys if key.startswith(k["prefix"]) and k["name"] == "k")
    r = await api.client.delete(f"/v1/api-keys/{key_id}", headers=tenant.headers)
    assert r.status_code == 204
    assert_401(await api.client.get(PROBE, headers=api.bearer(key)))
    assert_401(await api.client.get(PROBE, headers=api.bearer(issued["token"])))
