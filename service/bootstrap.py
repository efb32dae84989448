"""First-run preparation of the state dir: signing keys and the operator credential.

Runs before the app is built. In development it creates what is missing (and says so once); in
production it creates nothing and refuses to start on anything missing or default.
"""

from __future__ import annotations

import hmac
import os
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path

from service.audit import chain as audit_chain
from service.audit import key as audit_key
from service.auth import keyring
from service.errors import ConfigurationError
from service.settings import Role, Settings

OPERATOR_KEY_FILE = "operator_key"
OPERATOR_KEY_PREFIX = "alo_"


@dataclass(frozen=True)
class Secrets:
    operator_key: str


def _read_generated_operator_key(state_dir: Path) -> str | None:
    path = state_dir / OPERATOR_KEY_FILE
    try:
        return path.read_text().strip() or None
    except FileNotFoundError:
        return None


def ensure_signing_key(settings: Settings, *, announce: bool = True) -> None:
    directory = settings.keys_dir
    has_keys = directory.is_dir() and any(p.suffix == ".pem" for p in directory.iterdir())
    if has_keys:
        return
    if settings.is_production:
        raise ConfigurationError(
            f"no signing keys in {directory}; create one with `airlock keys rotate` "
            "(AIRLOCK_ENV=production never generates keys on its own)"
        )
    key = keyring.create_key(directory)
    if announce:
        print(f"airlock: generated signing key {key.kid} in {directory}", file=sys.stderr)


def ensure_operator_key(settings: Settings, *, announce: bool = True) -> str:
    if settings.role == Role.NODE and settings.operator_key is None:
        # A node answers node tokens only: it never needs (and should not hold) the key.
        return OPERATOR_KEY_PREFIX + secrets.token_urlsafe(32)
    generated = _read_generated_operator_key(settings.state_dir)
    if settings.operator_key is not None:
        if (
            settings.is_production
            and generated is not None
            and hmac.compare_digest(generated, settings.operator_key)
        ):
            raise ConfigurationError(
                "AIRLOCK_OPERATOR_KEY is the development key generated in the state dir; "
                "production needs its own"
            )
        return settings.operator_key
    if settings.is_production:
        raise ConfigurationError("AIRLOCK_OPERATOR_KEY is required when AIRLOCK_ENV=production")
    if generated is not None:
        return generated
    settings.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    value = OPERATOR_KEY_PREFIX + secrets.token_urlsafe(32)
    path = settings.state_dir / OPERATOR_KEY_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(value + "\n")
    if announce:
        print(
            "airlock: generated an operator key (shown once; also in "
            f"{path}, mode 0600):\n\n    {value}\n",
            file=sys.stderr,
        )
    return value


def load_audit_key(settings: Settings) -> None:
    """Every process that records or verifies audit events loads the key first."""
    audit_chain.use_key(audit_key.load_or_create(settings.audit_key_path))


def prepare(settings: Settings, *, announce: bool = True) -> Secrets:
    settings.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    ensure_signing_key(settings, announce=announce)
    load_audit_key(settings)
    return Secrets(operator_key=ensure_operator_key(settings, announce=announce))
