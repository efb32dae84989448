"""Choosing the runtime: `AIRLOCK_RUNTIME=auto|boxlite|gvisor`.

`auto` takes BoxLite when a probe VM boots and gVisor otherwise. The probe result is cached
in the state dir, keyed by kernel release and BoxLite version, so a warm start decides
without booting anything; `airlock doctor` re-probes.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from . import boxlite as boxlite_runtime
from .config import RuntimeConfig
from .errors import RuntimeUnavailable
from .gvisor import GVisorRuntime
from .protocol import SandboxRuntime

log = logging.getLogger(__name__)

CACHE_FILE = "runtime-probe.json"


def cache_key() -> str:
    return f"{os.uname().release}|boxlite {boxlite_runtime.version()}"


def _cache_path(state_dir: Path) -> Path:
    return Path(state_dir) / CACHE_FILE


def cached_probe(state_dir: Path) -> boxlite_runtime.ProbeResult | None:
    try:
        data = json.loads(_cache_path(state_dir).read_text())
    except (OSError, ValueError):
        return None
    if data.get("key") != cache_key():
        return None
    result = data.get("result") or {}
    try:
        return boxlite_runtime.ProbeResult(**result)
    except TypeError:
        return None


async def probe_boxlite(
    state_dir: Path, *, refresh: bool = False, timeout_s: float = boxlite_runtime.PROBE_TIMEOUT_S
) -> boxlite_runtime.ProbeResult:
    """The BoxLite boot probe, from cache unless `refresh`."""
    if not refresh and (hit := cached_probe(state_dir)) is not None:
        return hit
    result = await boxlite_runtime.probe(state_dir, timeout_s)
    if result.version is not None and "no default image" not in result.diagnosis:
        path = _cache_path(state_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"key": cache_key(), "at": time.time(), "result": asdict(result)}
        path.write_text(json.dumps(payload, indent=1))
    return result


@dataclass(frozen=True)
class Choice:
    runtime: str
    reason: str


async def choose(config: RuntimeConfig) -> Choice:
    """Which runtime `config.runtime` means on this host, and why."""
    wanted = config.runtime
    if wanted in ("gvisor", "boxlite"):
        return Choice(wanted, f"AIRLOCK_RUNTIME={wanted}")
    result = await probe_boxlite(config.state_dir)
    if result.ok:
        return Choice("boxlite", "auto: a BoxLite probe VM boots on this host")
    first_line = result.diagnosis.splitlines()[0] if result.diagnosis else "probe failed"
    return Choice("gvisor", f"auto: BoxLite cannot boot a VM here ({first_line})")


async def open_runtime(config: RuntimeConfig) -> SandboxRuntime:
    """Build the runtime the configuration asks for, handing it the whole configuration;
    RuntimeUnavailable says why it cannot work."""
    choice = await choose(config)
    log.info("sandbox runtime: %s (%s)", choice.runtime, choice.reason)
    if choice.runtime == "boxlite":
        result = await probe_boxlite(config.state_dir)
        return await boxlite_runtime.BoxliteRuntime.from_config(config, result)
    if choice.runtime == "gvisor":
        return await GVisorRuntime.from_config(config)
    raise RuntimeUnavailable(choice.runtime, "unknown runtime; use auto, boxlite or gvisor")
