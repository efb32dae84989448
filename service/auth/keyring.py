"""Ed25519 signing keys: one PEM file per key id in a directory; the newest signs, all verify.

Rotation adds a file; tokens signed by an older key stay valid until they expire, because every
key in the directory is published in the JWKS and accepted for verification. Retiring a key is
removing its file once no unexpired token can carry its `kid` (the hard cap on lifetime is 24 h).
"""

from __future__ import annotations

import base64
import hashlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from service.errors import ConfigurationError

_SUFFIX = ".pem"


@dataclass(frozen=True)
class SigningKey:
    kid: str
    private: Ed25519PrivateKey
    created: float

    @property
    def public(self) -> Ed25519PublicKey:
        return self.private.public_key()

    def jwk(self) -> dict[str, str]:
        raw = self.public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return {
            "kty": "OKP",
            "crv": "Ed25519",
            "alg": "EdDSA",
            "use": "sig",
            "kid": self.kid,
            "x": base64.urlsafe_b64encode(raw).rstrip(b"=").decode(),
        }


def _kid_for(private: Ed25519PrivateKey) -> str:
    raw = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    # RFC 7638-style thumbprint shortened: stable across restarts and replicas sharing the keys.
    return hashlib.sha256(raw).hexdigest()[:16]


def create_key(directory: Path) -> SigningKey:
    """Generate a new key into `directory` (mode 0600) and return it; it becomes the signer."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    private = Ed25519PrivateKey.generate()
    kid = _kid_for(private)
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    # Prefix with a sortable timestamp so "newest" does not depend on file mtimes.
    path = directory / f"{time.time_ns():020d}-{kid}{_SUFFIX}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    return SigningKey(kid=kid, private=private, created=time.time())


def _load(path: Path) -> SigningKey:
    try:
        private = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (ValueError, TypeError) as exc:
        raise ConfigurationError(f"{path} is not an unencrypted PEM private key: {exc}") from exc
    if not isinstance(private, Ed25519PrivateKey):
        raise ConfigurationError(f"{path} is not an Ed25519 key; only EdDSA signing is supported")
    return SigningKey(kid=_kid_for(private), private=private, created=path.stat().st_mtime)


class KeyRing:
    """The keys in a directory, re-read when the directory changes (rotation needs no restart)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._keys: list[SigningKey] = []

    def _refresh(self) -> None:
        try:
            st = self.directory.stat()
        except FileNotFoundError as exc:
            raise ConfigurationError(
                f"signing key directory {self.directory} is missing; "
                "create a key with `airlock keys rotate`"
            ) from exc
        stamp = (st.st_mtime_ns, st.st_ino)
        if stamp == self._stamp:
            return
        with self._lock:
            paths = sorted(p for p in self.directory.iterdir() if p.name.endswith(_SUFFIX))
            keys = [_load(p) for p in paths]
            if not keys:
                raise ConfigurationError(
                    f"no signing keys in {self.directory}; create one with `airlock keys rotate`"
                )
            self._keys = keys
            self._stamp = stamp

    def signer(self) -> SigningKey:
        self._refresh()
        return self._keys[-1]

    def get(self, kid: str) -> SigningKey | None:
        self._refresh()
        return next((k for k in self._keys if k.kid == kid), None)

    def all(self) -> list[SigningKey]:
        self._refresh()
        return list(self._keys)

    def jwks(self) -> dict[str, list[dict[str, str]]]:
        return {"keys": [k.jwk() for k in reversed(self.all())]}
