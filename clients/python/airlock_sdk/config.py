"""Where the service is and which credential to use: arguments first, then the environment
(`AIRLOCK_URL`, `AIRLOCK_API_KEY`), then a config file (`AIRLOCK_CONFIG`, else
`~/.config/airlock/config.json`: `{"url": "...", "api_key": "..."}`)."""

from __future__ import annotations

import json
import os
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
        stored = _read_file()
        url = url or os.environ.get("AIRLOCK_URL") or stored.get("url") or DEFAULT_URL
        api_key = api_key or os.environ.get("AIRLOCK_API_KEY") or stored.get("api_key")
        if not api_key:
            raise AirlockError(
                "no credential: set AIRLOCK_API_KEY (an API key or a token), pass api_key=, "
                f"or write {{'api_key': ...}} into {config_path()}",
                code="no_credential",
            )
        return cls(url=url.rstrip("/"), api_key=api_key)


def _read_file() -> dict[str, str]:
    path = config_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise AirlockError(f"cannot read {path}: {exc}", code="bad_config") from exc
    if not isinstance(data, dict):
        raise AirlockError(f"{path} is not a JSON object", code="bad_config")
    return {k: v for k, v in data.items() if isinstance(v, str)}
