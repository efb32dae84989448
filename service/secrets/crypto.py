"""Secret values at rest: AES-256-GCM under one key kept in the state dir.

The key is 32 random bytes in `<state_dir>/secrets.key` (mode 0600), made on first use, like
the signing keys; every replica must share the file. Each value gets a fresh 96-bit nonce, and
the tenant id and the secret's name are the associated data: a row copied to another tenant or
renamed does not decrypt. The row keeps the key's id, so a key that changed says so instead of
failing as if the row were forged.

The values a sandbox's execs were given (`service.execs.sandbox_secrets`) are sealed by the same
box with the tenant and the sandbox bound in instead of a name (`seal_held`): such a row does not
open as a tenant secret, nor as another sandbox's.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from service.errors import ConfigurationError

KEY_FILE = "secrets.key"
KEY_BYTES = 32
NONCE_BYTES = 12


class Undecryptable(Exception):
    """The row does not decrypt under this key for this tenant and name."""


@dataclass(frozen=True)
class Sealed:
    key_id: str
    nonce: bytes
    ciphertext: bytes


def _associated_data(tenant_id: str, name: str) -> bytes:
    return b"airlock-secret\x00" + tenant_id.encode() + b"\x00" + name.encode()


def _held_data(tenant_id: str, sandbox_id: str) -> bytes:
    return b"airlock-sandbox-secret\x00" + tenant_id.encode() + b"\x00" + sandbox_id.encode()


class SecretBox:
    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise ConfigurationError(f"the secrets key must be {KEY_BYTES} bytes")
        self._aead = AESGCM(key)
        self.key_id = hashlib.sha256(b"airlock-secrets-key\x00" + key).hexdigest()[:16]

    def seal(self, tenant_id: str, name: str, value: str) -> Sealed:
        return self._seal(value, _associated_data(tenant_id, name))

    def open(self, tenant_id: str, name: str, sealed: Sealed) -> str:
        return self._open(sealed, _associated_data(tenant_id, name), "this tenant and name")

    def seal_held(self, tenant_id: str, sandbox_id: str, value: str) -> Sealed:
        """A value an exec of the sandbox was given, bound to the tenant and the sandbox."""
        return self._seal(value, _held_data(tenant_id, sandbox_id))

    def open_held(self, tenant_id: str, sandbox_id: str, sealed: Sealed) -> str:
        return self._open(sealed, _held_data(tenant_id, sandbox_id), "this tenant and sandbox")

    def _seal(self, value: str, associated: bytes) -> Sealed:
        nonce = os.urandom(NONCE_BYTES)
        return Sealed(self.key_id, nonce, self._aead.encrypt(nonce, value.encode(), associated))

    def _open(self, sealed: Sealed, associated: bytes, bound_to: str) -> str:
        if sealed.key_id != self.key_id:
            raise Undecryptable(f"sealed under another key ({sealed.key_id})")
        try:
            plain = self._aead.decrypt(sealed.nonce, sealed.ciphertext, associated)
        except InvalidTag:
            raise Undecryptable(f"does not decrypt for {bound_to}") from None
        return plain.decode()


_lock = threading.Lock()
_boxes: dict[Path, SecretBox] = {}


def box_for(key_file: Path) -> SecretBox:
    """The key in `key_file` (Settings.secrets_key_path), read once per process and created
    (0600) when there is none."""
    path = key_file.resolve()
    with _lock:
        box = _boxes.get(path)
        if box is None:
            box = _boxes[path] = SecretBox(_read_or_create(path))
        return box


def _read_or_create(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.exists():
        # Written whole under a private name, then linked into place: two processes starting
        # together end up with one key, and nobody reads a half-written file.
        staging = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
        fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.urandom(KEY_BYTES))
        try:
            os.link(staging, path)
        except FileExistsError:
            pass
        finally:
            staging.unlink()
    key = path.read_bytes()
    if len(key) != KEY_BYTES:
        raise ConfigurationError(f"{path} is not a secrets key ({KEY_BYTES} bytes expected)")
    return key
