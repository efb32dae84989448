"""Where the service is and which credential to use: arguments first, then the environment
(`AIRLOCK_URL`, `AIRLOCK_API_KEY`), then a config file (`AIRLOCK_CONFIG`, else
`$XDG_CONFIG_HOME/airlock/config.json` or `~/.config/airlock/config.json`:
`{"url": "...", "api_key": "..."}`), which `sbx login` writes and `sbx logout` clears."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import AirlockError

DEFAULT_URL = "http://127.0.0.1:8080"


def config_path() -> Path:
    named = os.environ.get("AIRLOCK_CONFIG")
    if named:
        return Path(named)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "airlock" / "config.json"


@dataclass(frozen=True)
class Config:
    url: str
    api_key: str

    @classmethod
    def resolve(cls, url: str | None = None, api_key: str | None = None) -> Config:
        kept = stored()
        url = url or os.environ.get("AIRLOCK_URL") or kept.get("url") or DEFAULT_URL
        api_key = api_key or os.environ.get("AIRLOCK_API_KEY") or kept.get("api_key")
        if not api_key:
            raise AirlockError(
                "no credential: run `sbx login` (it stores a key in "
                f"{config_path()}), set AIRLOCK_API_KEY (an API key or a token), or pass api_key=",
                code="no_credential",
            )
        return cls(url=url.rstrip("/"), api_key=api_key)


def stored() -> dict[str, str]:
    """What the config file holds (nothing when there is none)."""
    return {k: v for k, v in _read_file().items() if isinstance(v, str)}


def store(url: str, api_key: str) -> Path:
    """Write the URL and key into the config file, readable by this user only: the file is made
    with mode 0600 (its directory, when made here, 0700) and replaces the old one whole."""
    return _write({**_kept(), "url": url, "api_key": api_key})


def forget_key() -> Path | None:
    """Remove the stored key (the URL stays); the file's path, or None when it held no key."""
    kept = _kept()
    if "api_key" not in kept:
        return None
    del kept["api_key"]
    return _write(kept)


def _kept() -> dict[str, object]:
    """The config file's entries, to carry over into a rewrite (none from an unreadable one,
    which the rewrite replaces)."""
    try:
        return _read_file()
    except AirlockError:
        return {}


def _write(data: dict[str, object]) -> Path:
    path = config_path()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # mkstemp makes the file 0600 before anything is written into it; the rename makes the
        # new file appear whole.
        fd, temp = tempfile.mkstemp(prefix=".config-", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as out:
                json.dump(data, out, indent=2)
                out.write("\n")
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
    except OSError as exc:
        raise AirlockError(f"cannot write {path}: {exc}", code="bad_config") from exc
    return path


def _read_file() -> dict[str, object]:
    path = config_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise AirlockError(f"cannot read {path}: {exc}", code="bad_config") from exc
    if not isinstance(data, dict):
        raise AirlockError(f"{path} is not a JSON object", code="bad_config")
    return data
